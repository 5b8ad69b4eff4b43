"""Question: does a change to dsf make the V4.1-shaped model at real sizes
faster or slower, and does it keep its numbers? Two artifacts of
bench/configs/deepseek-v4.1-shaped-8e (see bench/gpu_v41_real_size.py for the
model), the change's and the anchor's, run by the same dsf-run in the same
run on the GPU machine:
  python3 bench/gpu_build_ab.py DSF_RUN OUT.md NEW.dsfa ANCHOR.dsfa [CONTEXT]
          [--parts=numbers,time,profile] [--labels=NEW,ANCHOR] [--title=TEXT]
          [--cublas=f32|bf16]
  * the same random weights in the released formats (FP8 32x32 blocks, MXFP4
    experts; made here when /tmp/dsf-v41-shaped/weights.safetensors is
    missing): every value is exact in bf16, so artifacts binding the weights
    as bf16 or as f32 compute with the same weights;
  * numbers: a 64-token prompt and 3 decode tokens; the logits of both
    (relative error, argmax agreement, whether bit for bit equal);
  * time: CONTEXT tokens (default 2,048), 8 decode tokens, a warm-up prefill:
    prefill time and decode time a token, the two artifacts alternated;
  * profile: DSF_CUDA_PROFILE over CONTEXT tokens and 2 decode calls: a decode
    call's kernel time by dsf op, the weight bytes each product reads against
    HBM's ceiling (batch_runs.ceilings(): 4.4 TB/s on the H200), and the new build's costliest kernels.
Each part's processes load the weights (about a minute each: all three parts
take about 8 minutes). bench/gpu_weight_storage.py is this script with the
labels bf16 and f32.
"""
import datetime
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "scripts"))
import dsfa_tool  # noqa: E402
import safetensors_io  # noqa: E402  (dsfa_tool puts test/reference on the path)
from batch_runs import bound_size, ceilings, gpu_name, owner_of  # noqa: E402  (this script's folder is on the path)

WORK = "/tmp/dsf-v41-shaped"
WEIGHTS = os.path.join(WORK, "weights.safetensors")


def bound_bytes(manifest):
    """(bytes of every weight as bound, bytes a decode token touches: one
    embedding row, the top-6 of 8 experts)."""
    seen, total, touched = set(), 0, 0
    for entry in manifest["entry_points"]:
        by_name = {w["name"]: w for w in entry["weights"]}
        for w in entry["weights"]:
            if w["name"] in seen:
                continue
            seen.add(w["name"])
            nbytes, _ = bound_size(w)
            total += nbytes
            t = nbytes // w["shape"][0] if w["name"] == "embed.weight" else nbytes
            if "expert_names" in owner_of(w, by_name):
                t = t * 6 // w["shape"][0]
            touched += t
    return total, touched


def phase_ops(profile_path, phase="decode", calls=2, by_shape=False):
    """A call's kernel microseconds and launches by dsf op in `phase`
    (prefill or decode, `calls` calls in the profile; by op and launch shape,
    summed over the layers, with `by_shape`)."""
    ops = {}
    for line in open(profile_path):
        m = re.match(r"\| (\S+) \(([^)]*)\) \| (\d+) \| ([0-9.]+) \|", line)
        if not m:
            continue
        kernel = m.group(1)
        scope, slash, rest = kernel.partition("/")
        name = rest if slash else kernel
        if (scope if slash else name.split("_")[0]) != phase:
            continue
        op = re.sub(r"_\d+$", "", name.partition("__")[2]) or name
        key = (op, m.group(2), name.partition("__")[2]) if by_shape else op
        t = ops.setdefault(key, [0.0, 0])
        t[0] += float(m.group(4)) / calls
        t[1] += int(m.group(3)) // calls
    return ops


def product_weights(manifest):
    """By the tag of a product's kernels: (weight elements a token multiplies
    with, weight bytes a decode call reads); the routed experts' top-6 of 8."""
    out = {}
    weights = next(e for e in manifest["entry_points"] if e["name"] == "decode")["weights"]
    by_name = {w["name"]: w for w in weights}
    for w in weights:
        nbytes, elements = bound_size(w)   # a packed weight's scales: bytes, no elements
        owner = owner_of(w, by_name)
        if "expert_names" in owner:
            tags = ["moe_experts"]
            nbytes, elements = nbytes * 6 // w["shape"][0], elements * 6 // w["shape"][0]
        else:
            key = re.sub(r"\.weight$", "", re.sub(r"^layers\.\d+\.", "", owner["name"])).replace(".", "_")
            if key.startswith("ffn_shared_experts_"):
                tags = ["ffn"]                       # one dsf.ffn op: its kernels carry no weight's name
            elif key == "ffn_gate":
                tags = ["moe_gate"]
            else:
                tags = ["linear_" + key, "grouped_linear_" + key]
        for tag in tags:
            e, b = out.get(tag, (0, 0))
            out[tag] = (e + elements, b + nbytes)
    return out


def cublas_anchor(rows, math="f32"):
    """cuBLAS's GEMM through PyTorch on the model's prefill products, timed
    with CUDA events in this run: the anchor the tiled kernel's TFLOP/s
    compare with. math f32: f32 operands, TF32 off (dsf's SIMT arithmetic);
    bf16: bf16 operands and output, f32 accumulation (dsf's --tile-math=bf16
    rounds its f32 activations to bf16 as it reads them and writes f32)."""
    try:
        import torch
    except ImportError:
        return [f"- cuBLAS {math} anchor: PyTorch is not installed here"]
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = torch.bfloat16 if math == "bf16" else torch.float32
    out = []
    # wq_b, wo_b, and a routed expert's w1 over its share of the rows (top-6
    # of 8 experts).
    for name, m, n, k in (("wq_b", rows, 32768, 1280), ("wo_b", rows, 5120, 8192),
                          ("experts.E.w1", rows * 6 // 8, 2304, 5120)):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        w = torch.randn(n, k, device="cuda", dtype=dtype)
        for _ in range(3):
            a @ w.T
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            a @ w.T
        stop.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(stop) / 10
        out.append(f"- cuBLAS {math} (PyTorch {torch.__version__}" + (", TF32 off" if math == "f32" else "") +
                   f"), {name}'s shape [{m} x {k}] x [{k} x {n}]: {ms:.3f} ms, {2 * m * n * k / ms / 1e9:.1f} TFLOP/s")
    return out


def main(argv, title=None, script="bench/gpu_build_ab.py", labels=("new", "anchor"), anchor_note=None):
    args = [a for a in argv if not a.startswith("--")]
    options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    parts = options.get("parts", "numbers,time,profile").split(",")
    new_label, anchor_label = options["labels"].split(",") if "labels" in options else labels
    title = options.get("title", title or f"{new_label} against {anchor_label}, V4.1-shaped model at real sizes (8 experts)")
    dsf_run, out_md, new_art, anchor_art = args[:4]
    context = int(args[4]) if len(args) > 4 else 2048
    artifacts = {new_label: new_art, anchor_label: anchor_art}
    env = dict(os.environ, CUDA_MODULE_LOADING="EAGER")
    os.makedirs(WORK, exist_ok=True)
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    def op_rows(times, shown, rate):
        """A table's body: the anchor's 18 costliest ops, each with both
        builds' times (`shown`: us as printed) and rates (`rate(label, op, us)`)
        and the ratio; then the totals."""
        ops = sorted(set(times[anchor_label]) | set(times[new_label]), key=lambda op: -times[anchor_label].get(op, [0, 0])[0])
        for op in ops[:18]:
            cells = []
            for label in (anchor_label, new_label):
                us = times[label].get(op, [0.0, 0])[0]
                cells += [shown(us), rate(label, op, us)]
            ratio = times[anchor_label].get(op, [0, 0])[0] / max(times[new_label].get(op, [0, 0])[0], 1e-9)
            say(f"| {op} | " + " | ".join(cells) + f" | x{ratio:.2f} |")
        totals = {label: sum(t[0] for t in times[label].values()) for label in times}
        say(f"| **all** | {shown(totals[anchor_label])} | | {shown(totals[new_label])} | | "
            f"x{totals[anchor_label] / totals[new_label]:.2f} |")

    def run(artifact, ids, *extra, profile=None):
        path = os.path.join(WORK, f"ids{len(ids)}")
        with open(path, "w") as f:
            f.write(",".join(map(str, ids)))
        cmd = [dsf_run, artifact, "--weights", WEIGHTS, "--prompt-ids", "@" + path] + list(extra)
        e = dict(env, DSF_CUDA_PROFILE=profile) if profile else env
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=540)
        if r.returncode:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-3000:]}")
        return r.stderr, time.perf_counter() - t0

    manifests = {label: dsfa_tool.manifest(open(path, "rb").read()) for label, path in artifacts.items()}
    t0 = time.perf_counter()
    if not os.path.exists(WEIGHTS):
        dsfa_tool.write_random_quantized(open(new_art, "rb").read(), WEIGHTS)
    weights_s = time.perf_counter() - t0

    gpu = gpu_name()
    card = ceilings(gpu)
    hbm = card["hbm"]
    say(f"# {title}")
    say()
    say(f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    say(f"- machine: {gpu} (device tool)")
    say(f"- ceilings: {card['source']}")
    say(f"- command: `python3 {script} DSF_RUN OUT.md {os.path.basename(new_art)} "
        f"{os.path.basename(anchor_art)} {context} --parts={','.join(parts)}"
        + (f" --labels={new_label},{anchor_label}" if "labels" in options else "")
        + (f" --cublas={options['cublas']}" if "cublas" in options else "") + "`")
    say(f"- anchor: {os.path.basename(anchor_art)} ({anchor_note or anchor_label}), run by the same dsf-run in the same run")
    say(f"- weights: random, in the released formats, {os.path.getsize(WEIGHTS) / 1e9:.1f} GB "
        f"(written here in {weights_s:.0f} s; every value exact in bf16)")
    say()
    say("| artifact | weights as bound | bytes bound | bytes a decode token touches |")
    say("|---|---|---|---|")
    for label, m in manifests.items():
        total, touched = bound_bytes(m)
        kinds = sorted({w["dtype"] for e in m["entry_points"] for w in e["weights"]})
        say(f"| {label} | {', '.join(kinds)} | {total / 1e9:.1f} GB | {touched / 1e9:.1f} GB |")
    say()

    # --- the same numbers -------------------------------------------------------
    rng = np.random.default_rng(7)
    vocab = manifests[new_label]["vocab_size"]
    short = list(rng.integers(0, vocab, 64))
    ids = list(rng.integers(0, vocab, context))
    if "numbers" in parts:
        logits = {}
        for label, path in artifacts.items():
            dump = os.path.join(WORK, f"ab-{label}.logits")
            _, wall = run(path, short, "--max-new-tokens", "4", "--dump-logits", dump)
            logits[label] = safetensors_io.load(dump)["logits"].astype(np.float64)
            say(f"- {label}: 64-token prompt and 3 decode tokens in {wall:.0f} s (weight load included); "
                f"logits finite: {bool(np.isfinite(logits[label]).all())}")
        a, b = logits[new_label], logits[anchor_label]
        rel = float(np.linalg.norm(a - b) / np.linalg.norm(b))
        agree = int((a.argmax(1) == b.argmax(1)).sum())
        say(f"- {new_label} against {anchor_label}: relative error {rel:.3e}, argmax {agree}/{len(a)}, "
            f"bit for bit equal: {bool(np.array_equal(a, b))}")
        say()

    # --- time -------------------------------------------------------------------
    if "time" in parts:
        times, launches = {}, {}
        for label in (anchor_label, new_label):
            stderr, wall = run(artifacts[label], ids, "--max-new-tokens", "9", "--timing", "--warmup", "1")
            prefill = float(re.search(r"prefill \d+ tokens ([0-9.]+) s", stderr).group(1))
            d = re.search(r"decode (\d+) tokens ([0-9.]+) s", stderr)
            times[label] = (prefill, float(d.group(2)) / int(d.group(1)))
            n = re.search(r"decode (\d+) GPU kernel launches a call", stderr)
            launches[label] = n.group(1) if n else "?"
        say(f"## Time at {context} tokens (prefill after a warm-up prefill; 8 decode tokens)")
        say()
        say("| artifact | prefill s | decode ms a token | decode launches a call | the weight bytes a decode token touches / "
            f"{hbm / 1e12:.2f} TB/s |")
        say("|---|---|---|---|---|")
        for label in (anchor_label, new_label):
            say(f"| {label} | {times[label][0]:.2f} | {times[label][1] * 1e3:.2f} | {launches[label]} | "
                f"{bound_bytes(manifests[label])[1] / hbm * 1e3:.2f} ms |")
        a, n = times[anchor_label], times[new_label]
        say(f"| {anchor_label} / {new_label} | x{a[0] / n[0]:.2f} | x{a[1] / n[1]:.2f} | | |")
        say()

    # --- where a decode call's time goes ------------------------------------
    if "profile" in parts:
        per_op, kernel_rows, prefill_ops = {}, {}, {}
        for label in (anchor_label, new_label):
            prof = os.path.join(WORK, f"ab-{label}.profile")
            run(artifacts[label], ids, "--max-new-tokens", "3", profile=prof)
            per_op[label] = phase_ops(prof)
            kernel_rows[label] = phase_ops(prof, by_shape=True)
            prefill_ops[label] = phase_ops(prof, "prefill", calls=1)
        say(f"## A decode call's kernel time by dsf op at {context} tokens (DSF_CUDA_PROFILE, 2 decode calls)")
        say()
        say(f"| dsf op (all layers) | {anchor_label} us | {anchor_label} TB/s | {new_label} us | {new_label} TB/s "
            f"| {anchor_label} / {new_label} |")
        say("|---|---|---|---|---|---|")
        weights = {label: product_weights(manifests[label]) for label in per_op}
        nbytes = {label: {tag: b for tag, (_, b) in weights[label].items()} for label in per_op}
        def bandwidth(label, op, us):
            bw = nbytes[label].get(op, 0) / (us / 1e6) / 1e12 if us and op in nbytes[label] else None
            return f"{bw:.2f}" if bw else ""
        op_rows(per_op, lambda us: f"{us:.0f}", bandwidth)
        say()
        say("TB/s: the weight bytes the product reads a call (as bound; the routed experts' top-6 of 8) over its "
            f"kernel time; hbm's ceiling is {hbm / 1e12:.2f} TB/s ({card['source']}).")
        say()
        say(f"### {new_label}: a decode call's 30 costliest kernels, by kernel and launch shape, summed over the layers")
        say()
        say("| kernel (its op's n-th) | grid x block | launches a call | us a call | us a launch |")
        say("|---|---|---|---|---|")
        rows = sorted(kernel_rows[new_label].items(), key=lambda kv: -kv[1][0])
        for (op, shape, kernel), (us, launches) in rows[:30]:
            say(f"| {kernel} | {shape} | {launches} | {us:.0f} | {us / max(launches, 1):.1f} |")
        say()
        say(f"## The prefill of {context} tokens: kernel time by dsf op (DSF_CUDA_PROFILE, the same runs)")
        say()
        say(f"| dsf op (all layers) | {anchor_label} ms | {anchor_label} TFLOP/s | {new_label} ms "
            f"| {new_label} TFLOP/s | {anchor_label} / {new_label} |")
        say("|---|---|---|---|---|---|")
        def flop_rate(label, op, us):
            elements = weights[label].get(op, (0, 0))[0]
            rate = 2 * context * elements / (us / 1e6) / 1e12 if us and elements else None
            return f"{rate:.1f}" if rate else ""
        op_rows(prefill_ops, lambda us: f"{us / 1e3:.1f}", flop_rate)
        say()
        say(f"TFLOP/s: 2 x {context} tokens x the weight elements a token multiplies with (the routed experts' "
            "6 of 8), over the kernel time. Ceilings: f32 on the SIMT cores 132 SMs x 128 lanes x 2 x 1.98 GHz = "
            f"{card['simt'] / 1e12:.1f} TFLOP/s; bf16 on the tensor cores {card['tensor'] / 1e12:.0f} "
            f"({card['source']}).")
        say()
        for line in cublas_anchor(context, options.get("cublas", "f32")):
            say(line)
    open(out_md, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
