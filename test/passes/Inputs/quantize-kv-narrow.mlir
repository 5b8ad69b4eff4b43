// A Full layer with an 8-wide cache, too narrow for NVFP4's 16-element blocks,
// whose rows do not come from a dsf.rope.
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t = !dsf.topk<k = 2, ratio = 2>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik -> !t
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv, !t -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}
