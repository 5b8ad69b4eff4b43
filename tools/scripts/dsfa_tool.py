"""Reads and edits .dsfa artifacts (the format is runtime/include/dsf/artifact.h)
and makes random checkpoints for them: for the main job (scripts/run.sh) and
the runtime's tests.

  artifact_tool.py manifest ART                 print the manifest JSON
  artifact_tool.py random-weights ART OUT [--drop NAME] [--extra NAME] [--reshape NAME]
                                                 random f32 weights for every weight the
                                                 manifest binds (per-expert names expanded)
  artifact_tool.py truncate ART OUT BYTES        the first BYTES bytes
  artifact_tool.py flip ART OUT OFFSET           one byte flipped (negative: from the end)
  artifact_tool.py set-version ART OUT VERSION   another format version, checksum fixed
  artifact_tool.py set-manifest ART OUT FILE     the manifest replaced by FILE's JSON (valid checksums)
  artifact_tool.py set-kernels ART OUT FILE      the host kernels replaced by FILE's bytes (valid checksums)
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


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    if cmd == "manifest":
        print(json.dumps(manifest(data), indent=1))
    elif cmd == "random-weights":
        out, rest = sys.argv[3], sys.argv[4:]
        opts = {rest[i]: rest[i + 1] for i in range(0, len(rest), 2)}
        rng = np.random.default_rng(11)
        tensors = {}
        for entry in manifest(data)["entry_points"]:
            for w in entry["weights"]:
                shape = w["shape"]
                if "expert_names" in w:
                    for e in range(shape[0]):
                        tensors[w["expert_names"].replace("{e}", str(e))] = shape[1:]
                else:
                    tensors[w["name"]] = shape
        arrays = {}
        for name, shape in tensors.items():
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
