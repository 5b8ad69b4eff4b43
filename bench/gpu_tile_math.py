"""Question: what do the tensor cores give dsf's tiled products, and what do
they cost in accuracy? (issue 5: mma.sync m16n8k8 on tf32 operands, f32
accumulation, in the kernels of dsf-gpu-tiled-matmul, -grouped-experts and
-batched-contraction; dsf-compile --tile-math)

Runs on the GPU machine over artifacts of one model built with
--tile-math=f32 (the SIMT kernels: the anchor, same run), 3xtf32 and tf32:
  python3 bench/gpu_tile_math.py DSF_RUN WEIGHTS OUT.md F32.dsfa 3XTF32.dsfa TF32.dsfa
For prompts of 64, 256 and 1,024 tokens: prefill seconds (dsf-run --timing,
two warm-up runs, best of 3), and the logits' relative error and argmax
agreement against the f32 artifact's on the same ids.
"""
import datetime
import os
import random
import subprocess
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "test", "reference"))
import safetensors_io  # noqa: E402

dsf_run, weights, out_md = sys.argv[1:4]
artifacts = {"f32 (SIMT)": sys.argv[4], "3xtf32 (tensor cores)": sys.argv[5], "tf32 (tensor cores)": sys.argv[6]}
env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
work = "/tmp/dsf-tile-math"
os.makedirs(work, exist_ok=True)


def prefill(artifact, ids, dump):
    best = None
    for _ in range(3):
        p = subprocess.run([dsf_run, artifact, "--weights", weights, "--prompt-ids", ",".join(map(str, ids)),
                            "--timing", "--warmup", "2", "--dump-logits", dump], capture_output=True, text=True,
                           env=env, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-1500:])
        t = float(p.stderr.split("prefill ")[1].split(" tokens ")[1].split(" s")[0])
        best = t if best is None else min(best, t)
    return best


rng = random.Random(5)
sys.path.insert(0, os.path.join(root, "tools", "scripts"))
import dsfa_tool  # noqa: E402
vocab = dsfa_tool.manifest(open(artifacts["f32 (SIMT)"], "rb").read())["vocab_size"]
rows = []
for n in [64, 256, 1024]:
    ids = [rng.randrange(vocab) for _ in range(n)]
    times, logits = {}, {}
    for name, artifact in artifacts.items():
        dump = os.path.join(work, f"{n}-{name.split()[0]}.logits")
        times[name] = prefill(artifact, ids, dump)
        logits[name] = safetensors_io.load(dump)["logits"]
    ref = logits["f32 (SIMT)"]
    for name in artifacts:
        got = logits[name]
        finite = bool(np.isfinite(got).all())
        rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref)) if finite else float("nan")
        agree = int((got.argmax(-1) == ref.argmax(-1)).sum())
        rows.append((n, name, times[name], times["f32 (SIMT)"] / times[name], rel, agree, len(ref)))

gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                     text=True).stdout.strip()
lines = [
    "# Tensor cores in the tiled products (--tile-math), H200",
    "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
    f"- machine: {gpu} (device tool, nvidia-h200)",
    "- command: `python3 bench/gpu_tile_math.py dsf-run WEIGHTS OUT.md " +
    " ".join(os.path.basename(a) for a in artifacts.values()) + "`",
    "- anchor: the f32 SIMT artifact of the same model, same run (time and logits)",
    "",
    "| prompt | tile math | prefill s | speed-up vs f32 | logits rel. error vs f32 | argmax agreement |",
    "|---|---|---|---|---|---|",
] + [f"| {n} | {name} | {t:.4f} | x{s:.2f} | {rel:.2e} | {agree}/{total} |" for n, name, t, s, rel, agree, total in rows]
open(out_md, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
