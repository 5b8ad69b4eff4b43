"""Question: what does a build's new kernel work save, per decode token and per
prefill, against the previous build's artifacts of the same models? First
asked of the mHC sites as one pass over the streams (dsf-gpu-fuse-mhc) and
the one-kernel top-k (dsf-gpu-select-topk), then of the one-kernel MoE
router (dsf-gpu-route-experts), then of sink attention as one kernel
(dsf-gpu-sink-attention), the split decode products (warpGemvSplit) and the
mHC coefficients a warp per token.

Runs on the GPU machine; the anchor is the previous build's artifact, run by
the same dsf-run in the same run, the two alternated:
  python3 bench/gpu_fused_sites.py DSF_RUN OUT.md NEW_DIR OLD_DIR [--shaped WEIGHTS NEW.dsfa OLD.dsfa [LABEL=MID.dsfa ...]]
  * NEW_DIR / OLD_DIR: scripts/gpu-check.sh prepare's folders (cuda.dsfa: the
    tiny V4.1 with NeMo's golden weights.safetensors; v4small-cuda.dsfa: the
    small V4, D 1024, 8 layers, 16 experts, random weights made here);
  * tiny V4.1: a 77-token prompt, 32 decode calls of one token, warm-up 2,
    3 rounds; small V4: 256 tokens, 32 decode calls, 3 rounds; both also
    under DSF_CUDA_PROFILE, prompt alone and prompt + 16 decode calls, whose
    difference gives a decode call's kernel time by dsf op;
  * --shaped: the V4.1-shaped model at real sizes (bench/gpu_v41_real_size.py's
    artifact and random weights in the released formats, made here when
    WEIGHTS is missing), 2,048 tokens and 8 decode calls, one round (its
    per-op table is gpu_v41_real_size.py's); LABEL=MID: artifacts of builds
    between the two, to attribute the difference.
The builds compared: 2026-11-30, af21b69 against 3226686 (one-pass mHC
sites and the one-kernel top-k), fb55565 (the warp-per-output product kernel
taking four depths an iteration) and 734a696 (the one-kernel MoE router);
2026-12-01, 734a696 against this session's build (one-kernel sink
attention, split decode products, the mHC coefficients a warp per token).
"""
import datetime
import os
import random
import re
import subprocess
import sys
from collections import defaultdict

args = sys.argv[1:]
shaped = None
if "--shaped" in args:
    i = args.index("--shaped")
    shaped = args[i + 1:]
    del args[i:]
dsf_run, out_md, new_dir, old_dir = args[:4]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tool = os.path.join(root, "tools", "scripts", "dsfa_tool.py")
env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
work = "/tmp/dsf-fused-sites"
os.makedirs(work, exist_ok=True)
lines = []


def say(text=""):
    print(text, flush=True)
    lines.append(text)


def run(artifact, weights, ids, new_tokens, warmup, profile=None, timeout=900):
    path = os.path.join(work, f"ids{len(ids)}")
    with open(path, "w") as f:
        f.write(",".join(map(str, ids)))
    e = dict(env, DSF_CUDA_PROFILE=profile) if profile else env
    cmd = [dsf_run, artifact, "--weights", weights, "--prompt-ids", "@" + path, "--max-new-tokens",
           str(new_tokens), "--timing", "--warmup", str(warmup)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    out = {"prefill_s": float(re.search(r"prefill \d+ tokens ([\d.]+) s", p.stderr).group(1))}
    for key, pattern in [("decode", r"decode (\d+) tokens ([\d.]+) s"),
                         ("prefill_launches", r"prefill (\d+) GPU kernel launches"),
                         ("decode_launches", r"decode (\d+) GPU kernel launches a call")]:
        m = re.search(pattern, p.stderr)
        if m and key == "decode":
            out["decode_s"] = float(m.group(2)) / int(m.group(1))
        elif m:
            out[key] = int(m.group(1))
    return out


def by_op(profile_path):
    """Kernel microseconds and launches by dsf op (the name after '__', less the ordinal)."""
    ops = defaultdict(lambda: [0.0, 0])
    for line in open(profile_path):
        m = re.match(r"\| (\S+) \([^)]*\) \| (\d+) \| ([0-9.]+) \|", line)
        if m:
            name = m.group(1)
            op = re.sub(r"_\d+$", "", name.split("__", 1)[1] if "__" in name else name)
            ops[op][0] += float(m.group(3))
            ops[op][1] += int(m.group(2))
    return ops


gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
say("# A build's kernel work against the previous build's artifacts on the H200")
say()
say(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
say(f"- machine: {gpu} (device tool, nvidia-h200)")
say("- command: `python3 bench/gpu_fused_sites.py " + " ".join(os.path.basename(a) for a in sys.argv[1:]) + "`")
say("- anchor: the previous compiler's artifacts of the same models (OLD_DIR and the second --shaped "
    "artifact), run by the same dsf-run, alternated in the same run")
say()

small_weights = os.path.join(work, "v4small.safetensors")
if not os.path.exists(small_weights):
    subprocess.run([sys.executable, tool, "random-weights", os.path.join(new_dir, "v4small-cuda.dsfa"), small_weights],
                   check=True)
rng = random.Random(11)
cases = [("tiny V4.1, 77 tokens, 32 decode calls", "cuda.dsfa", os.path.join(new_dir, "weights.safetensors"),
          [rng.randrange(512) for _ in range(77)], 33, 2, 3),
         ("small V4, 256 tokens, 32 decode calls", "v4small-cuda.dsfa", small_weights,
          [rng.randrange(1024) for _ in range(256)], 33, 2, 3)]
variants = [("this build", new_dir), ("previous build", old_dir)]

say("## Timings (best of the rounds)")
say()
say("| model | build | prefill ms | decode ms a token | prefill launches | decode launches a call |")
say("|---|---|---|---|---|---|")
results = {}
for label, name, weights, ids, new_tokens, warmup, rounds in cases:
    for _ in range(rounds):
        for variant, folder in variants:
            r = run(os.path.join(folder, name), weights, ids, new_tokens, warmup)
            best = results.setdefault((label, variant), r)
            for key in ("prefill_s", "decode_s"):
                best[key] = min(best[key], r[key])
    for variant, _ in variants:
        r = results[(label, variant)]
        say(f"| {label} | {variant} | {r['prefill_s'] * 1e3:.2f} | {r['decode_s'] * 1e3:.3f} | "
            f"{r.get('prefill_launches', 0)} | {r.get('decode_launches', 0)} |")
    new, old = results[(label, variants[0][0])], results[(label, variants[1][0])]
    say(f"| {label} | previous / this | x{old['prefill_s'] / new['prefill_s']:.2f} | "
        f"x{old['decode_s'] / new['decode_s']:.2f} | | |")

if shaped:
    shaped_weights, builds = shaped[0], [("this build", shaped[1]), ("previous build", shaped[2])]
    for mid in shaped[3:]:
        label, _, path = mid.partition("=")
        builds.append((f"between ({label})", path))
    if not os.path.exists(shaped_weights):
        os.makedirs(os.path.dirname(os.path.abspath(shaped_weights)), exist_ok=True)
        subprocess.run([sys.executable, tool, "random-weights-quantized", shaped[1], shaped_weights], check=True)
    ids = [rng.randrange(129280) for _ in range(2048)]
    for variant, artifact in builds:
        try:
            r = run(artifact, shaped_weights, ids, 9, 0, timeout=1200)
            say(f"| V4.1-shaped (real sizes, 8 experts), 2,048 tokens, 8 decode calls | {variant} | "
                f"{r['prefill_s'] * 1e3:.0f} | {r['decode_s'] * 1e3:.2f} | {r.get('prefill_launches', 0)} | "
                f"{r.get('decode_launches', 0)} |")
            results[("shaped", variant)] = r
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            say(f"| V4.1-shaped | {variant} | failed: {str(e).splitlines()[-1][:150] if str(e) else e} | | | |")
    if ("shaped", "this build") in results and ("shaped", "previous build") in results:
        new, old = results[("shaped", "this build")], results[("shaped", "previous build")]
        say(f"| V4.1-shaped | previous / this | x{old['prefill_s'] / new['prefill_s']:.2f} | "
            f"x{old['decode_s'] / new['decode_s']:.2f} | | |")

say()
say("## A decode call's kernel time by dsf op (DSF_CUDA_PROFILE: prompt + 16 decode calls less the prompt alone, / 16)")
for label, name, weights, ids, _, _, _ in cases:
    say()
    say(f"### {label.split(',')[0]}")
    say()
    per_call = {}
    for variant, folder in variants:
        full, alone = os.path.join(work, "full.md"), os.path.join(work, "alone.md")
        run(os.path.join(folder, name), weights, ids, 17, 0, profile=full)
        run(os.path.join(folder, name), weights, ids, 1, 0, profile=alone)
        a, b = by_op(full), by_op(alone)
        per_call[variant] = {op: ((a[op][0] - b.get(op, [0, 0])[0]) / 16, (a[op][1] - b.get(op, [0, 0])[1]) / 16)
                             for op in a}
    ops = sorted(set(per_call["this build"]) | set(per_call["previous build"]),
                 key=lambda op: -max(per_call[v].get(op, (0, 0))[0] for v in per_call))
    say("| dsf op | previous us | previous launches | this us | this launches |")
    say("|---|---|---|---|---|")
    totals = {v: [0.0, 0.0] for v in per_call}
    for op in ops:
        cells = []
        for v in ("previous build", "this build"):
            us, n = per_call[v].get(op, (0.0, 0.0))
            totals[v][0] += us
            totals[v][1] += n
            cells += [f"{us:.1f}", f"{n:.0f}"]
        if any(float(c) > 0.05 for c in cells):
            say(f"| {op} | " + " | ".join(cells) + " |")
    say(f"| **all** | {totals['previous build'][0]:.1f} | {totals['previous build'][1]:.0f} | "
        f"{totals['this build'][0]:.1f} | {totals['this build'][1]:.0f} |")
open(out_md, "w").write("\n".join(lines) + "\n")
