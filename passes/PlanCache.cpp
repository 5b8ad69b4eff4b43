//===- PlanCache.cpp - dsf-plan-cache --------------------------------------===//
#include "passes/Passes.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_PLANCACHE
#include "passes/Passes.h.inc"

namespace {
struct PlanCachePass : impl::PlanCacheBase<PlanCachePass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (windowTtl < 0 || globalTtl < 0) {
      getOperation().emitError() << "dsf-plan-cache: ttl must not be negative";
      return signalPassFailure();
    }
    // Global caches: on the device while live, then persisted (or dropped).
    auto global = persist ? CachePlanAttr::get(ctx, Tier::device, Tier::ssd, globalTtl)
                          : CachePlanAttr::get(ctx, Tier::device, Tier::dropped, 0);
    // Windows: never persisted; idle ones wait in host DRAM, else are replayed.
    auto window = CachePlanAttr::get(ctx, Tier::device, Tier::host, windowTtl);
    getOperation().walk([&](Operation *op) {
      if (llvm::isa<CacheWriteOp>(op))
        op->setAttr("plan", global);
      else if (llvm::isa<WindowWriteOp>(op))
        op->setAttr("plan", window);
    });
  }
};
} // namespace
} // namespace mlir::dsf
