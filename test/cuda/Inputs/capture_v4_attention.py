"""Captures each attention's inputs and output from the NumPy V4 reference
(test/reference/v4.py) on one golden prompt, for attention_kernel_check.py
--inputs: layer{i}_q [T, H, D] (after RoPE), _rows [T, D] (the window's kv
rows), _sink [H], _out [T, H, D] (before the inverse RoPE), and for a layer
with compressed entries _cache [E, D] and _selection [T, K] (the entries each
token attends, -1 past them; K = the config's index_topk).

usage: capture_v4_attention.py GOLDEN_DIR PROMPT OUT.npz [--verify]
--verify: each layer's output recomputed from the captured arrays alone, as
the helper reads them (band row t + c - (W - 1), entries of the selection,
-1 none), against the captured output: the capture is what the kernel check
needs (exit 1 past 1e-5)."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import safetensors_io  # noqa: E402
import v4  # noqa: E402
from sink_attention_np import sink_attention  # noqa: E402

if len(sys.argv) not in (4, 5) or (len(sys.argv) == 5 and sys.argv[4] != "--verify"):
    sys.exit("usage: capture_v4_attention.py GOLDEN_DIR PROMPT OUT.npz [--verify]")
golden, prompt, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    config = json.load(open(os.path.join(golden, "config.json")))
    weights = safetensors_io.load(os.path.join(golden, "weights.safetensors"))
    ids = safetensors_io.load(os.path.join(golden, "io.safetensors"))["input_ids"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"capture_v4_attention: {golden}: not golden V4 data (config.json, weights and io.safetensors): {e}")
if not 0 <= prompt < ids.shape[0]:
    sys.exit(f"capture_v4_attention: {golden}: prompt {prompt} of {ids.shape[0]}")
K = config["index_topk"]
arrays = {}


def trace(i, q, kv, entries, selection, sink, out):
    arrays.update({f"layer{i}_q": q, f"layer{i}_rows": kv, f"layer{i}_sink": sink, f"layer{i}_out": out})
    if entries is not None:
        table = np.full((q.shape[0], K), -1, np.int32)
        for t, chosen in enumerate(selection):
            if len(chosen) > K:
                sys.exit(f"capture_v4_attention: layer {i} token {t} attends {len(chosen)} entries, more than {K}")
            table[t, :len(chosen)] = chosen
        arrays.update({f"layer{i}_cache": entries, f"layer{i}_selection": table})


v4.Model(config, weights, trace=trace).forward(ids[prompt].astype(np.int64))
arrays = {n: np.asarray(a, np.float32 if a.dtype.kind == "f" else a.dtype) for n, a in arrays.items()}
np.savez(out_path, **arrays)
print(f"capture_v4_attention: {len(arrays)} arrays of prompt {prompt} to {out_path}")
if len(sys.argv) == 5:
    worst = 0.0
    for i in range(config["num_hidden_layers"]):
        cache = arrays.get(f"layer{i}_cache")
        out = sink_attention(arrays[f"layer{i}_q"], arrays[f"layer{i}_rows"], cache,
                             arrays.get(f"layer{i}_selection"), arrays[f"layer{i}_sink"],
                             config["sliding_window"], np.float32(config["head_dim"] ** -0.5))
        ref = arrays[f"layer{i}_out"]
        worst = max(worst, float(np.max(np.linalg.norm(out - ref, axis=2) / np.linalg.norm(ref, axis=2))))
    print(f"capture_v4_attention: the outputs recomputed from the capture: relative error {worst:.1e}")
    if not worst <= 1e-5:
        sys.exit(f"capture_v4_attention: {out_path}: the capture does not reproduce its outputs ({worst:.1e})")
