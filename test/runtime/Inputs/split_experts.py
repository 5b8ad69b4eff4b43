"""split_experts.py ARTIFACT IN OUT: the checkpoint IN with every stacked
expert weight (and its .scale) that ARTIFACT names per expert
(expert_names) split into one tensor an expert, as the released
checkpoints hold them; every other tensor as it is, bytes untouched (any
dtype: the split is of raw bytes along the first axis)."""
import json
import os
import struct
import sys

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools", "scripts"))
import dsfa_tool  # noqa: E402

artifact, source, out = sys.argv[1:4]
patterns = {}
for entry in dsfa_tool.manifest(open(artifact, "rb").read())["entry_points"]:
    for w in entry["weights"]:
        if "expert_names" in w and not w["name"].endswith(".scale"):
            patterns[w["name"]] = w["expert_names"]
            patterns[w["name"] + ".scale"] = w["expert_names"] + ".scale"
data = open(source, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
body = data[8 + n:]
tensors = []   # (name, dtype, shape, bytes)
for name, info in header.items():
    if name == "__metadata__":
        continue
    begin, end = info["data_offsets"]
    raw = body[begin:end]
    shape = info["shape"]
    if name in patterns:
        per = len(raw) // shape[0]
        for e in range(shape[0]):
            tensors.append((patterns[name].replace("{e}", str(e)), info["dtype"], shape[1:], raw[e * per:(e + 1) * per]))
    else:
        tensors.append((name, info["dtype"], shape, raw))
assert any(name in patterns for name in header), artifact + ": no stacked expert weight of IN to split"
meta, offset = {}, 0
for name, dtype, shape, raw in tensors:
    meta[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
    offset += len(raw)
text = json.dumps(meta).encode()
text += b" " * (-len(text) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for _, _, _, raw in tensors:
        f.write(raw)
