// RUN: dsf-opt %s --dsf-tile-parallel-loops=threads=128 | FileCheck %s
// RUN: not dsf-opt %s --dsf-tile-parallel-loops=threads=0 2>&1 | FileCheck --check-prefix=BAD %s

// The 128 threads go to the innermost dimension first: a static 4 takes 4
// (no idle threads), the next dimension (dynamic: tokens) the other 32.
// The blocks' outer dimension is dynamic, so it could pass CUDA's 65,535
// blocks on gridDim.y: the block dimensions become one (for gridDim.x),
// ceil(n / 32) x ceil(4 / 4) blocks, the innermost fastest.
// CHECK-LABEL: func.func @rows
// CHECK: %[[ROWS:.*]] = arith.muli %c1, %c32 : index
// CHECK: %[[COLS:.*]] = arith.muli %c1, %c4{{.*}} : index
// CHECK: %[[ROWBLOCKS:.*]] = affine.apply #{{.*}}()[%arg0, %[[ROWS]]]
// CHECK: %[[COLBLOCKS:.*]] = affine.apply #{{.*}}()[%[[COLS]]]
// CHECK: %[[ONE:.*]] = arith.muli %{{.*}}, %[[ROWBLOCKS]] : index
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[ONE]], %[[COLBLOCKS]] : index
// CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[BLOCKS]]) step (%{{.*}})
// CHECK: %[[COLBLOCK:.*]] = arith.remsi %[[B]], %[[COLBLOCKS]] : index
// CHECK: %[[ROWBLOCK:.*]] = arith.divsi %[[B]], %[[COLBLOCKS]] : index
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
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}})
// CHECK: arith.remsi
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%[[ROWS]], %[[COLS]])
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

// Static outer dimensions within 65,535 blocks keep their grid dimensions:
// 512 heads x 1024 rows in blocks of 1 x 128.
// CHECK-LABEL: func.func @static_rows
// CHECK: scf.parallel ({{.*}}) = (%c0, %c0) to (%c512, %c1024) step (%{{.*}}, %{{.*}})
// CHECK-NOT: arith.remsi
// CHECK: return
func.func @static_rows(%out: memref<512x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c1024) step (%c1, %c1) {
    memref.store %z, %out[%i, %j] : memref<512x1024xf32>
  }
  return
}
// BAD: error: dsf-tile-parallel-loops: threads must be at least 1, not 0
