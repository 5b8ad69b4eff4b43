// RUN: dsf-opt %s --dsf-gpu-grouped-experts --split-input-file -verify-diagnostics

#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @unknown_kind(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %w: memref<4x32x64xf32>, %g: memref<?x2x32xf32>) {
  // expected-error @below {{dsf.experts must be "project" or "down", not "sideways"}}
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "sideways"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    linalg.yield %acc : f32
  }
  return
}

// -----

#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @on_tensors(%experts: tensor<?x2xi32>, %x: tensor<?x64xf32>, %g: tensor<?x2x32xf32>) -> tensor<?x2x32xf32> {
  // expected-error @below {{dsf.experts: expected a bufferized generic of two inputs and one output}}
  %r = linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : tensor<?x2xi32>, tensor<?x64xf32>) outs(%g : tensor<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    linalg.yield %acc : f32
  } -> tensor<?x2x32xf32>
  return %r : tensor<?x2x32xf32>
}

// -----

#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @experts_not_i32(%experts: memref<?x2xf32>, %x: memref<?x64xf32>, %g: memref<?x2x32xf32>) {
  // expected-error @below {{dsf.experts: the first input must be the [tokens, slots] i32 expert indices}}
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xf32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: f32, %a: f32, %acc: f32):
    linalg.yield %acc : f32
  }
  return
}

// -----

#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @no_weight(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %g: memref<?x2x32xf32>) {
  // expected-error @below {{dsf.experts: the body must read a [experts, out, in] float weight, or its MXFP4 codes and scales}}
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @wrong_ranks(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %w: memref<4x32x64xf32>, %g: memref<?x2x32xf32>) {
  // expected-error @below {{dsf.experts: operand ranks do not match a "down" product}}
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "down"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %i = linalg.index 2 : index
    %d = linalg.index 3 : index
    %wv = memref.load %w[%ei, %i, %d] : memref<4x32x64xf32>
    %s = arith.addf %acc, %wv : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two byte buffers that are not codes [E, out, in / 2] and scales
// [E, out, in / 32].
#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @packed_scales_misshaped(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %codes: memref<4x32x32xi8>,
                                   %scales: memref<4x32x4xi8>, %g: memref<?x2x32xf32>) {
  // expected-error @below {{dsf.experts: packed codes [experts, out, in / 2] need UE8M0 scales [experts, out, in / 32]}}
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %i = linalg.index 2 : index
    %d = linalg.index 3 : index
    %c0 = arith.constant 0 : index
    %byte = memref.load %codes[%ei, %i, %c0] : memref<4x32x32xi8>
    %scale = memref.load %scales[%ei, %i, %c0] : memref<4x32x4xi8>
    %b = arith.addi %byte, %scale : i8
    %v = arith.uitofp %b : i8 to f32
    %p = arith.mulf %v, %a : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
