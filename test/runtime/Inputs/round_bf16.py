"""round_bf16.py ARTIFACT IN OUT: the checkpoint IN with every tensor that
ARTIFACT binds as bf16 rounded to the nearest bf16 value (ties to even) and
kept as f32; the others as they are. What the artifact's bf16 weights hold,
for tests that compare it against an artifact binding every weight as f32."""
import os
import sys

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "reference"))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools", "scripts"))
import dsfa_tool  # noqa: E402
import safetensors_io  # noqa: E402
from codecs_np import bf16_rne as round_bf16  # noqa: E402

artifact, source, out = sys.argv[1:4]
bf16 = set()
for entry in dsfa_tool.manifest(open(artifact, "rb").read())["entry_points"]:
    for w in entry["weights"]:
        if w["dtype"] == "bf16":
            bf16.add(w["name"])
            if "expert_names" in w:   # a stacked weight the checkpoint holds per expert
                bf16.update(w["expert_names"].replace("{e}", str(e)) for e in range(w["shape"][0]))
assert bf16, artifact + " binds no weight as bf16"
tensors = safetensors_io.load(source)
safetensors_io.save(out, {k: round_bf16(v) if k in bf16 else v for k, v in tensors.items()})
