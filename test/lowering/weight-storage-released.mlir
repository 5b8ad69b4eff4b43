// RUN: dsf-opt %s --split-input-file --dsf-to-linalg="weight-storage=released" | FileCheck %s
// RUN: dsf-opt %s --split-input-file --dsf-to-linalg | FileCheck %s --check-prefix=DECLARED

// weight-storage=released binds an MXFP4 expert weight as the checkpoint
// holds it: @ew1 [4, 6, 32] as its codes, i8 [4, 6, 16] (two a byte), then
// its scales @ew1.scale, i8 [4, 6, 1] (a UE8M0 byte a block of 32). @ew2's
// depth (6) is no whole block and @ew3 is NVFP4 (E4M3 scales): both stay
// bf16, widened as declared would.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[C1:[^:]*]]: tensor<4x6x16xi8>, %[[S1:[^:]*]]: tensor<4x6x1xi8>, %[[EW2:[^:]*]]: tensor<4x32x6xbf16>, %{{[^:]*}}: tensor<4x6x32xbf16>
// The first projection reads W1[e, i, d]: the byte d / 2 of its codes,
// the nibble d mod 2 (low first), times the UE8M0 scale of block d / 32.
// CHECK: linalg.generic
// CHECK: %[[BYTE:.*]] = tensor.extract %[[C1]]
// CHECK-NEXT: arith.extui %[[BYTE]] : i8 to i32
// CHECK: arith.shrui
// CHECK: tensor.extract %[[S1]]
// CHECK: arith.mulf
// The down projection's weight, bound bf16, is widened as it is read.
// CHECK: tensor.extract %[[EW2]]
// CHECK-NEXT: arith.extf %{{.*}} : bf16 to f32

// Declared (the default), every expert weight is bf16.
// DECLARED-LABEL: func.func @forward(
// DECLARED-SAME: tensor<4x6x32xbf16>, %{{[^:]*}}: tensor<4x32x6xbf16>, %{{[^:]*}}: tensor<4x6x32xbf16>
// DECLARED-NOT: xi8>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 32, num_layers = 1, hc_mult = 1} {
  dsf.weight @gate : tensor<4x32xbf16>
  dsf.weight @ew1 : tensor<4x6x32xbf16>
      {format = #dsf.quant<e2m1, scale = ue8m0, block = 32>, expert_names = "e.{e}.w1"}
  dsf.weight @ew2 : tensor<4x32x6xbf16>
      {format = #dsf.quant<e2m1, scale = ue8m0, block = 32>, expert_names = "e.{e}.w2"}
  dsf.weight @ew3 : tensor<4x6x32xbf16>
      {format = #dsf.quant<e2m1, scale = e4m3, block = 16>, expert_names = "e.{e}.w3"}
  func.func @forward(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
    %r, %c = dsf.moe.gate %x {weight = @gate, top_k = 2 : i64, routed_scale = 1.5 : f64}
        : tensor<?x32xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %m = dsf.moe.experts %x, %r, %c {w1 = @ew1, w2 = @ew2, w3 = @ew3, swiglu_limit = 1.5 : f64}
        : tensor<?x32xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x32xf32>
    return %m : tensor<?x32xf32>
  }
}

// -----

// An FP8 weight (E4M3, a UE8M0 scale a 32 x 32 block) that only projections
// read is bound as its codes, i8 in the declared shape, and its scales, one
// a block, the last block partial: @wa [40, 64] has scales [2, 2]. Its
// product decodes W[o, d] as code(W[o, d]) times the scale of block
// (o / 32, d / 32) and is marked for the GPU's products. @table is also
// read by dsf.embed (a tied head), which needs the values: it stays bf16.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[WA:[^:]*]]: tensor<40x64xi8>, %[[SA:[^:]*]]: tensor<2x2xi8>, %{{[^:]*}}: tensor<16x40xbf16>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[WA]] : tensor<?x64xf32>, tensor<40x64xi8>)
// CHECK-SAME: attrs = {dsf.packed_fp8 = array<i64: 32, 32>}
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[CODE:.*]]: i8, %{{.*}}: f32):
// CHECK-NEXT: %[[O:.*]] = linalg.index 1
// CHECK-NEXT: %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT: %[[BO:.*]] = arith.divui %[[O]], %[[C32]]
// CHECK-NEXT: %[[D:.*]] = linalg.index 2
// CHECK: %[[BD:.*]] = arith.divui %[[D]]
// CHECK-NEXT: tensor.extract %[[SA]][%[[BO]], %[[BD]]] : tensor<2x2xi8>
// CHECK: arith.extui %[[CODE]] : i8 to i32

// DECLARED-LABEL: func.func @forward(
// DECLARED-SAME: tensor<40x64xbf16>, %{{[^:]*}}: tensor<16x40xbf16>
// DECLARED-NOT: xi8>
// DECLARED-NOT: dsf.packed_fp8
dsf.model @p attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 64, num_layers = 1, hc_mult = 1} {
  dsf.weight @wa : tensor<40x64xbf16> {format = #dsf.quant<e4m3, scale = ue8m0, block = 32x32>}
  dsf.weight @table : tensor<16x40xbf16> {format = #dsf.quant<e4m3, scale = ue8m0, block = 32x32>}
  func.func @forward(%ids: tensor<?xi32>, %x: tensor<?x64xf32>) -> (tensor<?x40xf32>, tensor<?x16xf32>) {
    %a = dsf.linear %x weight(@wa) : tensor<?x64xf32> -> tensor<?x40xf32>
    %e = dsf.embed %ids weight(@table) : tensor<?xi32> -> tensor<?x40xf32>
    %h = dsf.linear %a weight(@table) : tensor<?x40xf32> -> tensor<?x16xf32>
    return %e, %h : tensor<?x40xf32>, tensor<?x16xf32>
  }
}

// -----

// V4's grouped output projection packs its FP8 weight when each group's
// rows are whole blocks of scales: @wo [64, 32] in 2 groups of 32 rows,
// scales [2, 1], read per group as [2, 1, 1] (group g's scales are row g).
// Its product decodes W[g, o, d] as code times the scale of (g, o / 32,
// d / 32) and carries the same mark. @wo16 in 2 groups of 16 rows would
// split a block of 32 between groups: it stays bf16.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[WO:[^:]*]]: tensor<64x32xi8>, %[[SO:[^:]*]]: tensor<2x1xi8>, %[[WO16:[^:]*]]: tensor<32x32xbf16>
// CHECK-DAG: %[[CODES:.*]] = tensor.expand_shape %[[WO]] {{\[\[}}0, 1], [2]] output_shape [2, 32, 32] : tensor<64x32xi8> into tensor<2x32x32xi8>
// CHECK-DAG: %[[SCALES:.*]] = tensor.expand_shape %[[SO]] {{\[\[}}0, 1], [2]] output_shape [2, 1, 1] : tensor<2x1xi8> into tensor<2x1x1xi8>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[CODES]] : tensor<?x2x32xf32>, tensor<2x32x32xi8>)
// CHECK-SAME: attrs = {dsf.packed_fp8 = array<i64: 32, 32>}
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[CODE:.*]]: i8, %{{.*}}: f32):
// CHECK-NEXT: %[[G:.*]] = linalg.index 1
// CHECK-NEXT: %[[O:.*]] = linalg.index 2
// CHECK-NEXT: %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT: %[[BO:.*]] = arith.divui %[[O]], %[[C32]]
// CHECK-NEXT: %[[D:.*]] = linalg.index 3
// CHECK: %[[BD:.*]] = arith.divui %[[D]]
// CHECK-NEXT: tensor.extract %[[SCALES]][%[[G]], %[[BO]], %[[BD]]] : tensor<2x1x1xi8>
// CHECK: arith.extui %[[CODE]] : i8 to i32
// The other group count reads bf16, widened.
// CHECK: linalg.generic
// CHECK-SAME: tensor<2x16x32xbf16>
// CHECK-NOT: dsf.packed_fp8
// CHECK: arith.extf %{{.*}} : bf16 to f32

// DECLARED-LABEL: func.func @forward(
// DECLARED-SAME: tensor<64x32xbf16>, %{{[^:]*}}: tensor<32x32xbf16>
// DECLARED-NOT: xi8>
// DECLARED-NOT: dsf.packed_fp8
dsf.model @g attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 64, num_layers = 1, hc_mult = 1} {
  dsf.weight @wo : tensor<64x32xbf16> {format = #dsf.quant<e4m3, scale = ue8m0, block = 32x32>}
  dsf.weight @wo16 : tensor<32x32xbf16> {format = #dsf.quant<e4m3, scale = ue8m0, block = 32x32>}
  func.func @forward(%o: tensor<?x4x16xf32>) -> (tensor<?x2x32xf32>, tensor<?x2x16xf32>) {
    %a = dsf.grouped_linear %o weight(@wo) {groups = 2 : i64} : tensor<?x4x16xf32> -> tensor<?x2x32xf32>
    %b = dsf.grouped_linear %o weight(@wo16) {groups = 2 : i64} : tensor<?x4x16xf32> -> tensor<?x2x16xf32>
    return %a, %b : tensor<?x2x32xf32>, tensor<?x2x16xf32>
  }
}
