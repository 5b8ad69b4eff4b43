// RUN: dsf-opt %s --split-input-file --gpu-kernel-outlining --dsf-name-kernels | FileCheck %s

// Each outlined kernel is named after its host function and the first
// NameLoc of its launch (dsf-to-linalg's op tag), non-identifier characters
// as '_', with an ordinal per function and op; the launches follow.
// CHECK-LABEL: func.func @prefill_layer3(
// CHECK: gpu.launch_func @prefill_layer3_kernel::@prefill_layer3__linear_attn_wq_b_0
// CHECK: gpu.launch_func @prefill_layer3_kernel_0::@prefill_layer3__attention_0
// CHECK: gpu.launch_func @prefill_layer3_kernel_1::@prefill_layer3__attention_1
// CHECK: gpu.launch_func @prefill_layer3_kernel_2::@prefill_layer3__op_0
// CHECK: gpu.module @prefill_layer3_kernel
// CHECK: gpu.func @prefill_layer3__linear_attn_wq_b_0(
// CHECK: gpu.module @prefill_layer3_kernel_0
// CHECK: gpu.func @prefill_layer3__attention_0(
// CHECK: gpu.module @prefill_layer3_kernel_1
// CHECK: gpu.func @prefill_layer3__attention_1(
// CHECK: gpu.module @prefill_layer3_kernel_2
// CHECK: gpu.func @prefill_layer3__op_0(
func.func @prefill_layer3(%out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    memref.store %f, %out[%tx] : memref<4xf32>
    gpu.terminator
  } loc(fused["linear.attn.wq_b"("model.json":1:1), "other"("model.json":1:1)])
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    memref.store %f, %out[%tx] : memref<4xf32>
    gpu.terminator
  } loc("attention"("model.json":1:1))
  // No name on the launch: the body's first one.
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    memref.store %f, %out[%tx] : memref<4xf32> loc("attention"("model.json":1:1))
    gpu.terminator
  }
  // No name anywhere.
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    memref.store %f, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

// dsf-to-linalg tags each dsf op: its name, and the weight of a one-weight op
// without the layer prefix and the .weight suffix.
// RUN: dsf-opt %s --split-input-file --dsf-to-linalg --mlir-print-debuginfo | FileCheck %s --check-prefix=TAG
// TAG: = loc("rms_norm.nw"(
// TAG: = loc("linear.attn.wq_a"(
// TAG: func.func @forward(
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @"layers.0.attn.wq_a.weight" : tensor<4x8xf32>
  dsf.weight @nw : tensor<8xf32> {value = dense<2.0> : tensor<8xf32>}
  func.func @forward(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
    %n = dsf.rms_norm %x weight(@nw) {eps = 1.0e-6 : f64} : tensor<?x8xf32>
    %y = dsf.linear %n weight(@"layers.0.attn.wq_a.weight") : tensor<?x8xf32> -> tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}
