"""What the batched-decode benchmarks share (bench/gpu_batch_decode.py,
bench/gpu_batch_kernels.py): a report kept up to date line by line, dsf-run
invoked on a prompt file, and the figures read back from its --timing lines
and DSF_CUDA_PROFILE tables."""
import os
import re
import subprocess


class Report:
    """Markdown lines, printed as they come and rewritten to `path` after each, so that a run stopped at the
    device's limit keeps what it had."""

    def __init__(self, path):
        self.path, self.lines = path, []

    def __call__(self, text=""):
        print(text, flush=True)
        self.lines.append(text)
        with open(self.path, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def gpu_name():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        return "no nvidia-smi"


def ceilings(gpu):
    """The ceilings a figure is stated against on the card `gpu` (gpu_name()'s line): HBM bytes/s, f32 SIMT and
    bf16 tensor-core FLOP/s, and where they come from. The H200's are measured (BENCHMARKS.md); the H100 SXM
    has the same GH100 SMs and clocks (132 SMs x 128 lanes x 2 x 1.98 GHz in f32) but HBM3 at 3.35 TB/s, its
    datasheet's figure, not measured here. Another card: the H200's, said so."""
    h200 = {"hbm": 4.40e12, "simt": 66.9e12, "tensor": 790e12}
    if "H200" in gpu:
        return dict(h200, source="the H200's, measured (BENCHMARKS.md)")
    if "H100" in gpu:
        return dict(h200, hbm=3.35e12, source="the H100 SXM's: HBM 3.35 TB/s from its datasheet (not measured); "
                                              "f32 66.9 and bf16 790 TFLOP/s as the H200's (the same SMs and clocks)")
    return dict(h200, source=f"the H200's (BENCHMARKS.md): no ceilings known for {gpu or 'this card'}")


# Bytes an element of each dtype an artifact's manifest binds weights in:
# --weight-storage=released binds FP8 codes (e4m3), their UE8M0 scales, and
# MXFP4 codes two a byte (e2m1x2, the shape counting bytes).
BOUND_BYTES = {"f32": 4, "bf16": 2, "i32": 4, "e4m3": 1, "ue8m0": 1, "e2m1x2": 1}
PACKED_DTYPES = ("e4m3", "ue8m0", "e2m1x2")


def bound_size(weight):
    """(bytes, weight elements) of one manifest weight as the artifact binds it: a packed weight's scales are
    bytes it reads but no elements, its MXFP4 codes two elements a byte."""
    n = 1
    for d in weight["shape"]:
        n *= d
    elements = {"ue8m0": 0, "e2m1x2": 2 * n}.get(weight["dtype"], n)
    return BOUND_BYTES[weight["dtype"]] * n, elements


def owner_of(weight, weights_by_name):
    """The weight a packed weight's scales (NAME.scale) belong to, or the weight itself."""
    return weights_by_name.get(weight["name"].removesuffix(".scale"), weight)


def kv_read(context, f32):
    """Cache bytes one sequence's decode token reads at `context` positions on
    the V4.1-Flash shape (bench/configs/deepseek-v4.1-shaped-8e: 40 layers,
    ratio 2 before layer 20, indexers in the Full and Reindex layers): each
    indexer scores every key of its source, each attention layer reads 512
    selected entries (or all, when fewer) and its 128-entry window. f32
    entries, or the released formats' (FP4 index keys 68 B, FP8 + bf16 rope
    entries 288 B, the window's 528 B)."""
    total = 0
    for layer in range(40):
        ratio = 0 if layer < 2 else (2 if layer < 20 else 1)
        if ratio:
            entries = context // ratio
            if layer in (2, 8, 14, 20, 24, 28, 32, 36):
                total += entries * (128 * 4 if f32 else 68)
            total += min(512, entries) * (512 * 4 if f32 else 288)
        total += 128 * (512 * 4 if f32 else 528)
    return total


def run_dsf(dsf_run, artifact, weights, ids_path, extra, environment=None, timeout=900):
    """dsf-run ARTIFACT on the prompt in `ids_path` with --timing and `extra`; (stderr, stdout), or an error with the
    command and the end of its stderr. Modules load eagerly, so that no step pays for a kernel's first load."""
    cmd = [dsf_run, artifact, "--weights", weights, "--prompt-ids", "@" + ids_path, "--timing"] + extra
    env = dict(os.environ, CUDA_MODULE_LOADING="EAGER", **(environment or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-3000:]}")
    return r.stderr, r.stdout


def batch_steps(stderr):
    """{batch size: (median step ms after the first, first step ms, launches a step or None, graph replays)}"""
    out = {}
    for m in re.finditer(r"timing: batch of (\d+): (\d+) steps .*?first step ([0-9.]+) ms, the others' median "
                         r"([0-9.]+) ms(?:; (\d+) GPU kernel launches a step)?(?:; CUDA graphs: (\d+) captured, "
                         r"(\d+) steps replayed)?", stderr):
        out[int(m.group(1))] = (float(m.group(4)), float(m.group(3)), m.group(5), m.group(7) or "0")
    return out


def profile_by_op(path, steps):
    """{dsf op: [launches a step, ms a step]} over @batch_decode's kernels in a DSF_CUDA_PROFILE table of `steps`
    steps; a kernel's op is its name after the function's, less a trailing count."""
    by_op = {}
    for line in open(path):
        m = re.match(r"\| (\S+) \(([^)]*)\) \| (\d+) \| ([0-9.]+) \|", line)
        if not m or not m.group(1).startswith("batch_decode"):
            continue
        name = m.group(1).split("/", 1)[-1]
        op = re.sub(r"_\d+$", "", name.partition("__")[2]) or name
        t = by_op.setdefault(op, [0, 0.0])
        t[0] += int(m.group(3)) / steps
        t[1] += float(m.group(4)) / 1e3 / steps
    return by_op


def build_args(args, context):
    """DSF_RUN OUT.md NAME=ARTIFACT... [--context N] [--batches 1,8,64] [--profile-batch B,...]: (dsf_run, out_md,
    [(name, artifact)], context, batches, profile batches)."""
    dsf_run, out_md = args[0], args[1]
    builds, batches, profile_batches = [], [1, 8, 64], []
    i = 2
    while i < len(args):
        if args[i] == "--context":
            context = int(args[i + 1])
            i += 2
        elif args[i] == "--batches":
            batches = [int(n) for n in args[i + 1].split(",")]
            i += 2
        elif args[i] == "--profile-batch":
            profile_batches = [int(n) for n in args[i + 1].split(",")]
            i += 2
        elif "=" in args[i]:
            builds.append(tuple(args[i].split("=", 1)))
            i += 1
        else:
            raise SystemExit(f"unknown argument {args[i]}")
    return dsf_run, out_md, builds, context, batches, profile_batches


def random_weights_and_prompt(work, artifact, context):
    """Random weights in the released formats for `artifact` (written once into `work`) and a `context`-token
    prompt file (seed 11): (weights path, prompt path, the artifact's manifest)."""
    import numpy as np
    import dsfa_tool
    weights = os.path.join(work, "weights.safetensors")
    art = open(artifact, "rb").read()
    manifest = dsfa_tool.manifest(art)
    if not os.path.exists(weights):
        dsfa_tool.write_random_quantized(art, weights)
    del art
    rng = np.random.default_rng(11)
    ids_path = os.path.join(work, f"ids{context}")
    with open(ids_path, "w") as f:
        f.write(",".join(map(str, rng.integers(0, manifest["vocab_size"], context))))
    return weights, ids_path, manifest
