// RUN: dsf-opt %s --dsf-gpu-block-reduce --split-input-file | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-block-reduce="fuse-consumers=false" --split-input-file | FileCheck %s --check-prefix=NOFUSE

// An i32 count per row (the top-k's passes): a block of 256 threads per
// output, the points in strides of 256, the body cloned with its inputs
// loaded and linalg.index replaced, then xor shuffles, the warps' partials in
// shared memory, and lane 0 of warp 0 adding the output's own value.
// CHECK-LABEL: func.func @count
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[COLS:.*]] = memref.dim %arg0, %c1
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %{{.*}}, {{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c256, {{.*}}) workgroup(%[[PART:.*]] : memref<8xi32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %[[P:.*]] = %[[TX]] to %{{.*}} step %c256{{.*}} iter_args(%[[ACC:.*]] = %c0_i32)
// CHECK: memref.load %arg0
// CHECK: memref.load %arg1
// CHECK: arith.cmpi uge
// CHECK: arith.addi %[[ACC]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store {{.*}}, %[[PART]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[PART]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: %[[OLD:.*]] = memref.load %arg2
// CHECK: arith.addi %[[OLD]]
// CHECK: memref.store {{.*}}, %arg2
// CHECK-NOT: linalg.generic
#kj = affine_map<(t, j) -> (t, j)>
#t = affine_map<(t, j) -> (t)>
func.func @count(%keys: memref<?x?xi32>, %bound: memref<?xi32>, %count: memref<?xi32>) {
  linalg.generic {indexing_maps = [#kj, #t, #t], iterator_types = ["parallel", "reduction"]}
      ins(%keys, %bound : memref<?x?xi32>, memref<?xi32>) outs(%count : memref<?xi32>) {
  ^bb0(%k: i32, %b: i32, %c: i32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %ge = arith.cmpi uge, %k, %b : i32
    %lt = arith.cmpi ult, %ji, %b : i32
    %hit = arith.andi %ge, %lt : i1
    %one = arith.extui %hit : i1 to i32
    %s = arith.addi %c, %one : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// A float row maximum: the same, from -inf.
// CHECK-LABEL: func.func @row_max
// CHECK: gpu.launch
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[NEG]])
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
#x = affine_map<(t, j) -> (t, j)>
#t = affine_map<(t, j) -> (t)>
func.func @row_max(%x: memref<?x?xf32>, %m: memref<?xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.maximumf %acc, %v : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A float sum of a static length from 256 (an RMSNorm over the model width
// or a 512-wide latent): a block per output too, from 0.0.
// CHECK-LABEL: func.func @long_sum
// CHECK: gpu.launch
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]])
// CHECK: arith.addf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: linalg.generic
#x = affine_map<(t, j) -> (t, j)>
#t = affine_map<(t, j) -> (t)>
func.func @long_sum(%x: memref<?x5120xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x5120xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The output filled with the combination's identity just before (a norm's
// zeroed sum; an allocation between touches nothing): the block writes its
// result without reading the output, and the fill goes. A fill of another
// value stays, and the block adds to it.
// CHECK-LABEL: func.func @zeroed_sum
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: memref.load %arg1[
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<?xf32>
// CHECK-LABEL: func.func @offset_sum
// CHECK: linalg.fill
// CHECK: gpu.launch
// CHECK: %[[OLD:.*]] = memref.load %arg1[%{{.*}}] : memref<?xf32>
// CHECK: arith.addf %[[OLD]]
#x = affine_map<(t, j) -> (t, j)>
#t = affine_map<(t, j) -> (t)>
func.func @zeroed_sum(%x: memref<?x5120xf32>, %s: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<?xf32>)
  %scratch = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x5120xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  memref.dealloc %scratch : memref<4xf32>
  return
}
func.func @offset_sum(%x: memref<?x5120xf32>, %s: memref<?xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%s : memref<?xf32>)
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x5120xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Shorter or dynamic float sums keep their order: left as they are. So are
// reductions whose output is not indexed by the parallel dimensions alone.
// CHECK-LABEL: func.func @short_sum
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK-LABEL: func.func @float_sum
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK-LABEL: func.func @transposed_output
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
#x = affine_map<(t, j) -> (t, j)>
#t = affine_map<(t, j) -> (t)>
func.func @short_sum(%x: memref<?x128xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x128xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %acc, %v : f32
    linalg.yield %r : f32
  }
  return
}
func.func @float_sum(%x: memref<?x?xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %acc, %v : f32
    linalg.yield %r : f32
  }
  return
}
#x3 = affine_map<(a, b, j) -> (a, b, j)>
#ba = affine_map<(a, b, j) -> (b, a)>
func.func @transposed_output(%x: memref<4x8x16xi32>, %s: memref<8x4xi32>) {
  linalg.generic {indexing_maps = [#x3, #ba], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<4x8x16xi32>) outs(%s : memref<8x4xi32>) {
  ^bb0(%v: i32, %acc: i32):
    %r = arith.addi %acc, %v : i32
    linalg.yield %r : i32
  }
  return
}

// -----

// An RMSNorm: the zeroed sum of squares, then the scaling that reads it
// row by row (d0) -> (d0). The scaling runs in the reduction's block after
// a barrier, each thread its points in strides of 256: one launch, the
// fill and both generics gone. With fuse-consumers=false it keeps a kernel
// of its own.
// CHECK-LABEL: func.func @norm
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %arg2[%[[ROW:.*]]] : memref<?xf32>
// CHECK: gpu.barrier
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %c256
// CHECK: %[[COL:.*]] = arith.remui %[[P]], %c512
// CHECK: memref.load %arg0[
// CHECK: memref.load %arg2[
// CHECK: memref.load %arg1[
// CHECK: math.rsqrt
// CHECK: memref.store %{{.*}}, %arg3[%[[ROW]], %[[COL]]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
// NOFUSE-LABEL: func.func @norm
// NOFUSE: gpu.launch
// NOFUSE: memref.store %{{.*}}, %arg2[%{{.*}}] : memref<?xf32>
// NOFUSE-NEXT: }
// NOFUSE-NEXT: }
// NOFUSE-NEXT: gpu.terminator
// NOFUSE: linalg.generic
// NOFUSE: math.rsqrt
#x = affine_map<(t, j) -> (t, j)>
#t = affine_map<(t, j) -> (t)>
#j = affine_map<(t, j) -> (j)>
func.func @norm(%x: memref<?x512xf32>, %w: memref<512xf32>, %s: memref<?xf32>, %y: memref<?x512xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<?xf32>)
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x512xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  %scratch = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#x, #t, #j, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s, %w : memref<?x512xf32>, memref<?xf32>, memref<512xf32>) outs(%y : memref<?x512xf32>) {
  ^bb0(%v: f32, %ss: f32, %wv: f32, %o: f32):
    %eps = arith.constant 1.0e-6 : f32
    %n = arith.constant 512.0 : f32
    %mean = arith.divf %ss, %n : f32
    %d = arith.addf %mean, %eps : f32
    %inv = math.rsqrt %d : f32
    %xv = arith.mulf %v, %inv : f32
    %r = arith.mulf %xv, %wv : f32
    linalg.yield %r : f32
  }
  memref.dealloc %scratch : memref<4xf32>
  return
}

// -----

// Consumers the block may not take keep their kernel: one that writes the
// reduction's input in place (a block would overwrite rows other blocks
// still sum), one that reads the result other than by its row (here by the
// second dimension), one that reads its own output, one after an op that
// writes memory, and one whose row is longer than 64 points a thread.
// CHECK-LABEL: func.func @in_place
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK: linalg.generic
// CHECK-LABEL: func.func @by_column
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<512xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK: linalg.generic
// CHECK-LABEL: func.func @accumulates
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK: linalg.generic
// CHECK-LABEL: func.func @after_a_write
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK-LABEL: func.func @long_row
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK: linalg.generic
#x = affine_map<(t, j) -> (t, j)>
#t = affine_map<(t, j) -> (t)>
#jt = affine_map<(j, t) -> (j)>
func.func @in_place(%x: memref<?x512xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x512xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#t, #x], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<?xf32>) outs(%x : memref<?x512xf32>) {
  ^bb0(%ss: f32, %o: f32):
    linalg.yield %ss : f32
  }
  return
}
func.func @by_column(%x: memref<512x512xf32>, %s: memref<512xf32>, %y: memref<512x512xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<512x512xf32>) outs(%s : memref<512xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#x, affine_map<(t, j) -> (j)>, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<512x512xf32>, memref<512xf32>) outs(%y : memref<512x512xf32>) {
  ^bb0(%v: f32, %ss: f32, %o: f32):
    %r = arith.mulf %v, %ss : f32
    linalg.yield %r : f32
  }
  return
}
func.func @accumulates(%x: memref<?x512xf32>, %s: memref<?xf32>, %y: memref<?x512xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x512xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#t, #x], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<?xf32>) outs(%y : memref<?x512xf32>) {
  ^bb0(%ss: f32, %o: f32):
    %r = arith.addf %o, %ss : f32
    linalg.yield %r : f32
  }
  return
}
func.func @after_a_write(%x: memref<?x512xf32>, %s: memref<?xf32>, %t: memref<?xf32>, %y: memref<?x512xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x512xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  }
  memref.copy %t, %s : memref<?xf32> to memref<?xf32>
  linalg.generic {indexing_maps = [#t, #x], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<?xf32>) outs(%y : memref<?x512xf32>) {
  ^bb0(%ss: f32, %o: f32):
    linalg.yield %ss : f32
  }
  return
}
func.func @long_row(%x: memref<?x32768xf32>, %s: memref<?xf32>, %y: memref<?x32768xf32>) {
  linalg.generic {indexing_maps = [#x, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x32768xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %acc, %v : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#x, #t, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<?x32768xf32>, memref<?xf32>) outs(%y : memref<?x32768xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %r = arith.subf %v, %m : f32
    linalg.yield %r : f32
  }
  return
}
