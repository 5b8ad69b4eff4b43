// RUN: dsf-opt %s --split-input-file --dsf-batch-decode -verify-diagnostics

// A model without @decode has no step to batch.
// expected-error @below {{has no @decode to batch (run dsf-hoist-decoder-kv and dsf-thread-state first)}}
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  func.func @prefill(%q: tensor<?x2x8xf32>, %rows: tensor<?x8xf32>) -> tensor<?x2x8xf32> attributes {dsf.prefill = "full", dsf.state = []} {
    %o = dsf.layer 0(%q, %rows) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>):
      %w = dsf.window.write %r : tensor<?x8xf32> -> !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
      %x = dsf.attention %a, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !dsf.window<size = 4, width = 8, #dsf.quant<f32>> -> tensor<?x2x8xf32>
      dsf.yield %x : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}

// -----

// A decode whose window starts afresh (no prior): each token of a batch
// continues its own sequence.
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  func.func @decode(%q: tensor<?x2x8xf32>, %rows: tensor<?x8xf32>, %pos: tensor<?xi32>) -> tensor<?x2x8xf32> attributes {dsf.state = []} {
    %o = dsf.layer 0(%q, %rows, %pos) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>):
      // expected-error @below {{starts a window; a batched decode continues each sequence's (its prior)}}
      %w = dsf.window.write %r : tensor<?x8xf32> -> !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
      %x = dsf.attention %a, %w at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !dsf.window<size = 4, width = 8, #dsf.quant<f32>> -> tensor<?x2x8xf32>
      dsf.yield %x : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}

// -----

// Attention without its queries' positions: in a batch the tokens are of
// different sequences, at positions of their own.
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  func.func @decode(%q: tensor<?x2x8xf32>, %rows: tensor<?x8xf32>, %prior: !win) -> tensor<?x2x8xf32> attributes {dsf.state = ["layers.0.window"]} {
    %o = dsf.layer 0(%q, %rows, %prior) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, !win) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %pw: !win):
      %w = dsf.window.write %r after %pw : !win : tensor<?x8xf32> -> !win
      // expected-error @below {{has no positions (at): a batched decode's tokens are of different sequences}}
      %x = dsf.attention %a, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !win -> tensor<?x2x8xf32>
      dsf.yield %x : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}


// -----

// A cache written afresh (no prior): a batched decode continues each
// sequence's caches.
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv = !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @wg : tensor<8x8xf32>
  dsf.weight @ape : tensor<4x8xf32>
  dsf.weight @n : tensor<8xf32>
  func.func @decode(%q: tensor<?x2x8xf32>, %x: tensor<?x8xf32>, %pos: tensor<?xi32>, %prior: !win, %carry: tensor<?x8xf32>) -> tensor<?x2x8xf32> attributes {dsf.state = ["layers.0.window", "layers.0.compressor.carry"]} {
    %o = dsf.layer 0(%q, %x, %pos, %prior, %carry) {attention = #dsf.attention<hca>, ratio = 4 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?xi32>, !win, tensor<?x8xf32>) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %pw: !win, %c: tensor<?x8xf32>):
      %w = dsf.window.write %r after %pw : !win : tensor<?x8xf32> -> !win
      %lat, %open = dsf.compress %r carry(%c : tensor<?x8xf32>) {kind = #dsf.compressor<pool>, ratio = 4 : i64, wkv = @wkv, wgate = @wg, ape = @ape, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
      // expected-error @below {{starts a cache; a batched decode continues each sequence's (its prior)}}
      %kv = dsf.cache.write %lat : tensor<?x8xf32> -> !kv
      %y = dsf.attention %a, %w, %kv at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !win, !kv -> tensor<?x2x8xf32>
      dsf.yield %y : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}

// -----

// A pooling compressor without its carry: each sequence's open group goes
// on from where it was.
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv = !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @wg : tensor<8x8xf32>
  dsf.weight @ape : tensor<4x8xf32>
  dsf.weight @n : tensor<8xf32>
  func.func @decode(%q: tensor<?x2x8xf32>, %x: tensor<?x8xf32>, %pos: tensor<?xi32>, %prior: !win, %carry: tensor<?x8xf32>) -> tensor<?x2x8xf32> attributes {dsf.state = ["layers.0.window", "layers.0.compressor.carry"]} {
    %o = dsf.layer 0(%q, %x, %pos, %prior, %carry) {attention = #dsf.attention<hca>, ratio = 4 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?xi32>, !win, tensor<?x8xf32>) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %pw: !win, %c: tensor<?x8xf32>):
      %w = dsf.window.write %r after %pw : !win : tensor<?x8xf32> -> !win
      // expected-error @below {{has no carry; a batched decode continues each sequence's open group}}
      %lat, %open = dsf.compress %r {kind = #dsf.compressor<pool>, ratio = 4 : i64, wkv = @wkv, wgate = @wg, ape = @ape, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
      %kv = dsf.cache.write %lat : tensor<?x8xf32> -> !kv
      %y = dsf.attention %a, %w, %kv at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !win, !kv -> tensor<?x2x8xf32>
      dsf.yield %y : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}

// -----

// The last tokens of a call are a prefill's notion: in a batch every token
// is the last of its own sequence.
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
!kv = !dsf.cache<kv, ratio = 4, width = 8, #dsf.quant<f32>>
dsf.model @m attributes {family = "deepseek_v4", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  dsf.weight @wkv : tensor<8x8xf32>
  dsf.weight @wg : tensor<8x8xf32>
  dsf.weight @ape : tensor<4x8xf32>
  dsf.weight @n : tensor<8xf32>
  func.func @decode(%q: tensor<?x2x8xf32>, %x: tensor<?x8xf32>, %pos: tensor<?xi32>, %prior: !win, %carry: tensor<?x8xf32>) -> tensor<?x2x8xf32> attributes {dsf.state = ["layers.0.window", "layers.0.compressor.carry"]} {
    // expected-error @below {{takes the last token of a call, which a batched decode does not have (each token is its own sequence's)}}
    %last = dsf.take_last %x {count = 1 : i64} : tensor<?x8xf32>
    %o = dsf.layer 0(%q, %x, %pos, %prior, %carry) {attention = #dsf.attention<hca>, ratio = 4 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?xi32>, !win, tensor<?x8xf32>) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %pw: !win, %c: tensor<?x8xf32>):
      %w = dsf.window.write %r after %pw : !win : tensor<?x8xf32> -> !win
      %lat, %open = dsf.compress %r carry(%c : tensor<?x8xf32>) {kind = #dsf.compressor<pool>, ratio = 4 : i64, wkv = @wkv, wgate = @wg, ape = @ape, norm = @n, eps = 1.0e-6 : f64} : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
      %kv = dsf.cache.write %lat : tensor<?x8xf32> -> !kv
      %y = dsf.attention %a, %w, %kv at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !win, !kv -> tensor<?x2x8xf32>
      dsf.yield %y : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}
