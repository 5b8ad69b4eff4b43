// RUN: dsf-opt %s --dsf-state-in-place | FileCheck %s

// After bufferization a batched step returns the slots it updated in place:
// the pass drops them (through the casts that only forget a shape), so the
// caller's buffers are the state; an unbatched entry point is left alone.
// CHECK-LABEL: func.func @batch_decode(%arg0: memref<?xi32>, %arg1: memref<?xi32>, %arg2: memref<?x4x8xf32>, %arg3: memref<?x2x8xf32>, %arg4: memref<?x?xi32>, %arg5: memref<8x8xf32>) -> memref<?x16xf32>
// CHECK: return %{{.*}} : memref<?x16xf32>
func.func @batch_decode(%ids: memref<?xi32>, %pos: memref<?xi32>, %ring: memref<?x4x8xf32>, %pages: memref<?x2x8xf32>,
                        %table: memref<?x?xi32>, %w: memref<8x8xf32>) -> (memref<?x16xf32>, memref<?x4x8xf32>, memref<?x2x8xf32>)
    attributes {dsf.batched, dsf.state = ["layers.0.window", "layers.0.kv"], dsf.page_tables = [2], dsf.weights = [@w]} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %ids, %c0 : memref<?xi32>
  %logits = memref.alloc(%n) : memref<?x16xf32>
  %pagesSeen = memref.cast %pages : memref<?x2x8xf32> to memref<?x2x8xf32>
  return %logits, %ring, %pagesSeen : memref<?x16xf32>, memref<?x4x8xf32>, memref<?x2x8xf32>
}

// CHECK-LABEL: func.func @decode(
// CHECK-SAME: -> (memref<?x16xf32>, memref<?x8xf32>)
func.func @decode(%ids: memref<?xi32>, %rows: memref<?x8xf32>) -> (memref<?x16xf32>, memref<?x8xf32>)
    attributes {dsf.state = ["layers.0.window"], dsf.weights = []} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %ids, %c0 : memref<?xi32>
  %logits = memref.alloc(%n) : memref<?x16xf32>
  return %logits, %rows : memref<?x16xf32>, memref<?x8xf32>
}
