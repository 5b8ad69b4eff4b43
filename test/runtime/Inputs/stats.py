"""Prints the fields of dsf-run --stats-json FILE's requests as key=value
lines, one request a line, for FileCheck: python3 stats.py FILE KEY..."""
import json
import sys

for i, r in enumerate(json.load(open(sys.argv[1]))):
    print(f"request {i + 1}: " + " ".join(f"{k}={r[k]}" for k in sys.argv[2:]))
