// RUN: dsf-opt %s --dsf-to-linalg --split-input-file -verify-diagnostics | FileCheck %s

// Functions leave the model; weights without a value become trailing arguments
// (recorded in dsf.weights), weights with one become constants; layers inline.
// CHECK-NOT: dsf.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{.*}}: tensor<?x8xf32>, %[[W:.*]]: tensor<4x8xf32>) -> tensor<?x4xf32> attributes {dsf.weights = [@w], llvm.emit_c_interface}
// CHECK: %[[NW:.*]] = arith.constant dense<2.000000e+00> : tensor<8xf32>
// CHECK: linalg.generic
// CHECK: math.rsqrt
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[W]] : tensor<?x8xf32>, tensor<4x8xf32>)
// CHECK: return
// CHECK-NOT: dsf.rms_norm
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @w : tensor<4x8xf32>
  dsf.weight @nw : tensor<8xf32> {value = dense<2.0> : tensor<8xf32>}
  dsf.weight @unused : tensor<3xf32>
  func.func @forward(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
    %n = dsf.rms_norm %x weight(@nw) {eps = 1.0e-6 : f64} : tensor<?x8xf32>
    %y = dsf.linear %n weight(@w) : tensor<?x8xf32> -> tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}

// -----

// Sink attention over the window and selected entries is a call of one
// helper per shape (dsf.attention, its linalg the body); window-only
// attention has its own (k = 0); attention over every visible entry (no
// selection) stays inline.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[SEL:.*]] = call @dsf_topk_k2_from256
// CHECK: call @dsf_attention_h1_d8_w4_k2_s3f800000(%{{.*}}, %{{.*}}, %{{.*}}, %[[SEL]], %{{.*}}) : (tensor<?x1x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x2xi32>, tensor<1xf32>) -> tensor<?x1x8xf32>
// CHECK: call @dsf_attention_h1_d8_w4_k0_s3f000000(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x1x8xf32>, tensor<?x8xf32>, tensor<1xf32>) -> tensor<?x1x8xf32>
// CHECK-NOT: call @dsf_attention
// CHECK: math.exp
// CHECK: return
// CHECK: func.func private @dsf_attention_h1_d8_w4_k0_s3f000000(%{{.*}}: tensor<?x1x8xf32>, %{{.*}}: tensor<?x8xf32>, %{{.*}}: tensor<1xf32>) -> tensor<?x1x8xf32> attributes {dsf.attention = {heads = 1 : i64, k = 0 : i64, scale = 5.000000e-01 : f32, width = 8 : i64, window = 4 : i64}}
// CHECK: math.exp
// CHECK: func.func private @dsf_attention_h1_d8_w4_k2_s3f800000(%{{.*}}: tensor<?x1x8xf32>, %{{.*}}: tensor<?x8xf32>, %[[CACHE:.*]]: tensor<?x8xf32>, %[[SEL:.*]]: tensor<?x2xi32>, %{{.*}}: tensor<1xf32>) -> tensor<?x1x8xf32> attributes {dsf.attention = {heads = 1 : i64, k = 2 : i64, scale = 1.000000e+00 : f32, width = 8 : i64, window = 4 : i64}}
// Over an empty cache (every column -1) the selection has no columns: its
// -1 columns would read entry 0, which does not exist.
// CHECK: %[[ENTRIES:.*]] = tensor.dim %[[CACHE]], %c0
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %[[ENTRIES]], %c0
// CHECK: %[[COLUMNS:.*]] = arith.select %[[EMPTY]], %c0{{.*}}, %c2 : index
// CHECK: tensor.extract_slice %[[SEL]][0, 0] [%{{.*}}, %[[COLUMNS]]] [1, 1] : tensor<?x2xi32> to tensor<?x?xi32>
// CHECK: math.exp
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%a: tensor<?x8xf32>) -> (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>) {
    %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
    %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
    %w = dsf.window.write %a : tensor<?x8xf32> -> !win
    %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
    %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv2
    %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik2
    %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik2 -> !t2
    %o1 = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
    %o2 = dsf.attention %q, %w sink(@sink) {scale = 0.5 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
    %o3 = dsf.attention %q, %w, %c sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2 -> tensor<?x1x8xf32>
    return %o1, %o2, %o3 : tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>
  }
}

// -----

// RoPE on the last `dims` channels: two strided slices of the input (its
// even and its odd rope channels, from channel width - dims) updated by one
// generic a pair an iteration (one cos and one sin of the pair's angle;
// the inverse negates the angle), then inserted back where they came from:
// the nope channels are not touched.
// CHECK-LABEL: func.func @rope(
// CHECK: %[[FREQ:.*]] = arith.constant dense<{{.*}}> : tensor<2xf32>
// CHECK: %[[EVEN:.*]] = tensor.extract_slice %[[Q:.*]][0, 0, 4] [%{{.*}}, 2, 2] [1, 1, 2] : tensor<?x2x8xf32> to tensor<?x2x2xf32>
// CHECK: %[[ODD:.*]] = tensor.extract_slice %[[Q]][0, 0, 5] [%{{.*}}, 2, 2] [1, 1, 2] : tensor<?x2x8xf32> to tensor<?x2x2xf32>
// CHECK: %[[PAIRS:.*]]:2 = linalg.generic {{.*}} ins(%{{.*}} : tensor<?xi32>) outs(%[[EVEN]], %[[ODD]] : tensor<?x2x2xf32>, tensor<?x2x2xf32>)
// CHECK: ^bb0(%[[POS:.*]]: i32, %[[E:.*]]: f32, %[[O:.*]]: f32):
// CHECK: %[[I:.*]] = linalg.index 2 : index
// CHECK: tensor.extract %[[FREQ]][%[[I]]]
// CHECK-NOT: arith.negf
// CHECK: %[[COS:.*]] = math.cos
// CHECK: %[[SIN:.*]] = math.sin
// CHECK: %[[EC:.*]] = arith.mulf %[[E]], %[[COS]]
// CHECK: %[[OS:.*]] = arith.mulf %[[O]], %[[SIN]]
// CHECK: %[[EO:.*]] = arith.subf %[[EC]], %[[OS]]
// CHECK: %[[OC:.*]] = arith.mulf %[[O]], %[[COS]]
// CHECK: %[[ES:.*]] = arith.mulf %[[E]], %[[SIN]]
// CHECK: %[[OO:.*]] = arith.addf %[[OC]], %[[ES]]
// CHECK: linalg.yield %[[EO]], %[[OO]]
// CHECK: %[[HALF:.*]] = tensor.insert_slice %[[PAIRS]]#0 into %[[Q]][0, 0, 4] [%{{.*}}, 2, 2] [1, 1, 2]
// CHECK: tensor.insert_slice %[[PAIRS]]#1 into %[[HALF]][0, 0, 5] [%{{.*}}, 2, 2] [1, 1, 2]
// CHECK: arith.negf
// CHECK: math.cos
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  func.func @rope(%q: tensor<?x2x8xf32>, %pos: tensor<?xi32>) -> tensor<?x2x8xf32> {
    %r = dsf.rope %q, %pos {rope = #dsf.rope<theta = 1.0e4, dims = 4>} : tensor<?x2x8xf32>, tensor<?xi32>
    %back = dsf.rope %r, %pos {inverse, rope = #dsf.rope<theta = 1.0e4, dims = 4>} : tensor<?x2x8xf32>, tensor<?xi32>
    return %back : tensor<?x2x8xf32>
  }
}
