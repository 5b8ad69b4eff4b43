"""Question: what does a decode step cost with several sequences in it, and
what does replaying it as a CUDA graph save? (issue 5: "several sequences
batched in one step", "the decode step captured as a CUDA graph and
replayed"; 5b: decode step time at batch 1, 8 and 64 against the byte floor)

Runs on the GPU machine over artifacts built on the development machine
(each with @batch_decode, dsf-compile's default):
  python3 bench/gpu_batch_decode.py DSF_RUN OUT.md [--small NAME=ART[:WEIGHTS] ...] [--shaped ART] [--context N]
                                    [--profile-batch N[,M...]] [--shaped-anchor ART]

Part 1, --small (the tiny V4.1, the small V4: launch-bound decode): a
64-token prompt, then 33 tokens at batch 1 through @decode (the anchor,
one sequence's own entry point), and through @batch_decode launched kernel
by kernel (DSF_CUDA_GRAPHS=0) and replayed as a CUDA graph; then
@batch_decode with graphs at batch 8 and 64. A step's time is the median of
the steps after the first (which captures the graph).

Part 2, --shaped (bench/configs/deepseek-v4.1-shaped-8e: V4.1-Flash's real
sizes with 8 experts, random weights in the released formats): a
--context-token prompt (default 2,048) prefilled once and decoded as 1, 8
and 64 sequences (dsf-run --batch 1,8,64), against @decode at batch 1 in
the same run. The floors of a step: bytes ((the weights the step touches,
as the artifact binds them: every expert once any token picks it, all 8 at
batch >= 2 almost surely; plus each sequence's cache reads at f32, as dsf
keeps them) / the card's HBM ceiling) and arithmetic (2 x the parameters a
token multiplies with x tokens, over the f32 SIMT ceiling that dsf's tiled
products run on, and over the bf16 tensor cores'): batch_runs.ceilings(),
4.4 TB/s, 66.9 and 790 TFLOP/s on the H200 (BENCHMARKS.md).
"""
import datetime
import os
import re
import subprocess
import sys
import time

import numpy as np

args = sys.argv[1:]
dsf_run, out_md = args[0], args[1]
small, shaped, context, profile_batches, shaped_anchor = [], None, 2048, [], None
i = 2
while i < len(args):
    if args[i] == "--small":
        small.append(args[i + 1])
    elif args[i] == "--shaped":
        shaped = args[i + 1]
    elif args[i] == "--context":
        context = int(args[i + 1])
    elif args[i] == "--shaped-anchor":
        shaped_anchor = args[i + 1]
    elif args[i] == "--profile-batch":
        profile_batches = [int(n) for n in args[i + 1].split(",")]
    else:
        sys.exit(f"unknown argument {args[i]}")
    i += 2
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tools", "scripts"))
import dsfa_tool  # noqa: E402
from batch_runs import (Report, batch_steps, bound_size, ceilings, gpu_name, kv_read, owner_of,  # noqa: E402
                        profile_by_op, run_dsf)

work = "/tmp/dsf-batch-bench"
os.makedirs(work, exist_ok=True)
gpu = gpu_name()
CEILINGS = ceilings(gpu)
HBM, SIMT, TENSOR = CEILINGS["hbm"], CEILINGS["simt"], CEILINGS["tensor"]
say = Report(out_md)


def run(artifact, weights, ids, extra, environment=None, timeout=900):
    path = os.path.join(work, f"ids{len(ids)}")
    with open(path, "w") as f:
        f.write(",".join(map(str, ids)))
    return run_dsf(dsf_run, artifact, weights, path, extra, environment, timeout)


def single_decode_ms(stderr):
    d = re.search(r"decode (\d+) tokens ([0-9.]+) s", stderr)
    return 1e3 * float(d.group(2)) / int(d.group(1))


say(f"# Batched decode steps and CUDA graphs, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
say()
say(f"- machine: {gpu} (device tool)")
say(f"- ceilings: {CEILINGS['source']}: HBM {HBM / 1e12:.2f} TB/s, f32 SIMT {SIMT / 1e12:.1f} and bf16 tensor "
    f"{TENSOR / 1e12:.0f} TFLOP/s")
say(f"- command: `python3 bench/gpu_batch_decode.py DSF_RUN OUT.md {' '.join(args[2:])}`")
say()
rng = np.random.default_rng(11)

if small:
    say("## Launch-bound models: @decode against @batch_decode, launched and replayed")
    say()
    say("| model | @decode, batch 1 | @batch_decode launched, batch 1 | replayed (CUDA graph), batch 1 | graph / launched "
        "| replayed, batch 8 | replayed, batch 64 | launches a step |")
    say("|---|---|---|---|---|---|---|---|")
    for spec in small:
        name, _, rest = spec.partition("=")
        artifact, _, weights = rest.partition(":")
        if not weights:
            weights = os.path.join(work, name + ".safetensors")
            if not os.path.exists(weights):
                subprocess.run([sys.executable, os.path.join(root, "tools", "scripts", "dsfa_tool.py"), "random-weights",
                                artifact, weights], check=True)
        vocab = dsfa_tool.manifest(open(artifact, "rb").read())["vocab_size"]
        ids = list(rng.integers(0, vocab, 64))
        err, _ = run(artifact, weights, ids, ["--max-new-tokens", "34", "--warmup", "2"])
        anchor = single_decode_ms(err)
        err, _ = run(artifact, weights, ids, ["--max-new-tokens", "34", "--batch", "1"], {"DSF_CUDA_GRAPHS": "0"})
        launched = batch_steps(err)[1]
        err, _ = run(artifact, weights, ids, ["--max-new-tokens", "34", "--batch", "1,8,64"])
        steps = batch_steps(err)
        say(f"| {name} | {anchor:.3f} ms | {launched[0]:.3f} ms | {steps[1][0]:.3f} ms | x{launched[0] / steps[1][0]:.2f} "
            f"| {steps[8][0]:.3f} ms ({steps[8][0] / 8:.3f} a token) | {steps[64][0]:.3f} ms ({steps[64][0] / 64:.3f} a token) "
            f"| {launched[2] or '?'} |")
    say()
    say("A step's time: the median of the steps after the first (which captures the graph); 33 steps a batch. "
        "ms a token at batch B: the step over B.")
    say()

if shaped:
    weights = os.path.join(work, "shaped.safetensors")
    art = open(shaped, "rb").read()
    manifest = dsfa_tool.manifest(art)
    t0 = time.perf_counter()
    if not os.path.exists(weights):
        dsfa_tool.write_random_quantized(art, weights)
    del art
    say(f"## V4.1-Flash's real sizes (8 experts): a {context}-token prompt decoded as 1, 8 and 64 sequences")
    say()
    say(f"Random weights in the released formats, written in {time.perf_counter() - t0:.0f} s.")
    say()
    def step_weights(artifact_manifest):
        return next(e for e in artifact_manifest["entry_points"] if e["name"] == "batch_decode")["weights"]

    def touched(batch, weights_bound=step_weights(manifest)):
        """Weight bytes a step of `batch` tokens reads (each weight once, as the artifact binds it), and the
        elements a token multiplies with."""
        by_name = {w["name"]: w for w in weights_bound}
        total = active = 0
        for w in weights_bound:
            nbytes, elements = bound_size(w)
            if w["name"] == "embed.weight":
                total += nbytes * min(batch, w["shape"][0]) // w["shape"][0]
                continue
            if "expert_names" in owner_of(w, by_name):
                experts = w["shape"][0]
                used = 6 if batch == 1 else experts   # top-6 of 8: two tokens pick every expert almost surely
                total += nbytes * used // experts
                active += elements * 6 // experts
                continue
            total += nbytes
            if len(w["shape"]) >= 2:
                active += elements
        return total, active

    ids = list(rng.integers(0, manifest["vocab_size"], context))
    err, _ = run(shaped, weights, ids, ["--max-new-tokens", "9"])
    anchor = single_decode_ms(err)
    say(f"- @decode, one sequence (the anchor): {anchor:.2f} ms a token")
    err, out = run(shaped, weights, ids, ["--max-new-tokens", "9", "--batch", "1,8,64"])
    steps = batch_steps(err)
    generated = out.split()
    say(f"- @batch_decode: {len(generated)} sequences' tokens printed; the batch-of-1 sequence's tokens "
        f"{'equal' if generated[0] == generated[1] else 'differ from'} the first sequence of the batch of 8")
    say()
    say("| batch | step ms | ms a token | tokens/s | against @decode | byte floor | x floor "
        "| floor, released-format caches | x floor | f32 SIMT floor | x floor | bf16 tensor floor | first step ms (capture) |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for batch, (ms, first, _, replays) in sorted(steps.items()):
        weight_bytes, active = touched(batch)
        byte_floor = (weight_bytes + batch * kv_read(context, f32=True)) / HBM * 1e3
        packed_floor = (weight_bytes + batch * kv_read(context, f32=False)) / HBM * 1e3
        simt = 2 * active * batch / SIMT * 1e3
        tensor = 2 * active * batch / TENSOR * 1e3
        say(f"| {batch} | {ms:.2f} | {ms / batch:.3f} | {1e3 * batch / ms:.0f} | x{anchor / (ms / batch):.2f} "
            f"| {byte_floor:.2f} ms | x{ms / byte_floor:.2f} | {packed_floor:.2f} ms | x{ms / packed_floor:.2f} "
            f"| {simt:.2f} ms | x{ms / max(simt, byte_floor):.2f} | {tensor:.2f} ms | {first:.1f} |")
    say()
    say("byte floor: (the weights a step touches as this artifact binds them + each sequence's cache reads, f32) "
        "over the HBM ceiling; floor, released-format caches: the same weights with the caches' reads counted "
        "in the released formats. x floor against the f32 SIMT floor: the step over the larger of the byte and "
        "the f32 arithmetic floor. against @decode: the anchor's ms a token over the batch's.")
    say()
    if shaped_anchor:
        # Another build of the same model (the one before a change), the same weights and prompt.
        err, _ = run(shaped_anchor, weights, ids, ["--max-new-tokens", "9", "--batch", "1,8,64"])
        before = batch_steps(err)
        anchor_weights = step_weights(dsfa_tool.manifest(open(shaped_anchor, "rb").read()))
        say(f"Against {os.path.basename(shaped_anchor)} (the anchor build) in the same run:")
        say()
        say("| batch | anchor step ms | anchor's byte floor | anchor x its floor | this step ms | anchor / this |")
        say("|---|---|---|---|---|---|")
        for batch in sorted(steps):
            if batch in before:
                floor = (touched(batch, anchor_weights)[0] + batch * kv_read(context, f32=True)) / HBM * 1e3
                say(f"| {batch} | {before[batch][0]:.2f} | {floor:.2f} ms | x{before[batch][0] / floor:.2f} "
                    f"| {steps[batch][0]:.2f} | x{before[batch][0] / steps[batch][0]:.2f} |")
        say()
    def step_profile(artifact, batch, tag):
        """Where a step's time goes: DSF_CUDA_PROFILE (each launch timed with events, so no graph) over the
        batch's steps after the first, by dsf op: {op: (launches a step, ms a step)}."""
        prof = os.path.join(work, f"profile-{tag}{batch}.md")
        run(artifact, weights, ids, ["--max-new-tokens", "5", "--batch", str(batch)], {"DSF_CUDA_PROFILE": prof})
        return profile_by_op(prof, 4)

    for profile_batch in profile_batches:
        by_op = step_profile(shaped, profile_batch, "")
        total = sum(t[1] for t in by_op.values())
        # The anchor build's own profile beside it: which ops a change moved.
        anchor_by_op = step_profile(shaped_anchor, profile_batch, "anchor-") if shaped_anchor else {}
        anchor_total = sum(t[1] for t in anchor_by_op.values())
        say(f"### A step of {profile_batch} sequences by dsf op (DSF_CUDA_PROFILE, 4 steps, kernels launched "
            f"one by one): {total:.1f} ms of kernel time a step"
            + (f"; the anchor build {anchor_total:.1f} ms" if shaped_anchor else ""))
        say()
        say("| dsf op (all layers) | launches a step | ms a step | share |" + (" anchor ms | anchor / this |" if shaped_anchor else ""))
        say("|---|---|---|---|" + ("---|---|" if shaped_anchor else ""))
        for op, (launches, ms) in sorted(by_op.items(), key=lambda kv: -kv[1][1])[:16]:
            row = f"| {op} | {launches:.0f} | {ms:.2f} | {100 * ms / total:.1f} % |"
            if shaped_anchor:
                before = anchor_by_op.get(op, (0, 0.0))[1]
                row += f" {before:.2f} | x{before / ms:.2f} |" if ms > 0 else f" {before:.2f} | |"
            say(row)
        say()

