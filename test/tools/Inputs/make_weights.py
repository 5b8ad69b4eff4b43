"""A small weight file with shapes that do not divide the blocks (2-D FP8 test)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import safetensors_io  # noqa: E402

rng = np.random.default_rng(7)
safetensors_io.save(sys.argv[1], {
    "layers.0.attn.wq_a.weight": (rng.standard_normal((70, 100)) * 0.05).astype(np.float32),
    "layers.0.ffn.experts.w1": (rng.standard_normal((3, 40, 33)) * 2).astype(np.float32),
})
