//===- StateInPlace.cpp - dsf-state-in-place -------------------------------===//
//
// A batched decode step's state is its slots (rings, pages): the call writes
// them where they are, so the step's buffers and launches stay the same from
// one step to the next. One-shot bufferization writes them in place, but a
// public function still returns the arguments it updated, and the
// deallocation pipeline would then clone each of them for the caller: this
// pass drops those results (MLIR's drop-equivalent-buffer-results leaves
// public functions alone).
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_STATEINPLACE
#include "lowering/Passes.h.inc"

namespace {
/// `v` without the casts that only forget its shape.
Value throughCasts(Value v) {
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  return v;
}

struct StateInPlacePass : impl::StateInPlaceBase<StateInPlacePass> {
  void runOnOperation() override {
    bool ok = true;
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (!f->hasAttr("dsf.batched") || f.isPrivate() || f.isExternal())
        continue;
      auto state = f->getAttrOfType<ArrayAttr>("dsf.state");
      auto weights = f->getAttrOfType<ArrayAttr>("dsf.weights");
      auto tables = f->getAttrOfType<ArrayAttr>("dsf.page_tables");
      if (!state || !weights || !tables) {
        f.emitOpError() << "is batched but lacks dsf.state, dsf.weights or dsf.page_tables";
        ok = false;
        continue;
      }
      // (token inputs..., state..., page tables..., weights...) -> (logits, state...)
      int64_t tokenInputs = int64_t(f.getNumArguments()) - int64_t(state.size() + tables.size() + weights.size());
      if (tokenInputs < 1 || f.getNumResults() != 1 + state.size()) {
        f.emitOpError() << "is batched but its signature is not (tokens, state, page tables, weights) -> "
                           "(logits, state)";
        ok = false;
        continue;
      }
      auto ret = llvm::cast<func::ReturnOp>(f.getBody().front().getTerminator());
      llvm::BitVector drop(f.getNumResults());
      for (auto [k, name] : llvm::enumerate(state)) {
        Value result = throughCasts(ret.getOperand(1 + k));
        if (result != f.getArgument(tokenInputs + k)) {
          ret.emitOpError() << "returns state '" << llvm::cast<StringAttr>(name).getValue()
                            << "' in another buffer than its slot: the batched step must update it in place";
          ok = false;
          continue;
        }
        drop.set(1 + k);
      }
      if (!ok)
        continue;
      SmallVector<Value> kept;
      for (unsigned i = 0; i < ret.getNumOperands(); ++i)
        if (!drop.test(i))
          kept.push_back(ret.getOperand(i));
      ret->setOperands(kept);
      if (failed(f.eraseResults(drop))) {
        ok = false;
        continue;
      }
    }
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
