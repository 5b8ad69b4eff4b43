// RUN: dsf-opt %s | dsf-opt | FileCheck %s
// RUN: dsf-opt %s --mlir-print-op-generic | dsf-opt | FileCheck %s
//
// Every op, type and attribute in its custom form, printed back the same way
// (directly, and through the generic form). The model below shares a ratio-2
// cache and selection (layers 0 -> 1) and a ratio-1 pool (layers 2 -> 3).

// CHECK-DAG: #mxfp4 = #dsf.quant<e2m1, scale = ue8m0, block = 32>
// CHECK-DAG: #e4m3_ue8m0_128x128 = #dsf.quant<e4m3, scale = ue8m0, block = 128x128>
// CHECK-DAG: #e4m3_ue8m0_4_tail4 = #dsf.quant<e4m3, scale = ue8m0, block = 4, bf16_tail = 4, align = 8>
// CHECK-DAG: #rope_yarn = #dsf.rope<theta = 1.600000e+05 : f64, dims = 4, yarn_factor = 1.600000e+01 : f64, original_max = 65536, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>
// CHECK-DAG: !kv_r2 = !dsf.cache<kv, ratio = 2, width = 8, #f32>
// CHECK-DAG: !window = !dsf.window<size = 4, width = 8, #f32>

// CHECK-LABEL: dsf.model @m attributes {family = "deepseek_v41"
// CHECK: dsf.layer 0(%{{.*}}) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64}
// CHECK: dsf.compress %{{.*}} {eps = {{.*}}, kind = #dsf.compressor<pair>, norm = @norm, ratio = 2 : i64, wgate = @wkv, wkv = @wkv}
// CHECK: dsf.cache.write %{{.*}} : tensor<?x8xf32> -> !kv_r2
// CHECK: dsf.index_topk %{{.*}}, %{{.*}}, %{{.*}} {k = 2 : i64, scale = 1.000000e+00 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !index_keys_r2 -> !dsf.topk<k = 2, ratio = 2>
// CHECK: dsf.attention %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}] sink(@sink) {scale = 1.000000e+00 : f64} : tensor<?x1x8xf32>, !window, !kv_r2, !dsf.topk<k = 2, ratio = 2> -> tensor<?x1x8xf32>
// CHECK: dsf.layer 1(%{{.*}}, %{{.*}}#1, %{{.*}}#3) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64}
// CHECK: dsf.index_topk {{.*}} -> !dsf.topk<k = 2, ratio = 1>, !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
// CHECK: dsf.layer 3({{.*}}) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reindex>, ratio = 1 : i64}
// CHECK: dsf.index_topk %{{.*}}, %{{.*}}, %{{.*}} within %{{.*}} {k = 2 : i64
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 4, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0, %c0, %k0, %t0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv2, !ik2, !t2) {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv2
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik2
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik2 -> !t2
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a, %c, %k, %t : tensor<?x8xf32>, !kv2, !ik2, !t2
    }
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    %X2, %c2, %k2, %t2, %p2 = dsf.layer 2 (%X1) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv1, !ik1, !t1, !p1) {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      %t, %p = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1, !p1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a, %c, %k, %t, %p : tensor<?x8xf32>, !kv1, !ik1, !t1, !p1
    }
    %X3, %t3 = dsf.layer 3 (%X2, %c2, %k2, %p2) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reindex>, ratio = 1 : i64} : (tensor<?x8xf32>, !kv1, !ik1, !p1) -> (tensor<?x8xf32>, !t1) {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv1, %k: !ik1, %p: !p1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %t = dsf.index_topk %q, %iw, %k within %p {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1, !p1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a, %t : tensor<?x8xf32>, !t1
    }
    return
  }
}

// CHECK-LABEL: dsf.model @ops
// CHECK: dsf.weight @w8 : tensor<8x8xbf16> {format = #e4m3_ue8m0_128x128}
// CHECK: dsf.weight @experts.w1 : tensor<4x6x8xbf16> {expert_names = "experts.{e}.w1", format = #mxfp4}
// CHECK: dsf.embed %{{.*}} weight(@emb) : tensor<?xi32> -> tensor<?x8xf32>
// CHECK: %{{.*}}, %{{.*}} = dsf.mhc.expand %{{.*}} : tensor<?x8xf32> -> tensor<?x2x8xf32>, tensor<?x2xf32>
// CHECK: dsf.mhc.coeffs %{{.*}} {base = @hcb, eps = {{.*}}, fn = @hcf, norm_eps = {{.*}}, scale = @hcs, sinkhorn_iters = 20 : i64} : tensor<?x2x8xf32> -> tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>
// CHECK: dsf.mhc.collapse %{{.*}}, %{{.*}} : tensor<?x2x8xf32>, tensor<?x2xf32> -> tensor<?x8xf32>
// CHECK: dsf.rms_norm %{{.*}} weight(@n8) {eps = {{.*}}} : tensor<?x8xf32>
// CHECK: dsf.rms_norm %{{.*}} {eps = {{.*}}} : tensor<?x2x4xf32>
// CHECK: dsf.rope %{{.*}}, %{{.*}} {rope = #rope_yarn} : tensor<?x2x4xf32>, tensor<?xi32>
// CHECK: dsf.rope %{{.*}}, %{{.*}} {inverse, rope = #rope} : tensor<?x2x4xf32>, tensor<?xi32>
// CHECK: dsf.grouped_linear %{{.*}} weight(@woa) {groups = 2 : i64} : tensor<?x2x4xf32> -> tensor<?x2x3xf32>
// CHECK: dsf.entry_positions %{{.*}} {ratio = 4 : i64} : tensor<?xi32>
// CHECK: dsf.compress %{{.*}} {ape = @ape, eps = {{.*}}, kind = #dsf.compressor<overlap>, norm = @n8, ratio = 4 : i64, wgate = @w16, wkv = @w16}
// CHECK: dsf.quantize %{{.*}} : tensor<?x8xf32> -> !dsf.qtensor<?x8, #e4m3_ue8m0_4_tail4>
// CHECK: dsf.dequantize %{{.*}} : !dsf.qtensor<?x8, #e4m3_ue8m0_4_tail4> -> tensor<?x8xf32>
// CHECK: dsf.mhc.update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2x2xf32> -> tensor<?x2x8xf32>
// CHECK: dsf.moe.gate %{{.*}} ids(%{{.*}} : tensor<?xi32>) {hash_table = @tid2eid, routed_scale = 1.500000e+00 : f64, top_k = 2 : i64, weight = @gate}
// CHECK: dsf.moe.gate %{{.*}} image(%{{.*}} : tensor<?xi1>) {bias = @bias, bias_vl = @bias_vl, routed_scale = 1.500000e+00 : f64, top_k = 2 : i64, weight = @gate}
// CHECK: dsf.moe.experts %{{.*}}, %{{.*}}, %{{.*}} {swiglu_limit = 1.000000e+01 : f64, w1 = @experts.w1, w2 = @experts.w2, w3 = @experts.w3}
// CHECK: dsf.ffn %{{.*}} {swiglu_limit = 1.000000e+01 : f64, w1 = @sh.w1, w2 = @sh.w2, w3 = @sh.w3} : tensor<?x8xf32>
// CHECK: dsf.add %{{.*}}, %{{.*}} : tensor<?x8xf32>
// CHECK: dsf.mhc.head %{{.*}} {base = @hhb, eps = {{.*}}, fn = @hhf, norm_eps = {{.*}}, scale = @hhs} : tensor<?x2x8xf32> -> tensor<?x8xf32>
dsf.model @ops attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 2} {
  dsf.weight @emb : tensor<16x8xf32>
  dsf.weight @w8 : tensor<8x8xbf16> {format = #dsf.quant<e4m3, scale = ue8m0, block = 128x128>}
  dsf.weight @w16 : tensor<16x8xf32>
  dsf.weight @ape : tensor<4x16xf32>
  dsf.weight @n8 : tensor<8xf32>
  dsf.weight @woa : tensor<6x4xf32>
  dsf.weight @hcf : tensor<8x16xf32>
  dsf.weight @hcb : tensor<8xf32>
  dsf.weight @hcs : tensor<3xf32>
  dsf.weight @hhf : tensor<2x16xf32>
  dsf.weight @hhb : tensor<2xf32>
  dsf.weight @hhs : tensor<1xf32>
  dsf.weight @gate : tensor<4x8xf32>
  dsf.weight @bias : tensor<4xf32>
  dsf.weight @bias_vl : tensor<4xf32>
  dsf.weight @tid2eid : tensor<16x2xi32>
  dsf.weight @experts.w1 : tensor<4x6x8xbf16> {format = #dsf.quant<e2m1, scale = ue8m0, block = 32>, expert_names = "experts.{e}.w1"}
  dsf.weight @experts.w2 : tensor<4x8x6xbf16> {format = #dsf.quant<e2m1, scale = ue8m0, block = 32>, expert_names = "experts.{e}.w2"}
  dsf.weight @experts.w3 : tensor<4x6x8xbf16> {format = #dsf.quant<e2m1, scale = ue8m0, block = 32>, expert_names = "experts.{e}.w3"}
  dsf.weight @sh.w1 : tensor<6x8xf32>
  dsf.weight @sh.w2 : tensor<8x6xf32>
  dsf.weight @sh.w3 : tensor<6x8xf32>
  func.func @all_ops(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %img: tensor<?xi1>) -> tensor<?x8xf32> {
    %e = dsf.embed %ids weight(@emb) : tensor<?xi32> -> tensor<?x8xf32>
    %X, %pre0 = dsf.mhc.expand %e : tensor<?x8xf32> -> tensor<?x2x8xf32>, tensor<?x2xf32>
    %pre, %post, %comb = dsf.mhc.coeffs %X {fn = @hcf, base = @hcb, scale = @hcs, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-20 : f64} : tensor<?x2x8xf32> -> tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>
    %x0 = dsf.mhc.collapse %X, %pre : tensor<?x2x8xf32>, tensor<?x2xf32> -> tensor<?x8xf32>
    %x = dsf.rms_norm %x0 weight(@n8) {eps = 1.0e-6 : f64} : tensor<?x8xf32>
    %q0 = dsf.linear %x weight(@w8) : tensor<?x8xf32> -> tensor<?x2x4xf32>
    %q1 = dsf.rms_norm %q0 {eps = 1.0e-6 : f64} : tensor<?x2x4xf32>
    %q = dsf.rope %q1, %pos {rope = #dsf.rope<theta = 1.6e5, dims = 4, yarn_factor = 16.0, original_max = 65536, beta_fast = 32.0, beta_slow = 1.0>} : tensor<?x2x4xf32>, tensor<?xi32>
    %o = dsf.rope %q, %pos {inverse, rope = #dsf.rope<theta = 1.0e4, dims = 4>} : tensor<?x2x4xf32>, tensor<?xi32>
    %oa = dsf.grouped_linear %o weight(@woa) {groups = 2 : i64} : tensor<?x2x4xf32> -> tensor<?x2x3xf32>
    %epos = dsf.entry_positions %pos {ratio = 4 : i64} : tensor<?xi32>
    %lat = dsf.compress %x {kind = #dsf.compressor<overlap>, ratio = 4 : i64, wkv = @w16, wgate = @w16, ape = @ape, norm = @n8, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
    %pk = dsf.quantize %lat : tensor<?x8xf32> -> !dsf.qtensor<?x8, #dsf.quant<e4m3, scale = ue8m0, block = 4, bf16_tail = 4, align = 8>>
    %dk = dsf.dequantize %pk : !dsf.qtensor<?x8, #dsf.quant<e4m3, scale = ue8m0, block = 4, bf16_tail = 4, align = 8>> -> tensor<?x8xf32>
    %X2 = dsf.mhc.update %X, %dk, %post, %comb : tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2x2xf32> -> tensor<?x2x8xf32>
    %hw, %he = dsf.moe.gate %x ids(%ids : tensor<?xi32>) {weight = @gate, hash_table = @tid2eid, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %w, %ex = dsf.moe.gate %x image(%img : tensor<?xi1>) {weight = @gate, bias = @bias, bias_vl = @bias_vl, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %r = dsf.moe.experts %x, %w, %ex {w1 = @experts.w1, w2 = @experts.w2, w3 = @experts.w3, swiglu_limit = 10.0 : f64} : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x8xf32>
    %s = dsf.ffn %x {w1 = @sh.w1, w2 = @sh.w2, w3 = @sh.w3, swiglu_limit = 10.0 : f64} : tensor<?x8xf32>
    %m = dsf.add %r, %s : tensor<?x8xf32>
    %h = dsf.mhc.head %X2 {fn = @hhf, base = @hhb, scale = @hhs, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x2x8xf32> -> tensor<?x8xf32>
    %out = dsf.add %m, %h : tensor<?x8xf32>
    return %out : tensor<?x8xf32>
  }
}

// Split layers, take_last, the fused mHC update, cache plans.
// CHECK-LABEL: dsf.model @split
// CHECK: %[[KV:.*]]:3 = dsf.layer 0(%{{.*}}) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64}
// CHECK: dsf.window.write %{{.*}} {plan = #dsf.cache_plan<live = device, idle = host, ttl = 300>}
// CHECK: dsf.cache.write %{{.*}} {plan = #dsf.cache_plan<live = device, idle = ssd, ttl = 14400>}
// CHECK: dsf.take_last %{{.*}} {count = 5 : i64} : tensor<?x8xf32>
// CHECK: dsf.layer 0(%{{.*}}, %[[KV]]#0, %[[KV]]#1, %[[KV]]#2) {{{.*}}part = #dsf.layer_part<rest>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = dsf.mhc.fused_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} collapse(%{{.*}}) {base = @hb, eps = {{.*}}, fn = @hf, norm_eps = {{.*}}, scale = @hs, sinkhorn_iters = 20 : i64} : tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>, tensor<?x2xf32> -> tensor<?x2x8xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>, tensor<?x8xf32>
!swin = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!skv = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!sik = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!st = !dsf.topk<k = 2, ratio = 1>
dsf.model @split attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 2} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  dsf.weight @hf : tensor<8x16xf32>
  dsf.weight @hb : tensor<8xf32>
  dsf.weight @hs : tensor<3xf32>
  func.func @prefill(%x: tensor<?x8xf32>, %X: tensor<?x2x8xf32>, %post: tensor<?x2xf32>, %comb: tensor<?x2x2xf32>, %p: tensor<?x2xf32>) {
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!swin, !skv, !sik) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a {plan = #dsf.cache_plan<live = device, idle = host, ttl = 300>} : tensor<?x8xf32> -> !swin
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l {plan = #dsf.cache_plan<live = device, idle = ssd, ttl = 14400>} : tensor<?x8xf32> -> !skv
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !sik
      dsf.yield %w, %c, %k : !swin, !skv, !sik
    }
    %tail = dsf.take_last %x {count = 5 : i64} : tensor<?x8xf32>
    %X0 = dsf.layer 0 (%tail, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !swin, !skv, !sik) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !swin, %c: !skv, %k: !sik):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !sik -> !st
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !swin, !skv, !st -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    %u, %npre, %npost, %ncomb, %xc = dsf.mhc.fused_update %X, %x, %post, %comb collapse(%p) {fn = @hf, base = @hb, scale = @hs, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-20 : f64} : tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>, tensor<?x2xf32> -> tensor<?x2x8xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>, tensor<?x8xf32>
    return
  }
}


// -----

// A continued sequence: prior window and cache, a compressor's carry, the
// retained window, positioned queries.
// CHECK-LABEL: func.func @continued
// CHECK: dsf.window.write %{{.*}} after %{{.*}} : !{{.*}} : tensor<?x32xf32>
// CHECK: dsf.window.retain
// CHECK: dsf.compress %{{.*}} carry(%{{.*}} : tensor<?x64xf32>)
// CHECK-SAME: -> tensor<?x32xf32>, tensor<?x64xf32>
// CHECK: dsf.cache.write %{{.*}} after %{{.*}} : !{{.*}} : tensor<?x32xf32>
// CHECK: dsf.attention {{.*}} at(%{{.*}} : tensor<?xi32>) sink
func.func @continued(%x: tensor<?x64xf32>, %rows: tensor<?x32xf32>, %q: tensor<?x2x32xf32>, %pos: tensor<?xi32>,
                     %w0: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, %carry: tensor<?x64xf32>,
                     %c0: !dsf.cache<kv, ratio = 2, width = 32, #dsf.quant<f32>>) {
  %w = dsf.window.write %rows after %w0 : !dsf.window<size = 4, width = 32, #dsf.quant<f32>> : tensor<?x32xf32> -> !dsf.window<size = 4, width = 32, #dsf.quant<f32>>
  %kept = dsf.window.retain %w : !dsf.window<size = 4, width = 32, #dsf.quant<f32>>
  %lat, %open = dsf.compress %x carry(%carry : tensor<?x64xf32>) {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @w, wgate = @g, norm = @n, eps = 1.0e-6 : f64} : tensor<?x64xf32> -> tensor<?x32xf32>, tensor<?x64xf32>
  %c = dsf.cache.write %lat after %c0 : !dsf.cache<kv, ratio = 2, width = 32, #dsf.quant<f32>> : tensor<?x32xf32> -> !dsf.cache<kv, ratio = 2, width = 32, #dsf.quant<f32>>
  %o = dsf.attention %q, %w, %c at(%pos : tensor<?xi32>) sink(@s) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, !dsf.cache<kv, ratio = 2, width = 32, #dsf.quant<f32>> -> tensor<?x2x32xf32>
  return
}
