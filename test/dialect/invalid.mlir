// RUN: dsf-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect
//
// Every diagnostic of the dsf dialect (dialect/*.cpp), one case each. The
// 'test.*' ops stand in for producers a case needs but must not define.

// expected-error @below {{element format e2m1 needs a block scale (scale = e4m3 or ue8m0)}}
func.func private @f() attributes {q = #dsf.quant<e2m1>}

// -----

// expected-error @below {{element format f32 takes no block scale}}
func.func private @f() attributes {q = #dsf.quant<f32, scale = ue8m0, block = 32>}

// -----

// expected-error @below {{block sizes must be positive, got 1x0}}
func.func private @f() attributes {q = #dsf.quant<e4m3, scale = ue8m0, block = 0>}

// -----

// expected-error @below {{bf16_tail must not be negative, got -1}}
func.func private @f() attributes {q = #dsf.quant<e4m3, scale = ue8m0, block = 32, bf16_tail = -1>}

// -----

// expected-error @below {{bf16_tail only applies to quantized formats}}
func.func private @f() attributes {q = #dsf.quant<bf16, bf16_tail = 64>}

// -----

// expected-error @below {{align must be at least 1, got 0}}
func.func private @f() attributes {q = #dsf.quant<e4m3, scale = ue8m0, block = 32, align = 0>}

// -----

// expected-error @below {{unknown element format 'fp4' (expected f32, bf16, e4m3 or e2m1)}}
func.func private @f() attributes {q = #dsf.quant<fp4>}

// -----

// expected-error @below {{unknown scale format 'e8m0' (expected e4m3 or ue8m0)}}
func.func private @f() attributes {q = #dsf.quant<e2m1, scale = e8m0, block = 32>}

// -----

// expected-error @below {{block must be C or RxC}}
func.func private @f() attributes {q = #dsf.quant<e2m1, scale = e4m3, block = 2x2x2>}

// -----

// expected-error @below {{unknown #dsf.quant parameter 'group' (expected scale, block, bf16_tail, align)}}
func.func private @f() attributes {q = #dsf.quant<e2m1, group = 32>}

// -----

// expected-error @below {{rope theta must be positive}}
func.func private @f() attributes {r = #dsf.rope<theta = 0.0, dims = 64>}

// -----

// expected-error @below {{rope dims must be positive and even, got 63}}
func.func private @f() attributes {r = #dsf.rope<theta = 1.0e4, dims = 63>}

// -----

// expected-error @below {{YaRN needs yarn_factor, original_max, beta_fast and beta_slow}}
func.func private @f() attributes {r = #dsf.rope<theta = 1.6e5, dims = 64, yarn_factor = 16.0>}

// -----

// expected-error @below {{yarn_factor must be at least 1, got 5.000000e-01}}
func.func private @f() attributes {r = #dsf.rope<theta = 1.6e5, dims = 64, yarn_factor = 0.5, original_max = 65536, beta_fast = 32.0, beta_slow = 1.0>}

// -----

// expected-error @below {{original_max must be positive}}
func.func private @f() attributes {r = #dsf.rope<theta = 1.6e5, dims = 64, yarn_factor = 16.0, original_max = 0, beta_fast = 32.0, beta_slow = 1.0>}

// -----

// expected-error @below {{cache ratio must be at least 1, got 0}}
func.func private @f(!dsf.cache<kv, ratio = 0, width = 512, #dsf.quant<f32>>)

// -----

// expected-error @below {{cache width must be positive, got 0}}
func.func private @f(!dsf.cache<kv, ratio = 2, width = 0, #dsf.quant<f32>>)

// -----

// expected-error @below {{width 500 is not divisible by the quantization block 16}}
func.func private @f(!dsf.cache<kv, ratio = 2, width = 500, #dsf.quant<e2m1, scale = e4m3, block = 16>>)

// -----

// expected-error @below {{a row format needs 1-D blocks, got block = 32x32}}
func.func private @f(!dsf.cache<kv, ratio = 2, width = 512, #dsf.quant<e4m3, scale = ue8m0, block = 32x32>>)

// -----

// expected-error @below {{bf16_tail 512 leaves no quantized channels in a row of 512}}
func.func private @f(!dsf.cache<kv, ratio = 2, width = 512, #dsf.quant<e4m3, scale = ue8m0, block = 64, bf16_tail = 512>>)

// -----

// expected-error @below {{window size must be positive, got 0}}
func.func private @f(!dsf.window<size = 0, width = 512, #dsf.quant<f32>>)

// -----

// expected-error @below {{window width must be positive, got 0}}
func.func private @f(!dsf.window<size = 128, width = 0, #dsf.quant<f32>>)

// -----

// expected-error @below {{top-k must be positive, got 0}}
func.func private @f(!dsf.topk<k = 0, ratio = 2>)

// -----

// expected-error @below {{selection ratio must be at least 1, got 0}}
func.func private @f(!dsf.topk<k = 512, ratio = 0>)

// -----

// expected-error @below {{pool blocks and block_size must be positive, got 0 x 8}}
func.func private @f(!dsf.pool<blocks = 0, block_size = 8, ratio = 1>)

// -----

// expected-error @below {{pool ratio must be at least 1, got 0}}
func.func private @f(!dsf.pool<blocks = 2048, block_size = 8, ratio = 0>)

// -----

// expected-error @below {{a packed tensor needs at least one dimension}}
func.func private @f(!dsf.qtensor<, #dsf.quant<e2m1, scale = e4m3, block = 16>>)

// -----

// expected-error @below {{a packed tensor needs a quantized format}}
func.func private @f(!dsf.qtensor<?x512, #dsf.quant<bf16>>)

// -----

// expected-error @below {{the last (blocked) dimension must be static}}
func.func private @f(!dsf.qtensor<4x?, #dsf.quant<e2m1, scale = e4m3, block = 16>>)

// -----

// expected-error @below {{expected a #dsf.quant format}}
func.func private @f(!dsf.qtensor<?x512, 5 : i64>)

// -----

func.func @f(%ids: tensor<?x2xi32>) {
  // expected-error @below {{ids must be a 1-D tensor of token ids}}
  %0 = dsf.embed %ids weight(@e) : tensor<?x2xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%ids: tensor<?xi32>) {
  // expected-error @below {{result has shape [?], expected [?, ?]}}
  %0 = dsf.embed %ids weight(@e) : tensor<?xi32> -> tensor<?xf32>
  return
}

// -----

func.func @f(%ids: tensor<3xi32>) {
  // expected-error @below {{ids and result disagree on the number of tokens}}
  %0 = dsf.embed %ids weight(@e) : tensor<3xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?xf32>) {
  // expected-error @below {{input needs a token axis and at least one feature dimension}}
  %0 = dsf.linear %x weight(@w) : tensor<?xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?xf32>) {
  // expected-error @below {{input must have static feature dimensions, got [?, ?]}}
  %0 = dsf.linear %x weight(@w) : tensor<?x?xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{expects [tokens, heads, dim] -> [tokens, groups, rank]}}
  %0 = dsf.grouped_linear %x weight(@w) {groups = 2 : i64} : tensor<?x8xf32> -> tensor<?x2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x4x8xf32>) {
  // expected-error @below {{groups must be positive, got 0}}
  %0 = dsf.grouped_linear %x weight(@w) {groups = 0 : i64} : tensor<?x4x8xf32> -> tensor<?x0x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x4x8xf32>) {
  // expected-error @below {{4 heads do not split into 3 equal groups}}
  %0 = dsf.grouped_linear %x weight(@w) {groups = 3 : i64} : tensor<?x4x8xf32> -> tensor<?x3x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x4x8xf32>) {
  // expected-error @below {{result has 4 groups, expected 2}}
  %0 = dsf.grouped_linear %x weight(@w) {groups = 2 : i64} : tensor<?x4x8xf32> -> tensor<?x4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %p: tensor<?x1xi32>) {
  // expected-error @below {{positions must be a 1-D tensor}}
  %0 = dsf.rope %x, %p {rope = #dsf.rope<theta = 1.0e4, dims = 4>} : tensor<?x8xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %p: tensor<?xi32>) {
  // expected-error @below {{rotates 16 channels but rows have only 8}}
  %0 = dsf.rope %x, %p {rope = #dsf.rope<theta = 1.0e4, dims = 16>} : tensor<?x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @f(%x: tensor<3x8xf32>, %p: tensor<4xi32>) {
  // expected-error @below {{input and positions disagree on the number of tokens}}
  %0 = dsf.rope %x, %p {rope = #dsf.rope<theta = 1.0e4, dims = 4>} : tensor<3x8xf32>, tensor<4xi32>
  return
}

// -----

func.func @f(%p: tensor<?xi32>) {
  // expected-error @below {{ratio must be at least 1, got 0}}
  %0 = dsf.entry_positions %p {ratio = 0 : i64} : tensor<?xi32>
  return
}

// -----

func.func @f(%p: tensor<?x2xi32>) {
  // expected-error @below {{positions must be 1-D}}
  %0 = dsf.entry_positions %p {ratio = 2 : i64} : tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{streams must be [tokens, n, D] with static n and D, got [?, ?, 8]}}
  %0, %1 = dsf.mhc.expand %x : tensor<?x8xf32> -> tensor<?x?x8xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{input has shape [?, 8], expected [?, 16]}}
  %0, %1 = dsf.mhc.expand %x : tensor<?x8xf32> -> tensor<?x4x16xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{pre has shape [?, 2], expected [?, 4]}}
  %0, %1 = dsf.mhc.expand %x : tensor<?x8xf32> -> tensor<?x4x8xf32>, tensor<?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<3x8xf32>) {
  // expected-error @below {{input and streams disagree on the number of tokens}}
  %0, %1 = dsf.mhc.expand %x : tensor<3x8xf32> -> tensor<2x4x8xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>) {
  // expected-error @below {{sinkhorn_iters must be at least 1, got 0}}
  %0:3 = dsf.mhc.coeffs %X {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 0 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>) {
  // expected-error @below {{comb has shape [?, 4, 2], expected [?, 4, 4]}}
  %0:3 = dsf.mhc.coeffs %X {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x2xf32>
  return
}

// -----

func.func @f(%X: tensor<3x4x8xf32>) {
  // expected-error @below {{streams and coefficients disagree on the number of tokens}}
  %0:3 = dsf.mhc.coeffs %X {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<3x4x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<5x4x4xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %pre: tensor<?x4xf32>) {
  // expected-error @below {{result has shape [?, 4], expected [?, 8]}}
  %0 = dsf.mhc.collapse %X, %pre : tensor<?x4x8xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @f(%X: tensor<2x4x8xf32>, %pre: tensor<3x4xf32>) {
  // expected-error @below {{streams and pre disagree on the number of tokens}}
  %0 = dsf.mhc.collapse %X, %pre : tensor<2x4x8xf32>, tensor<3x4xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) {
  // expected-error @below {{result type must equal the streams' type}}
  %0 = dsf.mhc.update %X, %y, %post, %comb : tensor<?x4x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x6xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) {
  // expected-error @below {{block output has shape [?, 6], expected [?, 8]}}
  %0 = dsf.mhc.update %X, %y, %post, %comb : tensor<?x4x8xf32>, tensor<?x6xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<?x4x8xf32>
  return
}

// -----

func.func @f(%X: tensor<2x4x8xf32>, %y: tensor<3x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) {
  // expected-error @below {{streams and block output disagree on the number of tokens}}
  %0 = dsf.mhc.update %X, %y, %post, %comb : tensor<2x4x8xf32>, tensor<3x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>) {
  // expected-error @below {{result has shape [?, 4], expected [?, 8]}}
  %0 = dsf.mhc.head %X {fn = @fn, base = @b, scale = @s, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{ratio must be at least 1, got 0}}
  %0 = dsf.compress %x {kind = #dsf.compressor<project>, ratio = 0 : i64, wkv = @w, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a pair compressor needs wgate}}
  %0 = dsf.compress %x {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @w, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a project compressor takes no wgate}}
  %0 = dsf.compress %x {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @w, wgate = @g, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a overlap compressor needs position bias (ape)}}
  %0 = dsf.compress %x {kind = #dsf.compressor<overlap>, ratio = 4 : i64, wkv = @w, wgate = @g, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a pair compressor takes no position bias (ape)}}
  %0 = dsf.compress %x {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @w, wgate = @g, ape = @a, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a pair compressor has ratio 2, got 4}}
  %0 = dsf.compress %x {kind = #dsf.compressor<pair>, ratio = 4 : i64, wkv = @w, wgate = @g, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a project compressor has ratio 1, got 2}}
  %0 = dsf.compress %x {kind = #dsf.compressor<project>, ratio = 2 : i64, wkv = @w, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a pool compressor needs ratio >= 2, got 1}}
  %0 = dsf.compress %x {kind = #dsf.compressor<pool>, ratio = 1 : i64, wkv = @w, wgate = @g, ape = @a, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{input has shape [?, 8], expected [?, 16]}}
  %0 = dsf.quantize %x : tensor<?x8xf32> -> !dsf.qtensor<?x16, #dsf.quant<e2m1, scale = e4m3, block = 16>>
  return
}

// -----

func.func @f(%x: !dsf.qtensor<?x16, #dsf.quant<e2m1, scale = e4m3, block = 16>>) {
  // expected-error @below {{result has shape [?, 8], expected [?, 16]}}
  %0 = dsf.dequantize %x : !dsf.qtensor<?x16, #dsf.quant<e2m1, scale = e4m3, block = 16>> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: !dsf.qtensor<?x2x16, #dsf.quant<e2m1, scale = e4m3, block = 16>>) {
  // expected-error @below {{expects rows [entries, width]}}
  %0 = dsf.cache.write %x : !dsf.qtensor<?x2x16, #dsf.quant<e2m1, scale = e4m3, block = 16>> -> !dsf.cache<kv, ratio = 2, width = 16, #dsf.quant<e2m1, scale = e4m3, block = 16>>
  return
}

// -----

func.func @f(%x: !dsf.qtensor<?x32, #dsf.quant<e2m1, scale = ue8m0, block = 32>>) {
  // expected-error @below {{writes rows stored as #dsf.quant<e2m1, scale = ue8m0, block = 32> into a cache stored as #dsf.quant<e2m1, scale = e4m3, block = 16>}}
  %0 = dsf.cache.write %x : !dsf.qtensor<?x32, #dsf.quant<e2m1, scale = ue8m0, block = 32>> -> !dsf.cache<kv, ratio = 2, width = 32, #dsf.quant<e2m1, scale = e4m3, block = 16>>
  return
}

// -----

func.func @f(%x: tensor<?x2x16xf32>) {
  // expected-error @below {{expects rows [entries, width]}}
  %0 = dsf.window.write %x : tensor<?x2x16xf32> -> !dsf.window<size = 4, width = 16, #dsf.quant<f32>>
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>) {
  // expected-error @below {{a cache stored as #dsf.quant<e2m1, scale = e4m3, block = 16> takes packed rows: quantize them first (dsf.quantize)}}
  %0 = dsf.cache.write %x : tensor<?x16xf32> -> !dsf.cache<kv, ratio = 2, width = 16, #dsf.quant<e2m1, scale = e4m3, block = 16>>
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>) {
  // expected-error @below {{rows have 16 channels but the window holds 32}}
  %0 = dsf.window.write %x : tensor<?x16xf32> -> !dsf.window<size = 4, width = 32, #dsf.quant<f32>>
  return
}

// -----

func.func @f(%q: tensor<?x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{queries must be [tokens, index heads, index dim]}}
  %0 = dsf.index_topk %q, %w, %k {k = 4 : i64, scale = 1.0 : f64} : tensor<?x32xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x3xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{weights has shape [?, 3], expected [?, 2]}}
  %0 = dsf.index_topk %q, %w, %k {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x3xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<kv, ratio = 1, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{scores index keys, but was given a kv cache}}
  %0 = dsf.index_topk %q, %w, %k {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x2xf32>, !dsf.cache<kv, ratio = 1, width = 32, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x16xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{index keys are 32 wide but queries are 16}}
  %0 = dsf.index_topk %q, %w, %k {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x16xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{k must be positive, got 0}}
  %0 = dsf.index_topk %q, %w, %k {k = 0 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{selection type must be !dsf.topk<k = 4, ratio = 1>}}
  %0 = dsf.index_topk %q, %w, %k {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 2>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>, %p: !dsf.pool<blocks = 2, block_size = 4, ratio = 2>) {
  // expected-error @below {{candidate pool of ratio 2 does not index keys of ratio 1}}
  %0 = dsf.index_topk %q, %w, %k within %p {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>, !dsf.pool<blocks = 2, block_size = 4, ratio = 2> -> !dsf.topk<k = 4, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>, %p: !dsf.pool<blocks = 2, block_size = 4, ratio = 1>) {
  // expected-error @below {{top-k (16) is larger than the candidate pool (2 blocks x 4 = 8 entries)}}
  %0 = dsf.index_topk %q, %w, %k within %p {k = 16 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>, !dsf.pool<blocks = 2, block_size = 4, ratio = 1> -> !dsf.topk<k = 16, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>, %p: !dsf.pool<blocks = 2, block_size = 4, ratio = 1>) {
  // expected-error @below {{a candidate pool is formed from unrestricted scores, not from scores already restricted to a pool}}
  %0, %1 = dsf.index_topk %q, %w, %k within %p {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>, !dsf.pool<blocks = 2, block_size = 4, ratio = 1> -> !dsf.topk<k = 4, ratio = 1>, !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{candidate pool must have the keys' ratio 1}}
  %0, %1 = dsf.index_topk %q, %w, %k {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x32xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 32, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 1>, !dsf.pool<blocks = 2, block_size = 4, ratio = 2>
  return
}

// -----

func.func @f(%q: tensor<?x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{queries must be [tokens, heads, head dim]}}
  %0 = dsf.attention %q, %w sink(@s) {scale = 1.0 : f64} : tensor<?x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>> -> tensor<?x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{result type must equal the queries' type}}
  %0 = dsf.attention %q, %w sink(@s) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>> -> tensor<?x4x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 16, #dsf.quant<f32>>) {
  // expected-error @below {{window rows are 16 wide but heads are 32}}
  %0 = dsf.attention %q, %w sink(@s) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 16, #dsf.quant<f32>> -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{scale must be positive}}
  %0 = dsf.attention %q, %w sink(@s) {scale = 0.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>> -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, %c: !dsf.cache<index_keys, ratio = 2, width = 32, #dsf.quant<f32>>) {
  // expected-error @below {{attends over a kv cache, but was given index_keys}}
  %0 = dsf.attention %q, %w, %c sink(@s) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, !dsf.cache<index_keys, ratio = 2, width = 32, #dsf.quant<f32>> -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, %c: !dsf.cache<kv, ratio = 2, width = 64, #dsf.quant<f32>>) {
  // expected-error @below {{cache entries are 64 wide but heads are 32}}
  %0 = dsf.attention %q, %w, %c sink(@s) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, !dsf.cache<kv, ratio = 2, width = 64, #dsf.quant<f32>> -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, %c: !dsf.cache<kv, ratio = 2, width = 32, #dsf.quant<f32>>, %t: !dsf.topk<k = 4, ratio = 1>) {
  // expected-error @below {{selection of ratio 1 indexes a cache of ratio 2}}
  %0 = dsf.attention %q, %w, %c [%t] sink(@s) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, !dsf.cache<kv, ratio = 2, width = 32, #dsf.quant<f32>>, !dsf.topk<k = 4, ratio = 1> -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, %t: !dsf.topk<k = 4, ratio = 1>) {
  // The custom form cannot even spell this; the generic form can.
  // expected-error @below {{a selection needs the cache it selects from}}
  %0 = "dsf.attention"(%q, %w, %t) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 0>, scale = 1.0 : f64, sink = @s}> : (tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, !dsf.topk<k = 4, ratio = 1>) -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{top_k must be positive, got 0}}
  %0, %1 = dsf.moe.gate %x {weight = @g, bias = @b, top_k = 0 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x0xf32>, tensor<?x0xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{experts has shape [?, 3], expected [?, 2]}}
  %0, %1 = dsf.moe.gate %x {weight = @g, bias = @b, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x3xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{hash routing reads the token ids: pass ids(...)}}
  %0, %1 = dsf.moe.gate %x {weight = @g, hash_table = @t, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %ids: tensor<?xi32>) {
  // expected-error @below {{hash routing selects from its table; it takes no bias}}
  %0, %1 = dsf.moe.gate %x ids(%ids : tensor<?xi32>) {weight = @g, bias = @b, hash_table = @t, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{bias_vl applies to image tokens: pass image(...)}}
  %0, %1 = dsf.moe.gate %x {weight = @g, bias = @b, bias_vl = @bv, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %img: tensor<?xi1>) {
  // expected-error @below {{bias_vl replaces bias for image tokens; declare bias too}}
  %0, %1 = dsf.moe.gate %x image(%img : tensor<?xi1>) {weight = @g, bias_vl = @bv, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %img: tensor<?xi1>) {
  // expected-error @below {{an image mask only matters with bias_vl}}
  %0, %1 = dsf.moe.gate %x image(%img : tensor<?xi1>) {weight = @g, bias = @b, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{routed_scale must be positive}}
  %0, %1 = dsf.moe.gate %x {weight = @g, bias = @b, top_k = 2 : i64, routed_scale = -1.0 : f64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f(%x: tensor<3x8xf32>) {
  // expected-error @below {{input and experts disagree on the number of tokens}}
  %0, %1 = dsf.moe.gate %x {weight = @g, bias = @b, top_k = 2 : i64, routed_scale = 1.5 : f64} : tensor<3x8xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %w: tensor<?x2xf32>, %e: tensor<?x3xi32>) {
  // expected-error @below {{routing weights and experts must both be [tokens, top_k]}}
  %0 = dsf.moe.experts %x, %w, %e {w1 = @w1, w2 = @w2, w3 = @w3, swiglu_limit = 10.0 : f64} : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x3xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>) {
  // expected-error @below {{swiglu_limit must be positive}}
  %0 = dsf.moe.experts %x, %w, %e {w1 = @w1, w2 = @w2, w3 = @w3, swiglu_limit = 0.0 : f64} : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>) {
  // expected-error @below {{result has shape [?, 4], expected [?, 8]}}
  %0 = dsf.moe.experts %x, %w, %e {w1 = @w1, w2 = @w2, w3 = @w3, swiglu_limit = 10.0 : f64} : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<3x8xf32>, %w: tensor<4x2xf32>, %e: tensor<4x2xi32>) {
  // expected-error @below {{input and routing weights disagree on the number of tokens}}
  %0 = dsf.moe.experts %x, %w, %e {w1 = @w1, w2 = @w2, w3 = @w3, swiglu_limit = 10.0 : f64} : tensor<3x8xf32>, tensor<4x2xf32>, tensor<4x2xi32> -> tensor<3x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{swiglu_limit must be positive}}
  %0 = dsf.ffn %x {w1 = @w1, w2 = @w2, w3 = @w3, swiglu_limit = -2.0 : f64} : tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x2x8xf32>) {
  // expected-error @below {{input has shape [?, 2, 8], expected [?, ?]}}
  %0 = dsf.ffn %x {w1 = @w1, w2 = @w2, w3 = @w3, swiglu_limit = 10.0 : f64} : tensor<?x2x8xf32>
  return
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer index must not be negative}}
    %X0 = dsf.layer -1 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a sliding-only layer has ratio 0, got 2}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 2 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a compressed layer needs a ratio of at least 1, got 0}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a V4 csa layer compresses at least 2 tokens, got ratio 1}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa>, ratio = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a CSA2 mode is only allowed on compressed V4.1 (csa2) layers}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, mode = #dsf.csa2_mode<full>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a csa2 layer needs a mode (full, reindex or reuse)}}
    %X0, %c0, %k0, %t0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, ratio = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv2, !ik2, !t2) {
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
    return
  }
}

// -----


!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @ape : tensor<2x8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: region has 0 arguments for 1 inputs}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0:
      %a = "test.value"() : () -> tensor<?x8xf32>
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>, %pos: tensor<?xi32>) {
    // expected-error @below {{layer 0: region argument types must match the inputs}}
    %X0 = dsf.layer 0 (%x, %pos) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %b: tensor<?xi64>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: yields 2 values whose types differ from the layer's outputs}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a, %a : tensor<?x8xf32>, tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1} {
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
    // expected-error-re @below {{layer 1: (ratio 1) touches {{.*}} of another ratio}}
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 1 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: layers do not nest}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %n = dsf.layer 5 (%a) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
      ^bb0(%b: tensor<?x8xf32>):
        %q2 = dsf.linear %b weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
        %w2 = dsf.window.write %b : tensor<?x8xf32> -> !win
        %o2 = dsf.attention %q2, %w2 sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
        dsf.yield %b : tensor<?x8xf32>
      }
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: has 0 attention ops, expected exactly one}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a full layer computes its compressed KV (dsf.compress and a kv dsf.cache.write)}}
    %X0, %c0, %k0, %t0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv2, !ik2, !t2) {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = "test.cache"() : () -> !kv2
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik2
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik2 -> !t2
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a, %c, %k, %t : tensor<?x8xf32>, !kv2, !ik2, !t2
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a sliding layer has no compressor: it attends over its window only}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1} {
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
    // expected-error @below {{layer 1: a reuse layer has no compressor: it reads the cache of its group's Full layer}}
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a full layer computes its own top-k (dsf.index_topk)}}
    %X0, %c0, %k0, %t0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv2, !ik2, !t2) {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv2
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik2
      %t = "test.make_topk"() : () -> !t2
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a, %c, %k, %t : tensor<?x8xf32>, !kv2, !ik2, !t2
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1} {
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
    // expected-error @below {{layer 1: a reuse layer has no indexer: it reuses the top-k of the nearest preceding index source}}
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %k = "test.make_keys"() : () -> !ik2
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t9 = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik2 -> !t2
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a sliding-only layer attends over its window only}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %c = "test.make_cache"() : () -> !kv2
      %o = dsf.attention %q, %w, %c sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1} {
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
    // expected-error @below {{layer 1: a compressed layer attends over a compressed cache}}
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1} {
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
    // expected-error @below {{layer 1: a sparse layer attends over a top-k selection}}
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @ape : tensor<2x8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>, %t: !t2) {
    // expected-error @below {{layer 0: an hca layer attends over all visible entries, not a selection}}
    %X0 = dsf.layer 0 (%x, %t) {attention = #dsf.attention<hca>, ratio = 2 : i64} : (tensor<?x8xf32>, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %s: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pool>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, ape = @ape, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv2
      %o = dsf.attention %q, %w, %c [%s] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

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
    // expected-error @below {{layer 3: a reindex layer scores the index keys of its group's Full layer, passed in as an input}}
    %X3, %t3 = dsf.layer 3 (%X2, %c2, %k2, %p2) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reindex>, ratio = 1 : i64} : (tensor<?x8xf32>, !kv1, !ik1, !p1) -> (tensor<?x8xf32>, !t1) {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv1, %k: !ik1, %p: !p1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.linear %a weight(@wkv) : tensor<?x8xf32> -> tensor<?x8xf32>
      %kk = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      %t = dsf.index_topk %q, %iw, %kk within %p {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1, !p1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a, %t : tensor<?x8xf32>, !t1
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1} {
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
    // expected-error @below {{layer 1: a reuse layer reads the cache and the selection of earlier layers, passed in as inputs}}
    %X1 = dsf.layer 1 (%X0, %c0, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.linear %a weight(@wkv) : tensor<?x8xf32> -> tensor<?x8xf32>
      %c5 = dsf.cache.write %l : tensor<?x8xf32> -> !kv2
      %o = dsf.attention %q, %w, %c5 [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      // expected-error @below {{refers to an undeclared weight @nope (weight)}}
      %q = dsf.linear %a weight(@nope) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      // expected-error @below {{weight @wq is declared [8, 8] but this op needs [16, 8] ('*': any size; a, b: sizes its weights share)}}
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x2x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %q1 = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %o = dsf.attention %q1, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %ids = "test.ids"() : () -> tensor<?xi32>
      // expected-error @below {{hash table @wq has element type 'f32'}}
      %r, %e = dsf.moe.gate %a ids(%ids : tensor<?xi32>) {weight = @wi, hash_table = @wq, top_k = 8 : i64, routed_scale = 1.0 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xi32>
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      // expected-error @below {{bias @norm is declared [8] but this op needs [a] ('*': any size; a, b: sizes its weights share)}}
      %r, %e = dsf.moe.gate %a {weight = @wi, bias = @norm, top_k = 1 : i64, routed_scale = 1.0 : f64} : tensor<?x8xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  // expected-error @below {{has 1 layers but the model declares num_layers = 2}}
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 1 stands at position 0; layers are numbered 0, 1, 2, ... in order}}
    %X0 = dsf.layer 1 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----


!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @ape : tensor<2x8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a deepseek_v41 model has no V4 hca layers}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<hca>, ratio = 2 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<pool>, ratio = 2 : i64, wkv = @wkv, wgate = @wkv, ape = @ape, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv2
      %o = dsf.attention %q, %w, %c sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: csa2 layers need family deepseek_v41}}
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
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1, decoder_start = 1 : i64} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a model with decoder_start needs a stage on every layer}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 2, hc_mult = 1, decoder_start = 1 : i64} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64, stage = #dsf.stage<encoder>} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    // expected-error @below {{layer 1 is in the decoder (decoder_start = 1) but is marked encoder}}
    %X1 = dsf.layer 1 (%X0) {attention = #dsf.attention<sliding>, ratio = 0 : i64, stage = #dsf.stage<encoder>} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: a stage needs the model's decoder_start}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64, stage = #dsf.stage<encoder>} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>, %cc: !kv2, %tt: !t2) {
    // expected-error-re @below {{layer 0: input #1 ({{.*}}) is not produced by an earlier layer}}
    %X0 = dsf.layer 0 (%x, %cc, %tt) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

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
    %X2, %c2, %k2, %t2 = dsf.layer 2 (%X1) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv2, !ik2, !t2) {
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
    // expected-error @below {{layer 3 reads the cache of layer 0, but its group's Full layer (the nearest preceding one of ratio 2) is 2}}
    %X3 = dsf.layer 3 (%X2, %c0, %t2) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

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
    %X2, %c2, %k2, %t2 = dsf.layer 2 (%X1) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv2, !ik2, !t2) {
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
    // expected-error @below {{layer 3 reuses the top-k of layer 0, but the nearest preceding index source of ratio 2 is 2}}
    %X3 = dsf.layer 3 (%X2, %c2, %t0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reuse>, ratio = 2 : i64} : (tensor<?x8xf32>, !kv2, !t2) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv2, %t: !t2):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv2, !t2 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

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
    %X0, %c0, %k0, %t0, %p0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (tensor<?x8xf32>, !kv1, !ik1, !t1, !p1) {
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
    %X1, %t1 = dsf.layer 1 (%X0, %c0, %k0, %p0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reindex>, ratio = 1 : i64} : (tensor<?x8xf32>, !kv1, !ik1, !p1) -> (tensor<?x8xf32>, !t1) {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv1, %k: !ik1, %p: !p1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %t = dsf.index_topk %q, %iw, %k within %p {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1, !p1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a, %t : tensor<?x8xf32>, !t1
    }
    %X2, %p2 = dsf.layer 2 (%X1, %c0, %k0, %p0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reindex>, ratio = 1 : i64} : (tensor<?x8xf32>, !kv1, !ik1, !p1) -> (tensor<?x8xf32>, !p1) {
    ^bb0(%a: tensor<?x8xf32>, %c: !kv1, %k: !ik1, %p: !p1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %t = dsf.index_topk %q, %iw, %k within %p {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1, !p1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a, %p : tensor<?x8xf32>, !p1
    }
    // expected-error @below {{layer 3 reads a candidate pool from layer 2, which is not a Full layer}}
    %X3, %t3 = dsf.layer 3 (%X2, %c0, %k0, %p2) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<reindex>, ratio = 1 : i64} : (tensor<?x8xf32>, !kv1, !ik1, !p1) -> (tensor<?x8xf32>, !t1) {
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

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
// expected-error @below {{family must be deepseek_v4 or deepseek_v41, got 'llama'}}
dsf.model @m attributes {family = "llama", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
// expected-error @below {{vocab_size, hidden_size, num_layers and hc_mult must be positive}}
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 0} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
// expected-error @below {{decoder_start describes V4.1's encoder-decoder split}}
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1, decoder_start = 0 : i64} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
// expected-error @below {{decoder_start 7 is outside [0, 1]}}
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1, decoder_start = 7 : i64} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv2 = !dsf.cache<kv, ratio = 2, width = 8, #dsf.quant<f32>>
!ik2 = !dsf.cache<index_keys, ratio = 2, width = 8, #dsf.quant<f32>>
!t2 = !dsf.topk<k = 2, ratio = 2>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
!p1 = !dsf.pool<blocks = 2, block_size = 4, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{is not allowed at the top of a dsf.model (weights and functions only)}}
  "test.other"() : () -> ()
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @forward(%x: tensor<?x8xf32>) {
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{weight @w must be f32, bf16 or i32 (a routing table), got 'f16'}}
  dsf.weight @w : tensor<8x8xf16>
}

// -----

dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{weight @w has an empty dimension}}
  dsf.weight @w : tensor<0x8xf32>
}

// -----

dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{weight @w has a 2-D block format but rank 1}}
  dsf.weight @w : tensor<8xbf16> {format = #dsf.quant<e4m3, scale = ue8m0, block = 32x32>}
}

// -----

dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{weight formats take no bf16_tail}}
  dsf.weight @w : tensor<8x64xbf16> {format = #dsf.quant<e4m3, scale = ue8m0, block = 32, bf16_tail = 32>}
}

// -----

dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{expert_names must contain '{e}' for the expert index}}
  dsf.weight @w : tensor<2x8x8xbf16> {expert_names = "layers.0.ffn.experts.w1.weight"}
}

// -----

dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{weight @w is 'tensor<2x8xf32>' but its value is 'tensor<8x2xf32>'}}
  dsf.weight @w : tensor<2x8xf32> {value = dense<0.5> : tensor<8x2xf32>}
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: the kv part of a split layer computes no queries, indexer or attention}}
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!win, !kv1, !ik1) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %o = dsf.attention %q, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win -> tensor<?x1x8xf32>
      dsf.yield %w, %c, %k : !win, !kv1, !ik1
    }
    %X0 = dsf.layer 0 (%x, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: the kv part of a split layer computes its compressed KV (dsf.compress and a kv dsf.cache.write)}}
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!win, !kv1, !ik1) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.linear %a weight(@wkv) : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      dsf.yield %w, %c, %k : !win, !kv1, !ik1
    }
    %X0 = dsf.layer 0 (%x, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!win, !kv1, !ik1) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      dsf.yield %w, %c, %k : !win, !kv1, !ik1
    }
    // expected-error @below {{layer 0: the rest part of a split layer reads the caches of its kv part}}
    %X0 = dsf.layer 0 (%x, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      %l2 = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!win, !kv1, !ik1) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      dsf.yield %w, %c, %k : !win, !kv1, !ik1
    }
    // expected-error @below {{layer 0: the rest part of a split Full layer computes its own top-k}}
    %X0 = dsf.layer 0 (%x, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = "test.topk"() : () -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!win, !kv1, !ik1) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      dsf.yield %w, %c, %k : !win, !kv1, !ik1
    }
    // expected-error @below {{layer 0: the rest part of a split layer reads its cache and window as inputs}}
    %X0 = dsf.layer 0 (%x, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1
      %w9 = dsf.window.write %a : tensor<?x8xf32> -> !win
      %o = dsf.attention %q, %w9, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>, %ww: !win, %cc: !kv1, %kk: !ik1) {
    // expected-error @below {{layer 0: a rest part follows the kv part of the same layer}}
    %X0 = dsf.layer 0 (%x, %ww, %cc, %kk) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    // expected-error @below {{layer 0: only a Full layer is split into kv and rest parts}}
    %X0 = dsf.layer 0 (%x) {attention = #dsf.attention<sliding>, part = #dsf.layer_part<kv>, ratio = 0 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>):
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
// expected-error @below {{candidate_pool is [source layer, blocks, block size], got 2 values}}
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1, candidate_pool = array<i64: 0, 8>} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!win, !kv1, !ik1) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      dsf.yield %w, %c, %k : !win, !kv1, !ik1
    }
    %X0 = dsf.layer 0 (%x, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv1 = !dsf.cache<kv, ratio = 1, width = 8, #dsf.quant<f32>>
!ik1 = !dsf.cache<index_keys, ratio = 1, width = 8, #dsf.quant<f32>>
!t1 = !dsf.topk<k = 2, ratio = 1>
// expected-error @below {{candidate_pool needs a source layer in [0, 1) and positive block count and size}}
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1, candidate_pool = array<i64: 3, 8, 4>} {
  dsf.weight @wq : tensor<8x8xf32>
  dsf.weight @wi : tensor<1x8xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @norm : tensor<8xf32>
  dsf.weight @sink : tensor<1xf32>
  func.func @prefill(%x: tensor<?x8xf32>) {
    %w0, %c0, %k0 = dsf.layer 0 (%x) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<kv>, ratio = 1 : i64} : (tensor<?x8xf32>) -> (!win, !kv1, !ik1) {
    ^bb0(%a: tensor<?x8xf32>):
      %w = dsf.window.write %a : tensor<?x8xf32> -> !win
      %l = dsf.compress %a {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @wkv, norm = @norm, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
      %c = dsf.cache.write %l : tensor<?x8xf32> -> !kv1
      %k = dsf.cache.write %l : tensor<?x8xf32> -> !ik1
      dsf.yield %w, %c, %k : !win, !kv1, !ik1
    }
    %X0 = dsf.layer 0 (%x, %w0, %c0, %k0) {attention = #dsf.attention<csa2>, mode = #dsf.csa2_mode<full>, part = #dsf.layer_part<rest>, ratio = 1 : i64} : (tensor<?x8xf32>, !win, !kv1, !ik1) -> tensor<?x8xf32> {
    ^bb0(%a: tensor<?x8xf32>, %w: !win, %c: !kv1, %k: !ik1):
      %q = dsf.linear %a weight(@wq) : tensor<?x8xf32> -> tensor<?x1x8xf32>
      %iw = dsf.linear %a weight(@wi) : tensor<?x8xf32> -> tensor<?x1xf32>
      %t = dsf.index_topk %q, %iw, %k {k = 2 : i64, scale = 1.0 : f64} : tensor<?x1x8xf32>, tensor<?x1xf32>, !ik1 -> !t1
      %o = dsf.attention %q, %w, %c [%t] sink(@sink) {scale = 1.0 : f64} : tensor<?x1x8xf32>, !win, !kv1, !t1 -> tensor<?x1x8xf32>
      dsf.yield %a : tensor<?x8xf32>
    }
    return
  }
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{count must be positive, got 0}}
  %0 = dsf.take_last %x {count = 0 : i64} : tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @below {{takes rows of a tensor whose token axis is dynamic}}
  %0 = dsf.take_last %x {count = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>, %p: tensor<?x4xf32>, %y6: tensor<?x6xf32>) {
  // expected-error @below {{sinkhorn_iters must be at least 1, got 0}}
  %0:4 = dsf.mhc.fused_update %X, %y, %post, %comb {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 0 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>, %p: tensor<?x4xf32>, %y6: tensor<?x6xf32>) {
  // expected-error @below {{block output has shape [?, 6], expected [?, 8]}}
  %0:4 = dsf.mhc.fused_update %X, %y6, %post, %comb {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32>, tensor<?x6xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>, %p: tensor<?x4xf32>, %y6: tensor<?x6xf32>) {
  // expected-error @below {{next comb has shape [?, 4, 2], expected [?, 4, 4]}}
  %0:4 = dsf.mhc.fused_update %X, %y, %post, %comb {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x2xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>, %p: tensor<?x4xf32>, %y6: tensor<?x6xf32>) {
  // expected-error @below {{updated streams must have the streams' type}}
  %0:4 = dsf.mhc.fused_update %X, %y, %post, %comb {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<3x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>, %p: tensor<?x4xf32>, %y6: tensor<?x6xf32>) {
  // expected-error @below {{collapse pre has shape [?, 4, 8], expected [?, 4]}}
  %0:5 = dsf.mhc.fused_update %X, %y, %post, %comb collapse(%X) {fn = @fn, base = @b, scale = @s, sinkhorn_iters = 20 : i64, eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64} : tensor<?x4x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @f(%X: tensor<?x4x8xf32>, %y: tensor<?x8xf32>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>, %p: tensor<?x4xf32>) {
  // The custom form cannot spell a collapse without its result; the generic form can.
  // expected-error @below {{a collapse needs both its weights (collapse(...)) and its result}}
  %0:4 = "dsf.mhc.fused_update"(%X, %y, %post, %comb, %p) <{base = @b, eps = 1.0e-6 : f64, fn = @fn, norm_eps = 1.0e-6 : f64, scale = @s, sinkhorn_iters = 20 : i64}> : (tensor<?x4x8xf32>, tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<?x4xf32>) -> (tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// expected-error @below {{a live cache is on the device or in host memory, not ssd}}
func.func private @f() attributes {p = #dsf.cache_plan<live = ssd, idle = ssd, ttl = 10>}

// -----

// expected-error @below {{ttl must not be negative, got -1}}
func.func private @f() attributes {p = #dsf.cache_plan<live = device, idle = host, ttl = -1>}

// -----

// expected-error @below {{a dropped cache has no ttl}}
func.func private @f() attributes {p = #dsf.cache_plan<live = device, idle = dropped, ttl = 5>}

// -----

func.func @f(%x: tensor<?x8xf32>, %c: tensor<?x8xf32>) {
  // expected-error @below {{takes a carry but yields none: the rows it leaves open would be lost}}
  %0 = dsf.compress %x carry(%c : tensor<?x8xf32>) {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @w, wgate = @g, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %c: tensor<?x4xf32>) {
  // expected-error @below {{carries rows of the input's type 'tensor<?x8xf32>', got 'tensor<?x4xf32>'}}
  %0, %1 = dsf.compress %x carry(%c : tensor<?x4xf32>) {kind = #dsf.compressor<pair>, ratio = 2 : i64, wkv = @w, wgate = @g, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @below {{a project compressor (ratio 1) leaves no rows open: it carries nothing}}
  %0, %1 = dsf.compress %x {kind = #dsf.compressor<project>, ratio = 1 : i64, wkv = @w, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %p: !dsf.cache<kv, ratio = 1, width = 16, #dsf.quant<f32>>) {
  // expected-error @below {{appends to a prior cache of another type ('!dsf.cache<kv, ratio = 1, width = 16, #dsf.quant<f32>>')}}
  %0 = dsf.cache.write %x after %p : !dsf.cache<kv, ratio = 1, width = 16, #dsf.quant<f32>> : tensor<?x16xf32> -> !dsf.cache<kv, ratio = 2, width = 16, #dsf.quant<f32>>
  return
}

// -----

func.func @f(%x: tensor<?x16xf32>, %p: !dsf.window<size = 8, width = 16, #dsf.quant<f32>>) {
  // expected-error @below {{continues a prior window of another type ('!dsf.window<size = 8, width = 16, #dsf.quant<f32>>')}}
  %0 = dsf.window.write %x after %p : !dsf.window<size = 8, width = 16, #dsf.quant<f32>> : tensor<?x16xf32> -> !dsf.window<size = 4, width = 16, #dsf.quant<f32>>
  return
}

// -----

func.func @f(%q: tensor<?x2x32xf32>, %w: !dsf.window<size = 4, width = 32, #dsf.quant<f32>>, %p: tensor<?x2xi32>) {
  // expected-error @below {{positions must be [tokens]}}
  %0 = dsf.attention %q, %w at(%p : tensor<?x2xi32>) sink(@s) {scale = 1.0 : f64} : tensor<?x2x32xf32>, !dsf.window<size = 4, width = 32, #dsf.quant<f32>> -> tensor<?x2x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x16xf32>, %w: tensor<?x2xf32>, %k: !dsf.cache<index_keys, ratio = 1, width = 16, #dsf.quant<f32>>, %p: tensor<?x2xi64>) {
  // expected-error @below {{positions must be [tokens]}}
  %0 = dsf.index_topk %q, %w, %k at(%p : tensor<?x2xi64>) {k = 4 : i64, scale = 1.0 : f64} : tensor<?x2x16xf32>, tensor<?x2xf32>, !dsf.cache<index_keys, ratio = 1, width = 16, #dsf.quant<f32>> -> !dsf.topk<k = 4, ratio = 1>
  return
}
