"""Writes a PTX file that holds only what attention_kernel_check.py reads
before it needs a GPU: a header and a helper's kernels, each an entry with
its count of .u64 parameters and the instruction the checker looks for
(cvt.rn.bf16x2 in the conversion, ldmatrix in the tensor-core attention),
so that its argument and build checks can be tested without dsf-compile or
a GPU.

usage: attention_ptx_stub.py OUT.ptx HELPER PARAMETERS:INSTRUCTION [...]
  the kernels HELPER__attention_0, _1, ... in order, e.g. 15:cvt.rn.bf16x2 50:ldmatrix 34:none"""
import sys

out, helper, kernels = sys.argv[1], sys.argv[2], sys.argv[3:]
text = ".version 8.7\n.target sm_90a\n.address_size 64\n"
for i, spec in enumerate(kernels):
    count, instruction = spec.split(":")
    parameters = ",\n".join(f"\t.param .u64 p{j}" for j in range(int(count)))
    text += f"\n.visible .entry {helper}__attention_{i}(\n{parameters}\n)\n{{\n\t{instruction};\n\tret;\n}}\n"
open(out, "w").write(text)
