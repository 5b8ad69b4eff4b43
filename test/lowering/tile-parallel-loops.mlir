// RUN: dsf-opt %s --dsf-tile-parallel-loops=threads=128 | FileCheck %s
// RUN: not dsf-opt %s --dsf-tile-parallel-loops=threads=0 2>&1 | FileCheck --check-prefix=BAD %s

// The 128 threads go to the innermost dimension first: a static 4 takes 4
// (no idle threads), the next dimension (dynamic: tokens) the other 32.
// CHECK-LABEL: func.func @rows
// CHECK: %[[ROWS:.*]] = arith.muli %c1, %c32 : index
// CHECK: %[[COLS:.*]] = arith.muli %c1, %c4{{.*}} : index
// CHECK: scf.parallel ({{.*}}) = (%c0, %c0) to (%arg0, %c4) step (%[[ROWS]], %[[COLS]])
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%[[ROWS]], %[[COLS]])
func.func @rows(%n: index, %out: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c4) step (%c1, %c1) {
    memref.store %z, %out[%i, %j] : memref<?x4xf32>
  }
  return
}

// A wide innermost dimension takes them all; the outer one gets blocks of 1.
// CHECK-LABEL: func.func @wide
// CHECK: %[[ROWS:.*]] = arith.muli %c1, %c1{{(_[0-9]+)?}} : index
// CHECK: %[[COLS:.*]] = arith.muli %c1, %c128 : index
// CHECK: scf.parallel ({{.*}}) = (%c0, %c0) to (%arg0, %c1024) step (%[[ROWS]], %[[COLS]])
func.func @wide(%n: index, %out: memref<?x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c1024) step (%c1, %c1) {
    memref.store %z, %out[%i, %j] : memref<?x1024xf32>
  }
  return
}
// BAD: error: dsf-tile-parallel-loops: threads must be at least 1, not 0
