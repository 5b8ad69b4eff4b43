"""Checks the E2M1 decode dsf-gpu-grouped-experts emits for packed MXFP4
codes, on the CPU: the warp kernel makes each 32-bit word of eight codes into
four f16x2 by masks and shifts (decodePackedWord), which only a GPU runs. This
reads the pass's output (stdin), evaluates the integer ops between the
word (vector.bitcast vector<4xi8> to vector<1xi32>, then vector.extract) and
each f16x2 (vector.bitcast vector<1xi32> to vector<2xf16>) for many words,
and compares every half times 2^14 with the E2M1 value of the code it should
hold: pair k of a word holds nibbles k (low half) and k + 4 (high half).
Prints "PAIRS: N words x M pairs exact" or the first mismatch and exits 1."""
import re
import sys

import numpy as np

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1(code):
    value = E2M1[code & 7]
    return -value if code & 8 else value


text = sys.stdin.read()
# Sibling regions reuse SSA names: everything is read from the lines between
# the first packed word's bitcast and its fourth f16x2.
bitcast = re.search(r"(%[\w.$-]+) = vector\.bitcast %[\w.$-]+ : vector<4xi8> to vector<1xi32>", text)
if not bitcast:
    sys.exit("no packed word (vector<4xi8> to vector<1xi32>) in the input")
word = re.compile(r"(%[\w.$-]+) = vector\.extract " + re.escape(bitcast.group(1)) + r"\[0\] : i32 from vector<1xi32>")
word_match = word.search(text, bitcast.end())
if not word_match:
    sys.exit(f"no vector.extract of {bitcast.group(1)}")
word = word_match.group(1)
broadcasts = list(re.finditer(r"(%[\w.$-]+) = vector\.broadcast (%[\w.$-]+) : i32 to vector<1xi32>", text[word_match.end():]))[:4]
if len(broadcasts) != 4:
    sys.exit(f"expected four f16x2 after {word}, found {len(broadcasts)}")
pairs = [b.group(2) for b in broadcasts]
window = text[word_match.start():word_match.end() + broadcasts[-1].end()]
constants = {name: int(value) for name, value in re.findall(r"(%[\w.$-]+) = arith\.constant (-?\d+) : i32", text)}
constants.update({name: int(value) for name, value in re.findall(r"(%[\w.$-]+) = arith\.constant (-?\d+) : i32", window)})
ops = {}
for result, op, lhs, rhs in re.findall(r"(%[\w.$-]+) = arith\.(andi|ori|shli|shrui) (%[\w.$-]+), (%[\w.$-]+) : i32", window):
    ops[result] = (op, lhs, rhs)

MASK = np.uint64(0xFFFFFFFF)


def evaluate(name, w):
    if name == word:
        return w
    if name in constants:
        return np.uint64(constants[name] & 0xFFFFFFFF)
    if name not in ops:
        sys.exit(f"{name}: not an arith op of the word (andi, ori, shli, shrui) or an i32 constant")
    op, lhs, rhs = ops[name]
    a, b = evaluate(lhs, w), evaluate(rhs, w)
    if op == "andi":
        return a & b
    if op == "ori":
        return a | b
    if op == "shli":
        return (a << b) & MASK
    return a >> b


rng = np.random.default_rng(7)
# Every byte value in every byte of the word, and random words.
samples = [np.uint64(v << (8 * j)) for v in range(256) for j in range(4)] + \
          [np.uint64(v) for v in rng.integers(0, 2**32, size=4000, dtype=np.uint64)]
for w in samples:
    for k, pair in enumerate(pairs):
        bits = np.array([evaluate(pair, w)], dtype=np.uint64).astype(np.uint32)
        halves = bits.view(np.float16).astype(np.float64) * 2.0**14
        for half, nibble in ((0, k), (1, k + 4)):
            want = e2m1((int(w) >> (4 * nibble)) & 15)
            if halves[half] != want or np.signbit(halves[half]) != (((int(w) >> (4 * nibble)) & 8) != 0):
                print(f"word {int(w):#010x}, pair {k}, half {half}: {halves[half]} where nibble {nibble} is {want}")
                sys.exit(1)
print(f"PAIRS: {len(samples)} words x {len(pairs)} pairs exact")
