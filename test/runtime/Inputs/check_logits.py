"""Compares logits dsf-run dumped (--dump-logits) with a reference: NeMo's
golden logits (--golden IO.safetensors --key KEY --row R) or the NumPy V4.1
reference model run here on the same config, weights and ids (--reference
CONFIG_DIR --weights W [--dense] [--quant]: the quantizers on). Prints the relative error
||got - ref|| / ||ref|| and the argmax agreement; exits 1 above --max-rel,
below --min-argmax (percent), or on any non-finite logit.
--against OTHER_DUMP compares two dumps of the same ids on the positions
both hold (a split prefill's tail against the full prefill); --exact also
requires bit-identical logits; --last N compares the last N positions only,
--positions LO:HI those from LO to HI - 1.
--common-prefix compares two greedy generations that may part: only the
positions before the first id where they differ (position p's logits depend
on ids 0..p only, and the last compared one is where their argmax parted);
--min-common N fails when that prefix is shorter than N ids.
--allow-misses N passes the argmax check with at most N rows disagreeing,
whatever --min-argmax's percentage (a short sequence's near ties).
--sequence S takes sequence S of a batch's dump (dsf-run --batch-prompts), and
of OTHER_DUMP when that is a batch's too.
--decode-from N [--chunk K] runs the reference as dsf-run --then-ids does:
a prefill of the first N ids, then the rest K at a time through its decode.
usage: check_logits.py DUMP (--golden IO --key K --row R | --reference DIR --weights W [--dense] [--quant] [--no-pool] [--prefill MODE]
                             [--decode-from N [--chunk K]]
                             | --against OTHER_DUMP [--common-prefix [--min-common N]]) [--sequence S] [--last N] [--positions LO:HI] [--max-rel R] [--min-argmax P [--allow-misses N]] [--exact]"""
import copy
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import safetensors_io  # noqa: E402


def failed(message):
    """A comparison that cannot be made: says FAILED, as every failed
    comparison does (gpu-check.sh greps for it), and exits 1."""
    print(message + " FAILED")
    sys.exit(1)


def option(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def sequences(dump):
    """How many sequences a dump holds: a batch's (input_offsets) its
    count, any other one."""
    if "input_offsets" not in dump:
        return 1
    return len(dump["input_offsets"]) - 1


def one_sequence(dump, path, s):
    """Sequence s of a batch's dump (dsf-run --batch, --batch-prompts)."""
    if "input_offsets" not in dump or not 0 <= s < sequences(dump):
        failed(f"{path}: --sequence {s}: the dump holds {sequences(dump)} "
               + ("sequences" if "input_offsets" in dump else "sequence (not a batch's)"))
    offsets, mine = dump["input_offsets"], dump["sequence"] == s
    return {"logits": dump["logits"][mine], "positions": dump["positions"][mine],
            "input_ids": dump["input_ids"][offsets[s]:offsets[s + 1]]}


def whole(dump, path):
    """A dump compared as a whole: a batch's sequences are rows of one dump,
    in no position order, so one of them is compared at a time."""
    if sequences(dump) > 1:
        failed(f"{path}: a batch's dump of {sequences(dump)} sequences: give --sequence S")
    return dump


sequence = int(option("--sequence")) if option("--sequence") else None
dump = safetensors_io.load(sys.argv[1])
dump = whole(dump, sys.argv[1]) if sequence is None else one_sequence(dump, sys.argv[1], sequence)
got, ids = dump["logits"], dump["input_ids"].astype(np.int64)
rows = dump["positions"].astype(np.int64) if "positions" in dump else np.arange(len(ids))
if option("--golden"):
    io = safetensors_io.load(option("--golden"))
    key, row = option("--key"), int(option("--row"))
    if not np.array_equal(io["input_ids"][row], ids):
        failed(f"{key}[{row}]: the dump's input_ids are not the golden row's")
    ref, label = io[key][row][rows], f"{key}[{row}]"
elif option("--against"):
    # Another dump of the same ids (e.g. the full prefill): the rows both have.
    other = safetensors_io.load(option("--against"))
    label = "against " + os.path.basename(option("--against"))
    if sequence is None:
        whole(other, option("--against"))
    elif "input_offsets" in other:
        # Another batch's dump: the same sequence of it.
        other = one_sequence(other, option("--against"), sequence)
    other_ids = other["input_ids"].astype(np.int64)
    other_rows = other["positions"].astype(np.int64) if "positions" in other else np.arange(len(other_ids))
    common = min(len(ids), len(other_ids))
    differ = np.flatnonzero(ids[:common] != other_ids[:common])
    common = int(differ[0]) if len(differ) else common
    if "--common-prefix" in sys.argv:
        min_common = int(option("--min-common", "1"))
        print(f"the two dumps' ids agree on the first {common} of {len(ids)} and {len(other_ids)}")
        if common < min_common:
            failed(f"{label}: the ids part at {common}, "
                   f"before --min-common {min_common}")
        keep = rows < common
        got, rows = got[keep], rows[keep]
        other_rows = other_rows[other_rows < common]
    elif common != len(ids) or len(ids) != len(other_ids):
        failed(f"{label}: the two dumps are of different ids "
               f"(the first difference at {common})")
    keep = np.isin(rows, other_rows)
    got, rows = got[keep], rows[keep]
    ref = other["logits"][np.searchsorted(other_rows, rows)]
else:
    import v41  # noqa: E402
    config = json.load(open(os.path.join(option("--reference"), "config.json")))
    if "--dense" in sys.argv:
        config = copy.deepcopy(config)
        config["index_topk"] = 256
        config["candidate_topk_blocks"] = 256
    if "--no-pool" in sys.argv:
        config = copy.deepcopy(config)
        config["candidate_source_layer_id"] = None
    codecs = None
    if "--quant" in sys.argv:
        import codecs_np as codecs  # noqa: E402
    model = v41.Model(config, safetensors_io.load(option("--weights")), quant=codecs)
    mode = option("--prefill", "full")
    if option("--decode-from"):
        # The reference's own incremental decode: prefill the first N ids,
        # then continue K at a time, as dsf-run --then-ids --chunk K does.
        n, k = int(option("--decode-from")), int(option("--chunk", "1"))
        first, state = model.forward(ids[:n], prefill=mode)
        parts = [first]
        for t in range(n, len(ids), k):
            parts.append(model.forward(ids[t:t + k], state=state, start=t)[0])
        ref = np.concatenate(parts)
        label = f"numpy reference ({mode} prefill of {n}, then decode {k} at a time)"
    else:
        ref, _ = model.forward(ids, prefill=mode)
        if mode == "full":
            ref = ref[rows]
        label = "numpy reference" + ("" if mode == "full" else " (" + mode + ")")
if option("--positions"):
    # Only positions LO to HI - 1 (e.g. a batch's first decode step, before
    # its caches differ from the other dump's).
    low, high = (int(v) for v in option("--positions").split(":"))
    keep = (rows >= low) & (rows < high)
    if not keep.any():
        failed(f"no row at positions {low}:{high}")
    got, ref, rows = got[keep], ref[keep], rows[keep]
if option("--last"):
    # Only the last rows (a split prefill is exact for its last position).
    keep = int(option("--last"))
    got, ref, rows = got[-keep:], ref[-keep:], rows[-keep:]
max_rel, min_argmax = float(option("--max-rel", "inf")), float(option("--min-argmax", "0"))
allow_misses = int(option("--allow-misses", "0"))
finite = bool(np.all(np.isfinite(got)))
rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref)) if finite else float("nan")
agree = int((got.argmax(-1) == ref.argmax(-1)).sum())
exact = finite and got.shape == ref.shape and bool(np.array_equal(got, ref))
# --allow-misses N: N rows may disagree whatever --min-argmax says. A near
# tie's flip is one row however short the sequence, so a percentage alone
# fails a 36-row sequence on 2 flips that a 700-row one would pass on 35.
argmax_ok = 100.0 * agree / len(rows) >= min_argmax or len(rows) - agree <= allow_misses
ok = finite and got.shape == ref.shape and rel <= max_rel and argmax_ok
ok = ok and (exact or "--exact" not in sys.argv)
print(f"{label}: relative error {rel:.3e}, argmax agreement {agree}/{len(rows)}{', bit-identical' if exact else ''} "
      f"{'ok' if ok else 'FAILED'}")
sys.exit(0 if ok else 1)
