"""Question: on the CPU target, what does binding the weights in their
released formats (dsf-compile --weight-storage=released: the routed
experts' MXFP4 and the projections' FP8 codes and scales, decoded as the
products read them) cost or save against binding them bf16 (declared, the
anchor), and are the logits the same?

The model: bench/configs/deepseek-v4.1-shaped-8e-5l (V4.1-Flash's sizes, 5
layers, 8 routed experts, FP8 dense and MXFP4 expert weights), random
weights in the released formats (tools/scripts/dsfa_tool.py
random-weights-quantized). Both artifacts are built here, --target=cpu
--no-batch-decode, and run by the same dsf-run on the same weights and ids.

  python3 bench/cpu_released_weights.py DSF_COMPILE DSF_RUN OUT.md [--config=DIR] [--prompt=N] [--tokens=N]

Reports the bytes each artifact binds, its prefill time, its decode time a
token (after --warmup 1), and whether the two dumps of logits are equal bit
for bit (they must be: the decoded values are the ones the runtime would
have rounded to bf16, exactly).
"""
import datetime
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tools", "scripts"))
sys.path.insert(0, os.path.join(root, "test", "reference"))
import dsfa_tool  # noqa: E402
import safetensors_io  # noqa: E402
from batch_runs import Report  # noqa: E402  (bench/, this script's folder)


def option(name, default):
    for a in sys.argv[4:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


dsf_compile, dsf_run, out_md = sys.argv[1:4]
config = option("config", os.path.join(root, "bench", "configs", "deepseek-v4.1-shaped-8e-5l"))
prompt, tokens = int(option("prompt", "64")), int(option("tokens", "9"))
work = "/tmp/dsf-cpu-released"
os.makedirs(work, exist_ok=True)
say = Report(out_md)


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


BYTES = {"f32": 4, "i32": 4, "bf16": 2, "e2m1x2": 1, "e4m3": 1, "ue8m0": 1}


def bound_bytes(path):
    seen, total = set(), 0
    for entry in dsfa_tool.manifest(open(path, "rb").read())["entry_points"]:
        for w in entry["weights"]:
            if w["name"] not in seen:
                seen.add(w["name"])
                total += int(np.prod(w["shape"])) * BYTES[w["dtype"]]
    return total


say(f"# Weights bound in the released formats (FP8, MXFP4) against bf16, CPU target, "
    f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
say()
say(f"- machine: {cpu_name()}, {os.cpu_count()} cores (the development machine)")
say(f"- command: `python3 bench/cpu_released_weights.py DSF_COMPILE DSF_RUN OUT.md {' '.join(sys.argv[4:])}`".rstrip())
say(f"- model: {os.path.relpath(config, root)}, --target=cpu --no-batch-decode")
say("- anchor: declared (the weights bound bf16), built and run here in the same run")
say()
artifacts = {}
for name, extra in (("declared", []), ("released", ["--weight-storage=released"])):
    path = os.path.join(work, f"{name}.dsfa")
    t0 = time.perf_counter()
    subprocess.run([dsf_compile, config, "--target=cpu", "--no-batch-decode", *extra, "-o", path], check=True,
                   capture_output=True)
    artifacts[name] = path
    say(f"- {name}: built in {time.perf_counter() - t0:.0f} s, binds {bound_bytes(path) / 1e9:.2f} GB of weights")
weights = os.path.join(work, "weights.safetensors")
t0 = time.perf_counter()
dsfa_tool.write_random_quantized(open(artifacts["released"], "rb").read(), weights, pool_size=1 << 22)
say(f"- weights: random in the released formats, {os.path.getsize(weights) / 1e9:.2f} GB, written in "
    f"{time.perf_counter() - t0:.0f} s")
vocab = dsfa_tool.manifest(open(artifacts["declared"], "rb").read())["vocab_size"]
ids = os.path.join(work, "ids")
with open(ids, "w") as f:
    f.write(",".join(map(str, np.random.default_rng(3).integers(0, vocab, prompt))))

results = {}
for name, path in artifacts.items():
    dump = os.path.join(work, f"{name}.logits")
    t0 = time.perf_counter()
    r = subprocess.run([dsf_run, path, "--weights", weights, "--prompt-ids", "@" + ids, "--max-new-tokens",
                        str(tokens), "--timing", "--warmup", "1", "--dump-logits", dump], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        say(f"- {name}: dsf-run exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
        sys.exit(1)
    p = re.search(r"prefill (\d+) tokens ([0-9.]+) s", r.stderr)
    d = re.search(r"decode (\d+) tokens ([0-9.]+) s", r.stderr)
    results[name] = (float(p.group(2)), float(d.group(2)) / int(d.group(1)), wall, dump)
    say(f"- {name}: prefill {results[name][0]:.2f} s, decode {results[name][1] * 1e3:.0f} ms a token "
        f"(process {wall:.0f} s, weight load included)")

a, b = (safetensors_io.load(results[n][3]) for n in ("declared", "released"))
same = a.keys() == b.keys() and all(np.array_equal(a[k].view(np.uint32), b[k].view(np.uint32)) for k in a)
finite = all(np.isfinite(v).all() for v in b.values())
say()
say(f"| binding | weights bound | prefill {prompt} tokens s | decode ms a token | anchor / this (decode) |")
say("|---|---|---|---|---|")
for name in ("declared", "released"):
    prefill_s, decode_s, _, _ = results[name]
    say(f"| {name} | {bound_bytes(artifacts[name]) / 1e9:.2f} GB | {prefill_s:.2f} | {decode_s * 1e3:.0f} | "
        f"x{results['declared'][1] / decode_s:.2f} |")
say()
say(f"- logits released against declared: bit for bit equal: {same}; finite: {finite}")
if not (same and finite):
    sys.exit(1)
