"""Runs ptxas -arch=sm_90a on every kernel module of dsf-compile --emit=ptx
output (split at its '// ----- kernel module NAME' lines); prints the count
and the failures; exits 1 on any, 0 (with 'skipped') without ptxas.
usage: ptxas_all.py KERNELS.ptx CUDA_TOOLKIT"""
import os
import subprocess
import sys
import tempfile

text = open(sys.argv[1]).read()
ptxas = os.path.join(sys.argv[2], "bin", "ptxas")
if not os.path.exists(ptxas):
    print(f"ptxas -arch=sm_90a: skipped (no {ptxas})")
    sys.exit(0)
modules = [m for m in text.split("// ----- kernel module ") if m.strip()]
failed = []
with tempfile.TemporaryDirectory() as d:
    for m in modules:
        name, ptx = m.split("\n", 1)
        path = os.path.join(d, name + ".ptx")
        open(path, "w").write(ptx)
        r = subprocess.run([ptxas, "-arch=sm_90a", path, "-o", os.devnull], capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(name)
            print(f"{name}: {r.stderr.strip()}")
print(f"ptxas -arch=sm_90a: {len(modules)} kernel modules, {len(failed)} failed")
sys.exit(1 if failed else 0)
