//===- CopiesToLinalg.cpp - dsf-copies-to-linalg ----------------------------===//
#include "lowering/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_COPIESTOLINALG
#include "lowering/Passes.h.inc"

namespace {
struct CopiesToLinalgPass : impl::CopiesToLinalgBase<CopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (!copy->getParentOfType<gpu::GPUModuleOp>())
        copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(), copy.getTarget());
    }
  }
};
} // namespace
} // namespace mlir::dsf
