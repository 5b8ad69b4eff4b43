"""Question: where does dsf's CUDA path stand on the H200 against transformers
eager on the same V4 models (issue 5a)?

Runs on the GPU machine (torch and transformers 5.17 there; dsf never imports
them), over artifacts built on the development machine:
  python3 bench/gpu_v4_vs_transformers.py DSF_RUN TINY_CUDA.dsfa TINY_CPU.dsfa SMALL_CUDA.dsfa OUT.md
Two models:
  * tiny: models/deepseek-v4-tiny (D 128, 4 layers, 8 experts), the golden
    weights of test/golden/v4-tiny;
  * small: models/deepseek-v4-small (D 1024, 8 layers, 16 experts, 8 heads x
    128, window 64, top-32), weights from transformers' own initialization
    (seed 0), saved once and read by both.
Measures, in one run, per model: prefill time at three lengths and greedy
decode time per token (32 tokens), for
  * dsf's CUDA artifact (dsf-run --timing --warmup 2: the timed call finds
    the modules loaded and the memory pool filled; best of 2 processes),
  * the anchor: transformers' DeepseekV4ForCausalLM, eager attention, fp32,
    the same weights and ids, on the same GPU (torch.cuda.synchronize around
    each call; best of 3 after a warm-up),
  * dsf's CPU artifact on this machine's CPU (tiny only),
the kernel launches per dsf prefill, and, for the small model, dsf's logits
against transformers' (relative error, argmax agreement) so that the speed
is of a correct computation."""
import datetime
import json
import os
import re
import subprocess
import sys
import time

import torch
from safetensors.torch import load_file, save_file
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as m
from transformers.models.deepseek_v4.configuration_deepseek_v4 import DeepseekV4Config

dsf_run, tiny_cuda, tiny_cpu, small_cuda, out = sys.argv[1:6]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
gen = torch.Generator().manual_seed(5)


def load_hf(config_path, weights=None):
    raw = json.load(open(config_path))
    cfg = DeepseekV4Config(**raw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = m.DeepseekV4ForCausalLM(cfg).float().eval()
    if weights:
        model.load_state_dict(load_file(weights))
    return raw, model.cuda()


def dsf(artifact, weights, ids, new=0, dump=None):
    cmd = [dsf_run, artifact, "--weights", weights, "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new), "--timing", "--warmup", "2"]
    if dump:
        cmd += ["--dump-logits", dump]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    prefill = float(re.search(r"prefill \d+ tokens ([0-9.]+) s", r.stderr).group(1))
    decode = re.search(r"decode (\d+) tokens ([0-9.]+) s", r.stderr)
    launches = re.search(r"prefill (\d+) GPU kernel launches", r.stderr)
    return prefill, (float(decode.group(2)) / int(decode.group(1)) if decode else None), \
        (int(launches.group(1)) if launches else 0)


def hf_prefill(model, ids):
    x = torch.tensor([ids], device="cuda")
    with torch.no_grad():
        model(x)
        best = 1e9
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            logits = model(x).logits
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
    return best, logits[0].float().cpu()


def hf_decode(model, ids, new=32):
    x = torch.tensor([ids], device="cuda")
    with torch.no_grad():
        outputs = model(x, use_cache=True)
        past, token = outputs.past_key_values, outputs.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(new):
            outputs = model(token, past_key_values=past, use_cache=True)
            past, token = outputs.past_key_values, outputs.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / new


def measure(name, model, vocab, weights, cuda_artifact, cpu_artifact, lengths, decode_prompt):
    rows = []
    for n in lengths:
        ids = torch.randint(0, vocab, (n,), generator=gen).tolist()
        g, _, launches = min(dsf(cuda_artifact, weights, ids) for _ in range(2))
        c = min(dsf(cpu_artifact, weights, ids)[0] for _ in range(2)) if cpu_artifact else None
        h, _ = hf_prefill(model, ids)
        rows.append((n, g, h, c, launches))
    ids = torch.randint(0, vocab, (decode_prompt,), generator=gen).tolist()
    g_dec = min(dsf(cuda_artifact, weights, ids, 33)[1] for _ in range(2))
    c_dec = dsf(cpu_artifact, weights, ids, 33)[1] if cpu_artifact else None
    h_dec = hf_decode(model, ids)
    lines = [f"## {name}", "",
             "| prefill tokens | dsf CUDA s | transformers eager s | dsf / transformers speed | dsf CPU s | "
             "dsf kernel launches |", "|---|---|---|---|---|---|"]
    for n, g, h, c, l in rows:
        lines.append(f"| {n} | {g:.5f} | {h:.5f} | x{h / g:.2f} | {f'{c:.4f}' if c else '-'} | {l} |")
    lines += ["", f"| decode, 32 tokens after {decode_prompt} | ms per token |", "|---|---|",
              f"| dsf CUDA | {g_dec * 1e3:.2f} |", f"| transformers eager (with its cache) | {h_dec * 1e3:.2f} |"]
    if c_dec:
        lines.append(f"| dsf CPU | {c_dec * 1e3:.2f} |")
    lines += ["", f"dsf / transformers decode speed: x{h_dec / g_dec:.2f}.", ""]
    return lines, rows


tiny_weights = os.path.join(root, "test", "golden", "v4-tiny", "weights.safetensors")
raw, tiny = load_hf(os.path.join(root, "test", "golden", "v4-tiny", "config.json"), tiny_weights)
tiny_lines, tiny_rows = measure("tiny V4 (D 128, 4 layers, 8 experts; golden weights)", tiny, raw["vocab_size"],
                                tiny_weights, tiny_cuda, tiny_cpu, [40, 128, 256], 40)
del tiny
torch.cuda.empty_cache()

raw, small = load_hf(os.path.join(root, "models", "deepseek-v4-small", "config.json"))
small_weights = "/tmp/dsf-v4-small.safetensors"
save_file({k: v.detach().cpu().contiguous() for k, v in small.state_dict().items()}, small_weights)
params = sum(v.numel() for v in small.state_dict().values())
# Correctness first: dsf's logits against transformers' at 128 tokens.
ids = torch.randint(0, raw["vocab_size"], (128,), generator=gen).tolist()
dsf(small_cuda, small_weights, ids, dump="/tmp/dsf-small.logits")
_, ref = hf_prefill(small, ids)
got = load_file("/tmp/dsf-small.logits")["logits"].float()
rel = ((got - ref).norm() / ref.norm()).item()
agree = (got.argmax(-1) == ref.argmax(-1)).float().mean().item()
assert torch.isfinite(got).all(), "dsf's logits have NaN or Inf"
small_lines, small_rows = measure(f"small V4 (D 1024, 8 layers, 16 experts; {params / 1e6:.0f} M parameters, "
                                  "transformers' initialization)", small, raw["vocab_size"], small_weights,
                                  small_cuda, None, [64, 256, 1024], 256)

gpu = torch.cuda.get_device_name()
lines = [
    "# dsf's CUDA path on the H200 against transformers eager (issue 5a)",
    "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
    f"- machine: {gpu} (device tool, nvidia-h200), CUDA {torch.version.cuda} (torch {torch.__version__})",
    "- command: `python3 bench/gpu_v4_vs_transformers.py dsf-run v4cuda.dsfa v4cpu.dsfa v4small-cuda.dsfa OUT.md` "
    "(artifacts: `dsf-compile models/deepseek-v4-tiny|deepseek-v4-small --no-kv-quant --target=cuda|cpu`)",
    "- anchor: transformers 5.17 DeepseekV4ForCausalLM, eager, fp32, same weights and ids, same GPU, same run",
    "- dsf: fp32, projections as tiled / warp-per-output kernels, the Sinkhorn rounds fused, every other "
    "linalg op one kernel; device memory from a caching pool, all kernels queued on one stream, one synchronize per call",
    f"- small model, dsf against transformers at 128 tokens: relative error {rel:.2e}, argmax agreement "
    f"{agree * 100:.1f} %",
    "",
] + tiny_lines + small_lines
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
