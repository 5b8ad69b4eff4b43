"""Writes a model's config.json with its weights declared in V4.1-Flash's
released formats: bf16, FP8 projections (E4M3, a UE8M0 scale a 32 x 32
block) and MXFP4 routed experts. The tiny V4.1 in that form is what the
--weight-storage=released tests and scripts/gpu-check.sh's released set
compile.

  released_formats_config.py MODEL/config.json OUT/config.json
"""
import json
import sys

source, target = sys.argv[1:3]
with open(source) as f:
    config = json.load(f)
config.update(torch_dtype="bfloat16", expert_dtype="fp4",
              quantization_config={"quant_method": "fp8", "fmt": "e4m3", "scale_fmt": "ue8m0",
                                   "weight_block_size": [32, 32]})
with open(target, "w") as f:
    json.dump(config, f, indent=1)
