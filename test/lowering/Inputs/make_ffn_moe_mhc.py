"""Writes ffn_moe_mhc.mlir and ffn_moe_mhc.json (run once; the test reads the
committed files): small random weights and inputs, embedded in the IR as dense
constants and saved for the NumPy checker. usage: make_ffn_moe_mhc.py"""
import json
import os

import numpy as np

rng = np.random.default_rng(7)
arr = lambda *s: np.round(rng.standard_normal(s), 4).astype(np.float32)
T, n, D, I, E, K = 5, 2, 8, 6, 4, 2
data = {
    "X": arr(T, n, D), "fn": 0.3 * arr((2 + n) * n, n * D), "base": 0.5 * arr((2 + n) * n),
    "scale": np.abs(1 + 0.2 * arr(3)),
    "w1": 0.5 * arr(I, D), "w2": 0.5 * arr(D, I), "w3": 0.5 * arr(I, D),
    "ew1": 0.5 * arr(E, I, D), "ew2": 0.5 * arr(E, D, I), "ew3": 0.5 * arr(E, I, D),
    "routing": np.abs(arr(T, K)), "experts": np.array([[0, 3], [2, 1], [3, 3], [1, 0], [2, 0]], np.int32),
}
here = os.path.dirname(__file__)
json.dump({k: np.asarray(v).tolist() for k, v in data.items()}, open(os.path.join(here, "ffn_moe_mhc.json"), "w"))


def ty(a, elem="f32"):
    return "tensor<" + "x".join(str(s) for s in np.shape(a)) + "x" + elem + ">"


def dense(a):
    return "dense<" + json.dumps(np.asarray(a).tolist()) + ">"


def weight(name, a):
    return f"  dsf.weight @{name} : {ty(a)} {{value = {dense(a)} : {ty(a)}}}"


def dyn(shape):
    return "tensor<?x" + "x".join(str(s) for s in shape) + "xf32>"


weights = "\n".join(weight(k, data[k]) for k in ["fn", "base", "scale", "w1", "w2", "w3", "ew1", "ew2", "ew3"])
text = f"""// RUN: dsf-opt %s --dsf-lower-cpu | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils > %t.out
// RUN: %numpy_python %S/Inputs/check_ffn_moe_mhc.py %t.out | FileCheck %s
// REQUIRES: numpy, mlir-runner
//
// mhc.coeffs (with 20 Sinkhorn rounds), ffn and moe.experts, lowered through
// linalg to LLVM and run, against the NumPy reference on the same values
// (Inputs/ffn_moe_mhc.json; both written by Inputs/make_ffn_moe_mhc.py). The
// SwiGLU limit is small so that both clamps bind.
// CHECK: mhc.coeffs pre: max relative error {{{{[0-9.]+}}}}e-0{{{{[5-9]}}}} ok
// CHECK: mhc.coeffs post: max relative error {{{{[0-9.]+}}}}e-0{{{{[5-9]}}}} ok
// CHECK: mhc.coeffs comb: max relative error {{{{[0-9.]+}}}}e-0{{{{[5-9]}}}} ok
// CHECK: ffn: max relative error {{{{[0-9.]+}}}}e-0{{{{[5-9]}}}} ok
// CHECK: moe.experts: max relative error {{{{[0-9.]+}}}}e-0{{{{[5-9]}}}} ok
dsf.model @m attributes {{family = "deepseek_v41", vocab_size = 16, hidden_size = {D}, num_layers = 1, hc_mult = {n}}} {{
{weights}
  func.func private @printMemrefF32(memref<*xf32>) attributes {{llvm.emit_c_interface}}
  func.func @main() {{
    %X0 = arith.constant {dense(data['X'])} : {ty(data['X'])}
    %r0 = arith.constant {dense(data['routing'])} : {ty(data['routing'])}
    %e0 = arith.constant {dense(data['experts'])} : {ty(data['experts'], 'i32')}
    %X = tensor.cast %X0 : {ty(data['X'])} to {dyn((n, D))}
    %r = tensor.cast %r0 : {ty(data['routing'])} to {dyn((K,))}
    %e = tensor.cast %e0 : {ty(data['experts'], 'i32')} to tensor<?x{K}xi32>
    %pre, %post, %comb = dsf.mhc.coeffs %X {{fn = @fn, base = @base, scale = @scale, sinkhorn_iters = 20 : i64,
        eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64}} : {dyn((n, D))} -> {dyn((n,))}, {dyn((n,))}, {dyn((n, n))}
    %x = dsf.mhc.collapse %X, %pre : {dyn((n, D))}, {dyn((n,))} -> {dyn((D,))}
    %s = dsf.ffn %x {{w1 = @w1, w2 = @w2, w3 = @w3, swiglu_limit = 1.5 : f64}} : {dyn((D,))}
    %m = dsf.moe.experts %x, %r, %e {{w1 = @ew1, w2 = @ew2, w3 = @ew3, swiglu_limit = 1.5 : f64}}
        : {dyn((D,))}, {dyn((K,))}, tensor<?x{K}xi32> -> {dyn((D,))}
"""
for i, (v, shape) in enumerate([("pre", (n,)), ("post", (n,)), ("comb", (n, n)), ("s", (D,)), ("m", (D,))]):
    text += f"""    %b{i} = bufferization.to_buffer %{v} : {dyn(shape)} to memref<?x{'x'.join(map(str, shape))}xf32>
    %u{i} = memref.cast %b{i} : memref<?x{'x'.join(map(str, shape))}xf32> to memref<*xf32>
    call @printMemrefF32(%u{i}) : (memref<*xf32>) -> ()
"""
text += "    return\n  }\n}\n"
open(os.path.join(here, "..", "ffn_moe_mhc.mlir"), "w").write(text)
