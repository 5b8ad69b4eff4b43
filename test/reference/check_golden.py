"""Runs the NumPy V4.1 reference on NeMo's golden tiny model and compares logits.
usage: check_golden.py GOLDEN_DIR [--quant] [--selective] [--device cpu|gpu]
                       [--max-rel R] [--min-argmax PERCENT]
Exits 1 when the relative error exceeds R, argmax agreement falls below
PERCENT, or any logit is not finite."""
import copy
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io  # noqa: E402
import v41  # noqa: E402

golden = sys.argv[1]
quant = "--quant" in sys.argv
selective = "--selective" in sys.argv


def option(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


device = option("--device", "cpu")
max_rel = float(option("--max-rel", "inf"))
min_argmax = float(option("--min-argmax", "0"))
config = json.load(open(os.path.join(golden, "config.json")))
if not selective:  # the golden README's dense settings
    config = copy.deepcopy(config)
    config["index_topk"] = 256
    config["candidate_topk_blocks"] = 256
weights = safetensors_io.load(os.path.join(golden, "weights.safetensors"))
io = safetensors_io.load(os.path.join(golden, "io.safetensors"))
codecs = None
if quant:
    import codecs_np as codecs  # noqa: E402
model = v41.Model(config, weights, quant=codecs)
key = f"logits_{'quant' if quant else 'noquant'}_{device}_{'selective' if selective else 'dense'}"
ref = io[key]
worst_rel, agree, total = 0.0, 0, 0
for b in range(io["input_ids"].shape[0]):
    out, _ = model.forward(io["input_ids"][b].astype(np.int64))
    assert np.all(np.isfinite(out)), "non-finite logits"
    rel = np.linalg.norm(out - ref[b]) / np.linalg.norm(ref[b])
    worst_rel = max(worst_rel, rel)
    agree += int(np.sum(out.argmax(-1) == ref[b].argmax(-1)))
    total += out.shape[0]
percent = 100.0 * agree / total
print(f"{key}: relative error {worst_rel:.3e}, argmax agreement {agree}/{total} ({percent:.2f} %)")
if not (worst_rel <= max_rel and percent >= min_argmax):
    print(f"FAILED: needs relative error <= {max_rel} and argmax agreement >= {min_argmax} %")
    sys.exit(1)
