// RUN: dsf-opt %s --dsf-gpu-batched-contraction --split-input-file | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-batched-contraction=math=tf32 --split-input-file | FileCheck --check-prefix=TF32 %s

// math=tf32: the gathered rows staged as before, the products on the tensor
// cores (8 mma.sync a 16-deep slice).
// TF32-LABEL: func.func @logits
// TF32: gpu.launch
// TF32-COUNT-8: nvvm.mma.sync
// TF32-NOT: nvvm.mma.sync
// TF32: gpu.terminator

// Attention's logits against the selected cache rows:
// logits[t, h, s] += q[t, h, d] * cache[max(sel[t, s], 0), d]. One tiled
// kernel with a token per blockIdx.z; the selection's load and the gathered
// row's load are cloned into the staging of the W tile.
// CHECK-LABEL: func.func @logits
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[Z:.*]]) in ({{.*}}, {{.*}}, %{{.*}} = %[[T]]) {{.*}} workgroup(
// CHECK: memref.load %arg0[%[[Z]], %{{.*}}, %{{.*}}]
// CHECK: %[[E:.*]] = memref.load %arg1[
// CHECK: arith.maxsi %[[E]]
// CHECK: memref.load %arg2[
// CHECK: gpu.barrier
// CHECK: memref.load %arg3[%[[Z]],
// CHECK: memref.store {{.*}}, %arg3[%[[Z]],
// CHECK-NOT: linalg.generic
#q = affine_map<(t, h, s, d) -> (t, h, d)>
#sel = affine_map<(t, h, s, d) -> (t, s)>
#out = affine_map<(t, h, s, d) -> (t, h, s)>
func.func @logits(%q: memref<?x64x512xf32>, %sel: memref<?x512xi32>, %cache: memref<?x512xf32>, %logits: memref<?x64x512xf32>) {
  linalg.generic {indexing_maps = [#q, #sel, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %sel : memref<?x64x512xf32>, memref<?x512xi32>) outs(%logits : memref<?x64x512xf32>) {
  ^bb0(%a: f32, %e: i32, %acc: f32):
    %c0 = arith.constant 0 : i32
    %clamped = arith.maxsi %e, %c0 : i32
    %row = arith.index_cast %clamped : i32 to index
    %d = linalg.index 3 : index
    %kv = memref.load %cache[%row, %d] : memref<?x512xf32>
    %p = arith.mulf %a, %kv : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The indexer's dots against every key: X is an input indexed (n, k).
// CHECK-LABEL: func.func @index_dots
// CHECK: gpu.launch
// CHECK: memref.load %arg1[
// CHECK-NOT: linalg.generic
#q = affine_map<(t, h, j, d) -> (t, h, d)>
#k = affine_map<(t, h, j, d) -> (j, d)>
#out = affine_map<(t, h, j, d) -> (t, h, j)>
func.func @index_dots(%q: memref<?x32x128xf32>, %keys: memref<?x128xf32>, %dots: memref<?x32x?xf32>) {
  linalg.generic {indexing_maps = [#q, #k, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %keys : memref<?x32x128xf32>, memref<?x128xf32>) outs(%dots : memref<?x32x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %p = arith.mulf %a, %k : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A factor that depends on m (the row) is not a product against shared
// columns: left alone.
// CHECK-LABEL: func.func @depends_on_row
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
#q = affine_map<(t, h, j, d) -> (t, h, d)>
#k = affine_map<(t, h, j, d) -> (h, d)>
#out = affine_map<(t, h, j, d) -> (t, h, j)>
func.func @depends_on_row(%q: memref<?x32x128xf32>, %w: memref<32x128xf32>, %dots: memref<?x32x?xf32>) {
  linalg.generic {indexing_maps = [#q, #k, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %w : memref<?x32x128xf32>, memref<32x128xf32>) outs(%dots : memref<?x32x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %p = arith.mulf %a, %k : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Four heads (the tiny models): a 64-row tile would mostly idle; left alone.
// CHECK-LABEL: func.func @few_heads
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
#q = affine_map<(t, h, j, d) -> (t, h, d)>
#k = affine_map<(t, h, j, d) -> (j, d)>
#out = affine_map<(t, h, j, d) -> (t, h, j)>
func.func @few_heads(%q: memref<?x4x128xf32>, %keys: memref<?x128xf32>, %dots: memref<?x4x?xf32>) {
  linalg.generic {indexing_maps = [#q, #k, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %keys : memref<?x4x128xf32>, memref<?x128xf32>) outs(%dots : memref<?x4x?xf32>) {
  ^bb0(%a: f32, %k: f32, %acc: f32):
    %p = arith.mulf %a, %k : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
