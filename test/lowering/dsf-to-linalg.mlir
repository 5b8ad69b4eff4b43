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

// A constant weight whose stored type the CPU does not compute in (bf16 here:
// every float weight is bound as f32) is named, not converted silently.
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 2, num_layers = 1, hc_mult = 1} {
  // expected-error @below {{lowering needs the value of @w as 'tensor<2x2xf32>'}}
  dsf.weight @w : tensor<2x2xbf16> {value = dense<1.0> : tensor<2x2xbf16>}
  func.func @forward(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %y = dsf.linear %x weight(@w) : tensor<?x2xf32> -> tensor<?x2xf32>
    return %y : tensor<?x2xf32>
  }
}
