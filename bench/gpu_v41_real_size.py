"""Question: how fast is dsf on a model of V4.1-Flash's real sizes, against
the byte floor, and where does the time go? (issue 5b; and 5c, the indexer
and the sparse attention against PyTorch doing the same math)

The model: bench/configs/deepseek-v4.1-shaped-8e, V4.1-Flash's released
config (D 5120, 40 layers, 64 heads x 512, q_lora 1280, index 32 x 128
top-512, window 128, the schedule and candidate pool) with 8 routed experts
instead of 384 so that it fits one H200 (top-6 kept: the same active
parameters a token as the released model, 15.7 B). Random weights in the
released formats (FP8 32x32 blocks, MXFP4 experts), made on the GPU machine
by tools/scripts/dsfa_tool.py random-weights-quantized.

Runs on the GPU machine over the artifact built on the development machine:
  dsf-compile bench/configs/deepseek-v4.1-shaped-8e --target=cuda -o shaped.dsfa
  python3 bench/gpu_v41_real_size.py DSF_RUN shaped.dsfa OUT.md [CONTEXT ...]
For each context (default 2048 8192): prefill time (after a warm-up prefill
up to 2,048 tokens), decode time a token at that context, and a
DSF_CUDA_PROFILE run's per-kernel table (kernels named by
dsf-name-kernels after their layer function and dsf op). A 64-token run dumps logits, which must be finite.
The floors: a decode step cannot beat (weight bytes touched + KV bytes
read) / the card's HBM ceiling (batch_runs.ceilings(): 4.4 TB/s on the H200, BENCHMARKS.md), counted both in the bytes dsf reads (the
weights in the dtype the artifact binds them in, bf16 or f32 by its
manifest; f32 caches) and in the released formats' bytes.

5c: the same run times, with CUDA events, PyTorch (fp32, as dsf computes)
doing one decode token's indexer (32 heads x 128 over the context's FP4
keys, ReLU, head weights, top-512) and sparse attention (64 heads x 512 over
the 512 selected FP4 entries and the 128-entry window, with the sink), the
FP4 decode included, against dsf's kernels for the same ops in the profile.
Every context gets its DSF_CUDA_PROFILE run and per-kernel table, or those up
to DSF_BENCH_PROFILE_UP_TO=N. DSF_BENCH_PREFILL_CHUNK=C runs every prompt C
tokens a call (dsf-run --prefill-chunk): an 8K call's ratio-1 indexer scores
([tokens, 32, entries] f32, 8.6 GB) and logits (4.2 GB) beside 31.6 GB of
bound weights and their scratch do not fit an 80 GB H100.
"""
import datetime
import os
import re
import subprocess
import sys
import time

import numpy as np

dsf_run, artifact, out_md = sys.argv[1:4]
contexts = [int(c) for c in sys.argv[4:]] or [2048, 8192]
# DSF_BENCH_PROFILE_UP_TO=N: the DSF_CUDA_PROFILE runs only for contexts up
# to N (a 64K prefill takes minutes, and the profile would run it again).
profile_up_to = int(os.environ.get("DSF_BENCH_PROFILE_UP_TO", str(max(contexts))))
prefill_chunk = os.environ.get("DSF_BENCH_PREFILL_CHUNK")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tools", "scripts"))
import dsfa_tool  # noqa: E402
from batch_runs import PACKED_DTYPES, bound_size, ceilings, gpu_name, kv_read, owner_of  # noqa: E402  (this script's folder is on the path)

work = "/tmp/dsf-v41-shaped"
os.makedirs(work, exist_ok=True)
weights = os.path.join(work, "weights.safetensors")
env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
lines = []


def say(text=""):
    print(text, flush=True)
    lines.append(text)


art = open(artifact, "rb").read()
manifest = dsfa_tool.manifest(art)
vocab = manifest["vocab_size"]
t0 = time.perf_counter()
if not os.path.exists(weights):
    dsfa_tool.write_random_quantized(art, weights)
weights_s = time.perf_counter() - t0
del art

# --- the byte floor of a decode step at batch 1 ---------------------------
decode = next(e for e in manifest["entry_points"] if e["name"] == "decode")
decode_weights = {w["name"]: w for w in decode["weights"]}
touched_f32 = touched_released = 0   # touched_f32: the bytes as the artifact binds them
for w in decode["weights"]:
    nbytes, n = bound_size(w)
    fraction = 1.0
    if w["name"] == "embed.weight":
        fraction = 1 / w["shape"][0]            # one row a token
    elif "expert_names" in owner_of(w, decode_weights):
        fraction = 6 / w["shape"][0]            # top-6 of the experts
    touched_f32 += nbytes * fraction
    if w["dtype"] in PACKED_DTYPES:             # bound as released (--weight-storage=released)
        touched_released += nbytes * fraction
    elif "expert_names" in w:
        touched_released += n * fraction * 17 / 32      # MXFP4: 4 bits + a UE8M0 per 32
    elif len(w["shape"]) >= 2 and min(w["shape"][-2:]) >= 64:
        touched_released += n * fraction * (1 + 1 / 1024)   # FP8 + 32x32 UE8M0 blocks
    else:
        touched_released += 4 * n * fraction


def run(ids, *extra, profile=None, timeout=None):
    path = os.path.join(work, f"ids{len(ids)}")
    with open(path, "w") as f:
        f.write(",".join(map(str, ids)))
    cmd = [dsf_run, artifact, "--weights", weights, "--prompt-ids", "@" + path] + list(extra)
    if prefill_chunk and len(ids) > int(prefill_chunk):
        cmd += ["--prefill-chunk", prefill_chunk]
    e = dict(env, DSF_CUDA_PROFILE=profile) if profile else env
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return r.stderr, wall


def timing(stderr):
    m = re.search(r"prefill (\d+) tokens ([0-9.]+) s.*?(?:decode (\d+) tokens ([0-9.]+) s)?", stderr)
    d = re.search(r"decode (\d+) tokens ([0-9.]+) s", stderr)
    return float(m.group(2)), (float(d.group(2)) / int(d.group(1)) if d else None)


# --- per-kernel tables ------------------------------------------------------
def parse_profile(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"\| (\S+) \(([^)]*)\) \| (\d+) \| ([0-9.]+) \|", line)
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3)), float(m.group(4))))
    return out


def op_of(kernel):
    """prefill_layer20__linear_attn_wq_b_3 -> (prefill, linear_attn_wq_b); a helper's kernel, shared by the
    entry points, comes filed under the one that launched it: decode/dsf_topk_k512_from256__index_topk_0 ->
    (decode, index_topk)."""
    scope, slash, rest = kernel.partition("/")
    if slash:
        kernel = rest
    func, _, tail = kernel.partition("__")
    phase = scope if slash else func.split("_")[0]
    return phase, re.sub(r"_\d+$", "", tail) or func



# The products' weights by the tag dsf-name-kernels gives their kernels:
# "linear_attn_wq_b" -> the elements of every layers.N.attn.wq_b.weight.
prefill_entry = next(e for e in manifest["entry_points"] if e["name"] == "prefill")
weight_elements, expert_elements, expert_bytes = {}, 0, 0
weight_bytes = {}   # bytes of every layer's weight (its scales included), as the artifact binds it
prefill_weights = {w["name"]: w for w in prefill_entry["weights"]}
for w in prefill_entry["weights"]:
    nbytes, n = bound_size(w)
    owner = owner_of(w, prefill_weights)
    if "expert_names" in owner:
        expert_elements += n
        expert_bytes += nbytes
        continue
    key = re.sub(r"^layers\.\d+\.", "", owner["name"])
    key = re.sub(r"\.weight$", "", key).replace(".", "_")
    weight_elements[key] = weight_elements.get(key, 0) + n
    weight_bytes[key] = weight_bytes.get(key, 0) + nbytes


def op_work(op, tokens):
    """(FLOPs, weight bytes) of one call of an op over all layers, or (0, 0)."""
    if op == "moe_experts":
        return 2 * tokens * expert_elements * 6 // 8, expert_bytes * (6 if tokens == 1 else 8) // 8
    for prefix in ("linear_", "grouped_linear_"):
        if op.startswith(prefix) and op[len(prefix):] in weight_elements:
            key = op[len(prefix):]
            return 2 * tokens * weight_elements[key], weight_bytes[key]
    return 0, 0


rng = np.random.default_rng(5)
say(f"# dsf on a V4.1-Flash-shaped model (8 experts), {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
say()
gpu = gpu_name()
CEILINGS = ceilings(gpu)
HBM, TENSOR = CEILINGS["hbm"], CEILINGS["tensor"]
say(f"Machine: {gpu}. Command: `python3 bench/gpu_v41_real_size.py DSF_RUN shaped.dsfa OUT.md "
    f"{' '.join(map(str, contexts))}`. Random weights in the released formats: "
    f"{os.path.getsize(weights) / 1e9:.1f} GB, written in {weights_s:.0f} s.")
say()

# Numbers first: a short run's logits must be finite.
import safetensors_io  # noqa: E402  (tools/scripts puts test/reference on the path)
stderr, load_wall = run(list(rng.integers(0, vocab, 64)), "--max-new-tokens", "4",
                        "--dump-logits", os.path.join(work, "logits.safetensors"))
logits = safetensors_io.load(os.path.join(work, "logits.safetensors"))
finite = all(np.isfinite(v).all() for v in logits.values())
spread = float(np.std(next(iter(logits.values()))))
say(f"- 64-token prompt and 3 decode tokens: logits finite: {finite} (std {spread:.3g}); "
    f"the process (weight load included) took {load_wall:.0f} s.")
if not finite:
    sys.exit("non-finite logits: the figures below would mean nothing")

rows, profiles = [], {}
for n in contexts:
    ids = list(rng.integers(0, vocab, n))
    try:
        stderr, wall = run(ids, "--max-new-tokens", "9", "--timing", "--warmup", "1" if n <= 2048 else "0",
                           timeout=int(os.environ.get("DSF_BENCH_TIMEOUT", "540")))
        prefill_s, decode_s = timing(stderr)
        rows.append((n, prefill_s, decode_s, wall))
        say(f"- context {n}: prefill {prefill_s:.3f} s, decode {decode_s * 1e3:.1f} ms a token "
            f"(process {wall:.0f} s)")
    except (subprocess.TimeoutExpired, RuntimeError) as e:
        rows.append((n, None, None, None))
        why = str(e).splitlines()
        # The command, then dsf-run's last lines: the reason it stopped.
        say(f"- context {n}: did not finish: {why[0][:200]}" +
            "".join(f"\n  > {line[:300]}" for line in why[-6:][1:] if line.strip()))
        continue
    if n <= profile_up_to:   # the per-kernel tables (a second prefill each)
        prof = os.path.join(work, f"profile{n}.md")
        run(ids, "--max-new-tokens", "3", profile=prof)
        profiles[n] = parse_profile(open(prof).read())

say()
say("## Decode at batch 1 against the byte floor")
say()
say("| context | decode ms/token | floor, dsf's bytes (weights as bound, f32 caches) | x floor "
    "| floor, released bytes (FP8/FP4) | x floor |")
say("|---|---|---|---|---|---|")
for n, prefill_s, decode_s, _ in rows:
    if decode_s is None:
        continue
    f32 = (touched_f32 + kv_read(n, True)) / HBM
    rel = (touched_released + kv_read(n, False)) / HBM
    say(f"| {n} | {decode_s * 1e3:.1f} | {f32 * 1e3:.2f} ms | x{decode_s / f32:.1f} | {rel * 1e3:.2f} ms | "
        f"x{decode_s / rel:.1f} |")
say()
bound = sorted({w["dtype"] for w in decode["weights"]})
say(f"Weights touched a decode token: {touched_f32 / 1e9:.1f} GB as dsf binds them ({', '.join(bound)}), "
    f"{touched_released / 1e9:.2f} GB in the released formats. This is @decode, one sequence; batches of 8 "
    f"and 64 (@batch_decode): bench/gpu_batch_decode.py --shaped.")
say()
say("## Prefill")
say()
say("| tokens | seconds | tokens/s |")
say("|---|---|---|")
for n, prefill_s, _, _ in rows:
    say(f"| {n} | {prefill_s:.2f} | {n / prefill_s:.0f} |" if prefill_s else f"| {n} | did not finish | |")


def chunked(n):
    """Whether a prompt of n tokens runs in chunks (DSF_BENCH_PREFILL_CHUNK): then @prefill takes the first
    chunk and @decode the others, so the profile's decode kernels are the later chunks' as well as the 2
    decode calls', which a kernel's name does not tell apart."""
    return bool(prefill_chunk) and n > int(prefill_chunk)


for n, kernels in profiles.items():
    say()
    if chunked(n):
        say(f"## Where the time goes at context {n} (DSF_CUDA_PROFILE: the prompt's first {prefill_chunk}-token chunk)")
        say()
        say(f"The prompt ran in chunks of {prefill_chunk} (DSF_BENCH_PREFILL_CHUNK): the table is @prefill's "
            f"call over the first chunk; the later chunks ran through @decode with the decode calls, so this "
            f"run has no table of a decode token's kernels (nor 5c's dsf column).")
    else:
        say(f"## Where the time goes at context {n} (DSF_CUDA_PROFILE: prefill, then 2 decode calls)")
    say()
    for phase, calls in (("prefill", 1),) if chunked(n) else (("prefill", 1), ("decode", 2)):
        by_op = {}
        for name, shape, launches, us in kernels:
            p, op = op_of(name)
            if p != phase:
                continue
            t = by_op.setdefault(op, [0, 0.0, set()])
            t[0] += launches
            t[1] += us
            t[2].add(shape)
        total = sum(t[1] for t in by_op.values())
        say(f"### {phase}: {total / 1e3 / calls:.1f} ms of kernel time a call, "
            f"{sum(t[0] for t in by_op.values()) // calls} launches a call")
        say()
        say(f"| dsf op (all layers) | launches a call | ms a call | share | GFLOP a call | TFLOP/s (of {TENSOR / 1e12:.0f} bf16) "
            f"| weight GB a call | TB/s (of {HBM / 1e12:.2f}) | launch shapes |")
        say("|---|---|---|---|---|---|---|---|---|")
        tokens = (int(prefill_chunk) if chunked(n) else n) if phase == "prefill" else 1
        for op, (launches, us, shapes) in sorted(by_op.items(), key=lambda kv: -kv[1][1])[:16]:
            flops, nbytes = op_work(op, tokens)
            sec = us / 1e6 / calls
            work = (f"{flops / 1e9:.0f} | {flops / sec / 1e12:.2f} ({100 * flops / sec / TENSOR:.2f} %) | "
                    f"{nbytes / 1e9:.2f} | {nbytes / sec / 1e12:.2f} ({100 * nbytes / sec / HBM:.1f} %)"
                    if flops else "| | |")
            say(f"| {op} | {launches // calls} | {sec * 1e3:.2f} | {100 * us / total:.1f} % | {work} | "
                f"{', '.join(sorted(shapes)[:3])}{' ...' if len(shapes) > 3 else ''} |")
        say()
        say("FLOPs and bytes for the products only (2 x tokens x weight elements; weights read once, as bound, "
            "the routed experts' top-6 of 8 at decode and all 8 at prefill); other ops: time only.")
        say()

# --- 5c: the indexer and the sparse attention in PyTorch ---------------------
try:
    import torch
except ImportError:
    torch = None
if torch is not None and torch.cuda.is_available():
    dev = torch.device("cuda")
    e2m1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6], device=dev)

    def fp4_rows(rows, width, block, scale):
        """Random FP4 rows (two E2M1 a byte) and their per-block scales."""
        codes = torch.randint(0, 256, (rows, width // 2), dtype=torch.uint8, device=dev)
        scales = torch.full((rows, width // block), scale, device=dev)
        return codes, scales

    def decode_fp4(codes, scales, block):
        lo, hi = (codes & 15).long(), (codes >> 4).long()
        v = torch.stack((e2m1[lo], e2m1[hi]), -1).reshape(codes.shape[0], -1)
        return (v.view(codes.shape[0], -1, block) * scales.unsqueeze(-1)).reshape(codes.shape[0], -1)

    def cuda_time(fn, reps=50):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        return float(np.median(times))

    say("## 5c: one decode token's indexer and sparse attention, dsf against PyTorch (same GPU, same run)")
    say()
    say("PyTorch: fp32 as dsf computes, FP4 decoded in the timed region, CUDA events, median of 50. "
        "dsf: the kernels dsf-name-kernels names after the op, summed over one decode call "
        "(layer 20: the indexer over the whole context, ratio 1; attention over 512 + 128 entries).")
    say()
    kernels_by_op = {}
    say(f"| context | op | PyTorch us | dsf us | dsf / PyTorch | PyTorch bytes / {HBM / 1e12:.2f} TB/s |")
    say("|---|---|---|---|---|---|")
    for n in contexts:
        keys, kscale = fp4_rows(n, 128, 32, 2.0 ** -3)
        q = torch.randn(32, 128, device=dev)
        hw = torch.randn(32, device=dev)

        def indexer():
            k = decode_fp4(keys, kscale, 32)
            s = (torch.relu(q @ k.T) * hw[:, None]).sum(0)
            return torch.topk(s, 512).indices

        kv, vscale = fp4_rows(n, 512, 16, 2.0 ** -3)
        window = torch.randn(128, 512, device=dev)
        qa = torch.randn(64, 512, device=dev)
        sink = torch.randn(64, device=dev)
        sel = torch.randint(0, n, (512,), device=dev)

        def attention():
            rows = torch.cat((decode_fp4(kv[sel], vscale[sel], 16), window))
            s = (qa @ rows.T) * 512 ** -0.5
            s = torch.cat((s, sink[:, None]), 1).softmax(-1)[:, :-1]
            return s @ rows

        ours = {}
        topk_us, topk_launches = 0.0, 0
        attn_us, attn_launches = 0.0, 0
        for name, shape, launches, us in ([] if chunked(n) else profiles.get(n, [])):
            if name.startswith("decode_layer20__"):
                op = op_of(name)[1]
                ours[op] = ours.get(op, 0.0) + us / 2
            elif name.startswith("decode/dsf_topk_"):
                topk_us, topk_launches = topk_us + us, topk_launches + launches
            elif re.match(r"decode/dsf_attention_.*_k[1-9]", name):
                attn_us, attn_launches = attn_us + us, attn_launches + launches
        # The top-k is one kernel shared by every indexer layer (dsf-gpu-select-topk): layer 20's share is
        # counted as the mean of its decode launches (the layers with fewer entries make that an
        # underestimate for layer 20, whose ratio-1 cache has the most).
        if topk_launches:
            ours["index_topk (shared top-k kernel, mean a launch)"] = topk_us / topk_launches
        # Sparse attention is one kernel shared by every compressed layer (dsf-gpu-sink-attention), the
        # same 512 + 128 columns in each: a launch's mean is layer 20's.
        if attn_launches:
            ours["attention (shared kernel, mean a launch)"] = attn_us / attn_launches
        dsf_index = sum(v for k, v in ours.items() if k.startswith("index"))  # index_score, index_topk
        dsf_attn = sum(v for k, v in ours.items() if k.startswith("attention"))
        for label, fn, ours_us, nbytes in (("indexer + top-512", indexer, dsf_index, n * 68),
                                           ("sparse attention", attention, dsf_attn, 640 * 288)):
            t = cuda_time(fn)
            mine = f"{ours_us:.1f}" if ours_us else "n/a"
            ratio = f"x{ours_us / t:.1f}" if ours_us else ""
            say(f"| {n} | {label} | {t:.1f} | {mine} | {ratio} | {nbytes / HBM * 1e6:.2f} us |")
        if ours:
            kernels_by_op[n] = ours
    say()
    for n, ours in kernels_by_op.items():
        say(f"dsf's layer-20 decode kernels by op at context {n}: " +
            ", ".join(f"{k} {v:.0f} us" for k, v in sorted(ours.items(), key=lambda kv: -kv[1])[:12]))

open(out_md, "w").write("\n".join(lines) + "\n")
