//===- SinkGlobalsIntoKernels.cpp - dsf-sink-globals-into-kernels ----------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_SINKGLOBALSINTOKERNELS
#include "lowering/Passes.h.inc"

namespace {
struct SinkGlobalsIntoKernelsPass : impl::SinkGlobalsIntoKernelsBase<SinkGlobalsIntoKernelsPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::LaunchOp launch) {
      llvm::SetVector<Value> above;
      getUsedValuesDefinedAbove(launch.getBody(), above);
      Block &entry = launch.getBody().front();
      for (Value v : above) {
        auto global = v.getDefiningOp<memref::GetGlobalOp>();
        if (!global)
          continue;
        OpBuilder b(&entry, entry.begin());
        Operation *local = b.clone(*global);
        replaceAllUsesInRegionWith(v, local->getResult(0), launch.getBody());
      }
    });
  }
};
} // namespace
} // namespace mlir::dsf
