// RUN: dsf-opt %s --dsf-to-linalg --canonicalize | FileCheck %s
// RUN: dsf-opt %s --dsf-to-linalg="page-tokens=8" --canonicalize | FileCheck --check-prefix=PAGES %s

// A batched entry point (dsf.batched, dsf-batch-decode) keeps each
// sequence's state in slots it updates in place: its window a ring of W
// rows ([slots, 4, 8]), its compressor's carry a ring of the group's input
// rows ([slots, 4, 8]: ratio 4), its cache pages of max(1, 64 / 4) = 16
// entries ([pages, 16, 8]) named by a page table per ratio, an input after
// the state ([tokens, columns] i32, dsf.page_tables its ratios).
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv = !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @wg : tensor<8x8xf32>
  dsf.weight @ape : tensor<4x8xf32>
  dsf.weight @n : tensor<8xf32>
  func.func @batch_decode(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %q: tensor<?x2x8xf32>, %x: tensor<?x8xf32>, %prior: !win, %carry: tensor<?x8xf32>, %cache: !kv)
      -> (tensor<?x2x8xf32>, !win, tensor<?x8xf32>, !kv) attributes {dsf.batched, dsf.state = ["layers.0.window", "layers.0.compressor.carry", "layers.0.kv"]} {
    %o:4 = dsf.layer 0(%q, %x, %pos, %prior, %carry, %cache) {attention = #dsf.attention<hca>, ratio = 4 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?xi32>, !win, tensor<?x8xf32>, !kv) -> (tensor<?x2x8xf32>, !win, tensor<?x8xf32>, !kv) {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %pw: !win, %c: tensor<?x8xf32>, %pc: !kv):
      %w = dsf.window.write %r after %pw : !win : tensor<?x8xf32> -> !win
      %kept = dsf.window.retain %w : !win
      %lat, %open = dsf.compress %r carry(%c : tensor<?x8xf32>) {kind = #dsf.compressor<pool>, ratio = 4 : i64, wkv = @wkv, wgate = @wg, ape = @ape, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
      %kv = dsf.cache.write %lat after %pc : !kv : tensor<?x8xf32> -> !kv
      %y = dsf.attention %a, %w, %kv at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !win, !kv -> tensor<?x2x8xf32>
      dsf.yield %y, %kept, %open, %kv : tensor<?x2x8xf32>, !win, tensor<?x8xf32>, !kv
    }
    return %o#0, %o#1, %o#2, %o#3 : tensor<?x2x8xf32>, !win, tensor<?x8xf32>, !kv
  }
}

// CHECK-LABEL: func.func private @batch_decode_layer0(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x2x8xf32>, %[[X:[a-z0-9]+]]: tensor<?x8xf32>, %[[POS:[a-z0-9]+]]: tensor<?xi32>, %[[RING:[a-z0-9]+]]: tensor<?x4x8xf32>, %[[CARRY:[a-z0-9]+]]: tensor<?x4x8xf32>, %[[POOL:[a-z0-9]+]]: tensor<?x16x8xf32>, %[[TABLE:[a-z0-9]+]]: tensor<?x?xi32>
// The token's row into its ring at its position mod W: one element a
// thread of an scf.forall.
// CHECK: %[[WIN:.*]] = scf.forall (%[[T:.*]], %[[C:.*]]) in (%{{.*}}, 8) shared_outs(%[[OUT:.*]] = %[[RING]])
// CHECK: %[[P:.*]] = tensor.extract %[[POS]][%[[T]]]
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[PI]], %c4
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[T]], %[[SLOT]], %[[C]]] [1, 1, 1]
// The compressor's input row into its ring, then the projections over every
// ring row and the pooling over the slots of the token's group.
// CHECK: %[[GROUP:.*]] = scf.forall {{.*}} shared_outs(%{{.*}} = %[[CARRY]])
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[GROUP]] {{\[}}[0, 1], [2]]
// CHECK: linalg.generic {{.*}} ins(%[[ROWS]], %{{.*}} : tensor<?x8xf32>, tensor<8x8xf32>)
// The entry a token completes ((p + 1) mod 4 == 0) into page table[t, j div 16], row j mod 16; the others write nothing.
// CHECK: %[[KV:.*]] = scf.forall {{.*}} shared_outs(%[[POUT:.*]] = %[[POOL]])
// CHECK: %[[COMPLETES:.*]] = arith.cmpi eq
// CHECK: tensor.extract %[[TABLE]]
// CHECK: %[[SIZE:.*]] = arith.select %[[COMPLETES]], %c1, %c0
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[POUT]][%{{.*}}, %{{.*}}, %{{.*}}] [%[[SIZE]], 1, 1]
// Attention over every visible entry: the entry axis is the table's
// columns x 16, each entry's row read through the table.
// CHECK: %[[FLATPAGES:.*]] = tensor.collapse_shape %[[KV]]
// CHECK: %[[COLUMNS:.*]] = tensor.dim %[[TABLE]], %c1
// CHECK: arith.muli %[[COLUMNS]], %c16
// CHECK: tensor.extract %[[TABLE]]
// CHECK: tensor.extract %[[FLATPAGES]]
// The slots are returned as updated, each once.
// CHECK: return %{{.*}}, %[[WIN]], %[[GROUP]], %[[KV]] :
// CHECK-LABEL: func.func @batch_decode(
// CHECK-SAME: %{{.*}}: tensor<?x4x8xf32>, %{{.*}}: tensor<?x4x8xf32>, %{{.*}}: tensor<?x16x8xf32>, %{{.*}}: tensor<?x?xi32>
// CHECK-SAME: dsf.page_tables = [4]

// Pages of 8 tokens hold max(1, 8 / 4) = 2 entries.
// PAGES: func.func @batch_decode({{.*}}tensor<?x2x8xf32>, %{{.*}}: tensor<?x?xi32>
