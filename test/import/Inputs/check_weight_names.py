"""Compares the dsf.weight declarations of an imported model with the tensors
of a safetensors checkpoint: names, shapes, and the parameter total.
Reads the safetensors header directly (8-byte length + JSON), no packages."""
import json
import re
import struct
import sys

mlir_path, checkpoint_path = sys.argv[1], sys.argv[2]
declared = {}
decl = re.compile(r'dsf\.weight @"?([^\s":]+)"? : tensor<([0-9x]+)x[a-z0-9]+>(?:.*expert_names = "([^"]+)")?')
for line in open(mlir_path):
    m = decl.search(line)
    if not m:
        continue
    name, dims, per_expert = m.group(1), [int(d) for d in m.group(2).split("x")], m.group(3)
    if per_expert:  # stacked [E, ...]: one checkpoint tensor per expert
        for e in range(dims[0]):
            declared[per_expert.replace("{e}", str(e))] = dims[1:]
    else:
        declared[name] = dims

with open(checkpoint_path, "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
stored = {k: v["shape"] for k, v in header.items() if k != "__metadata__"}

missing = sorted(set(declared) - set(stored))
extra = sorted(set(stored) - set(declared))
wrong = sorted(k for k in set(declared) & set(stored) if declared[k] != stored[k])
for k in missing:
    print("missing from checkpoint:", k)
for k in extra:
    print("not declared:", k)
for k in wrong:
    print("shape differs:", k, declared[k], stored[k])
print(f"{len(missing)} missing, {len(extra)} extra, {len(wrong)} wrong shapes")


def count(shapes):
    total = 0
    for s in shapes:
        p = 1
        for d in s:
            p *= d
        total += p
    return total


print(f"parameters: {count(declared.values())} declared, {count(stored.values())} in the checkpoint")
