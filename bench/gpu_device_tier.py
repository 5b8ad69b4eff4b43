"""Question: what does keeping a sequence's state on the device between calls
(issue 6's device tier) save, against sending it to the host after every
call and back with the next one (DSF_STATE_ON_HOST=1: the runtime's way
before), per decode token, at the tiny and at V4.1-Flash's real sizes?

Runs on the GPU machine, modes alternated in one run (the anchor is the
other mode, same run, same process setup):
  python3 bench/gpu_device_tier.py DSF_RUN OUT.md TINY.dsfa TINY_WEIGHTS \
      [--shaped SHAPED.dsfa SHAPED_WEIGHTS] [--baseline OTHER_DSF_RUN] [--cold64k TINY_64K.dsfa]
  * tiny V4.1 (scripts/gpu-check.sh prepare's cuda.dsfa, NeMo's golden
    weights): a 77-token prompt, 32 decode calls of one token, warm-up 2;
    3 rounds of the modes;
  * the V4.1-shaped model (bench/gpu_v41_real_size.py's artifact and random
    weights in the released formats): a 2,048-token prompt, 8 decode calls;
  * --baseline: the same timings with another build of dsf-run (the
    session's previous commit), to check that nothing else moved;
  * --cold64k: a 32,752-token cold prefill (the tiers benchmark's largest
    cold request) in each mode and with the baseline.
"""
import datetime
import os
import random
import re
import subprocess
import sys

args = sys.argv[1:]


def option(name, count=1):
    if name not in args:
        return None
    i = args.index(name)
    value = args[i + 1:i + 1 + count]
    del args[i:i + 1 + count]
    return value


shaped = option("--shaped", 2)
baseline = option("--baseline")
cold64k = option("--cold64k")
dsf_run, out_md, tiny, tiny_weights = args[:4]
env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
lines = []


def say(text=""):
    print(text, flush=True)
    lines.append(text)


def timed(binary, artifact, weights, ids, new_tokens, warmup, on_host, timeout=900):
    e = dict(env, DSF_STATE_ON_HOST="1") if on_host else env
    cmd = [binary, artifact, "--weights", weights, "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new_tokens), "--timing", "--warmup", str(warmup)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    m = re.search(r"prefill (\d+) tokens ([\d.]+) s", p.stderr)
    d = re.search(r"decode (\d+) tokens ([\d.]+) s", p.stderr)
    return float(m.group(2)), (float(d.group(2)) / int(d.group(1)) if d else None)


gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
say("# The device tier: a sequence's state kept on the device between calls (H200)")
say()
say(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
say(f"- machine: {gpu} (device tool, nvidia-h200)")
say("- command: `python3 bench/gpu_device_tier.py " + " ".join(os.path.basename(a) for a in sys.argv[1:]) + "`")
say("- anchor: the same runtime with DSF_STATE_ON_HOST=1 (the state copied to the host after every call and "
    "back before the next, as the runtime did before the device tier), alternated in the same run"
    + ("; and a baseline build of dsf-run (`--baseline`)" if baseline else ""))
say()
modes = [("device-resident state", dsf_run, False), ("state to the host every call", dsf_run, True)]
if baseline:
    modes.append(("baseline build", baseline[0], False))

if shaped and not os.path.exists(shaped[1]):
    # Random weights in the released formats, as bench/gpu_v41_real_size.py makes them.
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "scripts", "dsfa_tool.py")
    subprocess.run([sys.executable, tool, "random-weights-quantized", shaped[0], shaped[1]], check=True)

rng = random.Random(3)
cases = [("tiny V4.1, 77-token prompt, 32 decode calls", tiny, tiny_weights,
          [rng.randrange(512) for _ in range(77)], 33, 2, 3)]
if shaped:
    cases.append(("V4.1-shaped (real sizes, 8 experts), 2,048-token prompt, 8 decode calls", shaped[0], shaped[1],
                  [rng.randrange(129280) for _ in range(2048)], 9, 0, 1))

say("## Decode ms a token (best of the rounds)")
say()
say("| model | " + " | ".join(name for name, _, _ in modes) + " | device / host |")
say("|---|" + "---|" * (len(modes) + 1))
for label, artifact, weights, ids, new_tokens, warmup, rounds in cases:
    best = {}
    for _ in range(rounds):
        for name, binary, on_host in modes:
            try:
                _, per_token = timed(binary, artifact, weights, ids, new_tokens, warmup, on_host)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                say(f"- {label}, {name}: failed: {str(e).splitlines()[-1][:200] if str(e) else e}")
                continue
            best[name] = min(best.get(name, per_token), per_token)
    cells = [f"{best[n] * 1e3:.2f}" if n in best else "failed" for n, _, _ in modes]
    ratio = (f"x{best[modes[0][0]] / best[modes[1][0]]:.3f}" if modes[0][0] in best and modes[1][0] in best
             else "")
    say(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")

if cold64k:
    say()
    say("## Cold prefill of 32,752 tokens (tiny V4.1 with 65,536 positions), s")
    say()
    say("| " + " | ".join(name for name, _, _ in modes) + " |")
    say("|" + "---|" * len(modes))
    ids = [rng.randrange(512) for _ in range(32752)]
    cells = []
    for name, binary, on_host in modes:
        try:
            prefill_s, _ = timed(binary, cold64k[0], tiny_weights, ids, 1, 0, on_host)
            cells.append(f"{prefill_s:.3f}")
        except (RuntimeError, subprocess.TimeoutExpired):
            cells.append("failed")
    say("| " + " | ".join(cells) + " |")
open(out_md, "w").write("\n".join(lines) + "\n")
