"""Question: what do the cache tiers save on the H200, for 1K to 32K prefixes?
(issue 6, tiny V4.1, quantizers on, NeMo's golden weights)

Runs on the GPU machine over the CUDA artifacts built on the development
machine (scripts/gpu-check.sh prepare: the tiny V4.1, and the same with
65,536 positions for the 32K prefix):
  python3 bench/gpu_tiers_v41.py DSF_RUN CUDA.dsfa CUDA_64K.dsfa WEIGHTS OUT.md
With CUDA_MODULE_LOADING=EAGER (every kernel loaded when the artifact is
opened, so no request pays for lazy loading), dsf-run --stats-json measures,
in one run, for prefixes of 1,024, 2,048, 4,064 (+16 new tokens: the tiny
model has 4,096 positions; prefix-store blocks of 16 tokens) and 32,752
tokens (blocks of 512: the store persists a block per call as it computes):
  * time to first token: cold (the anchor, same run), global KV from the
    prefix store with the windows replayed (16 tokens: approximate; 121:
    exact), and the whole state from the (in-process) host pool;
  * restore cost per tier, bytes and seconds, against a host memory copy of
    the same bytes and a page-cache read of the record files (this machine);
  * the replay error: logits of the 32 tokens after a 1,024-token prefix
    restored from the store, approximate and exact replay against the cold
    run."""
import datetime
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tier_floors  # noqa: E402

dsf_run, artifact4k, artifact64k, weights, out = sys.argv[1:6]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "test", "reference"))
import safetensors_io  # noqa: E402

work = "/tmp/dsf-gpu-tiers"
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
artifact, BLOCK = artifact4k, 16


def run(ids, *extra, stdin_lines=None, dump=None, host_decode=False):
    stats = os.path.join(work, "stats.json")
    cmd = [dsf_run, artifact, "--weights", weights, "--stats-json", stats, "--cache-block", str(BLOCK)] + list(extra)
    if dump:
        cmd += ["--dump-logits", dump]
    run_env = dict(env, DSF_DECODE_ON_HOST="1") if host_decode else env
    if stdin_lines is None:
        subprocess.run(cmd + ["--prompt-ids", ",".join(map(str, ids)), "--session", "bench"], check=True,
                       capture_output=True, env=run_env)
    else:
        text = "\n".join(",".join(map(str, l)) for l in stdin_lines) + "\n"
        subprocess.run(cmd + ["--multi-turn", "--session", "bench"], input=text, text=True, check=True,
                       capture_output=True, env=run_env)
    return json.load(open(stats))


def pinned_copy(nbytes):
    """Seconds of one host-to-device copy of nbytes from pinned memory
    (PyTorch, CUDA events): the floor of a bulk restore."""
    try:
        import torch
    except ImportError:
        return None
    src = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = None
    for _ in range(20):
        start.record()
        dst.copy_(src, non_blocking=True)
        stop.record()
        stop.synchronize()
        t = start.elapsed_time(stop) / 1e3
        best = t if best is None else min(best, t)
    return best


rng = random.Random(7)
ttft, restore = [], []
for prefix in [1024, 2048, 4064, 32752]:
    if prefix > 4080:
        artifact, BLOCK = artifact64k, 512
    ids = [rng.randrange(512) for _ in range(prefix + 16)]
    cache = os.path.join(work, f"kv{prefix}")
    cold = min((run(ids)[0] for _ in range(2)), key=lambda r: r["first_token_seconds"])
    run(ids[:prefix], "--cache-dir", cache)   # persists the prefix's blocks
    approx = run(ids, "--cache-dir", cache)[0]
    shutil.rmtree(cache)
    run(ids[:prefix], "--cache-dir", cache)
    exact = run(ids, "--cache-dir", cache, "--replay", "exact")[0]
    host = run(None, stdin_lines=[ids[:prefix], ids])[1]
    # The same restores with the state decoded on the host and uploaded as
    # f32 (the runtime's way before the device tier), in the same run.
    approx_hd = run(ids, "--cache-dir", cache, host_decode=True)[0]
    host_hd = run(None, stdin_lines=[ids[:prefix], ids], host_decode=True)[1]
    ttft.append((prefix, cold, approx, exact, host))
    read, read_s, records = tier_floors.store_read(cache)
    copy_s = tier_floors.memory_copy(host["host_bytes_read"])
    pinned_s = pinned_copy(max(host["host_bytes_read"], 1))
    restore.append((prefix, approx, host, read, read_s, copy_s, approx_hd, host_hd, pinned_s))

artifact, BLOCK = artifact4k, 16
ids = [rng.randrange(512) for _ in range(1024 + 32)]
cache = os.path.join(work, "replay")
run(ids[:1024], "--cache-dir", cache)
got = {}
for mode in ["approx", "exact"]:
    fresh = cache + "-" + mode
    shutil.copytree(cache, fresh)
    dump = os.path.join(work, f"{mode}.logits")
    run(ids, "--cache-dir", fresh, "--replay", mode, dump=dump)
    got[mode] = safetensors_io.load(dump)["logits"][-32:]
cold_dump = os.path.join(work, "cold.logits")
run(ids, dump=cold_dump)
ref = safetensors_io.load(cold_dump)["logits"][-32:]
errors = [(m, float(np.linalg.norm(g - ref) / np.linalg.norm(ref)), int((g.argmax(-1) == ref.argmax(-1)).sum()))
          for m, g in got.items()]
assert all(np.isfinite(g).all() for g in got.values())

gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
lines = [
    "# Cache tiers on the H200: tiny V4.1 (quantizers on, NeMo's golden weights), CUDA artifact",
    "",
    f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
    f"- machine: {gpu} (device tool, nvidia-h200)",
    "- command: `python3 bench/gpu_tiers_v41.py dsf-run cuda.dsfa cuda-64k.dsfa weights.safetensors OUT.md` "
    "(artifacts: `dsf-compile models/deepseek-v4.1-tiny --target=cuda`, and the same config with "
    "max_position_embeddings 65536: scripts/gpu-check.sh prepare), CUDA_MODULE_LOADING=EAGER",
    "- prefix-store blocks of 16 tokens (512 for the 32,752-token prefix) on the machine's disk; replay: 16 "
    "tokens (approximate) or 16 + 7 x 15 = 121 (exact); host pool in-process",
    "- anchor: the cold request (everything computed) in the same run",
    "",
    "## Time to first token of a follow-up (prefix + 16 tokens)",
    "",
    "| prefix | cold s | store + approx replay s | store + exact replay s | host pool s | best / cold |",
    "|---|---|---|---|---|---|",
] + [f"| {p} | {c['first_token_seconds']:.4f} | {a['first_token_seconds']:.4f} (replay {a['replay_seconds']:.4f}) | "
     f"{e['first_token_seconds']:.4f} (replay {e['replay_seconds']:.4f}) | {h['first_token_seconds']:.4f} | "
     f"x{min(a['first_token_seconds'], h['first_token_seconds']) / c['first_token_seconds']:.3f} |"
     for p, c, a, e, h in ttft] + [
    "",
    "## Restore cost per tier, against this machine's floors",
    "",
    "A restore is the tier's read and checks, one bulk copy of the packed bytes to the device and the runtime's "
    "decoding kernel (`runtime/src/device/state_codecs.cu`), until the state is on the device; in brackets the "
    "same restore decoded on the host and uploaded as f32 (DSF_DECODE_ON_HOST=1, the runtime's way before).",
    "",
    "| prefix | store: bytes, s (host decode) | page-cache read of the same files, s | host pool: bytes, s (host decode) "
    "| memory copy of those bytes, s | pinned copy of those bytes to the device, s |",
    "|---|---|---|---|---|---|",
] + [f"| {p} | {a['ssd_bytes_read']:,}, {a['restore_seconds']:.5f} ({ahd['restore_seconds']:.5f}) | "
     f"{read_s:.5f} ({read:,} B) | {h['host_bytes_read']:,}, {h['restore_seconds']:.5f} ({hhd['restore_seconds']:.5f}) | "
     f"{copy_s:.6f} | {'%.6f' % pinned_s if pinned_s is not None else 'no torch'} |"
     for p, a, h, read, read_s, copy_s, ahd, hhd, pinned_s in restore] + [
    "",
    "## Replay error: the 32 tokens after a 1,024-token prefix restored from the store",
    "",
    "| window rebuild | relative error vs the cold run | argmax agreement |",
    "|---|---|---|",
] + [f"| {m} replay | {rel:.3e} | {agree}/32 |" for m, rel, agree in errors]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
