// RUN: dsf-opt %s --dsf-to-linalg="weight-storage=f32" --split-input-file -verify-diagnostics
// RUN: not dsf-opt %s --dsf-to-linalg="weight-storage=fp8" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: weight-storage must be 'declared', 'f32' or 'released', not 'fp8'

// With every weight bound as f32, a bf16 constant weight is named, not
// converted silently.
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 2, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{lowering needs the value of @w as 'tensor<2x2xf32>'}}
  dsf.weight @w : tensor<2x2xbf16> {value = dense<1.0> : tensor<2x2xbf16>}
  func.func @forward(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %y = dsf.linear %x weight(@w) : tensor<?x2xf32> -> tensor<?x2xf32>
    return %y : tensor<?x2xf32>
  }
}
