// RUN: dsf-opt %s --dsf-gpu-tiled-matmul=min-rows=16 --split-input-file | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 batch-invariant=true" --split-input-file | FileCheck --check-prefix=INVARIANT %s

// Batch-invariant: below 16 rows the generic stays (one thread per output,
// the tiled kernel's order of sums).
// INVARIANT-LABEL: func.func @proj
// INVARIANT: gpu.launch
// INVARIANT: gpu.terminator
// INVARIANT-NEXT: }
// INVARIANT-NEXT: } else {
// INVARIANT-NEXT: linalg.generic
// INVARIANT-NOT: gpu.shuffle

// A projection C[t, o] += A[t, d] * W[o, d]: from 16 rows a tiled kernel
// (64 x 64 tiles, 256 threads, two 16 x 64 shared tiles, barriers around
// each 16-deep slice), below it a warp per output (lanes 32 apart along the
// reduction, then five xor shuffles); the generic is gone.
// CHECK-LABEL: func.func @proj
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %[[ROWS]], %c16
// CHECK: scf.if %[[BIG]] {
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) workgroup(%[[AS:.*]] : memref<16x64xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<16x64xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: memref.store {{.*}}, %[[AS]]
// CHECK: memref.store {{.*}}, %[[WS]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: memref.store {{.*}}, %arg2
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: gpu.launch
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store {{.*}}, %arg2
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @other
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @proj(%x: memref<?x128xf32>, %w: memref<96x128xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.mulf %in, %in_0 : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Not a projection (W is not transposed): left alone.
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @other(%x: memref<?x128xf32>, %w: memref<128x96xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<128x96xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.mulf %in, %in_0 : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// V4's grouped output projection C[t, g, o] += A[t, g, d] * W[g, o, d]: the
// same two kernels with a group per blockIdx.z.
// CHECK-LABEL: func.func @grouped
// CHECK: %[[G:.*]] = memref.dim %arg1, %c0
// CHECK: scf.if
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[G]]) {{.*}} workgroup(
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: memref.load %arg1[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: gpu.barrier
// CHECK: memref.store {{.*}}, %arg2[
// CHECK: } else {
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[G]])
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: linalg.generic
// INVARIANT-LABEL: func.func @grouped
// INVARIANT: gpu.launch
// INVARIANT: gpu.terminator
// INVARIANT-NEXT: }
// INVARIANT-NEXT: } else {
// INVARIANT-NEXT: linalg.generic
#ga = affine_map<(t, g, o, d) -> (t, g, d)>
#gw = affine_map<(t, g, o, d) -> (g, o, d)>
#gc = affine_map<(t, g, o, d) -> (t, g, o)>
func.func @grouped(%x: memref<?x8x64xf32>, %w: memref<8x32x64xf32>, %y: memref<?x8x32xf32>) {
  linalg.generic {indexing_maps = [#ga, #gw, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x8x64xf32>, memref<8x32x64xf32>) outs(%y : memref<?x8x32xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.mulf %in, %in_0 : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  return
}
