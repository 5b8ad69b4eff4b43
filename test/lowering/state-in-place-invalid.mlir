// RUN: dsf-opt %s --dsf-state-in-place --split-input-file -verify-diagnostics

// A slot that came back in another buffer (the bufferization copied it):
// the caller's slot would never see the update.
func.func @batch_decode(%ids: memref<?xi32>, %pos: memref<?xi32>, %ring: memref<?x4x8xf32>, %table: memref<?x?xi32>)
    -> (memref<?x16xf32>, memref<?x4x8xf32>) attributes {dsf.batched, dsf.state = ["layers.0.window"], dsf.page_tables = [], dsf.weights = []} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %ids, %c0 : memref<?xi32>
  %logits = memref.alloc(%n) : memref<?x16xf32>
  %copy = memref.alloc(%n) : memref<?x4x8xf32>
  memref.copy %ring, %copy : memref<?x4x8xf32> to memref<?x4x8xf32>
  // expected-error @below {{returns state 'layers.0.window' in another buffer than its slot: the batched step must update it in place}}
  return %logits, %copy : memref<?x16xf32>, memref<?x4x8xf32>
}

// -----

// The attributes that say which arguments are the slots.
// expected-error @below {{is batched but lacks dsf.state, dsf.weights or dsf.page_tables}}
func.func @batch_decode(%ids: memref<?xi32>, %ring: memref<?x4x8xf32>) -> (memref<?x16xf32>, memref<?x4x8xf32>) attributes {dsf.batched} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %ids, %c0 : memref<?xi32>
  %logits = memref.alloc(%n) : memref<?x16xf32>
  return %logits, %ring : memref<?x16xf32>, memref<?x4x8xf32>
}

// -----

// A result for every slot, after the logits.
// expected-error @below {{is batched but its signature is not (tokens, state, page tables, weights) -> (logits, state)}}
func.func @batch_decode(%ids: memref<?xi32>, %ring: memref<?x4x8xf32>) -> memref<?x16xf32>
    attributes {dsf.batched, dsf.state = ["layers.0.window"], dsf.page_tables = [], dsf.weights = []} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %ids, %c0 : memref<?xi32>
  %logits = memref.alloc(%n) : memref<?x16xf32>
  return %logits : memref<?x16xf32>
}
