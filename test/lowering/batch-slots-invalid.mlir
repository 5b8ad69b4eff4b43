// RUN: dsf-opt %s --dsf-to-linalg --split-input-file -verify-diagnostics
// RUN: not dsf-opt %s --dsf-to-linalg="page-tokens=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=PAGES

// PAGES: page-tokens must be at least 1, not 0

// A batched entry point keeps its sequences' state in slots it is given
// after its token inputs: without a threaded state there are none.
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  // expected-error @below {{is batched (dsf.batched) but has no threaded state after its token inputs}}
  func.func @batch_decode(%q: tensor<?x2x8xf32>, %rows: tensor<?x8xf32>, %pos: tensor<?xi32>, %prior: !win) -> tensor<?x2x8xf32> attributes {dsf.batched} {
    %o = dsf.layer 0(%q, %rows, %pos, %prior) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?xi32>, !win) -> tensor<?x2x8xf32> {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %pw: !win):
      %w = dsf.window.write %r after %pw : !win : tensor<?x8xf32> -> !win
      %x = dsf.attention %a, %w at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !win -> tensor<?x2x8xf32>
      dsf.yield %x : tensor<?x2x8xf32>
    }
    return %o : tensor<?x2x8xf32>
  }
}

// -----

// Its second input is its tokens' positions (after the ids), which say
// where each token's row goes in its sequence's slots.
!win = !dsf.window<size = 4, width = 8, #dsf.quant<f32>>
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @sink : tensor<2xf32>
  // expected-error @below {{is batched (dsf.batched) but its second input is not the tokens' positions}}
  func.func @batch_decode(%q: tensor<?x2x8xf32>, %rows: tensor<?x8xf32>, %pos: tensor<?xi32>, %prior: !win) -> (tensor<?x2x8xf32>, !win) attributes {dsf.batched, dsf.state = ["layers.0.window"]} {
    %o:2 = dsf.layer 0(%q, %rows, %pos, %prior) {attention = #dsf.attention<sliding>, ratio = 0 : i64} : (tensor<?x2x8xf32>, tensor<?x8xf32>, tensor<?xi32>, !win) -> (tensor<?x2x8xf32>, !win) {
    ^bb0(%a: tensor<?x2x8xf32>, %r: tensor<?x8xf32>, %p: tensor<?xi32>, %pw: !win):
      %w = dsf.window.write %r after %pw : !win : tensor<?x8xf32> -> !win
      %kept = dsf.window.retain %w : !win
      %x = dsf.attention %a, %w at(%p : tensor<?xi32>) sink(@sink) {scale = 1.0 : f64} : tensor<?x2x8xf32>, !win -> tensor<?x2x8xf32>
      dsf.yield %x, %kept : tensor<?x2x8xf32>, !win
    }
    return %o#0, %o#1 : tensor<?x2x8xf32>, !win
  }
}
