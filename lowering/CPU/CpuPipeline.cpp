//===- CpuPipeline.cpp - the host (CPU) lowering pipeline ------------------===//
#include "lowering/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::dsf::registerCpuPipeline() {
  // Tensors bufferize across function boundaries with identity layouts, so
  // entry points take plain memrefs the runtime can describe; then loops and
  // LLVM. (Math functions lower through libm calls where LLVM has no intrinsic.)
  static const char *pipeline =
      "dsf-to-linalg,canonicalize,"
      "one-shot-bufferize{bufferize-function-boundaries=1 "
      "function-boundary-type-conversion=identity-layout-map},"
      "canonicalize,convert-linalg-to-loops,lower-affine,"
      "expand-strided-metadata,finalize-memref-to-llvm,convert-scf-to-cf,convert-math-to-llvm,"
      "convert-math-to-libm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,"
      "convert-arith-to-llvm,reconcile-unrealized-casts";
  PassPipelineRegistration<>("dsf-lower-cpu", "Lower dsf to LLVM for the host (CPU)",
                             [](OpPassManager &pm) {
                               if (failed(parsePassPipeline(pipeline, pm)))
                                 llvm::report_fatal_error("dsf-lower-cpu: bad pipeline text");
                             });
}
