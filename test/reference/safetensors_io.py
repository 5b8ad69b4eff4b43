"""Reads and writes safetensors files with NumPy alone (header: 8-byte little-
endian length + JSON; then the raw tensors). Enough for test data; the runtime
has its own C++ reader."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "U8": np.uint8, "I8": np.int8, "F16": np.float16}


def load(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def save(path, tensors):
    names = {v: k for k, v in DTYPES.items()}
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
