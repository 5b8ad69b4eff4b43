// RUN: dsf-opt %s --dsf-print-report | FileCheck %s
// RUN: dsf-opt %s --dsf-print-report=report=kv | FileCheck --check-prefix=KV %s
// RUN: not dsf-opt %s --dsf-print-report=report=flops 2>&1 | FileCheck --check-prefix=BAD %s

// Two layers: a Full layer of ratio 2 with an NVFP4 cache (288 B) and MXFP4
// keys (68 B), a Reuse layer reading both; an FP8 window of 4 rows each.
// CHECK: == KV report: @m ==
// CHECK: layer 0   kv         ratio 2   width 512   288 B/entry         144 B/token  read by 0-1
// CHECK: layer 0   index_keys ratio 2   width 128    68 B/entry          34 B/token  read by 0
// CHECK: global KV per token: 178 bytes
// CHECK: sliding window per sequence: 4,224 bytes (2 windows)
// CHECK: KV-source layers: 1 [0]
// CHECK: index-source layers: 1 [0]
// CHECK: == parameter report: @m ==
// CHECK: parameters: 590,849 (590.85 K), stored in 2,363,396 bytes
// CHECK: active per prefill token (@forward): 590,849
// KV: global KV per token: 178 bytes
// KV-NOT: parameter report
// BAD: error: unknown report 'flops' (expected kv or params)

!win = !dsf.window<size = 4, width = 512, #dsf.quant<e4m3, scale = ue8m0, block = 32>>
!kv = !dsf.cache<kv, ratio = 2, width = 512, #dsf.quant<e2m1, scale = e4m3, block = 16>>
!ik = !dsf.cache<index_keys, ratio = 2, width = 128, #dsf.quant<e2m1, scale = ue8m0, block = 32>>
!t = !dsf.topk<k = 2, ratio = 2>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 512, num_layers = 2, hc_mult = 1} {
  dsf.weight @wq : tensor<512x512xf32>
  dsf.weight @wi : tensor<1x512xf32>
  dsf.weight @wik : tensor<128x512xf32>
  dsf.weight @wkv : tensor<512x512xf32>
  dsf.weight @norm : tensor<512xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x512xf32>) {
    %X0, %c0, %k0, %t0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64} : (tensor<?x512xf32>) -> (tensor<?x512xf32>, !kv, !ik, !t) {
    ^bb0(%a: tensor<?x512xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x512xf32> -> tensor<?x1x512xf32>
      %iq = dsf.linear %a weight(@wik) : tensor<?x512xf32> -> tensor<?x1x128xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x512xf32> -> tensor<?x1xf32>
      %wq = dsf.quantize %a : tensor<?x512xf32> -> !dsf.qtensor<?x512, #dsf.quant<e4m3, scale = ue8m0, block = 32>>
      %w = dsf.window.write %wq : !dsf.qtensor<?x512, #dsf.quant<e4m3, scale = ue8m0, block = 32>> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x512xf32> -> tensor<?x512xf32>
      %lq = dsf.quantize %l : tensor<?x512xf32> -> !dsf.qtensor<?x512, #dsf.quant<e2m1, scale = e4m3, block = 16>>
      %c = dsf.cache.write %lq : !dsf.qtensor<?x512, #dsf.quant<e2m1, scale = e4m3, block = 16>> -> !kv
      %kl = dsf.linear %l weight(@wik) : tensor<?x512xf32> -> tensor<?x128xf32>
      %kq = dsf.quantize %kl : tensor<?x128xf32> -> !dsf.qtensor<?x128, #dsf.quant<e2m1, scale = ue8m0, block = 32>>
      %k = dsf.cache.write %kq : !dsf.qtensor<?x128, #dsf.quant<e2m1, scale = ue8m0, block = 32>> -> !ik
      %t = dsf.index_topk %iq, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x128xf32>, tensor<?x1xf32>, !ik -> !t
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x512xf32>, !win, !kv, !t -> tensor<?x1x512xf32>
      dsf.yield %a, %c, %k, %t : tensor<?x512xf32>, !kv, !ik, !t
    }
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x512xf32>, !kv, !t) -> tensor<?x512xf32> {
    ^bb0(%a: tensor<?x512xf32>, %c: !kv, %t: !t):
      %q = dsf.linear %a weight(@wq) : tensor<?x512xf32> -> tensor<?x1x512xf32>
      %wq = dsf.quantize %a : tensor<?x512xf32> -> !dsf.qtensor<?x512, #dsf.quant<e4m3, scale = ue8m0, block = 32>>
      %w = dsf.window.write %wq : !dsf.qtensor<?x512, #dsf.quant<e4m3, scale = ue8m0, block = 32>> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x512xf32>, !win, !kv, !t -> tensor<?x1x512xf32>
      dsf.yield %a : tensor<?x512xf32>
    }
    return
  }
}
