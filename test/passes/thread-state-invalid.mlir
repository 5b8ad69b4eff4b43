// RUN: dsf-opt %s --dsf-thread-state -verify-diagnostics

// Every entry point of a model keeps the same state: here @decode reads a
// window it is given instead of writing one, so a sequence @prefill started
// could not go on through it.
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  func.func @prefill(%q: tensor<?x2x8xf32>, %rows: tensor<?x8xf32>) -> tensor<?x2x8xf32> attributes {dsf.prefill = "full"} {
    %o = dsf.layer 0(%q, %rows) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>):
      %w = dsf.window.write %r : tensor<?x8xf32> -> !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
      %x = dsf.attention %a, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !dsf.window<size = 4, width = 8, #dsf.quant<f32>> -> tensor<?x2x8xf32>
      dsf.yield %x : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
  // expected-error @below {{keeps another state than @prefill (0 slots against 1): a sequence could not pass from one to the other}}
  func.func @decode(%q: tensor<?x2x8xf32>, %win: !dsf.window<size = 4, width = 8, #dsf.quant<f32>>) -> tensor<?x2x8xf32> {
    %o = dsf.layer 0(%q, %win) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x2x8xf32>, !dsf.window<size = 4, width = 8, #dsf.quant<f32>>) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %w: !dsf.window<size = 4, width = 8, #dsf.quant<f32>>):
      %x = dsf.attention %a, %w sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !dsf.window<size = 4, width = 8, #dsf.quant<f32>> -> tensor<?x2x8xf32>
      dsf.yield %x : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}
