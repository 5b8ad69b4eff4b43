"""Runs the NumPy V4 reference on the transformers-made golden tiny V4.
usage: check_golden_v4.py GOLDEN_DIR dense|selective|incremental [--max-rel R] [--min-argmax P]
(incremental: transformers' prefill-then-decode logits, selective settings)"""
import copy
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io  # noqa: E402
import v4  # noqa: E402

golden, mode = sys.argv[1], sys.argv[2]


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


max_rel, min_argmax = float(option("--max-rel", "inf")), float(option("--min-argmax", "0"))
config = json.load(open(os.path.join(golden, "config.json")))
if mode == "dense":
    config = copy.deepcopy(config)
    config["index_topk"] = 64
weights = safetensors_io.load(os.path.join(golden, "weights.safetensors"))
io = safetensors_io.load(os.path.join(golden, "io.safetensors"))
model = v4.Model(config, weights)
ref = io["logits_" + mode]
worst, agree, total = 0.0, 0, 0
for b in range(io["input_ids"].shape[0]):
    out = model.forward(io["input_ids"][b].astype(np.int64))
    assert np.all(np.isfinite(out)), "non-finite logits"
    worst = max(worst, np.linalg.norm(out - ref[b]) / np.linalg.norm(ref[b]))
    agree += int(np.sum(out.argmax(-1) == ref[b].argmax(-1)))
    total += out.shape[0]
pct = 100.0 * agree / total
print(f"v4 {mode}: relative error {worst:.3e}, argmax agreement {agree}/{total} ({pct:.2f} %)")
if not (worst <= max_rel and pct >= min_argmax):
    print(f"FAILED: needs relative error <= {max_rel} and argmax agreement >= {min_argmax} %")
    sys.exit(1)
