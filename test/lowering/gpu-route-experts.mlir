// RUN: dsf-opt %s --dsf-gpu-route-experts --split-input-file -verify-diagnostics | FileCheck %s

// The router becomes one kernel, a block of 256 threads per token: the 8
// experts' scores (sqrt(softplus)) and biased scores into shared memory, the
// slots cleared, each expert ranked against all 8 and its kept rank's slot
// given it by atomic max, then thread 0 writes the 2 experts and the weights.
// CHECK-LABEL: func.func private @dsf_moe_route_e8_k2_s3fc00000_bias
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[W:.*]] = memref.alloc(%[[T]]) : memref<?x2xf32>
// CHECK: %[[E:.*]] = memref.alloc(%[[T]]) : memref<?x2xi32>
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]], {{.*}} threads({{.*}}) in (%{{.*}} = %c256
// CHECK-SAME: workgroup(%[[S:.*]] : memref<8xf32, #gpu.address_space<workgroup>>, %[[B:.*]] : memref<8xf32, #gpu.address_space<workgroup>>, %[[SLOTS:.*]] : memref<2xi32, #gpu.address_space<workgroup>>)
// CHECK: math.log1p
// CHECK: math.sqrt
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: memref.load %arg1
// CHECK: memref.store %{{.*}}, %[[B]]
// CHECK: gpu.barrier
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf oeq
// CHECK: memref.atomic_rmw maxs %{{.*}}, %[[SLOTS]]
// CHECK: gpu.barrier
// CHECK-COUNT-2: memref.store %{{.*}}, %[[E]]
// CHECK-COUNT-2: memref.store %{{.*}}, %[[W]]
// CHECK: gpu.terminator
// CHECK: return %[[W]], %[[E]]
func.func private @dsf_moe_route_e8_k2_s3fc00000_bias(%logits: memref<?x8xf32>, %bias: memref<8xf32>)
    -> (memref<?x2xf32>, memref<?x2xi32>)
    attributes {dsf.router = {experts = 8 : i64, top_k = 2 : i64, routed_scale = 1.5 : f32, bias = true,
                              image_bias = false}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %logits, %c0 : memref<?x8xf32>
  %w = memref.alloc(%t) : memref<?x2xf32>
  %e = memref.alloc(%t) : memref<?x2xi32>
  return %w, %e : memref<?x2xf32>, memref<?x2xi32>
}

// -----

// Image tokens take bias_vl: a select on the token's mask.
// CHECK-LABEL: func.func private @dsf_moe_route_e4_k1_s3f800000_bias_image
// CHECK: memref.load %arg3
// CHECK: arith.select
func.func private @dsf_moe_route_e4_k1_s3f800000_bias_image(%logits: memref<?x4xf32>, %bias: memref<4xf32>,
                                                            %vl: memref<4xf32>, %image: memref<?xi1>)
    -> (memref<?x1xf32>, memref<?x1xi32>)
    attributes {dsf.router = {experts = 4 : i64, top_k = 1 : i64, routed_scale = 1.0 : f32, bias = true,
                              image_bias = true}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %logits, %c0 : memref<?x4xf32>
  %w = memref.alloc(%t) : memref<?x1xf32>
  %e = memref.alloc(%t) : memref<?x1xi32>
  return %w, %e : memref<?x1xf32>, memref<?x1xi32>
}

// -----

// The attribute asks for a bias the signature does not have.
// expected-error @below {{dsf-gpu-route-experts: a dsf.router helper that is not the bufferized (logits, [bias], [bias_vl, image mask]) -> (weights, experts) of its experts and top_k}}
func.func private @dsf_moe_route_missing_bias(%logits: memref<?x8xf32>) -> (memref<?x2xf32>, memref<?x2xi32>)
    attributes {dsf.router = {experts = 8 : i64, top_k = 2 : i64, routed_scale = 1.5 : f32, bias = true,
                              image_bias = false}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %logits, %c0 : memref<?x8xf32>
  %w = memref.alloc(%t) : memref<?x2xf32>
  %e = memref.alloc(%t) : memref<?x2xi32>
  return %w, %e : memref<?x2xf32>, memref<?x2xi32>
}

// -----

// More slots than experts.
// expected-error @below {{dsf-gpu-route-experts: a dsf.router helper that is not the bufferized}}
func.func private @dsf_moe_route_too_many(%logits: memref<?x2xf32>) -> (memref<?x4xf32>, memref<?x4xi32>)
    attributes {dsf.router = {experts = 2 : i64, top_k = 4 : i64, routed_scale = 1.5 : f32, bias = false,
                              image_bias = false}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %logits, %c0 : memref<?x2xf32>
  %w = memref.alloc(%t) : memref<?x4xf32>
  %e = memref.alloc(%t) : memref<?x4xi32>
  return %w, %e : memref<?x4xf32>, memref<?x4xi32>
}
