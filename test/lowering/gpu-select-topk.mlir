// RUN: dsf-opt %s --dsf-gpu-select-topk --split-input-file -verify-diagnostics | FileCheck %s

// The selection becomes one kernel, a block of 512 threads per token: four
// radix digits (histogram zeroed, keys of tau's prefix counted with shared
// atomics, warp 0 picking the digit: 8 bins a lane, a 5-step shuffle scan,
// a 5-step shuffle max), then the chunks in index order with two block scans
// (ties, then selected entries), then -1 in the slots left.
// CHECK-LABEL: func.func private @dsf_topk_k8_from256
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[E:.*]] = memref.dim %arg0, %c1
// CHECK: %[[OUT:.*]] = memref.alloc(%[[T]]) : memref<?x8xi32>
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]], {{.*}} threads({{.*}}) in (%{{.*}} = %c512
// CHECK-SAME: workgroup(%[[HIST:.*]] : memref<256xi32, #gpu.address_space<workgroup>>, %[[CHOSEN:.*]] : memref<2xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<17xi32, {{.*}}>, %{{.*}} : memref<17xi32, {{.*}}>)
// CHECK-COUNT-4: memref.atomic_rmw addi %{{.*}}, %[[HIST]]
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[E]] step %c512{{.*}} iter_args
// CHECK: gpu.shuffle up
// A block scan: warp 0's lanes below the 16 warps read their warp's slot
// (the others none: reading slot 0 while lane 0 writes it back is a hazard
// between lanes), scan by shuffles, and write the slot back.
// CHECK: gpu.barrier
// CHECK: arith.cmpi ult, %{{.*}}, %c16
// CHECK-NEXT: scf.if %{{.*}} -> (i32) {
// CHECK-NEXT: memref.load %[[SCAN:.*]][%[[LANE:.*]]] : memref<17xi32
// CHECK: gpu.shuffle up
// CHECK: memref.store %{{.*}}, %[[SCAN]][%[[LANE]]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK: arith.constant -1 : i32
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK: return %[[OUT]]
func.func private @dsf_topk_k8_from256(%scores: memref<?x?xf32>) -> memref<?x8xi32> attributes {dsf.topk = {k = 8 : i64}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %scores, %c0 : memref<?x?xf32>
  %out = memref.alloc(%t) : memref<?x8xi32>
  return %out : memref<?x8xi32>
}

// -----

// The attribute's k and the result's width disagree.
// expected-error @below {{dsf-gpu-select-topk: a dsf.topk helper that is not a bufferized memref<?x?xf32> -> memref<?xKxi32> function with its k}}
func.func private @dsf_topk_wrong_k(%scores: memref<?x?xf32>) -> memref<?x8xi32> attributes {dsf.topk = {k = 16 : i64}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %scores, %c0 : memref<?x?xf32>
  %out = memref.alloc(%t) : memref<?x8xi32>
  return %out : memref<?x8xi32>
}

// -----

// Not bufferized.
// expected-error @below {{dsf-gpu-select-topk: a dsf.topk helper that is not a bufferized}}
func.func private @dsf_topk_tensors(%scores: tensor<?x?xf32>) -> tensor<?x8xi32> attributes {dsf.topk = {k = 8 : i64}} {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %scores, %c0 : tensor<?x?xf32>
  %out = tensor.empty(%t) : tensor<?x8xi32>
  return %out : tensor<?x8xi32>
}

// -----

// No k.
// expected-error @below {{dsf-gpu-select-topk: a dsf.topk helper that is not a bufferized}}
func.func private @dsf_topk_no_k(%scores: memref<?x?xf32>) -> memref<?x8xi32> attributes {dsf.topk = {}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %scores, %c0 : memref<?x?xf32>
  %out = memref.alloc(%t) : memref<?x8xi32>
  return %out : memref<?x8xi32>
}
