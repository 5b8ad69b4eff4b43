"""Prints row ROW of a golden io.safetensors' input_ids as dsf-run's
--prompt-ids list. usage: golden_ids.py IO.safetensors ROW"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reference"))
import safetensors_io  # noqa: E402

print(",".join(str(int(i)) for i in safetensors_io.load(sys.argv[1])["input_ids"][int(sys.argv[2])]))
