// RUN: dsf-opt %s --dsf-gpu-fuse-mhc --split-input-file -verify-diagnostics | FileCheck %s

// A fused site (update and collapse) of 4 streams of 512 channels: its body
// becomes two kernels. The first, a block per (token, 256 channels), writes
// X' and the collapse and sums 24 projections and the squares (25 values:
// 5 shuffles each, a [8 warps x 25] shared table, partials [tokens, 2, 25]);
// the second, a warp per token (4 a block of 128), has lane v add value v's 2
// partials in order, takes the sum of squares from lane 24 and each cell
// from lane 8 + c by index shuffles, writes pre and post from lanes 0-7, and
// runs the row softmax and the 19 remaining Sinkhorn rounds with a cell a
// lane (4 index shuffles a normalisation).
// CHECK-LABEL: func.func private @dsf_hc_site_n4_w512_i20_e358637bd_ne1e3ce508_update_collapse
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[X2:.*]] = memref.alloc(%[[T]]) : memref<?x4x512xf32>
// CHECK: %[[PRE:.*]] = memref.alloc(%[[T]]) : memref<?x4xf32>
// CHECK: %[[POST:.*]] = memref.alloc(%[[T]]) : memref<?x4xf32>
// CHECK: %[[COMB:.*]] = memref.alloc(%[[T]]) : memref<?x4x4xf32>
// CHECK: %[[H:.*]] = memref.alloc(%[[T]]) : memref<?x512xf32>
// CHECK: %[[PART:.*]] = memref.alloc(%[[T]]) : memref<?x2x25xf32>
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[T]], %c2
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK-SAME: workgroup(%[[SUMS:.*]] : memref<8x25xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-4: memref.store %{{.*}}, %[[X2]]
// CHECK: memref.store %{{.*}}, %[[H]]
// CHECK-COUNT-96: memref.load %arg5
// CHECK: } else {
// CHECK-COUNT-125: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[PART]]
// CHECK: gpu.terminator
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c128
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2{{.*}} step %c1{{.*}} iter_args
// CHECK: gpu.shuffle  idx
// CHECK: math.sqrt
// CHECK: memref.store %{{.*}}, %[[PRE]]
// CHECK: memref.store %{{.*}}, %[[POST]]
// CHECK-COUNT-5: gpu.shuffle  idx
// CHECK: math.exp
// CHECK-COUNT-8: gpu.shuffle  idx
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c19{{.*}} step
// CHECK-COUNT-8: gpu.shuffle  idx
// CHECK: memref.store %{{.*}}, %[[COMB]]
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
// CHECK: memref.dealloc %[[PART]]
// CHECK: return %[[X2]], %[[PRE]], %[[POST]], %[[COMB]], %[[H]]
func.func private @dsf_hc_site_n4_w512_i20_e358637bd_ne1e3ce508_update_collapse(
    %X: memref<?x4x512xf32>, %F: memref<?x512xf32>, %post: memref<?x4xf32>, %comb: memref<?x4x4xf32>,
    %pre: memref<?x4xf32>, %fn: memref<24x2048xf32>, %base: memref<24xf32>, %scale: memref<3xf32>)
    -> (memref<?x4x512xf32>, memref<?x4xf32>, memref<?x4xf32>, memref<?x4x4xf32>, memref<?x512xf32>)
    attributes {dsf.hc_site = {n = 4 : i64, width = 512 : i64, iters = 20 : i64, eps = 1.0e-06 : f32,
                               norm_eps = 1.0e-20 : f32, update = true, collapse = true}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %X, %c0 : memref<?x4x512xf32>
  %a = memref.alloc(%t) : memref<?x4x512xf32>
  %b = memref.alloc(%t) : memref<?x4xf32>
  %c = memref.alloc(%t) : memref<?x4xf32>
  %d = memref.alloc(%t) : memref<?x4x4xf32>
  %e = memref.alloc(%t) : memref<?x512xf32>
  return %a, %b, %c, %d, %e : memref<?x4x512xf32>, memref<?x4xf32>, memref<?x4xf32>, memref<?x4x4xf32>, memref<?x512xf32>
}

// -----

// 6 streams: 48 projections do not fit a warp's lanes; a thread per token
// (128 a block) keeps the 36 cells in registers.
// CHECK-LABEL: func.func private @dsf_hc_site_n6_w64_i2
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}} step
// CHECK-COUNT-36: memref.store
// CHECK: gpu.terminator
func.func private @dsf_hc_site_n6_w64_i2(%X: memref<?x6x64xf32>, %fn: memref<48x384xf32>, %base: memref<48xf32>,
                                         %scale: memref<3xf32>)
    -> (memref<?x6xf32>, memref<?x6xf32>, memref<?x6x6xf32>)
    attributes {dsf.hc_site = {n = 6 : i64, width = 64 : i64, iters = 2 : i64, eps = 1.0e-06 : f32,
                               norm_eps = 1.0e-20 : f32, update = false, collapse = false}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %X, %c0 : memref<?x6x64xf32>
  %b = memref.alloc(%t) : memref<?x6xf32>
  %c = memref.alloc(%t) : memref<?x6xf32>
  %d = memref.alloc(%t) : memref<?x6x6xf32>
  return %b, %c, %d : memref<?x6xf32>, memref<?x6xf32>, memref<?x6x6xf32>
}

// -----

// A coefficients-only site (V4's mhc.coeffs) of 2 streams of 100 channels:
// one partial a token, X read and nothing written but the coefficients.
// CHECK-LABEL: func.func private @dsf_hc_site_n2_w100_i1
// CHECK-NOT: memref<?x2x100xf32> = memref.alloc
// CHECK: memref.alloc(%{{.*}}) : memref<?x1x9xf32>
// CHECK: gpu.launch
// CHECK-NOT: memref.store %{{.*}}, %arg0
// CHECK: gpu.launch
// CHECK-NOT: scf.for %{{.*}} = %c0{{.*}} to %c0
// CHECK: return
func.func private @dsf_hc_site_n2_w100_i1(%X: memref<?x2x100xf32>, %fn: memref<8x200xf32>, %base: memref<8xf32>,
                                          %scale: memref<3xf32>)
    -> (memref<?x2xf32>, memref<?x2xf32>, memref<?x2x2xf32>)
    attributes {dsf.hc_site = {n = 2 : i64, width = 100 : i64, iters = 1 : i64, eps = 1.0e-06 : f32,
                               norm_eps = 1.0e-20 : f32, update = false, collapse = false}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %X, %c0 : memref<?x2x100xf32>
  %b = memref.alloc(%t) : memref<?x2xf32>
  %c = memref.alloc(%t) : memref<?x2xf32>
  %d = memref.alloc(%t) : memref<?x2x2xf32>
  return %b, %c, %d : memref<?x2xf32>, memref<?x2xf32>, memref<?x2x2xf32>
}

// -----

// Not bufferized: the pass runs after one-shot-bufferize.
// expected-error @below {{dsf-gpu-fuse-mhc: a dsf.hc_site helper that is not the bufferized (X, [block output, post, comb], [collapse pre], fn, base, scale) -> ([X'], pre, post, comb, [collapse]) of its n, width and iters}}
func.func private @dsf_hc_site_tensors(%X: tensor<?x2x100xf32>, %fn: tensor<8x200xf32>, %base: tensor<8xf32>,
                                       %scale: tensor<3xf32>)
    -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>)
    attributes {dsf.hc_site = {n = 2 : i64, width = 100 : i64, iters = 1 : i64, eps = 1.0e-06 : f32,
                               norm_eps = 1.0e-20 : f32, update = false, collapse = false}} {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %X, %c0 : tensor<?x2x100xf32>
  %b = tensor.empty(%t) : tensor<?x2xf32>
  %d = tensor.empty(%t) : tensor<?x2x2xf32>
  return %b, %b, %d : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>
}

// -----

// The attribute and the signature disagree: fn is [(2+n)n, n width] = [24, 2048] for n 4, width 512.
// expected-error @below {{dsf-gpu-fuse-mhc: a dsf.hc_site helper that is not the bufferized}}
func.func private @dsf_hc_site_wrong_fn(%X: memref<?x4x512xf32>, %fn: memref<24x512xf32>, %base: memref<24xf32>,
                                        %scale: memref<3xf32>)
    -> (memref<?x4xf32>, memref<?x4xf32>, memref<?x4x4xf32>)
    attributes {dsf.hc_site = {n = 4 : i64, width = 512 : i64, iters = 20 : i64, eps = 1.0e-06 : f32,
                               norm_eps = 1.0e-20 : f32, update = false, collapse = false}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %X, %c0 : memref<?x4x512xf32>
  %b = memref.alloc(%t) : memref<?x4xf32>
  %d = memref.alloc(%t) : memref<?x4x4xf32>
  return %b, %b, %d : memref<?x4xf32>, memref<?x4xf32>, memref<?x4x4xf32>
}

// -----

// An attribute without its fields.
// expected-error @below {{dsf-gpu-fuse-mhc: a dsf.hc_site helper that is not the bufferized}}
func.func private @dsf_hc_site_no_fields(%X: memref<?x4x512xf32>) -> memref<?x4xf32>
    attributes {dsf.hc_site = {n = 4 : i64}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %X, %c0 : memref<?x4x512xf32>
  %b = memref.alloc(%t) : memref<?x4xf32>
  return %b : memref<?x4xf32>
}
