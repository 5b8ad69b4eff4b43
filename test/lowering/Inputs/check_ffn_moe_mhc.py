"""Compares what ffn_moe_mhc.mlir prints (five memrefs) with the NumPy
reference on the same values. usage: check_ffn_moe_mhc.py RUNNER_OUTPUT"""
import json
import os
import sys
import types

import numpy as np

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "reference"))
sys.path.insert(0, here)
from runner_output import memrefs, report  # noqa: E402
from v41 import Model, sigmoid  # noqa: E402

d = {k: np.asarray(v) for k, v in json.load(open(os.path.join(here, "ffn_moe_mhc.json"))).items()}
f32 = np.float32
blocks = memrefs(open(sys.argv[1]).read())

X = d["X"].astype(f32)
# The reference's own mHC coefficient code, on a stand-in for the model object.
site = {"p_fn": d["fn"], "p_base": d["base"], "p_scale": d["scale"]}
stub = types.SimpleNamespace(n=X.shape[1], eps=1e-6, c={"hc_eps": 1e-6, "hc_sinkhorn_iters": 20},
                             W=lambda name: site[name].astype(f32))
pre, post, comb = Model.hc(stub, X, "p")
x = Model.collapse(X, pre)
lim = f32(1.5)


def swiglu(g, u):
    return (np.minimum(g, lim) * sigmoid(np.minimum(g, lim))) * np.clip(u, -lim, lim)


W = {k: d[k].astype(f32) for k in ["w1", "w2", "w3", "ew1", "ew2", "ew3"]}
s = swiglu(x @ W["w1"].T, x @ W["w3"].T) @ W["w2"].T
m = np.zeros_like(x)
for t in range(x.shape[0]):               # as Model.moe, with the routing given
    for e, we in zip(d["experts"][t], d["routing"][t].astype(f32)):
        m[t] += (we * swiglu(x[t] @ W["ew1"][e].T, x[t] @ W["ew3"][e].T)) @ W["ew2"][e].T
sys.exit(0 if report([("mhc.coeffs pre", blocks[0], pre), ("mhc.coeffs post", blocks[1], post),
                        ("mhc.coeffs comb", blocks[2], comb), ("ffn", blocks[3], s), ("moe.experts", blocks[4], m)]) else 1)
