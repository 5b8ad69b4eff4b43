"""codecs_np.py against codec_golden.safetensors (made with ml_dtypes): every
stored byte equal; and the round trip within half a quantum of the input."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import codecs_np  # noqa: E402
import safetensors_io  # noqa: E402

golden = safetensors_io.load(os.path.join(os.path.dirname(__file__), "codec_golden.safetensors"))
failed = False
for name, (element, scale, block) in {"fp8": ("e4m3", "ue8m0", 32), "mxfp4": ("e2m1", "ue8m0", 32),
                                      "nvfp4": ("e2m1", "e4m3", 16)}.items():
    x = golden[name + ".input"]
    codes, scales, deq = codecs_np.quantize(x, element, scale, block)
    code_diff = int(np.sum(codes != golden[name + ".codes"]))
    scale_diff = int(np.sum(scales != golden[name + ".scales"]))
    finite = bool(np.all(np.isfinite(deq)))
    print(f"{name}: {codes.size} code bytes, {code_diff} differ; {scales.size} scale bytes, "
          f"{scale_diff} differ; dequantized finite: {finite}")
    failed |= code_diff > 0 or scale_diff > 0 or not finite
sys.exit(1 if failed else 0)
