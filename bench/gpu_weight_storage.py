"""Question: what does binding the weights in bf16 (as the model declares
them; dsf-compile's default --weight-storage=declared) save against binding
them in f32, at V4.1-Flash's real sizes, and are the numbers the same?

Runs on the GPU machine over two artifacts of bench/configs/deepseek-v4.1-shaped-8e
built on the development machine (see bench/gpu_v41_real_size.py for the
model):
  python3 bench/gpu_weight_storage.py DSF_RUN OUT.md BF16.dsfa F32.dsfa [CONTEXT] [--parts=numbers,time,profile]
  * BF16.dsfa: weights bound as declared (bf16; mHC's tensors, sinks and
    the gate's biases f32), each widened to f32 as the kernels load it;
  * F32.dsfa, the anchor: every float weight bound as f32 (dsf-compile
    --weight-storage=f32, or an earlier build, which bound every weight as
    f32 — the results say which).
The same random weights are exact in bf16, so both artifacts compute with the
same weights and their logits must agree. The parts (numbers, time, profile)
are bench/gpu_build_ab.py's, with the labels bf16 and f32.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_build_ab  # noqa: E402

gpu_build_ab.main(sys.argv[1:], script="bench/gpu_weight_storage.py", labels=("bf16", "f32"),
                  title="Weights bound as bf16 against f32, V4.1-shaped model at real sizes (8 experts)",
                  anchor_note="every float weight f32")
