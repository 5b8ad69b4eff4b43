"""Question: which kernels should a batched decode step's products take, whose
rows (8-64 tokens; 6 of them an expert on average at batch 8) are too few
for 128 x 128 tiles? (issue 5b: decode step time at batch 8 and 64; the
profile of bench/results/gpu-batch-decode.md: the routed experts' tiles 73 %
of a batch of 8's step, the shared FFN's 18 tiles for 132 SMs at 64)

Runs on the GPU machine over builds of one model made on the development
machine, the first the anchor (the build before the change):
  python3 bench/gpu_batch_kernels.py DSF_RUN OUT.md NAME=ART [NAME=ART ...] [--context N] [--batches 1,8,64]
                                     [--profile-batch 8,64] [--prefill-against NAME=ART [--prefill-tokens N]]
                                     [--rounds N] [--env NAME:VAR=VALUE ...] [--repeat NAME] [--new-tokens N]

For each build, the same random weights in the released formats
(dsfa_tool.write_random_quantized) and the same --context-token prompt
(default 2,048), prefilled once and decoded as each batch (dsf-run --batch;
a step is the median of the 7 after the first, which captures its graph,
or of N - 2 with --new-tokens N, default 9: more steps a run for a steadier median;
with --rounds N, the median of N such runs, the builds taking turns, for
differences of a few percent: the larger of the middle two when N is even);
--env runs build NAME with VAR=VALUE set (the same artifact under a runtime
switch is then a build of its own); --repeat NAME runs build NAME again at
the end of each round, as NAME-again: the same artifact twice in one run,
whose ratio is the spread within which two builds' difference is not
established (two builds whose batched step was the same code byte for byte
ran 7.83 and 9.26 ms at batch 64 in one run of two rounds on an H100:
bench/results/gpu-fused-consumers.md);
then each --profile-batch step by dsf op (DSF_CUDA_PROFILE: every launch
timed alone, no graph) with the builds side by side. The tokens each build
prints are compared with the anchor's, a batch at a time: a batch's
sequences are copies of one prompt, so it is one decode (one divergence
changes all of its lines), and within a run the copies must print the same
line. Another order of the same f32 sums may change argmax only where two
logits are within rounding, and greedy decoding of random weights then
follows another path from that token on.
With --prefill-against, every build's logits for the prompt's first N tokens
(default 100: a prefill's products of 16-127 rows) are compared with that
build's (test/runtime/Inputs/check_logits.py: relative error, argmax): a
build that changes only the order of the same sums must stay within rounding
of it.
"""
import datetime
import os
import subprocess
import sys
import time


root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tools", "scripts"))
from batch_runs import (Report, batch_steps, build_args, gpu_name, profile_by_op,  # noqa: E402
                        random_weights_and_prompt, run_dsf)

args = sys.argv[1:]
prefill_reference, prefill_tokens, rounds, environments, repeat, new_tokens, rest = None, 100, 1, {}, None, 9, []
i = 0
while i < len(args):
    if args[i] == "--rounds":
        rounds = int(args[i + 1])
        i += 2
    elif args[i] == "--env":
        name, _, setting = args[i + 1].partition(":")
        variable, _, value = setting.partition("=")
        environments.setdefault(name, {})[variable] = value
        i += 2
    elif args[i] == "--new-tokens":
        new_tokens = int(args[i + 1])
        if new_tokens < 3:
            sys.exit(f"--new-tokens {new_tokens}: a run needs 3 or more (the first step captures the graph)")
        i += 2
    elif args[i] == "--repeat":
        repeat = args[i + 1]
        i += 2
    elif args[i] == "--prefill-against":
        prefill_reference = tuple(args[i + 1].split("=", 1))
        i += 2
    elif args[i] == "--prefill-tokens":
        prefill_tokens = int(args[i + 1])
        i += 2
    else:
        rest.append(args[i])
        i += 1
dsf_run, out_md, builds, context, batches, profile_batches = build_args(rest, 2048)
if not builds:
    sys.exit("give at least one build as NAME=ARTIFACT")
if repeat is not None:
    again = [artifact for name, artifact in builds if name == repeat]
    if not again:
        sys.exit(f"--repeat {repeat}: no build of that name (builds: {', '.join(n for n, _ in builds)})")
    builds.append((repeat + "-again", again[0]))
    if repeat in environments:
        environments[repeat + "-again"] = environments[repeat]

work = "/tmp/dsf-batch-kernels"
os.makedirs(work, exist_ok=True)
say = Report(out_md)


def run(artifact, weights, ids_path, extra, environment=None, name=None):
    """dsf-run on `artifact`, with build `name`'s --env settings."""
    return run_dsf(dsf_run, artifact, weights, ids_path, extra, dict(environments.get(name, {}), **(environment or {})))


gpu = gpu_name()
say(f"# Kernels for a batched decode step's products, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
say()
say(f"- machine: {gpu} (device tool)")
say(f"- command: `python3 bench/gpu_batch_kernels.py DSF_RUN OUT.md {' '.join(args[2:])}`")
say(f"- anchor: {builds[0][0]} ({os.path.basename(builds[0][1])}), in the same run")
for name, settings in environments.items():
    say(f"- {name} runs with " + ", ".join(f"{k}={v}" for k, v in settings.items()))
say(f"- a run decodes {new_tokens} tokens a sequence; its step: the median of the {new_tokens - 2} steps after the first")
if rounds > 1:
    say(f"- a step: the median over {rounds} runs, the builds taking turns, of each run's median step"
        + (" (the larger of the middle two)" if rounds % 2 == 0 else ""))
say()

started = time.monotonic()
weights, ids_path, manifest = random_weights_and_prompt(work, builds[0][1], context)
print(f"{time.monotonic() - started:.0f} s: weights and prompt written", flush=True)

batch_list = ",".join(map(str, batches))
samples, tokens, launches = {name: {} for name, _ in builds}, {}, {name: {} for name, _ in builds}
for _ in range(rounds):
    for name, artifact in builds:
        err, out = run(artifact, weights, ids_path, ["--max-new-tokens", str(new_tokens), "--batch", batch_list], name=name)
        for batch, step in batch_steps(err).items():
            samples[name].setdefault(batch, []).append(step[0])
            launches[name][batch] = step[2]
        tokens[name] = out.split()
        # Progress on stdout, so a run cut off by its time limit still shows the steps measured.
        print(f"{time.monotonic() - started:.0f} s: {name}: " + ", ".join(f"batch {b} {s[-1]:.2f} ms" for b, s in sorted(samples[name].items())), flush=True)
steps = {name: {batch: sorted(s)[len(s) // 2] for batch, s in by_batch.items()} for name, by_batch in samples.items()}

say(f"## Step time, a {context}-token prompt decoded as {batch_list} sequences")
say()
say("| batch | " + " | ".join(f"{n} ms" for n, _ in builds) + " | " +
    " | ".join(f"{builds[0][0]} / {n}" for n, _ in builds[1:]) + " |")
say("|---" * (2 * len(builds)) + "|")
for batch in batches:
    cells = [f"{steps[n].get(batch, float('nan')):.2f}" for n, _ in builds]
    ratios = [f"x{steps[builds[0][0]][batch] / steps[n][batch]:.2f}" for n, _ in builds[1:]
              if batch in steps[n] and batch in steps[builds[0][0]]]
    say(f"| {batch} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
say()
say("GPU kernel launches a step: " + "; ".join(
    f"{n} " + ", ".join(f"{launches[n].get(b) or '?'} at {b}" for b in batches) for n, _ in builds))
say()
if repeat is not None:
    first, last = steps[repeat], steps[repeat + "-again"]
    spread = [(b, max(first[b], last[b]) / min(first[b], last[b])) for b in batches if b in first and b in last]
    say(f"The same artifact twice ({repeat} in its place and {repeat}-again at the end of each round): "
        + ", ".join(f"x{s:.3f} at batch {b}" for b, s in spread)
        + "; a difference between builds within that is not established by this run.")
    say()


def by_batch(lines):
    """A run's printed lines, one a sequence, batch by batch in --batches' order: {batch: [lines]}."""
    out, at = {}, 0
    for batch in batches:
        out[batch], at = lines[at:at + batch], at + batch
    return out


def first_difference(a, b):
    """The first generated token (1-based) where two lines of comma-separated ids differ, or None."""
    x, y = a.split(","), b.split(",")
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q:
            return i + 1
    return None if len(x) == len(y) else min(len(x), len(y)) + 1


# A batch's sequences are copies of one prompt, so within a run they must print the same line (the slots
# must not change a sequence's sums), and between builds one divergence changes all of a batch's lines:
# what is compared is one decode a batch, not a line each.
for name, _ in builds:
    for batch, lines in by_batch(tokens[name]).items():
        if len(set(lines)) > 1:
            say(f"- **{name} at batch {batch}: its copies of one prompt printed {len(set(lines))} different lines** "
                "(a slot changed a sequence's sums)")
anchor_name = builds[0][0]
anchor_by_batch = by_batch(tokens[anchor_name])
for name, _ in builds[1:]:
    parts = []
    for batch, lines in by_batch(tokens[name]).items():
        anchor_lines = anchor_by_batch[batch]
        if not lines or not anchor_lines:
            continue
        at = first_difference(lines[0], anchor_lines[0])
        parts.append(f"batch {batch} " + ("the same" if at is None else f"differs from token {at}"))
    say(f"- {name}'s generated tokens against {anchor_name}'s (one decode a batch: its sequences are copies): "
        + "; ".join(parts))
say()

for profile_batch in profile_batches:
    by_build = {}
    for name, artifact in builds:
        prof = os.path.join(work, f"profile-{name}-{profile_batch}.md")
        run(artifact, weights, ids_path, ["--max-new-tokens", "5", "--batch", str(profile_batch)],
            {"DSF_CUDA_PROFILE": prof}, name=name)
        by_build[name] = profile_by_op(prof, steps=4)
    anchor = by_build[builds[0][0]]
    ops = sorted(set().union(*by_build.values()), key=lambda op: -anchor.get(op, [0, 0.0])[1])
    say(f"## A step of {profile_batch} sequences by dsf op (ms a step (launches a step), all layers; "
        "DSF_CUDA_PROFILE, 4 steps, each launch timed alone)")
    say()
    say("| dsf op | " + " | ".join(n for n, _ in builds) + " |")
    say("|---" * (len(builds) + 1) + "|")
    cell = lambda t: f"{t[1]:.2f} ({t[0]:.0f})"
    for op in ops[:16]:
        say(f"| {op} | " + " | ".join(cell(by_build[n].get(op, [0, 0.0])) for n, _ in builds) + " |")
    say("| **all** | " + " | ".join(cell([sum(t[0] for t in by_build[n].values()), sum(t[1] for t in by_build[n].values())])
                                     for n, _ in builds) + " |")
    say()

if prefill_reference:
    ids = open(ids_path).read().split(",")[:prefill_tokens]
    prefill_ids = os.path.join(work, f"ids{prefill_tokens}")
    with open(prefill_ids, "w") as f:
        f.write(",".join(ids))
    dumps = {}
    for name, artifact in [prefill_reference] + builds:
        dumps[name] = os.path.join(work, f"prefill-{name}.logits")
        run(artifact, weights, prefill_ids, ["--dump-logits", dumps[name]], name=name)
    ref = prefill_reference[0]
    say(f"## A {prefill_tokens}-token prefill's logits against {ref}'s ({os.path.basename(prefill_reference[1])})")
    say()
    checker = os.path.join(root, "test", "runtime", "Inputs", "check_logits.py")
    for name, _ in builds:
        r = subprocess.run([sys.executable, checker, dumps[name], "--against", dumps[ref]], capture_output=True,
                           text=True)
        say(f"- {name}: " + (r.stdout.strip() or r.stderr.strip()))
    say()
