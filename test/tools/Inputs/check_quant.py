"""Checks dsf-quant's output against the golden codec vectors and the NumPy codecs.
usage: check_quant.py quantized FILE FORMAT | dequantized FILE FORMAT | blocks FILE INPUT R C"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import codecs_np  # noqa: E402
import safetensors_io  # noqa: E402

here = os.path.join(os.path.dirname(__file__), "..", "..", "reference")
golden = safetensors_io.load(os.path.join(here, "codec_golden.safetensors"))
FORMATS = {"fp8": ("e4m3", "ue8m0", 32), "mxfp4": ("e2m1", "ue8m0", 32), "nvfp4": ("e2m1", "e4m3", 16)}
mode, path = sys.argv[1], sys.argv[2]
meta = {}
out = safetensors_io.load(path, meta)
ok = True
if mode == "quantized":
    fmt = sys.argv[3]
    codes, scales = out[fmt + ".input"], out[fmt + ".input.scale"]
    dc = int(np.sum(codes != golden[fmt + ".codes"]))
    ds = int(np.sum(scales != golden[fmt + ".scales"]))
    print(f"{fmt}: {codes.size} code bytes, {dc} differ from the golden; {scales.size} scales, {ds} differ; "
          f"metadata format {meta.get('dsf.format')}")
    ok = dc == 0 and ds == 0
elif mode == "dequantized":
    fmt = sys.argv[3]
    x = golden[fmt + ".input"]
    expected = codecs_np.quantize(x, *FORMATS[fmt])[2]
    got = out[fmt + ".input"]
    diff = int(np.sum(got.view(np.uint32) != expected.view(np.uint32)))
    print(f"{fmt}: {got.size} dequantized values, {diff} differ from the NumPy codecs bit for bit")
    ok = diff == 0
else:  # 2-D FP8 weight blocks
    inp = safetensors_io.load(sys.argv[3])
    br, bc = int(sys.argv[4]), int(sys.argv[5])
    for name, x in inp.items():
        rows, cols = x.shape[-2], x.shape[-1]
        nbr, nbc = -(-rows // br), -(-cols // bc)
        codes = np.zeros(x.shape, np.uint8)
        scales = np.zeros(x.shape[:-2] + (nbr, nbc), np.uint8)
        for idx in np.ndindex(*x.shape[:-2]):
            m = x[idx]
            for i in range(nbr):
                for j in range(nbc):
                    blk = m[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
                    sb = codecs_np.ue8m0_scale(np.abs(blk).max(), 448.0, 1e-4)
                    s = codecs_np.ue8m0_value(np.array(sb))
                    scales[idx + (i, j)] = sb
                    q = codecs_np.e4m3_rne(np.clip(blk / s, -448, 448))
                    codes[idx][i * br:(i + 1) * br, j * bc:(j + 1) * bc] = codecs_np.e4m3_bits(q)
        dc = int(np.sum(out[name] != codes))
        ds = int(np.sum(out[name + ".scale"] != scales))
        print(f"{name}: {codes.size} codes, {dc} differ; scales {list(scales.shape)}, {ds} differ")
        ok = ok and dc == 0 and ds == 0
sys.exit(0 if ok else 1)
