"""Question: what does running a prefill's sink attention on the tensor cores
(--tile-math=bf16: dsf-gpu-sink-attention's mma.sync kernel, a block per
token and group of 64 heads) gain over the SIMT kernels (a block per token
and head), at V4.1-Flash's real attention sizes (64 heads x 512, window 128,
top-512), and how far is it from the ceiling and from PyTorch doing the same
math on the same GPU?

  python3 bench/gpu_attention_mma.py DSF_RUN OUT.md MMA.dsfa SIMT.dsfa [CONTEXT] [--parts=...]

MMA.dsfa and SIMT.dsfa are bench/configs/deepseek-v4.1-shaped-8e-5l built with
--tile-math=bf16, the first with --attention-mma-min-tokens=16 (the
tensor-core attention, a bf16 build's default), the second with
--attention-mma-min-tokens=0 (every attention on the SIMT kernels). This runs bench/gpu_build_ab.py on the two
(the same random weights; the logits of a 64-token prompt, the prefill and
decode times, the per-op profile; parts as given, default numbers,profile)
and then, from the profiles it leaves in its work folder, each attention
helper's prefill kernels: time, calls, the FLOPs the kernels execute (4 x
tokens x heads x width x (window + k): both products over every column, a
masked one included, as the PyTorch anchor computes them) and their rate
against the bf16 tensor-core ceiling of BENCHMARKS.md (790 TFLOP/s). The
anchor: the same attention in PyTorch bf16 (rows gathered per token, two
batched matmuls, the softmax with the sink in f32), timed with CUDA events
in this run.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_build_ab  # noqa: E402

CEILING = 790e12
HEADS, WIDTH, WINDOW = 64, 512, 128


def attention_kernels(profile_path):
    """{(k, kernel): [us, launches]} over the prefill's attention helpers
    (dsf_attention_h64_d512_w128_k{k}_...)."""
    out = {}
    for line in open(profile_path):
        m = re.match(r"\| (\S+) \(([^)]*)\) \| (\d+) \| ([0-9.]+) \|", line)
        if not m or not m.group(1).startswith("prefill/dsf_attention_h"):
            continue
        name = m.group(1).partition("/")[2]
        k = int(re.search(r"_k(\d+)_", name).group(1))
        kernel = name.partition("__")[2] + f" ({m.group(2)})"
        t = out.setdefault((k, kernel), [0.0, 0])
        t[0] += float(m.group(4))
        t[1] += int(m.group(3))
    return out


def torch_anchor(tokens, k, repeats=5):
    """ms of the same attention in PyTorch bf16 (gather included) and of its
    two products alone, for `tokens` tokens of one layer with `k` entries."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(3)
    entries = max(k * 4, 1)
    q = torch.randn(tokens, HEADS, WIDTH, device="cuda", dtype=torch.bfloat16, generator=g)
    window = torch.randn(tokens, WIDTH, device="cuda", dtype=torch.bfloat16, generator=g)
    cache = torch.randn(entries, WIDTH, device="cuda", dtype=torch.bfloat16, generator=g)
    sink = torch.randn(HEADS, device="cuda", dtype=torch.float32, generator=g)
    t = torch.arange(tokens, device="cuda")
    band = (t[:, None] + torch.arange(WINDOW, device="cuda")[None, :] - (WINDOW - 1))
    band_valid = band >= 0
    rows = torch.cat([window, cache])
    index = band.clamp(min=0)
    valid = band_valid
    if k:
        selection = torch.randint(0, entries, (tokens, k), device="cuda", generator=g)
        index = torch.cat([index, tokens + selection], 1)
        valid = torch.cat([valid, torch.ones_like(selection, dtype=torch.bool)], 1)
    scale = WIDTH ** -0.5

    def attend():
        kv = rows[index]                                   # [tokens, columns, width]
        s = torch.bmm(q, kv.transpose(1, 2)).float() * scale
        s = s.masked_fill(~valid[:, None, :], float("-inf"))
        s = torch.cat([s, sink[None, :, None].expand(tokens, HEADS, 1)], 2)
        p = torch.softmax(s, 2)[:, :, :-1].to(torch.bfloat16)
        return torch.bmm(p, kv)

    def timed(fn):
        for _ in range(2):
            fn()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            fn()
        stop.record()
        torch.cuda.synchronize()
        return start.elapsed_time(stop) / repeats

    whole = timed(attend)
    kv = rows[index]
    p = torch.randn(tokens, HEADS, index.shape[1], device="cuda", dtype=torch.bfloat16, generator=g)
    products = timed(lambda: (torch.bmm(q, kv.transpose(1, 2)), torch.bmm(p, kv)))
    return whole, products, torch.__version__


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    options = [a for a in argv if a.startswith("--")]
    if not any(o.startswith("--parts=") for o in options):
        options.append("--parts=numbers,profile")
    dsf_run, out_md, mma, simt = args[:4]
    context = int(args[4]) if len(args) > 4 else 4096
    labels = ("mma", "simt")
    gpu_build_ab.main([dsf_run, out_md, mma, simt, str(context), f"--labels={labels[0]},{labels[1]}",
                       "--cublas=bf16"] + [o for o in options if not o.startswith("--labels")],
                      title="Sink attention on the tensor cores against the SIMT kernels (bf16 builds), "
                            "V4.1-shaped model at real sizes (5 layers)",
                      script="bench/gpu_attention_mma.py",
                      anchor_note="the default bf16 build: every attention on the SIMT kernels")
    lines = []
    profiles = {label: os.path.join(gpu_build_ab.WORK, f"ab-{label}.profile") for label in labels}
    if all(os.path.exists(p) for p in profiles.values()):
        kernels = {label: attention_kernels(p) for label, p in profiles.items()}
        lines += [f"## The prefill's attention at {context} tokens, by helper and kernel (DSF_CUDA_PROFILE)", "",
                  "| build | helper k | kernel (grid x block) | calls | ms | executed TFLOP | TFLOP/s | of 790 |",
                  "|---|---|---|---|---|---|---|---|"]
        totals = {}
        for label in labels:
            by_k = {}
            for (k, kernel), (us, launches) in sorted(kernels[label].items()):
                by_k.setdefault(k, []).append((kernel, us, launches))
            for k, rows in by_k.items():
                calls = max(launches for _, _, launches in rows)
                flop = 4.0 * context * HEADS * WIDTH * (WINDOW + k) * calls
                helper_us = sum(us for _, us, _ in rows)
                totals.setdefault(label, [0.0, 0.0])
                totals[label][0] += helper_us
                totals[label][1] += flop
                for kernel, us, launches in rows:
                    lines.append(f"| {label} | {k} | {kernel} | {launches} | {us / 1e3:.2f} | | | |")
                rate = flop / (helper_us / 1e6)
                lines.append(f"| {label} | {k} | **the helper's kernels** | {calls} | {helper_us / 1e3:.2f} | "
                             f"{flop / 1e12:.3f} | {rate / 1e12:.1f} | {rate / CEILING:.1%} |")
        for label in labels:
            us, flop = totals[label]
            lines.append(f"| {label} | all | **every attention of the prefill** | | {us / 1e3:.2f} | {flop / 1e12:.3f} | "
                         f"{flop / (us / 1e6) / 1e12:.1f} | {flop / (us / 1e6) / CEILING:.1%} |")
        lines.append(f"| simt / mma | | | | x{totals['simt'][0] / totals['mma'][0]:.1f} | | | |")
        lines.append("")
    try:
        lines += [f"## The anchor: the same attention in PyTorch bf16, one layer of {context} tokens", "",
                  "| k | PyTorch (gather, products, softmax) ms | TFLOP/s | the two bmm alone ms | TFLOP/s | version |",
                  "|---|---|---|---|---|---|"]
        for k in (0, 512):
            whole, products, version = torch_anchor(context, k)
            flop = 4.0 * context * HEADS * WIDTH * (WINDOW + k)
            lines.append(f"| {k} | {whole:.2f} | {flop / whole / 1e9:.1f} | {products:.2f} | "
                         f"{flop / products / 1e9:.1f} | {version} |")
        lines.append("")
    except ImportError:
        lines.append("- PyTorch anchor: PyTorch is not installed here")
    print("\n".join(lines), flush=True)
    with open(out_md, "a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
