"""Runs one sink attention helper's tensor-core kernels (dsf-gpu-sink-attention
with math=bf16 and mma-min-tokens >= 1: the rows-to-bf16 conversion, then the
attention) straight from dsf-compile --emit=ptx output on the GPU, on fresh
random inputs, and compares them with NumPy: the same math with the
queries, the rows and the probabilities rounded to bf16 as the kernel rounds
them (to nearest even), and in float64.

A batched step's helper (dsf.slot_attention, mma-min-batch >= 1: the
gather of each sequence's columns, then the attention) runs on random
rings, positions, page tables, selections and pages (f32, or nvfp4 codes
and E4M3 scales), every row it must not read holding NaN: the gathered
columns and their row-valid flags must equal NumPy's exactly, the output
be within --max-rel of the same math.

usage: attention_kernel_check.py KERNELS.ptx HELPER [--seed N] [--max-rel R] [--inputs CAPTURE.npz] [--module CUBIN]
                                 [--split-below-blocks N]
  HELPER: the helper's name, e.g. dsf_attention_h4_d128_w8_k8_s3db504f3
  (heads, width, window, k, the scale's f32 bits), or a batched step's,
  dsf_attention_slots_h4_d128_w16_k8_s3db504f3_e32_nvfp4 (and the page's
  entries, the pages' format); its kernels are HELPER followed by the
  attention op's kernel names: the conversion (or gather), then the
  tensor-core attention.
  --inputs: instead of random inputs, the layers of a capture of this
  helper's shape (capture_v4_attention.py: the NumPy reference's inputs).
  --module: load the kernels from this file (say ptxas's cubin of the same
  PTX) rather than JIT-compiling the helper's PTX.
  --split-below-blocks: the dsf-compile --attention-split-below-blocks the
  PTX was built with, for a helper of more than one chunk of 64 columns:
  the attention then runs over (tokens, groups, parts) blocks, each part's
  unnormalized output, maximum and sum stored, and a third kernel (the
  launch after the attention's) merges them; the parts are computed here
  as the host function computes them. Its cases have fewer blocks than N
  (the split) and, for a prefill's helper, one of more (one part).

Only libcuda (ctypes) and NumPy: no CUDA toolkit, no PyTorch. The kernels'
parameters are the outlined launches' captured values in the order
gpu-kernel-outlining gives them (first use), memrefs expanded to their
descriptors (allocated, aligned, offset, sizes, strides); the script checks
the parameter counts it expects and says so when the lowering changed them.
Exit 1 when a case's worst relative error (per token and head, against the
bf16-rounded reference) passes --max-rel or any output is not finite."""
import ctypes
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import codecs_np  # noqa: E402
from sink_attention_np import attend, sink_attention, widen  # noqa: E402


def fail(message):
    print("attention_kernel_check: " + message, file=sys.stderr)
    sys.exit(1)


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


if len(sys.argv) < 3:
    fail("usage: attention_kernel_check.py KERNELS.ptx HELPER [--seed N] [--max-rel R] [--inputs CAPTURE.npz] [--module CUBIN]")
ptx_path, helper = sys.argv[1], sys.argv[2]
seed, max_rel = int(option("--seed", "1")), float(option("--max-rel", "1e-2"))
try:
    split_below = int(option("--split-below-blocks", "0"))
except ValueError:
    split_below = -1
if split_below < 0:
    fail(f"--split-below-blocks: expected a count of blocks >= 0, not {option('--split-below-blocks', '')}")
shape = re.fullmatch(r"dsf_attention_(slots_)?h(\d+)_d(\d+)_w(\d+)_k(\d+)_s([0-9a-f]{8})(?:_e(\d+)(_nvfp4)?)?", helper)
if not shape or bool(shape.group(1)) != (shape.group(7) is not None):
    fail(f"{helper}: not a sink attention helper's name (dsf_attention_hH_dD_wW_kK_sSCALE, or "
         "dsf_attention_slots_hH_dD_wW_kK_sSCALE_eENTRIES[_nvfp4])")
H, D, W, K = (int(shape.group(i)) for i in range(2, 6))
scale = np.frombuffer(int(shape.group(6), 16).to_bytes(4, "little"), np.float32)[0]
slots, packed = bool(shape.group(1)), bool(shape.group(8))
page_entries = int(shape.group(7) or 0)
if slots and "--inputs" in sys.argv:
    fail("--inputs: captures are of a prefill's helpers, not of a batched step's")

text = open(ptx_path).read()
header = re.search(r"\.version [^\n]*\n\.target [^\n]*\n\.address_size 64\n", text)
if not header:
    fail(f"{ptx_path}: no PTX header (.version, .target, .address_size)")


# The helper's kernels, each its text and its count of parameters.
kernels = {}
for match in re.finditer(r"\.visible \.entry (" + re.escape(helper) + r"__\w+_(\d+))\(", text):
    body = text[match.start():text.find("\n}\n", match.start()) + 3]
    kernels[match.group(1)] = (body, body[:body.find(")")].count(".param .u64"))
tensor_core = [name for name, (body, _) in kernels.items() if "ldmatrix" in body]
if len(tensor_core) != 1:
    fail(f"{ptx_path}: expected one tensor-core attention kernel of {helper}, found {len(tensor_core)}"
         " (was it built with --tile-math=bf16, --attention-mma-min-tokens or --attention-mma-min-batch?)")
attention = tensor_core[0]
# The conversion is the launch before the attention's.
stem, index = attention.rsplit("_", 1)
convert = f"{stem}_{int(index) - 1}"
if convert not in kernels or "cvt.rn.bf16x2" not in kernels[convert][0]:
    fail(f"{ptx_path}: no conversion kernel {convert} before {attention}")
module_text = header.group(0) + kernels[convert][0] + kernels[attention][0]
# The split (SinkAttentionMma.cpp): built for helpers of more than one chunk
# when --attention-split-below-blocks > 0; its attention kernel takes the
# parts' size and count and their three buffers (19 parameters more), and a
# merge kernel follows it.
CHUNK, MERGE_PARAMETERS, SPLIT_PARAMETERS = 64, 34, 19
chunks = (W + K + CHUNK - 1) // CHUNK
whole_parameters = 35 if slots else 31 if K == 0 else 39
split = kernels[attention][1] == whole_parameters + SPLIT_PARAMETERS
if split and split_below == 0:
    fail(f"{attention}: the split attention ({kernels[attention][1]} parameters): give the "
         "--attention-split-below-blocks it was built with as --split-below-blocks N")
if split_below > 0 and chunks > 1 and not split:
    fail(f"{attention}: {kernels[attention][1]} parameters, not the split attention's "
         f"{whole_parameters + SPLIT_PARAMETERS}: was it built with --attention-split-below-blocks={split_below}?")
merge = f"{stem}_{int(index) + 1}"
if split:
    if merge not in kernels or kernels[merge][1] != MERGE_PARAMETERS or "ldmatrix" in kernels[merge][0]:
        fail(f"{ptx_path}: no merge kernel {merge} ({MERGE_PARAMETERS} parameters) after {attention}")
    module_text += kernels[merge][0]

try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    fail(f"no CUDA driver (libcuda.so.1): {e}")


def check(r, what):
    if r != 0:
        name = ctypes.c_char_p()
        cu.cuGetErrorName(r, ctypes.byref(name))
        fail(f"{what}: {name.value.decode() if name.value else r}")


check(cu.cuInit(0), "cuInit")
device, context, module = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
check(cu.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(context), "cuCtxSetCurrent")
# --module: the same kernels compiled elsewhere (a cubin of ptxas, as an
# artifact holds them) instead of the driver's JIT of the PTX.
image = (module_text + "\0").encode()
if "--module" in sys.argv:
    try:
        image = open(option("--module", ""), "rb").read()
    except OSError as e:
        fail(f"--module: {e}")
check(cu.cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
cu.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]


class Buffer:
    def __init__(self, array):
        self.array = np.ascontiguousarray(array)
        self.ptr = ctypes.c_uint64()
        check(cu.cuMemAlloc_v2(ctypes.byref(self.ptr), max(self.array.nbytes, 1)), "cuMemAlloc")
        check(cu.cuMemcpyHtoD_v2(self.ptr.value, self.array.ctypes.data, self.array.nbytes), "cuMemcpyHtoD")

    def desc(self):
        strides = [s // self.array.itemsize for s in self.array.strides]
        return [self.ptr.value, self.ptr.value, 0] + list(self.array.shape) + strides

    def read(self):
        out = np.empty_like(self.array)
        check(cu.cuMemcpyDtoH_v2(out.ctypes.data, self.ptr.value, out.nbytes), "cuMemcpyDtoH")
        return out


def launch(name, grid, threads, shared, params, expected):
    if kernels[name][1] != expected:
        fail(f"{name}: {kernels[name][1]} parameters, this script passes {expected} (did the lowering's captures change?)")
    function = ctypes.c_void_p()
    check(cu.cuModuleGetFunction(ctypes.byref(function), module, name.encode()), "cuModuleGetFunction " + name)
    if shared > 48 * 1024:
        check(cu.cuFuncSetAttribute(function, 8, shared), "cuFuncSetAttribute " + name)  # max dynamic shared bytes
    values = [ctypes.c_uint64(int(p)) for p in params]
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
    grid = tuple(grid) + (1,) * (3 - len(grid))
    check(cu.cuLaunchKernel(function, grid[0], grid[1], grid[2], threads, 1, 1, shared, None, pointers, None),
          "launch " + name)
    check(cu.cuCtxSynchronize(), name)


def shared_bytes():
    """SinkAttentionMma.cpp's dynamic shared memory for these sizes."""
    hb = 16 if H <= 16 else 32 if H <= 32 else 64
    col_groups = 8 // (2 if hb >= 32 else 1)
    parts = [hb * (D + 8) * 2, 2 * 64 * (D + 8) * 2, hb * 72 * 2, 2 * 64 * 4, col_groups * hb * 4,
             col_groups * hb * 4, 2 * hb * 4, hb * 4]
    at = 0
    for p in parts:
        at = (at + p + 15) // 16 * 16
    return at, hb


class Parts:
    """The parts of an attention call of `tokens` rows, as the host function
    computes them: fewer blocks (tokens x groups) than --split-below-blocks
    split the chunks into ceil(N / blocks) parts at most, `per_part` chunks
    each, none empty; the buffers NaN, so a part row not stored shows."""

    def __init__(self, tokens, groups):
        self.count, self.per_part = 1, chunks
        if split:
            wanted = min(-(-split_below // max(tokens * groups, 1)), chunks)
            self.per_part = -(-chunks // wanted)
            self.count = -(-chunks // self.per_part)
        rows = self.count * tokens * H if self.count > 1 else 1
        self.out = Buffer(np.full((rows, D), np.nan, np.float32))
        self.max, self.sum = Buffer(np.full(rows, np.nan, np.float32)), Buffer(np.full(rows, np.nan, np.float32))
        self.tokens = tokens

    def attention_tail(self, out):
        """The split attention's last parameters, after the sink: the parts'
        count, the output, the parts' maxima, sums and outputs."""
        return [self.count] + out.desc() + self.max.desc() + self.sum.desc() + self.out.desc()

    def merge(self, sink, out):
        """The merge kernel, when there are parts to merge."""
        if self.count > 1:
            quads = self.tokens * H * (D // 4)
            launch(merge, ((quads + 255) // 256, 1), 256, 0,
                   [quads] + self.max.desc() + [self.tokens * H, self.count] + sink.desc() + self.sum.desc()
                   + self.out.desc() + out.desc(), MERGE_PARAMETERS)


def run(q, rows, cache, selection, sink):
    """The helper's kernels on these inputs: its output [tokens, H, D], the
    converted rows (bf16 bits widened to float32) and the attention's parts."""
    tokens, rows_n = q.shape[0], rows.shape[0]
    bq, brows, bsink = Buffer(q), Buffer(rows), Buffer(sink)
    out = Buffer(np.full((tokens, H, D), np.nan, np.float32))
    shared, hb = shared_bytes()
    groups = (H + hb - 1) // hb
    parts = Parts(tokens, groups)
    if K == 0:
        kv = Buffer(np.zeros((rows_n, D), np.uint16))
        quads = rows_n * D // 4
        launch(convert, ((quads + 255) // 256, 1), 256, 0, [quads] + brows.desc() + kv.desc(), 15)
        if split:
            launch(attention, (tokens, groups, parts.count), 256, shared,
                   bq.desc() + [parts.per_part, rows_n] + kv.desc() + bsink.desc() + parts.attention_tail(out), 50)
            parts.merge(bsink, out)
        else:
            launch(attention, (tokens, groups), 256, shared,
                   bq.desc() + [rows_n] + kv.desc() + bsink.desc() + out.desc(), 31)
    else:
        entries = cache.shape[0]
        bcache, bselection = Buffer(cache), Buffer(selection)
        kv = Buffer(np.zeros((rows_n + entries, D), np.uint16))
        quads = (rows_n + entries) * D // 4
        launch(convert, ((quads + 255) // 256, 1), 256, 0, brows.desc() + [quads] + bcache.desc() + kv.desc(), 22)
        if split:
            launch(attention, (tokens, groups, parts.count), 256, shared,
                   bq.desc() + [parts.per_part, rows_n] + bselection.desc() + [entries] + kv.desc() + bsink.desc()
                   + parts.attention_tail(out), 58)
            parts.merge(bsink, out)
        else:
            launch(attention, (tokens, groups), 256, shared,
                   bq.desc() + [rows_n] + bselection.desc() + [entries] + kv.desc() + bsink.desc() + out.desc(), 39)
    return out.read().astype(np.float64), (kv.read().astype(np.uint32) << 16).view(np.float32), parts.count


def e4m3_value(byte):
    """E4M3FN bytes -> float64 (0x7F / 0xFF: NaN)."""
    b = np.asarray(byte, np.int64)
    field, mantissa = (b >> 3) & 15, b & 7
    magnitude = np.where(field == 0, mantissa / 8.0 * 2.0 ** -6, (1 + mantissa / 8.0) * 2.0 ** (field - 7.0))
    magnitude = np.where((b & 0x7F) == 0x7F, np.nan, magnitude)
    return np.where(b & 0x80, -magnitude, magnitude)


def decode_nvfp4(rows):
    """[N, D / 2 + D / 16] bytes (two E2M1 codes a byte, the even channel in
    the low nibble, then an E4M3 scale per 16 channels) -> [N, D] float64."""
    codes = rows[:, :D // 2].astype(np.int64)
    nibbles = np.stack([codes & 15, codes >> 4], axis=-1).reshape(rows.shape[0], D)
    values = codecs_np.E2M1_GRID[nibbles & 7].astype(np.float64) * np.where(nibbles & 8, -1.0, 1.0)
    return values * np.repeat(e4m3_value(rows[:, D // 2:]), 16, axis=1)


def slot_sources(positions, table, selection, pool_rows):
    """Where NumPy's gather takes each column: [T][W + k] of ("ring", row),
    ("pool", row) or None. Band column c of sequence t is position
    p - (W - 1) + c at ring row t W + that mod W when it is >= 0; entry s
    is row e mod E of page table[t, e div E] (e = selection[t, s]) when e >=
    0, that page index is within the table, the page >= 0 and the row within
    the pool."""
    sources = []
    for t in range(positions.shape[0]):
        mine = []
        for c in range(W):
            position = int(positions[t]) - (W - 1) + c
            mine.append(("ring", t * W + position % W) if position >= 0 else None)
        for j in range(K):
            e = int(selection[t, j])
            page = int(table[t, e // page_entries]) if 0 <= e and e // page_entries < table.shape[1] else -1
            row = page * page_entries + e % page_entries
            mine.append(("pool", row) if page >= 0 and row < pool_rows else None)
        sources.append(mine)
    return sources


def slot_columns(rings, pages, sources):
    """NumPy's gather: [T, W + k, D] float64 columns (zeros where none) and
    [T, W + k] row-valid flags."""
    pool = None if K == 0 else (decode_nvfp4(pages) if packed else pages.astype(np.float64))
    columns, valid = np.zeros((len(sources), W + K, D)), np.zeros((len(sources), W + K), np.int32)
    for t, mine in enumerate(sources):
        for c, source in enumerate(mine):
            if source:
                columns[t, c], valid[t, c] = (rings if source[0] == "ring" else pool)[source[1]], 1
    return columns, valid


def slot_reference(q, columns, valid, sink, round_bf16):
    """The sink attention of each sequence over its valid columns, float64."""
    out = np.zeros(q.shape)
    for t in range(q.shape[0]):
        kv = widen(columns[t][valid[t] != 0].astype(np.float32), round_bf16)
        out[t] = attend(widen(q[t], round_bf16), kv, sink, scale, round_bf16)
    return out


def slot_case(sequences, rng):
    """A batched step of `sequences`: positions from 0 (a band of one row)
    to past the window, a page table with pages of -1 and past the pool,
    selections with -1 and entries past the table; every ring row, pool
    row and page the step must not read holds NaN (an nvfp4 row: NaN
    scales)."""
    q = (rng.standard_normal((sequences, H, D)) * 2).astype(np.float32)
    sink = rng.standard_normal(H).astype(np.float32)
    positions = rng.integers(0, 3 * W, size=sequences).astype(np.int32)
    positions[: min(3, sequences)] = [0, W - 2, W - 1][: min(3, sequences)]
    rings = rng.standard_normal((sequences * W, D)).astype(np.float32)
    pages = table = selection = None
    pool_rows = 0
    if K:
        pool_pages, table_width = 5, 3
        pool_rows = pool_pages * page_entries
        table = rng.integers(-1, pool_pages + 2, size=(sequences, table_width)).astype(np.int32)
        selection = rng.integers(-1, (table_width + 1) * page_entries, size=(sequences, K)).astype(np.int32)
        if packed:
            scales = codecs_np.e4m3_bits(codecs_np.e4m3_rne(2.0 ** rng.uniform(-4, 2, size=(pool_rows, D // 16))))
            pages = np.concatenate([rng.integers(0, 256, size=(pool_rows, D // 2)).astype(np.uint8), scales], axis=1)
        else:
            pages = rng.standard_normal((pool_rows, D)).astype(np.float32)
    sources = slot_sources(positions, table, selection, pool_rows)
    # Rows no column reads are NaN (an nvfp4 row: NaN scales): a read of one shows.
    read = {source for mine in sources for source in mine if source}
    for row in range(sequences * W):
        if ("ring", row) not in read:
            rings[row] = np.nan
    for row in range(pool_rows):
        if ("pool", row) not in read:
            if packed:
                pages[row, D // 2:] = 0x7F
            else:
                pages[row] = np.nan
    columns, valid = slot_columns(rings, pages, sources)
    bq, brings, bpositions, bsink = Buffer(q), Buffer(rings), Buffer(positions), Buffer(sink)
    out = Buffer(np.full((sequences, H, D), np.nan, np.float32))
    kv = Buffer(np.full((sequences * (W + K), D), 0xFFFF, np.uint16))
    bvalid = Buffer(np.full(sequences * (W + K), -1, np.int32))
    count = sequences * (W + K) * (D // 4)
    if K == 0:
        launch(convert, ((count + 255) // 256, 1), 256, 0,
               [count] + bpositions.desc() + brings.desc() + kv.desc() + bvalid.desc(), 25)
    else:
        bpages, btable, bselection = Buffer(pages), Buffer(table), Buffer(selection)
        launch(convert, ((count + 255) // 256, 1), 256, 0,
               btable.desc() + bpages.desc() + [count] + bpositions.desc() + bselection.desc() + brings.desc()
               + kv.desc() + bvalid.desc(), 46)
    shared, hb = shared_bytes()
    groups = (H + hb - 1) // hb
    parts = Parts(sequences, groups)
    if split:
        launch(attention, (sequences, groups, parts.count), 256, shared,
               bq.desc() + [parts.per_part] + bvalid.desc() + kv.desc() + bsink.desc() + parts.attention_tail(out), 54)
        parts.merge(bsink, out)
    else:
        launch(attention, (sequences, groups), 256, shared,
               bvalid.desc() + kv.desc() + bq.desc() + bsink.desc() + out.desc(), 35)
    got = out.read().astype(np.float64)
    gathered = (kv.read().astype(np.uint32) << 16).view(np.float32).reshape(sequences, W + K, D)
    flags = bvalid.read().reshape(sequences, W + K)
    columns_exact = (np.isin(flags, (0, 1)).all() and np.array_equal(flags, valid)
                     and np.array_equal(gathered, codecs_np.bf16_rne(columns.astype(np.float32))))
    finite = np.all(np.isfinite(got))
    errors = [np.linalg.norm(got - ref, axis=2) / np.linalg.norm(ref, axis=2)
              for ref in (slot_reference(q, columns, valid, sink.astype(np.float64), emulate) for emulate in (True, False))]
    worst = errors[0].max() if finite else np.nan
    ok = columns_exact and worst <= max_rel
    bad = np.argwhere(~(errors[0] <= max_rel))
    print(f"{helper} sequences {sequences}{f' in {parts.count} parts' if split else ''} (columns {int(valid.sum())} of {valid.size}): against bf16-rounded NumPy "
          f"{worst:.3e}, against float64 {errors[1].max() if finite else np.nan:.3e}, gathered columns "
          f"{'exact' if columns_exact else 'WRONG'}"
          + ("" if ok else f" FAILED ({len(bad)} (sequence, head) pairs over {max_rel}, first {bad[:4].tolist()})"))
    return ok


def compare(what, q, rows, cache, selection, sink, expected=None):
    """Runs the kernels and prints the worst relative errors (per token and
    head) against NumPy bf16-rounded and float64 (and `expected`, an output
    computed elsewhere, when given); True when within --max-rel."""
    got, converted, part_count = run(q, rows, cache, selection, sink)
    rows_exact = np.array_equal(converted, codecs_np.bf16_rne(rows if cache is None else np.concatenate([rows, cache])))
    finite = np.all(np.isfinite(got))
    errors = []
    for emulate in (True, False):
        ref = sink_attention(q, rows, cache, selection, sink, W, scale, round_bf16=emulate)
        errors.append(np.linalg.norm(got - ref, axis=2) / np.linalg.norm(ref, axis=2))
    worst = errors[0].max() if finite else np.nan
    ok = rows_exact and worst <= max_rel
    bad = np.argwhere(~(errors[0] <= max_rel))
    extra = ""
    if expected is not None:
        e = np.linalg.norm(got - expected, axis=2) / np.linalg.norm(expected, axis=2)
        extra = f", against the captured output {e.max() if finite else np.nan:.3e}"
    print(f"{what}{f' in {part_count} parts' if split else ''}: against bf16-rounded NumPy {worst:.3e}, against float64 "
          f"{errors[1].max() if finite else np.nan:.3e}{extra}, rows to bf16 {'exact' if rows_exact else 'WRONG'}"
          + ("" if ok else f" FAILED ({len(bad)} (token, head) pairs over {max_rel}, first {bad[:4].tolist()})"))
    return ok


def case(tokens, earlier, entries, rng):
    """`tokens` queries whose window holds `earlier` rows before them."""
    rows_n = tokens + earlier
    q = (rng.standard_normal((tokens, H, D)) * 2).astype(np.float32)
    rows = rng.standard_normal((rows_n, D)).astype(np.float32)
    sink = rng.standard_normal(H).astype(np.float32)
    cache = selection = None
    if K:
        cache = rng.standard_normal((entries, D)).astype(np.float32)
        # Entries -1 (none) and out-of-range ones are no column.
        selection = rng.integers(-1, entries + 1, size=(tokens, K)).astype(np.int32)
    return compare(f"{helper} tokens {tokens} earlier {earlier} entries {entries}", q, rows, cache, selection, sink)


def captured(path):
    """The layers of a capture (an .npz of layer{i}_q [T, H, D], _rows [T, D],
    _sink [H], and for a layer with entries _cache [E, D] and _selection
    [T, k] (-1: none), _out [T, H, D] the capturing model's output) whose
    shape is this helper's."""
    try:
        data = np.load(path)
    except (OSError, ValueError) as e:
        fail(f"{path}: not a capture (.npz): {e}")
    layers = sorted({int(m.group(1)) for m in (re.match(r"layer(\d+)_q$", n) for n in data.files) if m})
    results = []
    for i in layers:
        q, rows, sink = (data[f"layer{i}_{n}"].astype(np.float32) for n in ("q", "rows", "sink"))
        has_cache = f"layer{i}_cache" in data.files
        if q.shape[1:] != (H, D) or has_cache != (K > 0):
            continue
        cache = selection = None
        if has_cache:
            cache = data[f"layer{i}_cache"].astype(np.float32)
            selection = data[f"layer{i}_selection"].astype(np.int32)
            if selection.shape[1] != K:
                continue
        expected = data[f"layer{i}_out"].astype(np.float64) if f"layer{i}_out" in data.files else None
        results.append(compare(f"{helper} {os.path.basename(path)} layer {i} ({q.shape[0]} tokens)",
                               q, rows, cache, selection, sink, expected))
    if not results:
        fail(f"{path}: no layer of {helper}'s shape")
    return results


if slots:
    rng = np.random.default_rng(seed)
    results = [slot_case(n, rng) for n in (1, 3, 8, 64)]
elif "--inputs" in sys.argv:
    results = captured(option("--inputs", ""))
else:
    rng = np.random.default_rng(seed)
    results = [case(t, e, n, rng) for (t, e, n) in ((16, 0, 4), (40, 0, 10), (37, 5, 9), (130, 3, 70), (300, 0, 600))]
print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
