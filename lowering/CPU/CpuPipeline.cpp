//===- CpuPipeline.cpp - the host (CPU) lowering pipeline ------------------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

LogicalResult mlir::dsf::buildCpuPipeline(OpPassManager &pm) {
  if (failed(parsePassPipeline("dsf-to-linalg", pm)))
    return failure();
  return buildCpuPipelineFromLinalg(pm);
}

LogicalResult mlir::dsf::buildBufferization(OpPassManager &pm) {
  // Tensors bufferize across function boundaries with identity layouts, so
  // entry points take plain memrefs the runtime can describe. A function
  // does not return the arguments it updated in place: the layers' functions
  // (drop-equivalent-buffer-results) and a batched step's slots
  // (dsf-state-in-place). The scatters into those slots (scf.forall) become
  // parallel loops, as linalg's do. The constants' globals get names in the
  // order of their first use (dsf-name-constants: the same model, the same
  // bytes). A buffer bufferization staged through a copy only to copy it
  // back is updated in place (dsf-fold-round-trip-copies: RoPE's odd
  // channels), and one computed only to be copied into a view is computed
  // there (dsf-fold-output-copies: the rows a cache write appends).
  // Ownership-based deallocation frees every
  // intermediate buffer; an entry point's results are the caller's to free.
  if (failed(parsePassPipeline("canonicalize,"
                               "one-shot-bufferize{bufferize-function-boundaries=1 "
                               "function-boundary-type-conversion=identity-layout-map},"
                               "drop-equivalent-buffer-results,dsf-state-in-place,dsf-name-constants,dsf-fold-round-trip-copies,"
                               "dsf-fold-output-copies,"
                               "func.func(scf-forall-to-parallel)",
                               pm)))
    return failure();
  bufferization::buildBufferDeallocationPipeline(pm);
  return success();
}

LogicalResult mlir::dsf::buildCpuPipelineFromLinalg(OpPassManager &pm) {
  // Bufferization, then loops and LLVM (math through LLVM intrinsics, libm
  // where LLVM has none).
  if (failed(buildBufferization(pm)))
    return failure();
  return parsePassPipeline("canonicalize,convert-linalg-to-loops,lower-affine,"
                           "expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-bufferization-to-memref,"
                           "finalize-memref-to-llvm,convert-math-to-llvm,"
                           "convert-math-to-libm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,"
                           "convert-arith-to-llvm,reconcile-unrealized-casts",
                           pm);
}

void mlir::dsf::registerCpuPipeline() {
  PassPipelineRegistration<>("dsf-lower-cpu", "Lower dsf to LLVM for the host (CPU)", [](OpPassManager &pm) {
    if (failed(buildCpuPipeline(pm)))
      llvm::report_fatal_error("dsf-lower-cpu: bad pipeline text");
  });
}
