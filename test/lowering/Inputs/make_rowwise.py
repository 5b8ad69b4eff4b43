"""Writes rowwise.mlir's weights and inputs (run once; the test reads the
committed output): small random arrays, embedded in the IR as dense constants
and saved as rowwise.json for the NumPy checker."""
import json
import os

import numpy as np

rng = np.random.default_rng(3)
arr = lambda *s: np.round(rng.standard_normal(s), 4).astype(np.float32)
data = {
    "ids": [3, 1, 4, 1, 5], "pos": [0, 1, 2, 3, 9],
    "emb": arr(16, 8), "nw": (1 + 0.1 * arr(8)), "w1": arr(8, 8), "w2": arr(8, 8),
    "post": arr(5, 2), "comb": np.abs(arr(5, 2, 2)),
}
here = os.path.dirname(__file__)
json.dump({k: np.asarray(v).tolist() for k, v in data.items()}, open(os.path.join(here, "rowwise.json"), "w"))


def dense(a):
    a = np.asarray(a)
    return "dense<" + json.dumps(a.tolist()) + ">"


print(f"""  dsf.weight @emb : tensor<16x8xf32> {{value = {dense(data['emb'])} : tensor<16x8xf32>}}
  dsf.weight @nw : tensor<8xf32> {{value = {dense(data['nw'])} : tensor<8xf32>}}
  dsf.weight @w1 : tensor<8x8xf32> {{value = {dense(data['w1'])} : tensor<8x8xf32>}}
  dsf.weight @w2 : tensor<8x8xf32> {{value = {dense(data['w2'])} : tensor<8x8xf32>}}
    %post0 = arith.constant {dense(data['post'])} : tensor<5x2xf32>
    %comb0 = arith.constant {dense(data['comb'])} : tensor<5x2x2xf32>""")
