"""Question: what do packed cache pages (each entry its format's row: NVFP4 KV,
MXFP4 index keys; dsf-to-linalg's packed-pages, the default) save against
f32 pages (dsf-compile --f32-pages) in a batched decode step at V4.1-Flash's
real widths: the pages' bytes, the step time at batch 1, 8 and 64, the
attention's and the indexer's time, and what admitting a sequence costs
(its rows packed on the host)? (issue 6 item 1, issue 5 item 1)

Runs on the GPU machine over two builds of one model made on the development
machine, the f32 pages first (the anchor, in the same run):
  python3 bench/gpu_packed_pages.py DSF_RUN OUT.md f32=F32.dsfa packed=PACKED.dsfa [--context N]
                                    [--batches 1,8,64] [--profile-batch 64]

The same random weights in the released formats and the same --context-token
prompt (default 16,384), prefilled once and decoded as each batch (dsf-run
--batch; a step is the median of the 7 after the first, which captures its
graph); the pages' and the state's bytes and the admissions' time from
dsf-run's --timing line; then --profile-batch's step by dsf op
(DSF_CUDA_PROFILE, no graph) for both builds. The indexer's floor: the keys a
step reads (each sequence's visible entries of every index_keys slot, their
row bytes) over the card's HBM ceiling (batch_runs.ceilings(): 4.4 TB/s on
the H200).
"""
import datetime
import os
import re
import sys


root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tools", "scripts"))
sys.path.insert(0, os.path.join(root, "bench"))
import dsfa_tool  # noqa: E402
from batch_runs import (Report, batch_steps, build_args, ceilings, gpu_name, profile_by_op,  # noqa: E402
                        random_weights_and_prompt, run_dsf)

args = sys.argv[1:]
dsf_run, out_md, builds, context, batches, profile_batches = build_args(args, 16384)
if len(builds) != 2:
    sys.exit("give the two builds as f32=ARTIFACT packed=ARTIFACT (the anchor first)")

gpu = gpu_name()
CEILINGS = ceilings(gpu)
HBM_BYTES_PER_S = CEILINGS["hbm"]
work = "/tmp/dsf-packed-pages"
os.makedirs(work, exist_ok=True)
say = Report(out_md)
say(f"# Packed cache pages against f32 pages in a batched decode step, "
    f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
say()
say(f"- machine: {gpu} (device tool)")
say(f"- HBM ceiling: {HBM_BYTES_PER_S / 1e12:.2f} TB/s, {CEILINGS['source']}")
say(f"- command: `python3 bench/gpu_packed_pages.py DSF_RUN OUT.md {' '.join(args[2:])}`")
say(f"- anchor: {builds[0][0]} ({os.path.basename(builds[0][1])}), the f32 pages, in the same run")
say()

weights, ids_path, manifest = random_weights_and_prompt(work, builds[0][1], context)


def key_bytes_a_sequence(path):
    """Bytes of the index keys a decode token reads: every visible entry of each index_keys slot, a row each."""
    m = dsfa_tool.manifest(open(path, "rb").read())
    ratios = {s["name"]: s["ratio"] for s in m["state"] if s["kind"] == "index_keys"}
    entry = next(e for e in m["entry_points"] if e["name"] == "batch_decode")
    total = 0
    for t in entry["inputs"]:
        name = t["name"][len("slots:"):]
        if t["name"].startswith("slots:") and name in ratios:
            row = t["shape"][2] * (4 if t["dtype"] == "f32" else 1)
            total += (context + 1) // ratios[name] * row
    return total


batch_list = ",".join(map(str, batches))
steps, tokens, lines = {}, {}, {}
for name, artifact in builds:
    err, out = run_dsf(dsf_run, artifact, weights, ids_path, ["--max-new-tokens", "9", "--batch", batch_list])
    steps[name] = {batch: step[0] for batch, step in batch_steps(err).items()}
    tokens[name] = out.split()
    lines[name] = {}
    for m in re.finditer(r"timing: batch of (\d+):.*?state ([0-9.]+) MB \((\d+) bytes, the caches' pages (\d+)\); "
                         r"(\d+) admitted in ([0-9.]+) ms", err):
        lines[name][int(m.group(1))] = (int(m.group(3)), int(m.group(4)), int(m.group(5)), float(m.group(6)))

(a, _), (b, _) = builds
say(f"## A {context}-token prompt decoded as {batch_list} sequences")
say()
say(f"| batch | {a} pages MB | {b} pages MB | pages {a} / {b} | {a} state MB | {b} state MB | "
    f"{a} step ms | {b} step ms | step {a} / {b} | {a} admitting ms | {b} admitting ms |")
say("|---" * 11 + "|")
for batch in batches:
    la, lb = lines[a].get(batch), lines[b].get(batch)
    sa, sb = steps[a].get(batch), steps[b].get(batch)
    if not (la and lb and sa and sb):
        say(f"| {batch} | (missing: see the run's stderr) |")
        continue
    say(f"| {batch} | {la[1] / 1e6:.1f} | {lb[1] / 1e6:.1f} | x{la[1] / lb[1]:.2f} | {la[0] / 1e6:.1f} | "
        f"{lb[0] / 1e6:.1f} | {sa:.2f} | {sb:.2f} | x{sa / sb:.2f} | {la[3]:.1f} | {lb[3]:.1f} |")
say()
same = sum(x == y for x, y in zip(tokens[a], tokens[b]))
say(f"- {b}'s printed tokens against {a}'s: {same} of {len(tokens[a])} sequences' lines equal "
    "(the same values decoded: equal unless the kernels' order differs)")
keys = {name: key_bytes_a_sequence(path) for name, path in builds}
say(f"- index keys a decode token reads at {context} tokens: {keys[a] / 1e6:.2f} MB as f32 pages, "
    f"{keys[b] / 1e6:.2f} MB packed (x{keys[a] / keys[b]:.2f})")
say()

for profile_batch in profile_batches:
    by_build = {}
    for name, artifact in builds:
        prof = os.path.join(work, f"profile-{name}-{profile_batch}.md")
        run_dsf(dsf_run, artifact, weights, ids_path, ["--max-new-tokens", "5", "--batch", str(profile_batch)],
                {"DSF_CUDA_PROFILE": prof})
        by_build[name] = {op: ms for op, (_, ms) in profile_by_op(prof, steps=4).items()}
    ops = sorted(set().union(*by_build.values()), key=lambda op: -by_build[a].get(op, 0.0))
    say(f"## A step of {profile_batch} sequences by dsf op (ms a step, all layers; DSF_CUDA_PROFILE, 4 steps, "
        "each launch timed alone)")
    say()
    say(f"| dsf op | {a} | {b} | {a} / {b} |")
    say("|---|---|---|---|")
    for op in ops[:12]:
        x, y = by_build[a].get(op, 0.0), by_build[b].get(op, 0.0)
        say(f"| {op} | {x:.2f} | {y:.2f} | x{x / y:.2f} |" if y else f"| {op} | {x:.2f} | {y:.2f} | |")
    say(f"| **all** | {sum(by_build[a].values()):.2f} | {sum(by_build[b].values()):.2f} | |")
    say()
    for name in (a, b):
        floor = profile_batch * keys[name] / HBM_BYTES_PER_S * 1e3
        topk = by_build[name].get("index_topk", 0.0)
        say(f"- {name}: the keys' byte floor at batch {profile_batch} {floor:.3f} ms; index_topk {topk:.2f} ms "
            f"(x{topk / floor:.1f} the floor)" if floor else f"- {name}: no index keys")
    say()
