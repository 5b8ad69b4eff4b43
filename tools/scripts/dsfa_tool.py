"""Reads and edits .dsfa artifacts (the format is runtime/include/dsf/artifact.h)
and makes random checkpoints for them: for the main job (scripts/run.sh) and
the runtime's tests.

  dsfa_tool.py manifest ART                     print the manifest JSON
  dsfa_tool.py random-weights ART OUT [--drop NAME] [--extra NAME] [--reshape NAME]
                                                 random f32 weights for every weight the
                                                 manifest binds (per-expert names expanded)
  dsfa_tool.py random-weights-quantized ART OUT [--pool N]
                                                 random weights in the released formats, written
                                                 as a stream (real-size models): matrices as FP8
                                                 E4M3 with UE8M0 32x32 block scales, experts as
                                                 MXFP4 (two E2M1 a byte, UE8M0 per 32), vectors f32
  dsfa_tool.py truncate ART OUT BYTES            the first BYTES bytes
  dsfa_tool.py flip ART OUT OFFSET               one byte flipped (negative: from the end)
  dsfa_tool.py set-version ART OUT VERSION       another format version, checksum fixed
  dsfa_tool.py set-manifest ART OUT FILE         the manifest replaced by FILE's JSON (valid checksums)
  dsfa_tool.py set-kernels ART OUT FILE          the host kernels replaced by FILE's bytes (valid checksums)
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "test", "reference"))
import safetensors_io  # noqa: E402


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def sections(data):
    count = struct.unpack_from("<I", data, 12)[0]
    out = []
    for i in range(count):
        kind, _, off, size, _ = struct.unpack_from("<IIQQQ", data, 16 + 32 * i)
        out.append((kind, data[off:off + size]))
    return out


def manifest(data):
    return json.loads([b for k, b in sections(data) if k == 1][0])


def rebuild(data, replace):
    """The artifact with section kinds in `replace` given new bytes."""
    version = struct.unpack_from("<I", data, 8)[0]
    parts = [(k, replace.get(k, b)) for k, b in sections(data)]
    header = bytearray(data[:8]) + struct.pack("<II", version, len(parts))
    offset = len(header) + 32 * len(parts) + 8
    body = b""
    for kind, b in parts:
        header += struct.pack("<IIQQQ", kind, 0, offset + len(body), len(b), fnv1a64(b))
        body += b
    header += struct.pack("<Q", fnv1a64(bytes(header)))
    return bytes(header) + body


def fp8_e4m3_values():
    """The 254 finite E4M3 values by code (0x7F and 0xFF are NaN)."""
    codes = np.arange(256)
    exp, man, sign = (codes >> 3) & 15, codes & 7, np.where(codes & 128, -1.0, 1.0)
    vals = np.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp - 7.0)) * sign
    vals[(codes & 127) == 127] = np.nan
    return vals


def nearest_codes(values, table):
    """The code of `table` (value by code, NaN for none) nearest each value."""
    finite = np.flatnonzero(~np.isnan(table))
    order = finite[np.argsort(table[finite])]
    sorted_vals = table[order]
    i = np.clip(np.searchsorted(sorted_vals, values), 1, len(order) - 1)
    left_closer = (values - sorted_vals[i - 1]) < (sorted_vals[i] - values)
    return order[np.where(left_closer, i - 1, i)].astype(np.uint8)


def write_random_quantized(art, out, seed=11, pool_size=1 << 26):
    """Streams a checkpoint for every weight `art` binds without holding it in
    memory: a pool of random codes is generated once and each tensor takes a
    window of it at a random offset (values for speed and memory benchmarks,
    not for training)."""
    rng = np.random.default_rng(seed)
    fp8_pool = nearest_codes(rng.standard_normal(pool_size), fp8_e4m3_values())
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, np.nan, -0.5, -1, -1.5, -2, -3, -4, -6])
    nibbles = nearest_codes(1.5 * rng.standard_normal(2 * pool_size), e2m1)
    fp4_pool = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)

    def pooled(pool, n):
        start = int(rng.integers(0, len(pool)))
        while n > 0:
            take = min(n, len(pool) - start)
            yield pool[start:start + take]
            n -= take
            start = 0

    def ue8m0(fan_in, spread):
        # 2^(s - 127): the elements' spread times the scale is 1 / sqrt(fan_in).
        return np.uint8(127 + round(-0.5 * np.log2(fan_in) - np.log2(spread)))

    entries = []  # (name, dtype, shape, byte count, chunk generator)
    specs = {w["name"]: w for entry in manifest(art)["entry_points"] for w in entry["weights"]}
    for entry in manifest(art)["entry_points"]:
        for w in entry["weights"]:
            if any(e[0] == w["name"] for e in entries):
                continue
            name, shape = w["name"], w["shape"]
            if w["dtype"] == "ue8m0":
                continue   # a packed weight's scales: written with its codes
            if w["dtype"] == "e2m1x2":   # bound packed: its shape is the codes' bytes
                shape = shape[:-1] + [2 * shape[-1]]
            count = int(np.prod(shape)) if shape else 1
            if w["dtype"] == "i32":
                entries.append((name, "I32", shape, 4 * count, lambda c=count: iter([np.zeros(c, np.int32)])))
            elif "expert_names" in w:
                cols = shape[-1]
                entries.append((name, "U8", shape[:-1] + [cols // 2], count // 2,
                                lambda c=count: pooled(fp4_pool, c // 2)))
                entries.append((name + ".scale", "U8", shape[:-1] + [cols // 32], count // 32,
                                lambda c=count, s=ue8m0(cols, 2.0): iter([np.full(c // 32, s, np.uint8)])))
            elif w["dtype"] == "e4m3" or (len(shape) >= 2 and min(shape[-2:]) >= 64):
                rows, cols = shape[-2], shape[-1]
                blocks = shape[:-2] + [-(-rows // 32), -(-cols // 32)]
                if w["dtype"] == "e4m3":   # bound packed: the scales' shape is the artifact's
                    blocks = specs[name + ".scale"]["shape"]
                nblocks = int(np.prod(blocks))
                entries.append((name, "F8_E4M3", shape, count, lambda c=count: pooled(fp8_pool, c)))
                entries.append((name + ".scale", "F8_E8M0", blocks, nblocks,
                                lambda c=nblocks, s=ue8m0(cols, 1.0): iter([np.full(c, s, np.uint8)])))
            else:
                a = rng.standard_normal(count) / np.sqrt(shape[-1] if shape else 1)
                if name.endswith("norm.weight"):
                    a = 1 + 0.1 * rng.standard_normal(count)
                if w["dtype"] == "bf16":
                    # As a bf16 checkpoint holds it: BF16, so that an artifact
                    # binding it as f32 computes with the same values.
                    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
                    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
                    entries.append((name, "BF16", shape, 2 * count, lambda b=bits: iter([b])))
                else:
                    entries.append((name, "F32", shape, 4 * count, lambda a=a: iter([a.astype(np.float32)])))
    header, offset = {}, 0
    for name, dtype, shape, size, _ in entries:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, _, _, size, chunks in entries:
            written = 0
            for chunk in chunks():
                f.write(np.ascontiguousarray(chunk).data)
                written += chunk.nbytes
            assert written == size, name


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    cmd, path = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    if cmd == "manifest":
        print(json.dumps(manifest(data), indent=1))
    elif cmd == "random-weights":
        out, rest = sys.argv[3], sys.argv[4:]
        opts = {rest[i]: rest[i + 1] for i in range(0, len(rest), 2)}
        rng = np.random.default_rng(11)
        tensors, integral = {}, set()
        for entry in manifest(data)["entry_points"]:
            for w in entry["weights"]:
                shape = w["shape"]
                if "expert_names" in w:
                    for e in range(shape[0]):
                        tensors[w["expert_names"].replace("{e}", str(e))] = shape[1:]
                else:
                    tensors[w["name"]] = shape
                    if w["dtype"] == "i32":
                        integral.add(w["name"])
        arrays = {}
        for name, shape in tensors.items():
            if name in integral:
                # A hash router's table (token -> its experts): distinct
                # experts of the layer's gate, per row.
                gate = tensors.get(name.rsplit(".", 1)[0] + ".weight")
                experts = gate[0] if gate else 1
                order = np.argsort(rng.random((int(np.prod(shape[:-1])), max(experts, shape[-1]))), axis=1)
                arrays[name] = (order[:, :shape[-1]] % experts).reshape(shape).astype(np.int32)
                continue
            if name.endswith("norm.weight") or name.endswith("_norm.weight"):
                a = 1 + 0.1 * rng.standard_normal(shape)
            else:
                a = rng.standard_normal(shape) / np.sqrt(shape[-1] if shape else 1)
            arrays[name] = a.astype(np.float32)
        if "--drop" in opts:
            del arrays[opts["--drop"]]
        if "--extra" in opts:
            arrays[opts["--extra"]] = np.zeros(3, np.float32)
        if "--reshape" in opts:
            arrays[opts["--reshape"]] = arrays[opts["--reshape"]].reshape(-1)[:-1].copy()
        safetensors_io.save(out, arrays)
    elif cmd == "random-weights-quantized":
        # [--pool N]: codes drawn from a pool of N (a small model's tests
        # need not draw the 2^26 a real-size one takes).
        rest = sys.argv[4:]
        pool = int(rest[1]) if rest[:1] == ["--pool"] else 1 << 26
        write_random_quantized(data, sys.argv[3], pool_size=pool)
    elif cmd == "truncate":
        open(sys.argv[3], "wb").write(data[: int(sys.argv[4])])
    elif cmd == "flip":
        b = bytearray(data)
        b[int(sys.argv[4])] ^= 0x55
        open(sys.argv[3], "wb").write(bytes(b))
    elif cmd == "set-version":
        b = bytearray(data)
        struct.pack_into("<I", b, 8, int(sys.argv[4]))
        count = struct.unpack_from("<I", b, 12)[0]
        end = 16 + 32 * count
        struct.pack_into("<Q", b, end, fnv1a64(bytes(b[:end])))
        open(sys.argv[3], "wb").write(bytes(b))
    elif cmd == "set-manifest":
        open(sys.argv[3], "wb").write(rebuild(data, {1: open(sys.argv[4], "rb").read()}))
    elif cmd == "set-kernels":
        open(sys.argv[3], "wb").write(rebuild(data, {2: open(sys.argv[4], "rb").read()}))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
