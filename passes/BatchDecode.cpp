//===- BatchDecode.cpp - dsf-batch-decode ----------------------------------===//
//
// @decode continues one sequence by N tokens. A server decodes many
// sequences at once, one token each: the products then read each weight
// once for the whole batch, which is what makes decode cheap. This pass adds
// that entry point, @batch_decode, as a clone of @decode read with another
// convention (`dsf.batched`): token t is the next token of its own sequence,
// at positions[t], and every state argument holds one slot per sequence.
// The dsf ops stay what they are: everything but the sequence ops is per
// token already, and the sequence ops (window and cache writes, the
// compressors, entry positions, the indexer, attention) act on token t's own
// sequence. How the slots are stored (a ring per window, pages per cache,
// updated in place) is the lowering's business (dsf-to-linalg).
//
//===----------------------------------------------------------------------===//
#include "passes/LayerUtils.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_BATCHDECODE
#include "passes/Passes.h.inc"

namespace {

/// Whether `op`, in a function read with the batched convention, has what
/// it needs: the sequence it continues (prior state, positions), and no
/// computation across the tokens of one call.
LogicalResult checkBatchable(Operation *op) {
  if (auto w = llvm::dyn_cast<WindowWriteOp>(op); w && !w.getPrior())
    return w.emitOpError() << "starts a window; a batched decode continues each sequence's (its prior)";
  if (auto c = llvm::dyn_cast<CacheWriteOp>(op); c && !c.getPrior())
    return c.emitOpError() << "starts a cache; a batched decode continues each sequence's (its prior)";
  if (auto k = llvm::dyn_cast<CompressOp>(op); k && k.getKind() != CompressorKind::project && !k.getCarry())
    return k.emitOpError() << "has no carry; a batched decode continues each sequence's open group";
  if (auto i = llvm::dyn_cast<IndexTopkOp>(op); i && !i.getPositions())
    return i.emitOpError() << "has no positions (at): a batched decode's tokens are of different sequences";
  if (auto a = llvm::dyn_cast<AttentionOp>(op); a && !a.getPositions())
    return a.emitOpError() << "has no positions (at): a batched decode's tokens are of different sequences";
  if (llvm::isa<TakeLastOp>(op))
    return op->emitOpError() << "takes the last token of a call, which a batched decode does not have "
                                "(each token is its own sequence's)";
  return success();
}

struct BatchDecodePass : impl::BatchDecodeBase<BatchDecodePass> {
  void runOnOperation() override {
    LogicalResult result = forEachModel(getOperation(), [&](ModelOp model) -> LogicalResult {
      Block &body = model.getBody().front();
      func::FuncOp decode;
      for (auto f : body.getOps<func::FuncOp>()) {
        if (f.getSymName() == "batch_decode")
          return f.emitOpError() << "exists already (dsf-batch-decode ran twice?)";
        if (f.getSymName() == "decode")
          decode = f;
      }
      if (!decode)
        return model.emitOpError() << "has no @decode to batch (run dsf-hoist-decoder-kv and dsf-thread-state first)";
      if (!decode->hasAttr("dsf.state"))
        return decode.emitOpError() << "has no threaded state (dsf.state): run dsf-thread-state before dsf-batch-decode";
      OpBuilder b(decode);
      b.setInsertionPointAfter(decode);
      auto batched = llvm::cast<func::FuncOp>(b.clone(*decode));
      batched.setSymName("batch_decode");
      batched->setAttr("dsf.batched", UnitAttr::get(model.getContext()));
      WalkResult walk = batched.walk([](Operation *op) {
        return failed(checkBatchable(op)) ? WalkResult::interrupt() : WalkResult::advance();
      });
      if (walk.wasInterrupted()) {
        batched.erase();
        return failure();
      }
      return success();
    });
    if (failed(result))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
