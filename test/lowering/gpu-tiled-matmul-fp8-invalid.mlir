// RUN: dsf-opt %s --dsf-gpu-tiled-matmul --split-input-file -verify-diagnostics

// dsf.packed_fp8 marks a product of an FP8 weight bound packed, whose kernels
// decode the codes in their own code: a marked generic that is not that
// product is an error naming the mark and what does not fit, never a
// product of other values.

#fa = affine_map<(t, o, d) -> (t, d)>
#fw = affine_map<(t, o, d) -> (o, d)>
#fc = affine_map<(t, o, d) -> (t, o)>
// Scales of the wrong shape for the blocks: [40, 64] in 32 x 32 blocks need 2 x 2.
func.func @misshaped_scales(%x: memref<?x64xf32>, %codes: memref<40x64xi8>, %scales: memref<1x2xi8>,
                            %y: memref<?x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: codes 40x64 in blocks of 32x32 need 2x2 scales, not 1x2}}
  linalg.generic {indexing_maps = [#fa, #fw, #fc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x64xf32>, memref<40x64xi8>) outs(%y : memref<?x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %c0 = arith.constant 0 : index
    %s = memref.load %scales[%c0, %c0] : memref<1x2xi8>
    %si = arith.extui %s : i8 to i32
    %v = arith.uitofp %si : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#fa = affine_map<(t, o, d) -> (t, d)>
#fw = affine_map<(t, o, d) -> (o, d)>
#fc = affine_map<(t, o, d) -> (t, o)>
// A body that reads no scales.
func.func @no_scales(%x: memref<?x64xf32>, %codes: memref<40x64xi8>, %y: memref<?x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: the body must read one i8 [rows, cols] buffer of UE8M0 scales}}
  linalg.generic {indexing_maps = [#fa, #fw, #fc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x64xf32>, memref<40x64xi8>) outs(%y : memref<?x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %ci = arith.extui %c : i8 to i32
    %v = arith.uitofp %ci : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#fa = affine_map<(t, o, d) -> (t, d)>
#fw = affine_map<(t, o, d) -> (o, d)>
#fc = affine_map<(t, o, d) -> (t, o)>
// A block of no rows.
func.func @empty_block(%x: memref<?x64xf32>, %codes: memref<40x64xi8>, %y: memref<?x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: expected [block rows, block columns], both >= 1}}
  linalg.generic {indexing_maps = [#fa, #fw, #fc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x64xf32>, memref<40x64xi8>) outs(%y : memref<?x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 0, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %ci = arith.extui %c : i8 to i32
    %v = arith.uitofp %ci : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#fa = affine_map<(t, o, d) -> (t, d)>
#fw = affine_map<(t, o, d) -> (o, d)>
#fc = affine_map<(t, o, d) -> (t, o)>
// Codes that are not bytes.
func.func @float_codes(%x: memref<?x64xf32>, %codes: memref<40x64xbf16>, %scales: memref<2x2xi8>,
                       %y: memref<?x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: expected f32 rows and output and i8 E4M3 codes}}
  linalg.generic {indexing_maps = [#fa, #fw, #fc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x64xf32>, memref<40x64xbf16>) outs(%y : memref<?x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: bf16, %acc: f32):
    %v = arith.extf %c : bf16 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#e2 = affine_map<(t, o) -> (t, o)>
// Not a product: two loops, no depth to sum over.
func.func @not_a_product(%x: memref<?x40xf32>, %codes: memref<?x40xi8>, %y: memref<?x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: expected a product on buffers: C[t, o] += A[t, d] * W[o, d]}}
  linalg.generic {indexing_maps = [#e2, #e2, #e2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %codes : memref<?x40xf32>, memref<?x40xi8>) outs(%y : memref<?x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %ci = arith.extui %c : i8 to i32
    %v = arith.uitofp %ci : i32 to f32
    %p = arith.mulf %a, %v : f32
    linalg.yield %p : f32
  }
  return
}

// -----

#fa = affine_map<(t, o, d) -> (t, d)>
#fwt = affine_map<(t, o, d) -> (d, o)>
#fc = affine_map<(t, o, d) -> (t, o)>
// W read transposed, W[d, o]: not the rows of codes the kernels read.
func.func @transposed_codes(%x: memref<?x64xf32>, %codes: memref<64x40xi8>, %scales: memref<2x2xi8>,
                            %y: memref<?x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: expected the indexing of C[t, o] += A[t, d] * W[o, d]}}
  linalg.generic {indexing_maps = [#fa, #fwt, #fc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x64xf32>, memref<64x40xi8>) outs(%y : memref<?x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %c0 = arith.constant 0 : index
    %s = memref.load %scales[%c0, %c0] : memref<2x2xi8>
    %si = arith.extui %s : i8 to i32
    %v = arith.uitofp %si : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#ga = affine_map<(t, g, o, d) -> (t, g, d)>
#gw = affine_map<(t, g, o, d) -> (g, o, d)>
#gc = affine_map<(t, g, o, d) -> (t, g, o)>
// Grouped (V4's output projection): each group's scales are its own, so
// codes [2, 40, 64] in 32 x 32 blocks need [2, 2, 2].
func.func @grouped_misshaped_scales(%x: memref<?x2x64xf32>, %codes: memref<2x40x64xi8>, %scales: memref<2x1x2xi8>,
                                    %y: memref<?x2x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: codes 2x40x64 in blocks of 32x32 per group need 2x2x2 scales, not 2x1x2}}
  linalg.generic {indexing_maps = [#ga, #gw, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x2x64xf32>, memref<2x40x64xi8>) outs(%y : memref<?x2x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %c0 = arith.constant 0 : index
    %s = memref.load %scales[%c0, %c0, %c0] : memref<2x1x2xi8>
    %si = arith.extui %s : i8 to i32
    %v = arith.uitofp %si : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#ga = affine_map<(t, g, o, d) -> (t, g, d)>
#gw = affine_map<(t, g, o, d) -> (g, o, d)>
#gc = affine_map<(t, g, o, d) -> (t, g, o)>
// Grouped with the whole weight's scales [rows, cols]: not a group's own.
func.func @grouped_flat_scales(%x: memref<?x2x64xf32>, %codes: memref<2x40x64xi8>, %scales: memref<4x2xi8>,
                               %y: memref<?x2x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: the body must read one i8 [groups, rows, cols] buffer of UE8M0 scales}}
  linalg.generic {indexing_maps = [#ga, #gw, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x2x64xf32>, memref<2x40x64xi8>) outs(%y : memref<?x2x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %c0 = arith.constant 0 : index
    %s = memref.load %scales[%c0, %c0] : memref<4x2xi8>
    %si = arith.extui %s : i8 to i32
    %v = arith.uitofp %si : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#ga = affine_map<(t, g, o, d) -> (t, g, d)>
#gwt = affine_map<(t, g, o, d) -> (o, g, d)>
#gc = affine_map<(t, g, o, d) -> (t, g, o)>
// Grouped with the group not the codes' outer axis: W[o, g, d].
func.func @grouped_misindexed(%x: memref<?x2x64xf32>, %codes: memref<40x2x64xi8>, %scales: memref<2x2x2xi8>,
                              %y: memref<?x2x40xf32>) {
  // expected-error @below {{dsf.packed_fp8: expected the indexing of C[t, g, o] += A[t, g, d] * W[g, o, d]}}
  linalg.generic {indexing_maps = [#ga, #gwt, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x2x64xf32>, memref<40x2x64xi8>) outs(%y : memref<?x2x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %c0 = arith.constant 0 : index
    %s = memref.load %scales[%c0, %c0, %c0] : memref<2x2x2xi8>
    %si = arith.extui %s : i8 to i32
    %v = arith.uitofp %si : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
