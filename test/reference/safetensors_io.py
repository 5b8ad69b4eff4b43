"""Reads and writes safetensors files with NumPy alone (header: 8-byte little-
endian length + JSON; then the raw tensors). Enough for test data; the runtime
has its own C++ reader."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "U8": np.uint8, "I8": np.int8, "F16": np.float16,
          "F8_E4M3": np.uint8, "F8_E8M0": np.uint8}  # fp8 codes and scales as raw bytes


def load(path, metadata=None):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            if metadata is not None:
                metadata.update(info)
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def save(path, tensors):
    names = {np.float32: "F32", np.float64: "F64", np.int64: "I64", np.int32: "I32",
             np.uint8: "U8", np.int8: "I8", np.float16: "F16"}
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        t = np.ascontiguousarray(t)
        blob = t.tobytes()
        header[name] = {"dtype": names[t.dtype.type], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
