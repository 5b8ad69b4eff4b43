"""Compares what rowwise.mlir prints (four memrefs) with the NumPy reference's
functions on the same values. usage: check_rowwise.py RUNNER_OUTPUT"""
import json
import os
import sys

import numpy as np

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "reference"))
sys.path.insert(0, here)
from runner_output import memrefs, report  # noqa: E402
from v41 import rms, rope, rope_frequencies  # noqa: E402

d = {k: np.asarray(v) for k, v in json.load(open(os.path.join(here, "rowwise.json"))).items()}
f32 = np.float32
blocks = memrefs(open(sys.argv[1]).read())

ids, pos = d["ids"].astype(np.int64), d["pos"].astype(np.int64)
e = d["emb"].astype(f32)[ids]
x = e                                       # expand then collapse with one-hot(0): stream 0
n = rms(x, d["nw"].astype(f32), 1e-6)
q = (n @ d["w1"].astype(f32).T).reshape(5, 2, 4)
freqs = rope_frequencies(1.6e5, 2, (4.0, 64, 32.0, 1.0))
r = rope(q, pos, freqs)
back = rope(r, pos, freqs, inverse=True)
u = rms(r, None, 1e-6)
y = u.reshape(5, 8) @ d["w2"].astype(f32).T
z = y + n
X = np.repeat(e[:, None, :], 2, axis=1)
X2 = d["post"].astype(f32)[:, :, None] * z[:, None, :] + np.einsum("tjk,tjd->tkd", d["comb"].astype(f32), X)
sys.exit(0 if report([("embed+expand+collapse+rms_norm+linear+rope", blocks[0], r),
                        ("rope then inverse rope returns its input", blocks[1], q),
                        ("per-head rms_norm+linear+add+take_last", blocks[2], z[-3:]),
                        ("mhc.update", blocks[3], X2)]) else 1)
