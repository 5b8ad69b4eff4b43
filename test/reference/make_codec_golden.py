"""Makes codec_golden.safetensors: inputs and the bytes each cache format
stores for them, computed independently of codecs_np.py — element and E4M3
scale rounding by ml_dtypes (round to nearest even), UE8M0 scales as the next
power of two (2**ceil(log2 t)) in float64. Run once with ml_dtypes installed;
the tests only read the file. (pip install ml_dtypes==0.5.3 numpy)"""
import os
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io  # noqa: E402

f32 = np.float32
rng = np.random.default_rng(20261130)


def blocks_of(width):
    rows = []
    for decade in range(-3, 4):                         # random blocks across magnitudes
        rows.append(rng.standard_normal((8, width)).astype(f32) * f32(10.0 ** decade))
    ties = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 6], f32)  # E2M1 midpoints and max
    for sign in (1, -1):
        r = np.resize(np.concatenate([ties, -ties]) * sign, (1, width)).astype(f32)
        r[0, 0] = 6 * sign                               # amax 6: MXFP4 scale 1
        rows.append(r)
    # E4M3 mantissa midpoints (scale 1 needs amax in (224, 448]).
    mids = (np.arange(8, 16, dtype=f32) + f32(0.5)) * f32(2 ** 5)
    r = np.resize(mids, (1, width)).astype(f32)
    r[0, 0] = 448
    rows.append(r)
    rows.append(np.full((1, width), 1e-30, f32))         # below the scale floors
    rows.append(np.zeros((1, width), f32))
    rows.append(np.linspace(-3, 3, width, dtype=f32)[None, :] * f32(1e3))
    return np.concatenate(rows, 0)


def ue8m0(amax, maximum, floor):
    t = (np.maximum(amax, f32(floor)) * f32(1.0 / maximum)).astype(np.float64)
    e = np.ceil(np.log2(t))
    return (e + 127).astype(np.uint8), np.exp2(e).astype(f32)


def encode(x, element, scale, block):
    b = x.reshape(-1, block)
    amax = np.abs(b).max(-1)
    if scale == "ue8m0":
        maximum, floor = (448.0, 1e-4) if element == "e4m3" else (6.0, 6.0 * 2 ** -126)
        sbytes, s = ue8m0(amax, maximum, floor)
    else:
        sv = np.minimum(np.maximum(amax, f32(6.0 * 2 ** -9)) / f32(6.0), f32(448)).astype(
            ml_dtypes.float8_e4m3fn)  # saturating: our choice where MODEL.md is silent
        sbytes, s = sv.view(np.uint8), sv.astype(f32)
    scaled = b / s[:, None]
    if element == "e4m3":
        codes = np.clip(scaled, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    else:
        nib = np.clip(scaled, -6, 6).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
        codes = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
    return codes.reshape(x.shape[0], -1), sbytes.reshape(x.shape[0], -1)


out = {}
for name, (element, scale, block, width) in {
        "fp8": ("e4m3", "ue8m0", 32, 64), "mxfp4": ("e2m1", "ue8m0", 32, 64),
        "nvfp4": ("e2m1", "e4m3", 16, 64)}.items():
    x = blocks_of(width)
    codes, scales = encode(x, element, scale, block)
    out[name + ".input"] = x
    out[name + ".codes"] = codes
    out[name + ".scales"] = scales
safetensors_io.save(os.path.join(os.path.dirname(__file__), "codec_golden.safetensors"), out)
print({k: v.shape for k, v in out.items()})
