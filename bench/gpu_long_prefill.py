"""Question: what does a 64K-token prompt's prefill cost on a model of
V4.1-Flash's real sizes, and where does its time go? (issue 5b's 64K figure)

One prefill call over 64K tokens would hold the indexer's [tokens, 32 heads,
entries] f32 scores (550 GB) and [tokens, vocab] logits (34 GB); dsf-run
--prefill-chunk C runs the prompt C tokens a call instead (prefill over the
first C, decode over the rest C at a time), so a call holds a chunk's.

  python3 bench/gpu_long_prefill.py DSF_RUN shaped.dsfa OUT.md [--parts=anchor,long,profile]
          [--long=65536] [--chunk=4096] [--anchor=8192] [--anchor-chunked=yes|no] [--bf16=SHAPED_BF16.dsfa]
          [--label=TEXT]   (what shaped.dsfa is, in the tables: default "f32 (SIMT)")
          [--bf16-label=TEXT]   (what --bf16's artifact is: default "bf16 (--tile-math=bf16)")

The model and weights are bench/gpu_v41_real_size.py's (random weights in the
released formats, made in /tmp/dsf-v41-shaped when missing). Parts:
  anchor:  ANCHOR tokens in one prefill call and in chunks of CHUNK, same
           weights, same run: what chunking costs, and the rate a long
           prompt is compared with; with --bf16, the same model built with
           --tile-math=bf16 in one call too (its products on the tensor
           cores), and the 8 tokens each greedy decode then generates;
  long:    LONG tokens in chunks of CHUNK, then 8 decode tokens at that
           context (the calls a server makes for a long prompt);
  profile: DSF_CUDA_PROFILE over the LONG-token chunked prefill: kernel time
           by dsf op, the products' and the indexer's TFLOP/s against the
           H200's f32 SIMT ceiling (132 SMs x 128 lanes x 2 x 1.98 GHz =
           66.9 TFLOP/s: dsf's products run f32 on the SIMT cores) and the
           bf16 tensor-core ceiling (790, BENCHMARKS.md).
The report is rewritten after every line, so a run stopped at the device's
10-minute limit keeps what it had.
"""
import datetime
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import batch_runs  # noqa: E402
from gpu_build_ab import WEIGHTS, WORK, bound_bytes, dsfa_tool, phase_ops, product_weights  # noqa: E402

SIMT_F32 = 66.9e12
BF16_TC = 790e12
# Which layers score with the indexer, and at which ratio (the shaped
# config's schedule: the Full and Reindex layers; ratio 2 before layer 20).
INDEX_LAYERS = {2: 2, 8: 2, 14: 2, 20: 1, 24: 1, 28: 1, 32: 1, 36: 1}
ATTENTION_LAYERS = 40


def option(name, default):
    for a in sys.argv[4:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


dsf_run, artifact, out_md = sys.argv[1:4]
parts = option("parts", "anchor,long,profile").split(",")
long_tokens = int(option("long", "65536"))
chunk = int(option("chunk", "4096"))
anchor_tokens = int(option("anchor", "8192"))
anchor_chunked = option("anchor-chunked", "yes") == "yes"
bf16_artifact = option("bf16", "")
label_main = option("label", "f32 (SIMT)")
label_second = option("bf16-label", "bf16 (--tile-math=bf16)")

os.makedirs(WORK, exist_ok=True)
manifest = dsfa_tool.manifest(open(artifact, "rb").read())
vocab = manifest["vocab_size"]
if not os.path.exists(WEIGHTS):
    t0 = time.perf_counter()
    dsfa_tool.write_random_quantized(open(artifact, "rb").read(), WEIGHTS)
    print(f"random weights written in {time.perf_counter() - t0:.0f} s", flush=True)

say = batch_runs.Report(out_md)
say(f"# A long prompt's prefill at V4.1-Flash's real sizes, "
    f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
say()
say(f"- machine: {batch_runs.gpu_name()} (device tool, nvidia-h200)")
say(f"- command: `python3 bench/gpu_long_prefill.py DSF_RUN shaped.dsfa OUT.md {' '.join(sys.argv[4:])}`")
total_bytes, _ = bound_bytes(manifest)
say(f"- weights as bound: {total_bytes / 1e9:.1f} GB ({', '.join(sorted({w['dtype'] for e in manifest['entry_points'] for w in e['weights']}))})")
say()

rng = np.random.default_rng(11)


def prompt(n):
    path = os.path.join(WORK, f"long{n}")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(",".join(map(str, rng.integers(0, vocab, n))))
    return path


def generated(stdout):
    return stdout.strip().splitlines()[-1].split(",") if stdout.strip() else []


def prefill_line(stderr):
    m = re.search(r"timing: prefill (\d+) tokens ([0-9.]+) s \(([0-9.]+) tokens/s\)(?: in (\d+) calls of \d+ tokens)?"
                  r"(?:; decode (\d+) tokens ([0-9.]+) s)?", stderr)
    if not m:
        raise RuntimeError("no timing line in:\n" + stderr[-2000:])
    decode_ms = 1e3 * float(m.group(6)) / int(m.group(5)) if m.group(5) else None
    return float(m.group(2)), int(m.group(4) or 1), decode_ms


def product_flops(tokens):
    """2 x tokens x weight elements a token multiplies with, over every product (the routed experts' top-6; each
    weight once, though product_weights files it under linear_ and grouped_linear_; the embedding is a gather)."""
    return sum(2 * tokens * e for tag, (e, _) in product_weights(manifest).items()
               if not tag.startswith("grouped_linear_") and tag != "linear_embed")


def indexer_flops(tokens, calls_of):
    """The indexer's q.k over every entry a call's cache holds (each call scores all of them, the invisible ones
    masked after): 2 x 32 heads x 128 x rows x entries, summed over the calls and the index layers."""
    total = 0
    for ratio in INDEX_LAYERS.values():
        done = 0
        for rows in calls_of(tokens):
            done += rows
            total += 2 * 32 * 128 * rows * (done // ratio)
    return total


def attention_flops(tokens):
    """Each token's 64 heads x 512 over its selected entries (top-512) and window (128): q.k and p.v."""
    return ATTENTION_LAYERS * tokens * 64 * 512 * 2 * 2 * (512 + 128)


def calls(step):
    return lambda n: [min(step, n - a) for a in range(0, n, step)]


timeout = int(os.environ.get("DSF_BENCH_TIMEOUT", "560"))
if "anchor" in parts:
    say(f"## {anchor_tokens:,} tokens: one prefill call against chunks of {chunk:,}"
        + (f" and against {label_second}" if bf16_artifact else ""))
    say()
    say("| artifact | how | calls | prefill s | tokens/s | against the first row | decode ms a token | greedy tokens "
        "as the first row's |")
    say("|---|---|---|---|---|---|---|---|")
    rows = [(label_main, artifact, "one call", [])]
    if anchor_chunked:
        rows.append((label_main, artifact, f"chunks of {chunk:,}", ["--prefill-chunk", str(chunk)]))
    if bf16_artifact:
        rows.append((label_second, bf16_artifact, "one call", []))
    one, first_tokens = None, None
    for label, art, how, extra in rows:
        try:
            stderr, stdout = batch_runs.run_dsf(dsf_run, art, WEIGHTS, prompt(anchor_tokens),
                                                extra + ["--max-new-tokens", "9"], timeout=timeout)
        except Exception as e:   # noqa: BLE001 (an OOM or a time-out is a result here)
            say(f"| {label} | {how} | | did not finish: {str(e).splitlines()[0][:160]} | | | | |")
            continue
        seconds, ncalls, decode_ms = prefill_line(stderr)
        tokens = generated(stdout)
        one = one or seconds
        first_tokens = first_tokens or tokens
        same = sum(a == b for a, b in zip(tokens, first_tokens))
        say(f"| {label} | {how} | {ncalls} | {seconds:.2f} | {anchor_tokens / seconds:.0f} | x{one / seconds:.2f} | "
            f"{decode_ms:.1f} | {same}/{len(first_tokens)} |")
    say()

if "long" in parts:
    say(f"## {long_tokens:,} tokens in chunks of {chunk:,}, then 8 decode tokens")
    say()
    t0 = time.perf_counter()
    try:
        stderr, _ = batch_runs.run_dsf(dsf_run, artifact, WEIGHTS, prompt(long_tokens),
                                       ["--prefill-chunk", str(chunk), "--max-new-tokens", "9"], timeout=timeout)
        seconds, ncalls, decode_ms = prefill_line(stderr)
        flops = product_flops(long_tokens) + indexer_flops(long_tokens, calls(chunk)) + attention_flops(long_tokens)
        say(f"- prefill: {seconds:.1f} s in {ncalls} calls, {long_tokens / seconds:.0f} tokens/s; the process "
            f"(weight load included) {time.perf_counter() - t0:.0f} s")
        say(f"- decode at {long_tokens:,} tokens: {decode_ms:.1f} ms a token")
        say(f"- work: {flops / 1e15:.2f} PFLOP (products {product_flops(long_tokens) / 1e15:.2f}, indexer "
            f"{indexer_flops(long_tokens, calls(chunk)) / 1e15:.2f}, attention {attention_flops(long_tokens) / 1e15:.2f})"
            f": {flops / seconds / 1e12:.1f} TFLOP/s, {100 * flops / seconds / SIMT_F32:.0f} % of the f32 SIMT "
            f"ceiling, {100 * flops / seconds / BF16_TC:.1f} % of bf16's; the floor at the SIMT ceiling "
            f"{flops / SIMT_F32:.1f} s, at bf16's {flops / BF16_TC:.2f} s")
    except Exception as e:   # noqa: BLE001
        say(f"- did not finish: {str(e).splitlines()[0][:300]}")
        say("```")
        say(str(e)[-1500:])
        say("```")
    say()

if "profile" in parts:
    path = os.path.join(WORK, f"profile-long{long_tokens}.md")
    try:
        stderr, _ = batch_runs.run_dsf(dsf_run, artifact, WEIGHTS, prompt(long_tokens),
                                       ["--prefill-chunk", str(chunk), "--max-new-tokens", "1"],
                                       environment={"DSF_CUDA_PROFILE": path}, timeout=timeout)
        seconds, ncalls, _ = prefill_line(stderr)
        ops = {}
        for phase in ("prefill", "decode"):   # the first chunk runs @prefill, the others @decode
            for op, (us, launches) in phase_ops(path, phase, calls=1).items():
                t = ops.setdefault(op, [0.0, 0])
                t[0] += us
                t[1] += launches
        total = sum(t[0] for t in ops.values())
        weights = product_weights(manifest)
        say(f"## Where the time goes: {long_tokens:,} tokens in {ncalls} calls, DSF_CUDA_PROFILE "
            f"(each launch timed alone: {seconds:.1f} s in all, {total / 1e6:.1f} s of kernel time)")
        say()
        say("| dsf op (all layers) | launches | s | share | TFLOP | TFLOP/s | of f32 SIMT | of bf16 |")
        say("|---|---|---|---|---|---|---|---|")
        for op, (us, launches) in sorted(ops.items(), key=lambda kv: -kv[1][0])[:18]:
            flops = 2 * long_tokens * weights[op][0] if op in weights else 0
            if op == "index_topk":   # the dots, the scores and the top-k are the index_topk op's kernels
                flops = indexer_flops(long_tokens, calls(chunk))
            if op.startswith("attention"):
                flops = attention_flops(long_tokens)
            rate = (f"{flops / 1e12:.1f} | {flops / (us / 1e6) / 1e12:.1f} | {100 * flops / (us / 1e6) / SIMT_F32:.0f} % "
                    f"| {100 * flops / (us / 1e6) / BF16_TC:.1f} %" if flops else "| | |")
            say(f"| {op} | {launches} | {us / 1e6:.2f} | {100 * us / total:.1f} % | {rate} |")
        say()
        say("FLOPs: the products 2 x tokens x weight elements (routed experts: top-6 of 8); attention 64 heads x 512 "
            "x (512 + 128) columns x 2 products; the indexer's dots, where the profile names them, over every "
            "entry of each call's cache. Other ops: time only.")
    except Exception as e:   # noqa: BLE001
        say(f"- profile: did not finish: {str(e).splitlines()[0][:300]}")
    say()
