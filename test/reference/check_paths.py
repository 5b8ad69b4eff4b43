"""The reference's prefill paths and incremental decode against its own full
prefill, on NeMo's golden tiny V4.1 weights (dense settings, unquantized and
quantized): decode is exact; exact-tail is exact for the last W tokens and the
decode state; bounded replay is approximate and its error is printed.
usage: check_paths.py GOLDEN_DIR [--quant]"""
import copy
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io  # noqa: E402
import v41  # noqa: E402

golden = sys.argv[1]
quant = "--quant" in sys.argv
config = json.load(open(os.path.join(golden, "config.json")))
config = copy.deepcopy(config)
config["index_topk"], config["candidate_topk_blocks"] = 256, 256
weights = safetensors_io.load(os.path.join(golden, "weights.safetensors"))
ids = safetensors_io.load(os.path.join(golden, "io.safetensors"))["input_ids"][0].astype(np.int64)
codecs = None
if quant:
    import codecs_np as codecs  # noqa: E402
m = v41.Model(config, weights, quant=codecs)
W = config["sliding_window"]
full, _ = m.forward(ids)


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def check(name, got, ref, limit):
    r = rel(got, ref)
    ok = np.all(np.isfinite(got)) and r <= limit
    print(f"{name}: relative error {r:.3e} ({'ok' if ok else 'FAILED'}, limit {limit:g})")
    return ok


ok = True
tag = "quant" if quant else "noquant"
# Incremental decode: a prefix of odd length (ratio-2 layers hold a pending
# row), then one token per step; then steps of 3 tokens (multi-token decode).
prefix = 45
out, state = m.forward(ids[:prefix])
steps = [out]
for t in range(prefix, len(ids)):
    o, state = m.forward(ids[t:t + 1], state=state, start=t)
    steps.append(o)
ok &= check(f"{tag} decode 1 token a step after {prefix}", np.concatenate(steps), full, 1e-5)
out, state = m.forward(ids[:prefix])
steps = [out]
for t in range(prefix, len(ids), 3):
    o, state = m.forward(ids[t:t + 3], state=state, start=t)
    steps.append(o)
ok &= check(f"{tag} decode 3 tokens a step after {prefix}", np.concatenate(steps), full, 1e-5)

# exact-tail: the last W logits exact, and decoding on from its state exact.
cut = 70
ref = full[:cut]
tail = m.tail_tokens("exact-tail")
out, state = m.forward(ids[:cut], prefill="exact-tail")
print(f"exact-tail prefill of {cut} tokens runs the decoder over {min(tail, cut)} of them")
ok &= check(f"{tag} exact-tail, last {W} logits", out[-W:], ref[-W:], 1e-5)
dec = [m.forward(ids[t:t + 1], state=state, start=t)[0] for t in range(cut, len(ids))]
ok &= check(f"{tag} exact-tail, then decode {len(ids) - cut}", np.concatenate(dec), full[cut:], 1e-5)

# bounded-replay: approximate; measured.
out, state = m.forward(ids[:cut], prefill="bounded-replay")
r_last = rel(out[-1:], ref[-1:])
dec = [m.forward(ids[t:t + 1], state=state, start=t)[0] for t in range(cut, len(ids))]
r_dec = rel(np.concatenate(dec), full[cut:])
agree = np.mean(np.concatenate(dec).argmax(-1) == full[cut:].argmax(-1)) * 100
print(f"{tag} bounded-replay ({W} tokens): last prefill logits relative error {r_last:.3e}; "
      f"next {len(ids) - cut} decoded tokens {r_dec:.3e}, argmax agreement {agree:.1f} %")
ok &= bool(np.isfinite(r_last) and np.isfinite(r_dec))
sys.exit(0 if ok else 1)
