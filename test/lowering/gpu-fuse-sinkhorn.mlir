// RUN: dsf-opt %s --dsf-gpu-fuse-sinkhorn --split-input-file -verify-diagnostics | FileCheck %s

// The helper's rounds become one kernel, a thread per token: 16 loads, the
// rounds over registers (per round 4 row sums, 16 divisions, 4 column sums,
// 16 divisions), 16 stores into a fresh buffer that is returned.
// CHECK-LABEL: func.func private @dsf_sinkhorn_n4_r3_e358637bd
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[OUT:.*]] = memref.alloc(%[[T]]) : memref<?x4x4xf32>
// CHECK: gpu.launch
// CHECK-COUNT-16: memref.load %arg0
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3{{.*}} step
// CHECK-COUNT-32: arith.divf
// CHECK: scf.yield
// CHECK-COUNT-16: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK: return %[[OUT]]
func.func private @dsf_sinkhorn_n4_r3_e358637bd(%comb: memref<?x4x4xf32>) -> memref<?x4x4xf32>
    attributes {dsf.sinkhorn = {eps = 1.0e-06 : f32, n = 4 : i64, rounds = 3 : i64}} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %comb, %c0 : memref<?x4x4xf32>
  %copy = memref.alloc(%n) : memref<?x4x4xf32>
  memref.copy %comb, %copy : memref<?x4x4xf32> to memref<?x4x4xf32>
  return %copy : memref<?x4x4xf32>
}

// -----

// expected-error @below {{dsf-gpu-fuse-sinkhorn: a dsf.sinkhorn helper that is not a bufferized memref<?xNxNxf32> -> memref<?xNxNxf32> function}}
func.func private @dsf_sinkhorn_bad(%comb: tensor<?x4x4xf32>) -> tensor<?x4x4xf32>
    attributes {dsf.sinkhorn = {eps = 1.0e-06 : f32, n = 4 : i64, rounds = 3 : i64}} {
  return %comb : tensor<?x4x4xf32>
}
