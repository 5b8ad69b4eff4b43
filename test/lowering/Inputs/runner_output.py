"""Parses what mlir-runner's printMemrefF32 prints: one NumPy array per
'Unranked Memref ... sizes = [...] ... data = ...' block, in order."""
import re

import numpy as np


def memrefs(text):
    blocks = []
    for m in re.finditer(r"sizes = \[([0-9, ]+)\].*?data =\s*(.*?)(?=Unranked Memref|\Z)", text, re.S):
        shape = [int(s) for s in m.group(1).split(",")]
        values = [float(v) for v in re.findall(r"-?[0-9.]+(?:e[-+]?[0-9]+)?|-?nan|-?inf", m.group(2))]
        blocks.append(np.array(values, np.float32).reshape(shape))
    return blocks


def report(checks, tolerance=1e-4):
    """Prints one line per (name, got, want); True when every one is finite,
    of the expected shape and within `tolerance` (max relative error)."""
    ok = True
    for name, got, want in checks:
        err = float(np.max(np.abs(got - want) / (np.abs(want) + 1e-3))) if got.shape == want.shape else float("inf")
        good = bool(np.all(np.isfinite(got))) and got.shape == want.shape and err < tolerance
        ok &= good
        print(f"{name}: max relative error {err:.3e} {'ok' if good else 'FAILED'}")
    return ok
