// RUN: dsf-opt %s --dsf-fold-round-trip-copies --split-input-file | FileCheck %s

// RoPE's two outputs as one-shot bufferization leaves them: the even
// channels of a projection's result updated in place, the odd ones staged
// through a fresh buffer. The generic then updates the odd channels in
// place too (it reads the positions, an argument, and a constant table).
memref.global "private" constant @freqs : memref<16xf32> = dense<1.0>
#pos = affine_map<(d0, d1, d2) -> (d0)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func @rope_pairs
// CHECK-SAME: (%[[POS:.*]]: memref<?xi32>
// CHECK: %[[X:.*]] = memref.alloc
// CHECK: %[[E:.*]] = memref.expand_shape %[[X]]
// CHECK: %[[EVEN:.*]] = memref.subview %[[E]][0, 0, 96]
// CHECK: %[[ODD:.*]] = memref.subview %[[E]][0, 0, 97]
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: linalg.generic {{.*}} ins(%[[POS]] : memref<?xi32>) outs(%[[EVEN]], %[[ODD]] : memref<?x4x16xf32, strided<[512, 128, 2], offset: 96>>, memref<?x4x16xf32, strided<[512, 128, 2], offset: 97>>)
// CHECK: math.cos
// CHECK-NOT: memref.copy
// CHECK: return
func.func @rope_pairs(%pos: memref<?xi32>) -> memref<?x512xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %pos, %c0 : memref<?xi32>
  %x = memref.alloc(%n) : memref<?x512xf32>
  %freq = memref.get_global @freqs : memref<16xf32>
  %e = memref.expand_shape %x [[0], [1, 2]] output_shape [%n, 4, 128] : memref<?x512xf32> into memref<?x4x128xf32>
  %even = memref.subview %e[0, 0, 96] [%n, 4, 16] [1, 1, 2] : memref<?x4x128xf32> to memref<?x4x16xf32, strided<[512, 128, 2], offset: 96>>
  %odd = memref.subview %e[0, 0, 97] [%n, 4, 16] [1, 1, 2] : memref<?x4x128xf32> to memref<?x4x16xf32, strided<[512, 128, 2], offset: 97>>
  %t = memref.alloc(%n) : memref<?x4x16xf32>
  memref.copy %odd, %t : memref<?x4x16xf32, strided<[512, 128, 2], offset: 97>> to memref<?x4x16xf32>
  linalg.generic {indexing_maps = [#pos, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%pos : memref<?xi32>) outs(%even, %t : memref<?x4x16xf32, strided<[512, 128, 2], offset: 96>>, memref<?x4x16xf32>) {
  ^bb0(%p: i32, %a: f32, %b: f32):
    %k = linalg.index 2 : index
    %f = memref.load %freq[%k] : memref<16xf32>
    %pf = arith.sitofp %p : i32 to f32
    %angle = arith.mulf %pf, %f : f32
    %c = math.cos %angle : f32
    %s = math.sin %angle : f32
    %ac = arith.mulf %a, %c : f32
    %bs = arith.mulf %b, %s : f32
    %evenOut = arith.subf %ac, %bs : f32
    %bc = arith.mulf %b, %c : f32
    %as = arith.mulf %a, %s : f32
    %oddOut = arith.addf %bc, %as : f32
    linalg.yield %evenOut, %oddOut : f32, f32
  }
  memref.copy %t, %odd : memref<?x4x16xf32> to memref<?x4x16xf32, strided<[512, 128, 2], offset: 97>>
  return %x : memref<?x512xf32>
}

// -----

// Views two elements apart with a stride of 2 share elements: the staged
// copy stays.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @views_overlap
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK: memref.copy
func.func @views_overlap(%x: memref<4x64xf32>) {
  %a = memref.subview %x[0, 0] [4, 16] [1, 2] : memref<4x64xf32> to memref<4x16xf32, strided<[64, 2]>>
  %b = memref.subview %x[0, 2] [4, 16] [1, 2] : memref<4x64xf32> to memref<4x16xf32, strided<[64, 2], offset: 2>>
  %t = memref.alloc() : memref<4x16xf32>
  memref.copy %b, %t : memref<4x16xf32, strided<[64, 2], offset: 2>> to memref<4x16xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      outs(%a, %t : memref<4x16xf32, strided<[64, 2]>>, memref<4x16xf32>) {
  ^bb0(%u: f32, %v: f32):
    linalg.yield %v, %u : f32, f32
  }
  memref.copy %t, %b : memref<4x16xf32> to memref<4x16xf32, strided<[64, 2], offset: 2>>
  return
}

// -----

// The staged buffer read through a transposed map: an element of it is
// read by another iteration than the one that writes it. The copy stays.
#id3 = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func @staged_read_elsewhere
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK: memref.copy
func.func @staged_read_elsewhere(%x: memref<8x8xf32>, %y: memref<8x8xf32>) {
  %t = memref.alloc() : memref<8x8xf32>
  memref.copy %x, %t : memref<8x8xf32> to memref<8x8xf32>
  linalg.generic {indexing_maps = [#tr, #id3], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%u: f32, %v: f32):
    linalg.yield %u : f32
  }
  memref.copy %t, %x : memref<8x8xf32> to memref<8x8xf32>
  return
}

// -----

// An argument the ops write may alias the other argument that was staged
// (nothing says they are apart): the copies stay.
#id4 = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @arguments_may_alias
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK: memref.copy
func.func @arguments_may_alias(%x: memref<16xf32>, %y: memref<16xf32>) {
  %t = memref.alloc() : memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel"]}
      outs(%y, %t : memref<16xf32>, memref<16xf32>) {
  ^bb0(%u: f32, %v: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s, %s : f32, f32
  }
  memref.copy %t, %x : memref<16xf32> to memref<16xf32>
  return
}

// -----

// The staged buffer is read after the copy back: it stays.
#id5 = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @staged_used_after
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK: memref.copy
// CHECK: memref.load
func.func @staged_used_after(%x: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#id5], iterator_types = ["parallel"]} outs(%t : memref<16xf32>) {
  ^bb0(%v: f32):
    %s = arith.addf %v, %v : f32
    linalg.yield %s : f32
  }
  memref.copy %t, %x : memref<16xf32> to memref<16xf32>
  %r = memref.load %t[%c0] : memref<16xf32>
  return %r : f32
}

// -----

// A fresh buffer apart from the argument staged: the ops between may write
// it, and the argument is updated in place.
#id6 = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @fresh_buffer_apart
// CHECK-SAME: (%[[X:.*]]: memref<16xf32>)
// CHECK: %[[Y:.*]] = memref.alloc() : memref<16xf32>
// CHECK-NOT: memref.copy
// CHECK: linalg.generic {{.*}} outs(%[[Y]], %[[X]] : memref<16xf32>, memref<16xf32>)
// CHECK-NOT: memref.copy
func.func @fresh_buffer_apart(%x: memref<16xf32>) -> memref<16xf32> {
  %y = memref.alloc() : memref<16xf32>
  %t = memref.alloc() : memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#id6, #id6], iterator_types = ["parallel"]}
      outs(%y, %t : memref<16xf32>, memref<16xf32>) {
  ^bb0(%u: f32, %v: f32):
    %s = arith.addf %v, %v : f32
    linalg.yield %v, %s : f32, f32
  }
  memref.copy %t, %x : memref<16xf32> to memref<16xf32>
  return %y : memref<16xf32>
}

// -----

// The buffer staged is a call's result that the callee allocates (the
// attention functions' outputs): apart from the caller's arguments, it is
// updated in place. A callee that returns its argument is no allocation.
#id7 = affine_map<(d0) -> (d0)>
func.func private @fresh(%n: index) -> memref<?xf32> {
  %a = memref.alloc(%n) : memref<?xf32>
  return %a : memref<?xf32>
}
func.func private @passes_through(%x: memref<?xf32>) -> memref<?xf32> {
  return %x : memref<?xf32>
}
// CHECK-LABEL: func @call_results
// CHECK: %[[R:.*]] = call @fresh
// CHECK-NOT: memref.copy
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<?xf32>) outs(%[[R]] : memref<?xf32>)
// CHECK: call @passes_through
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK: memref.copy
func.func @call_results(%x: memref<?xf32>, %n: index) -> (memref<?xf32>, memref<?xf32>) {
  %r = call @fresh(%n) : (index) -> memref<?xf32>
  %t = memref.alloc(%n) : memref<?xf32>
  memref.copy %r, %t : memref<?xf32> to memref<?xf32>
  linalg.generic {indexing_maps = [#id7, #id7], iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%t : memref<?xf32>) {
  ^bb0(%u: f32, %v: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  }
  memref.copy %t, %r : memref<?xf32> to memref<?xf32>
  %q = call @passes_through(%x) : (memref<?xf32>) -> memref<?xf32>
  %t2 = memref.alloc(%n) : memref<?xf32>
  memref.copy %q, %t2 : memref<?xf32> to memref<?xf32>
  linalg.generic {indexing_maps = [#id7, #id7], iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%t2 : memref<?xf32>) {
  ^bb0(%u: f32, %v: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  }
  memref.copy %t2, %q : memref<?xf32> to memref<?xf32>
  return %r, %q : memref<?xf32>, memref<?xf32>
}

// -----

// A buffer that may be the allocation staged (a call that returns what it
// was given) is written between the copies: the copies stay.
#id8 = affine_map<(d0) -> (d0)>
func.func private @returns_argument(%x: memref<16xf32>) -> memref<16xf32> {
  return %x : memref<16xf32>
}
// CHECK-LABEL: func @may_be_the_allocation
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK: memref.copy
func.func @may_be_the_allocation() -> memref<16xf32> {
  %a = memref.alloc() : memref<16xf32>
  %q = call @returns_argument(%a) : (memref<16xf32>) -> memref<16xf32>
  %t = memref.alloc() : memref<16xf32>
  memref.copy %a, %t : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#id8, #id8], iterator_types = ["parallel"]}
      outs(%q, %t : memref<16xf32>, memref<16xf32>) {
  ^bb0(%u: f32, %v: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s, %s : f32, f32
  }
  memref.copy %t, %a : memref<16xf32> to memref<16xf32>
  return %a : memref<16xf32>
}

// -----

// The body's table read inside a loop (an scf.for: its effects are its
// body's, a load of a constant table): the staged copy folds as it does
// for a load outside a loop.
memref.global "private" constant @weights : memref<4xf32> = dense<1.0>
#idl = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @table_read_in_a_loop
// CHECK-SAME: (%[[X:.*]]: memref<16xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: linalg.generic {{.*}} outs(%[[X]] : memref<16xf32>)
// CHECK: scf.for
// CHECK: memref.load
// CHECK-NOT: memref.copy
// CHECK: return
func.func @table_read_in_a_loop(%x: memref<16xf32>) {
  %w = memref.get_global @weights : memref<4xf32>
  %t = memref.alloc() : memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#idl], iterator_types = ["parallel"]} outs(%t : memref<16xf32>) {
  ^bb0(%v: f32):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %v) -> (f32) {
      %e = memref.load %w[%i] : memref<4xf32>
      %next = arith.addf %acc, %e : f32
      scf.yield %next : f32
    }
    linalg.yield %sum : f32
  }
  memref.copy %t, %x : memref<16xf32> to memref<16xf32>
  return
}

// -----

// A loop in the body that stores (to a buffer of its own): a memory effect
// other than a load, so the copies stay.
#ids = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @store_in_a_loop
// CHECK: memref.copy
// CHECK: linalg.generic
// CHECK: scf.for
// CHECK: memref.store
// CHECK: memref.copy
func.func @store_in_a_loop(%x: memref<16xf32>, %scratch: memref<4xf32>) {
  %t = memref.alloc() : memref<16xf32>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  linalg.generic {indexing_maps = [#ids], iterator_types = ["parallel"]} outs(%t : memref<16xf32>) {
  ^bb0(%v: f32):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %i = %c0 to %c4 step %c1 {
      memref.store %v, %scratch[%i] : memref<4xf32>
    }
    linalg.yield %v : f32
  }
  memref.copy %t, %x : memref<16xf32> to memref<16xf32>
  return
}
