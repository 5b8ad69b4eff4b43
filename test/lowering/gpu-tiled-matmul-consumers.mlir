// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16" --split-input-file | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16 fuse-consumers=false" --split-input-file | FileCheck --check-prefix=NOFUSE %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16 batch-invariant=true" --split-input-file | FileCheck --check-prefix=INVARIANT %s

// SwiGLU after the second projection of a shared expert (h = silu(g) * u,
// u = x W^T just computed, an allocation between): every kernel of the
// product (the tiles, the split-depth parts' sum, the warp kernel) computes
// h's element where it stores u's, from the sum it holds, reading g's
// element; the consumer's generic goes. The kernels move down to the
// consumer's place, after the allocation of h.
// CHECK-LABEL: func.func @swiglu
// CHECK: %[[H:.*]] = memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch
// CHECK: memref.store %[[SUM:.*]], %arg2[%[[R:.*]], %[[C:.*]]] : memref<?x64xf32>
// CHECK-NEXT: affine.apply #{{.*}}(%[[R]], %[[C]])
// CHECK-NEXT: affine.apply #{{.*}}(%[[R]], %[[C]])
// CHECK-NEXT: memref.load %arg3
// CHECK: math.exp
// CHECK: arith.mulf %{{.*}}, %[[SUM]] : f32
// CHECK: memref.store %{{.*}}, %[[H]][%[[R]], %[[C]]] : memref<?x64xf32>
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[H]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: memref.dealloc %[[H]]
// NOFUSE-LABEL: func.func @swiglu
// NOFUSE: gpu.launch
// NOFUSE-NOT: memref.store %{{.*}}, %alloc
// NOFUSE: gpu.terminator
// NOFUSE: linalg.generic
// NOFUSE: math.exp
// INVARIANT-LABEL: func.func @swiglu
// INVARIANT: gpu.launch
// INVARIANT-NOT: memref.store %{{.*}}, %alloc
// INVARIANT: gpu.terminator
// INVARIANT: linalg.generic {{.*}}"reduction"
// INVARIANT: linalg.generic
// INVARIANT: math.exp
#a = affine_map<(t, o, d) -> (t, d)>
#w = affine_map<(t, o, d) -> (o, d)>
#c = affine_map<(t, o, d) -> (t, o)>
#id = affine_map<(t, o) -> (t, o)>
func.func @swiglu(%x: memref<?x128xf32>, %w: memref<64x128xbf16>, %u: memref<?x64xf32>, %g: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x128xf32>
  linalg.fill ins(%zero : f32) outs(%u : memref<?x64xf32>)
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<64x128xbf16>) outs(%u : memref<?x64xf32>) {
  ^bb0(%xv: f32, %wv: bf16, %acc: f32):
    %wf = arith.extf %wv : bf16 to f32
    %p = arith.mulf %xv, %wf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %h = memref.alloc(%rows) : memref<?x64xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %u : memref<?x64xf32>, memref<?x64xf32>) outs(%h : memref<?x64xf32>) {
  ^bb0(%gv: f32, %uv: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %gv : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %silu = arith.divf %gv, %d : f32
    %r = arith.mulf %silu, %uv : f32
    linalg.yield %r : f32
  }
  memref.dealloc %h : memref<?x64xf32>
  return
}

// -----

// Consumers the kernels may not compute as they store: one that reads the
// product by the transposed map (other blocks' elements), one that writes
// the product's input in place (other blocks may still read it), one that
// reads its own output, one after an op that writes memory.
// CHECK-LABEL: func.func @transposed
// CHECK: gpu.terminator
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @into_input
// CHECK: gpu.terminator
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @accumulates
// CHECK: gpu.terminator
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @after_a_write
// CHECK: gpu.terminator
// CHECK: memref.copy
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
#a = affine_map<(t, o, d) -> (t, d)>
#w = affine_map<(t, o, d) -> (o, d)>
#c = affine_map<(t, o, d) -> (t, o)>
#id = affine_map<(t, o) -> (t, o)>
#tr = affine_map<(t, o) -> (o, t)>
func.func @transposed(%x: memref<64x128xf32>, %w: memref<64x128xf32>, %u: memref<64x64xf32>, %y: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<64x128xf32>, memref<64x128xf32>) outs(%u : memref<64x64xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : memref<64x64xf32>) outs(%y : memref<64x64xf32>) {
  ^bb0(%uv: f32, %o: f32):
    linalg.yield %uv : f32
  }
  return
}
func.func @into_input(%x: memref<64x64xf32>, %w: memref<64x64xf32>, %u: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<64x64xf32>, memref<64x64xf32>) outs(%u : memref<64x64xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : memref<64x64xf32>) outs(%x : memref<64x64xf32>) {
  ^bb0(%uv: f32, %o: f32):
    linalg.yield %uv : f32
  }
  return
}
func.func @accumulates(%x: memref<64x128xf32>, %w: memref<64x128xf32>, %u: memref<64x64xf32>, %y: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<64x128xf32>, memref<64x128xf32>) outs(%u : memref<64x64xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : memref<64x64xf32>) outs(%y : memref<64x64xf32>) {
  ^bb0(%uv: f32, %o: f32):
    %r = arith.addf %o, %uv : f32
    linalg.yield %r : f32
  }
  return
}
func.func @after_a_write(%x: memref<64x128xf32>, %w: memref<64x128xf32>, %u: memref<64x64xf32>, %v: memref<64x64xf32>, %y: memref<64x64xf32>) {
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<64x128xf32>, memref<64x128xf32>) outs(%u : memref<64x64xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %v, %y : memref<64x64xf32> to memref<64x64xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : memref<64x64xf32>) outs(%y : memref<64x64xf32>) {
  ^bb0(%uv: f32, %o: f32):
    linalg.yield %uv : f32
  }
  return
}
