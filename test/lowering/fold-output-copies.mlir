// RUN: dsf-opt %s --dsf-fold-output-copies --split-input-file | FileCheck %s

// A window write as one-shot bufferization leaves it: a quantizer (its
// block's amax a loop of loads over its input) computes the new rows into a
// fresh buffer, the old rows are copied into the head of the concatenation
// and the new rows into its tail. The quantizer moves past the
// concatenation's allocation, views and the old rows' copy (which write
// only the new allocation) and writes the tail itself.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @window_write
// CHECK-SAME: (%[[X:.*]]: memref<?x128xf32>, %[[PRIOR:.*]]: memref<?x128xf32>)
// CHECK: %[[ROWS:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} outs(%[[ROWS]]
// CHECK-NOT: memref.alloc(%{{.*}}) {{.*}}: memref<?x128xf32>
// CHECK: %[[ALL:.*]] = memref.alloc
// CHECK: %[[HEAD:.*]] = memref.subview %[[ALL]][0, 0]
// CHECK: memref.copy %[[PRIOR]], %[[HEAD]]
// CHECK: %[[TAIL:.*]] = memref.subview %[[ALL]][%{{.*}}, 0]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[ROWS]] : memref<?x128xf32>) outs(%[[TAIL]] : memref<?x128xf32, strided<[128, 1], offset: ?>>)
// CHECK: scf.for
// CHECK: memref.load %[[ROWS]]
// CHECK: math.roundeven
// CHECK-NOT: memref.copy
// CHECK: return %[[ALL]]
func.func @window_write(%x: memref<?x128xf32>, %prior: memref<?x128xf32>) -> memref<?x128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x128xf32>
  %rows = memref.alloc(%n) : memref<?x128xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x128xf32>) outs(%rows : memref<?x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %t = memref.alloc(%n) : memref<?x128xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%rows : memref<?x128xf32>) outs(%t : memref<?x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = linalg.index 0 : index
    %c = linalg.index 1 : index
    %b = arith.divui %c, %c32 : index
    %lo = arith.muli %b, %c32 : index
    %hi = arith.addi %lo, %c32 : index
    %amax = scf.for %i = %lo to %hi step %c1 iter_args(%m = %zero) -> (f32) {
      %v = memref.load %rows[%r, %i] : memref<?x128xf32>
      %a = math.absf %v : f32
      %mm = arith.maximumf %m, %a : f32
      scf.yield %mm : f32
    }
    %q = arith.divf %in, %amax : f32
    %rq = math.roundeven %q : f32
    %y = arith.mulf %rq, %amax : f32
    linalg.yield %y : f32
  }
  %p = memref.dim %prior, %c0 : memref<?x128xf32>
  %total = arith.addi %p, %n : index
  %all = memref.alloc(%total) : memref<?x128xf32>
  %head = memref.subview %all[0, 0] [%p, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1]>>
  memref.copy %prior, %head : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1]>>
  %tail = memref.subview %all[%p, 0] [%n, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
  memref.copy %t, %tail : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
  return %all : memref<?x128xf32>
}

// -----

// Two writers (a fill, then a generic that accumulates into the buffer)
// move together, in their order.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @fill_then_update
// CHECK: %[[ALL:.*]] = memref.alloc
// CHECK: %[[TAIL:.*]] = memref.subview %[[ALL]]
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[TAIL]]
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[TAIL]]
// CHECK-NOT: memref.copy
// CHECK: return
func.func @fill_then_update(%x: memref<4x8xf32>) -> memref<8x8xf32> {
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%one : f32) outs(%t : memref<4x8xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  %all = memref.alloc() : memref<8x8xf32>
  %tail = memref.subview %all[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %t, %tail : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  return %all : memref<8x8xf32>
}

// -----

// An op between writes what the writer reads (the copy of the old rows
// goes into the writer's input): the writer may not move past it.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @input_overwritten
// CHECK: %[[T:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[T]]
// CHECK: memref.copy %[[T]]
func.func @input_overwritten(%x: memref<4x8xf32>, %prior: memref<4x8xf32>) -> memref<8x8xf32> {
  %rows = memref.alloc() : memref<4x8xf32>
  memref.copy %x, %rows : memref<4x8xf32> to memref<4x8xf32>
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%rows : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  }
  memref.copy %prior, %rows : memref<4x8xf32> to memref<4x8xf32>
  %all = memref.alloc() : memref<8x8xf32>
  %tail = memref.subview %all[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %t, %tail : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  return %all : memref<8x8xf32>
}

// -----

// The writer reads the buffer the target is a view of (its other half): it
// would read what it writes. Stays.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @reads_target
// CHECK: %[[T:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: memref.copy %[[T]]
func.func @reads_target(%all: memref<8x8xf32>) {
  %head = memref.subview %all[0, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1]>>
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%head : memref<4x8xf32, strided<[8, 1]>>) outs(%t : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %tail = memref.subview %all[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %t, %tail : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  return
}

// -----

// The buffer is read after the copy, or by a product (a reduction, whose
// kernels the view's layout would change), or an op between has effects
// on what no value names (a call): each copy stays.
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#w = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @opaque()
// CHECK-LABEL: func @read_later
// CHECK: memref.copy
func.func @read_later(%x: memref<4x8xf32>, %out: memref<4x8xf32>) -> memref<8x8xf32> {
  %all = memref.alloc() : memref<8x8xf32>
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %tail = memref.subview %all[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %t, %tail : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %t, %out : memref<4x8xf32> to memref<4x8xf32>
  return %all : memref<8x8xf32>
}
// CHECK-LABEL: func @product
// CHECK: memref.copy
func.func @product(%x: memref<4x16xf32>, %w: memref<8x16xf32>) -> memref<8x8xf32> {
  %all = memref.alloc() : memref<8x8xf32>
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#a, #w, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<4x16xf32>, memref<8x16xf32>) outs(%t : memref<4x8xf32>) {
  ^bb0(%in: f32, %wv: f32, %o: f32):
    %m = arith.mulf %in, %wv : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  %tail = memref.subview %all[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %t, %tail : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  return %all : memref<8x8xf32>
}
// CHECK-LABEL: func @call_between
// CHECK: memref.copy
func.func @call_between(%x: memref<4x8xf32>) -> memref<8x8xf32> {
  %all = memref.alloc() : memref<8x8xf32>
  %t = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%t : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  func.call @opaque() : () -> ()
  %tail = memref.subview %all[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %t, %tail : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  return %all : memref<8x8xf32>
}
