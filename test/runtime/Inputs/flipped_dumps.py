"""Writes two logits dumps of the same ids for check-logits.test: A (36
rows of random logits) and B, A with the top two logits of ROWS rows (a
comma-separated list) swapped: near ties whose argmax flips, the rest equal."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import safetensors_io  # noqa: E402

out, flipped = sys.argv[1], [int(r) for r in sys.argv[2].split(",") if r]
rng = np.random.default_rng(3)
logits = rng.standard_normal((36, 64)).astype(np.float32)
ids = rng.integers(0, 64, 36).astype(np.int32)
other = logits.copy()
for r in flipped:
    first, second = np.argsort(logits[r])[-2:][::-1]
    other[r, first], other[r, second] = logits[r, second], logits[r, first]
safetensors_io.save(os.path.join(out, "a.safetensors"), {"logits": logits, "input_ids": ids})
safetensors_io.save(os.path.join(out, "b.safetensors"), {"logits": other, "input_ids": ids})
