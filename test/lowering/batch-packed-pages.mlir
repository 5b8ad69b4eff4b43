// RUN: dsf-opt %s --dsf-to-linalg --canonicalize | FileCheck %s
// RUN: dsf-opt %s --dsf-to-linalg="packed-pages=false" --canonicalize | FileCheck --check-prefix=F32 %s

// A batched entry point's cache of a packed format (here NVFP4: E2M1
// elements, an E4M3 scale per 16) keeps its pages packed: an entry of 32
// channels is 16 code bytes and 2 scale bytes, [pages, 16, 18] i8 (f32
// pages: [pages, 16, 32], 128 bytes an entry). The quantized rows are packed
// as they are rounded, scattered into the pages as bytes, and decoded where
// the attention reads them.
!win = !dsf.window<size = 4, width = 32, #dsf.quant<f32>>
!kv = !dsf.cache<kv, ratio = 4, width = 32, #dsf.quant<e2m1, scale = e4m3, block = 16>>
!q = !dsf.qtensor<?x32, #dsf.quant<e2m1, scale = e4m3, block = 16>>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 32, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  dsf.weight @wkv : tensor<32x32xf32>
  dsf.weight @wg : tensor<32x32xf32>
  dsf.weight @ape : tensor<4x32xf32>
  dsf.weight @n : tensor<32xf32>
  func.func @batch_decode(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %q: tensor<?x2x32xf32>, %x: tensor<?x32xf32>, %prior: !win, %carry: tensor<?x32xf32>, %cache: !kv)
      -> (tensor<?x2x32xf32>, !win, tensor<?x32xf32>, !kv) attributes {dsf.batched, dsf.state = ["layers.0.window", "layers.0.compressor.carry", "layers.0.kv"]} {
    %o:4 = dsf.layer 0(%q, %x, %pos, %prior, %carry, %cache) {attention = #dsf.attention<hca>, ratio = 4 : i64} : (tensor<?x2x32xf32>, tensor<?x32xf32>, tensor<?xi32>, !win, tensor<?x32xf32>, !kv) -> (tensor<?x2x32xf32>, !win, tensor<?x32xf32>, !kv) {
    ^bb0(%a: tensor<?x2x32xf32>, %r: tensor<?x32xf32>, %p: tensor<?xi32>, %pw: !win, %c: tensor<?x32xf32>, %pc: !kv):
      %w = dsf.window.write %r after %pw : !win : tensor<?x32xf32> -> !win
      %kept = dsf.window.retain %w : !win
      %lat, %open = dsf.compress %r carry(%c : tensor<?x32xf32>) {kind = #dsf.compressor<pool>, ratio = 4 : i64, wkv = @wkv, wgate = @wg, ape = @ape, norm = @n, eps = 1.0e-6 : f64} : tensor<?x32xf32> -> tensor<?x32xf32>, tensor<?x32xf32>
      %packed = dsf.quantize %lat : tensor<?x32xf32> -> !q
      %kv = dsf.cache.write %packed after %pc : !kv : !q -> !kv
      %y = dsf.attention %a, %w, %kv at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !win, !kv -> tensor<?x2x32xf32>
      dsf.yield %y, %kept, %open, %kv : tensor<?x2x32xf32>, !win, tensor<?x32xf32>, !kv
    }
    return %o#0, %o#1, %o#2, %o#3 : tensor<?x2x32xf32>, !win, tensor<?x32xf32>, !kv
  }
}

// CHECK-LABEL: func.func private @batch_decode_layer0(
// CHECK-SAME: %[[POOL:[a-z0-9]+]]: tensor<?x16x18xi8>, %[[TABLE:[a-z0-9]+]]: tensor<?x?xi32>
// The codes: byte j from elements 2j and 2j + 1 (low nibble first) with
// their block's scale; then the scale bytes; side by side in a row.
// The row's bytes are one generic: a code byte (two E2M1 nibbles) or a
// scale byte, each from its block's amax, a loop over the block's channels.
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x18xi8>)
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[IS_CODE:.*]] = arith.cmpi ult, %[[J]], %c16 : index
// CHECK: scf.if %[[IS_CODE]] -> (i32) {
// CHECK: scf.for
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: arith.shli %{{.*}}, %c4_i32
// CHECK: } else {
// CHECK: scf.for
// CHECK: math.absf
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK-NOT: tensor.insert_slice
// CHECK: %[[KV:.*]] = scf.forall {{.*}} shared_outs(%[[POUT:.*]] = %[[POOL]]) -> (tensor<?x16x18xi8>)
// CHECK: tensor.extract_slice %[[ROWS]]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[POUT]]
// The attention decodes each channel it reads: the nibble of channel c
// (byte c div 2, shifted by 4 (c mod 2)) and the scale byte 16 + c div 16.
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[KV]] {{\[}}[0, 1], [2]] : tensor<?x16x18xi8> into tensor<?x18xi8>
// CHECK: %[[CODE:.*]] = tensor.extract %[[FLAT]]
// CHECK: arith.extui %[[CODE]] : i8 to i32
// CHECK: arith.shrui
// CHECK: %[[SCALE:.*]] = tensor.extract %[[FLAT]]
// CHECK: arith.extui %[[SCALE]] : i8 to i32
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[KV]] :
// CHECK-LABEL: func.func @batch_decode(
// CHECK-SAME: tensor<?x16x18xi8>, %{{.*}}: tensor<?x?xi32>

// F32-LABEL: func.func private @batch_decode_layer0(
// F32-SAME: tensor<?x16x32xf32>, %{{.*}}: tensor<?x?xi32>
// F32-NOT: xi8>
// F32-LABEL: func.func @batch_decode(
