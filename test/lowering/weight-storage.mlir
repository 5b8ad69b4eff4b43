// RUN: dsf-opt %s --dsf-to-linalg | FileCheck %s
// RUN: dsf-opt %s --dsf-to-linalg="weight-storage=f32" | FileCheck %s --check-prefix=F32

// Weights declared bf16 stay bf16 (weight-storage=declared, the default): the
// bodies that read them widen each element (arith.extf) as they read it, so
// the kernels built from them read the stored bytes. A small weight read
// whole (the gate's bias) is widened once, by its own generic.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[EMB:[^:]*]]: tensor<16x8xbf16>, %[[NW:[^:]*]]: tensor<8xbf16>, %[[W:[^:]*]]: tensor<4x8xbf16>,
// CHECK-SAME: %[[EW1:[^:]*]]: tensor<4x6x8xbf16>, %{{[^:]*}}: tensor<4x8x6xbf16>, %{{[^:]*}}: tensor<4x6x8xbf16>, %[[G:[^:]*]]: tensor<4x8xbf16>, %[[B:[^:]*]]: tensor<4xbf16>)
// The embedding: a row of the bf16 table, widened.
// CHECK: tensor.extract %[[EMB]]
// CHECK-NEXT: arith.extf %{{.*}} : bf16 to f32
// The norm's weight, widened in the body.
// CHECK: ins(%{{.*}}, %{{.*}}, %[[NW]] : tensor<?x8xf32>, tensor<?xf32>, tensor<8xbf16>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// The projection: the weight read as bf16, widened before the product.
// CHECK: ins(%{{.*}}, %[[W]] : tensor<?x8xf32>, tensor<4x8xbf16>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[WE:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: %[[WF:.*]] = arith.extf %[[WE]] : bf16 to f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[WF]] : f32
// The gate's bias, widened whole once.
// CHECK: ins(%[[B]] : tensor<4xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.extf
// The experts read each chosen expert's bf16 rows, widened.
// CHECK: tensor.extract %[[EW1]]
// CHECK-NEXT: arith.extf %{{.*}} : bf16 to f32

// With weight-storage=f32 every float weight is f32 and nothing is widened.
// F32-LABEL: func.func @forward(
// F32-SAME: tensor<16x8xf32>, %{{[^:]*}}: tensor<8xf32>, %{{[^:]*}}: tensor<4x8xf32>, %{{[^:]*}}: tensor<4x6x8xf32>
// F32-NOT: arith.extf
dsf.model @m attributes {family = "deepseek_v41", vocab_size = 16, hidden_size = 8, num_layers = 1, hc_mult = 1} {
  dsf.weight @emb : tensor<16x8xbf16>
  dsf.weight @nw : tensor<8xbf16>
  dsf.weight @w : tensor<4x8xbf16>
  dsf.weight @ew1 : tensor<4x6x8xbf16>
  dsf.weight @ew2 : tensor<4x8x6xbf16>
  dsf.weight @ew3 : tensor<4x6x8xbf16>
  dsf.weight @gate : tensor<4x8xbf16>
  dsf.weight @bias : tensor<4xbf16>
  func.func @forward(%ids: tensor<?xi32>) -> (tensor<?x4xf32>, tensor<?x8xf32>) {
    %e = dsf.embed %ids weight(@emb) : tensor<?xi32> -> tensor<?x8xf32>
    %n = dsf.rms_norm %e weight(@nw) {eps = 1.0e-6 : f64} : tensor<?x8xf32>
    %y = dsf.linear %n weight(@w) : tensor<?x8xf32> -> tensor<?x4xf32>
    %r, %c = dsf.moe.gate %n {weight = @gate, bias = @bias, top_k = 2 : i64, routed_scale = 1.5 : f64}
        : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %m = dsf.moe.experts %n, %r, %c {w1 = @ew1, w2 = @ew2, w3 = @ew3, swiglu_limit = 1.5 : f64}
        : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xi32> -> tensor<?x8xf32>
    return %y, %m : tensor<?x4xf32>, tensor<?x8xf32>
  }
}
