"""Compares logits dsf-run dumped (--dump-logits) with a reference: NeMo's
golden logits (--golden IO.safetensors --key KEY --row R) or the NumPy V4.1
reference model run here on the same config, weights and ids (--reference
CONFIG_DIR --weights W [--dense] [--quant]: the quantizers on). Prints the relative error
||got - ref|| / ||ref|| and the argmax agreement; exits 1 above --max-rel,
below --min-argmax (percent), or on any non-finite logit.
usage: check_logits.py DUMP (--golden IO --key K --row R | --reference DIR --weights W [--dense] [--quant])
                       [--max-rel R] [--min-argmax P]"""
import copy
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import safetensors_io  # noqa: E402


def option(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


dump = safetensors_io.load(sys.argv[1])
got, ids = dump["logits"], dump["input_ids"].astype(np.int64)
if option("--golden"):
    io = safetensors_io.load(option("--golden"))
    key, row = option("--key"), int(option("--row"))
    if not np.array_equal(io["input_ids"][row], ids):
        sys.exit("the dump's input_ids are not the golden row's")
    ref, label = io[key][row], f"{key}[{row}]"
else:
    import v41  # noqa: E402
    config = json.load(open(os.path.join(option("--reference"), "config.json")))
    if "--dense" in sys.argv:
        config = copy.deepcopy(config)
        config["index_topk"] = 256
        config["candidate_topk_blocks"] = 256
    codecs = None
    if "--quant" in sys.argv:
        import codecs_np as codecs  # noqa: E402
    model = v41.Model(config, safetensors_io.load(option("--weights")), quant=codecs)
    ref, _ = model.forward(ids)
    label = "numpy reference"
max_rel, min_argmax = float(option("--max-rel", "inf")), float(option("--min-argmax", "0"))
finite = bool(np.all(np.isfinite(got)))
rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref)) if finite else float("nan")
agree = int((got.argmax(-1) == ref.argmax(-1)).sum())
ok = finite and got.shape == ref.shape and rel <= max_rel and 100.0 * agree / len(ids) >= min_argmax
print(f"{label}: relative error {rel:.3e}, argmax agreement {agree}/{len(ids)} {'ok' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
