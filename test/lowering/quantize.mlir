// RUN: dsf-opt %s --dsf-to-linalg --canonicalize --split-input-file | FileCheck %s

// A quantizer of decoded values is one generic over the elements: each
// computes its block's amax (a loop over the block's 32 channels of the
// input the body reads), the UE8M0 scale from it and its E4M3 value; no
// reduction, no tensor of scales, no fill. Dequantize is the identity.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:.*]]: tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[X]] : tensor<?x64xf32>)
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[BLOCK:.*]] = arith.divui %[[C]], %c32 : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[BLOCK]], %c32 : index
// CHECK: %[[LAST:.*]] = arith.addi %[[FIRST]], %c32 : index
// CHECK: %[[AMAX:.*]] = scf.for %[[K:.*]] = %[[FIRST]] to %[[LAST]] step %c1 iter_args(%[[ACC:.*]] = %cst{{.*}}) -> (f32) {
// CHECK: %[[V:.*]] = tensor.extract %[[X]][%[[ROW]], %[[K]]] : tensor<?x64xf32>
// CHECK: %[[A:.*]] = math.absf %[[V]] : f32
// CHECK: %[[M:.*]] = arith.maximumf %[[ACC]], %[[A]] : f32
// CHECK: scf.yield %[[M]] : f32
// CHECK: arith.maximumf %[[AMAX]], %cst
// CHECK: math.roundeven
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[Q]] : tensor<?x64xf32>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 64, num_layers = 1, hc_mult = 1} {
  func.func @forward(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
    %q = dsf.quantize %x : tensor<?x64xf32> -> !dsf.qtensor<?x64, #dsf.quant<e4m3, scale = ue8m0, block = 32>>
    %y = dsf.dequantize %q : !dsf.qtensor<?x64, #dsf.quant<e4m3, scale = ue8m0, block = 32>> -> tensor<?x64xf32>
    return %y : tensor<?x64xf32>
  }
}

// -----

// V4's KV rows: the blocks and the bf16 tail in the same generic, the
// channel's side of the row chosen in its body (no slices put back
// together).
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:.*]]: tensor<?x128xf32>) -> tensor<?x128xf32>
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<?x128xf32>)
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[IN_BLOCKS:.*]] = arith.cmpi ult, %[[C]], %c64 : index
// CHECK: scf.if %[[IN_BLOCKS]] -> (f32) {
// CHECK: scf.for
// CHECK: } else {
// CHECK: arith.andi %{{.*}}, %c-65536_i32 : i32
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[Q]] : tensor<?x128xf32>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 128, num_layers = 1, hc_mult = 1} {
  func.func @forward(%x: tensor<?x128xf32>) -> tensor<?x128xf32> {
    %q = dsf.quantize %x : tensor<?x128xf32> -> !dsf.qtensor<?x128, #dsf.quant<e4m3, scale = ue8m0, block = 64, bf16_tail = 64, align = 8>>
    %y = dsf.dequantize %q : !dsf.qtensor<?x128, #dsf.quant<e4m3, scale = ue8m0, block = 64, bf16_tail = 64, align = 8>> -> tensor<?x128xf32>
    return %y : tensor<?x128xf32>
  }
}
