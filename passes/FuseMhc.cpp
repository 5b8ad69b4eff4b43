//===- FuseMhc.cpp - dsf-fuse-mhc ------------------------------------------===//
#include "passes/LayerUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_FUSEMHC
#include "passes/Passes.h.inc"

namespace {

/// Index of the yield operand of `layer` that its result `r` is.
Value innerOf(LayerOp layer, Value result) {
  auto yield = llvm::cast<YieldOp>(layer.getBodyBlock().getTerminator());
  return yield.getValues()[llvm::cast<OpResult>(result).getResultNumber()];
}

bool dominatesInBlock(Value v, Operation *op) {
  if (auto arg = llvm::dyn_cast<BlockArgument>(v))
    return arg.getOwner() == op->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

struct FuseMhcPass : impl::FuseMhcBase<FuseMhcPass> {
  using Base::Base;

  /// Moves `next`'s attention-site coefficients (and, in V4.1, its input
  /// collapse) into `prev`, which produces the streams they read.
  void hoistSite(LayerOp &prev, LayerOp &next) {
    Block &body = next.getBodyBlock();
    BlockArgument streams = body.getArgument(0);
    HcCoeffsOp coeffs;
    HcCollapseOp collapse;
    for (Operation *user : streams.getUsers()) {
      if (auto c = llvm::dyn_cast<HcCoeffsOp>(user); c && !coeffs)
        coeffs = c;
      if (auto k = llvm::dyn_cast<HcCollapseOp>(user);
          k && !collapse && llvm::isa<BlockArgument>(k.getPre()))
        collapse = k;
    }
    if (!coeffs || next.getInputs()[0].getDefiningOp() != prev.getOperation())
      return;
    if (collapse) {
      auto pre = llvm::cast<BlockArgument>(collapse.getPre());
      if (next.getInputs()[pre.getArgNumber()].getDefiningOp() != prev.getOperation())
        collapse = nullptr;
    }
    Value X = innerOf(prev, next.getInputs()[0]);
    OpBuilder b(prev.getBodyBlock().getTerminator());
    auto moved = HcCoeffsOp::create(b, coeffs.getLoc(), coeffs->getResultTypes(), X,
                                    coeffs.getFnAttr(), coeffs.getBaseAttr(), coeffs.getScaleAttr(),
                                    coeffs.getSinkhornItersAttr(), coeffs.getEpsAttr(),
                                    coeffs.getNormEpsAttr());
    SmallVector<Value> yields(moved->getResults());
    if (collapse) {
      Value pre = innerOf(prev, next.getInputs()[llvm::cast<BlockArgument>(collapse.getPre()).getArgNumber()]);
      yields.push_back(HcCollapseOp::create(b, collapse.getLoc(), collapse.getType(), X, pre));
    }
    prev = rebuildLayer(prev, {}, yields);
    unsigned first = prev.getNumResults() - yields.size();
    SmallVector<Value> passed;
    for (unsigned i = 0; i < yields.size(); ++i)
      passed.push_back(prev.getResult(first + i));
    SmallVector<BlockArgument> args;
    next = rebuildLayer(next, passed, {}, &args);
    for (unsigned i = 0; i < 3; ++i)
      coeffs->getResult(i).replaceAllUsesWith(args[i]);
    coeffs.erase();
    if (collapse) {
      collapse.getResult().replaceAllUsesWith(args[3]);
      collapse.erase();
    }
  }

  /// V4.1's final collapse (after the last layer) into the last layer.
  void hoistFinalCollapse(func::FuncOp func, LayerOp &last) {
    for (auto collapse : llvm::to_vector(func.getBody().getOps<HcCollapseOp>())) {
      if (collapse.getStreams().getDefiningOp() != last.getOperation() ||
          collapse.getPre().getDefiningOp() != last.getOperation())
        continue;
      OpBuilder b(last.getBodyBlock().getTerminator());
      Value inner = HcCollapseOp::create(b, collapse.getLoc(), collapse.getType(),
                                         innerOf(last, collapse.getStreams()),
                                         innerOf(last, collapse.getPre()));
      last = rebuildLayer(last, {}, {inner});
      collapse.getResult().replaceAllUsesWith(last.getResult(last.getNumResults() - 1));
      collapse.erase();
    }
  }

  /// Update -> coefficients (-> collapse) chains within one block.
  void fuseBlock(Block &block) {
    for (auto update : llvm::to_vector(block.getOps<HcUpdateOp>())) {
      HcCoeffsOp coeffs;
      HcCollapseOp collapse;
      for (Operation *user : update.getResult().getUsers()) {
        if (auto c = llvm::dyn_cast<HcCoeffsOp>(user); c && !coeffs)
          coeffs = c;
        if (auto k = llvm::dyn_cast<HcCollapseOp>(user); k && !collapse)
          collapse = k;
      }
      if (!coeffs)
        continue;
      // The collapse fuses only when its weights do not come from this pass
      // (V4 collapses with the coefficients computed here).
      if (collapse && !dominatesInBlock(collapse.getPre(), update))
        collapse = nullptr;
      OpBuilder b(update);
      SmallVector<Type> types{update.getType()};
      types.append(coeffs->getResultTypes().begin(), coeffs->getResultTypes().end());
      if (collapse)
        types.push_back(collapse.getType());
      auto fused = HcFusedUpdateOp::create(
          b, update.getLoc(), types, update.getStreams(), update.getBlockOutput(),
          update.getPost(), update.getComb(), collapse ? collapse.getPre() : Value(),
          coeffs.getFnAttr(), coeffs.getBaseAttr(), coeffs.getScaleAttr(),
          coeffs.getSinkhornItersAttr(), coeffs.getEpsAttr(), coeffs.getNormEpsAttr());
      if (collapse) {
        collapse.getResult().replaceAllUsesWith(fused.getCollapsed());
        collapse.erase();
      }
      coeffs.getPre().replaceAllUsesWith(fused.getNextPre());
      coeffs.getPost().replaceAllUsesWith(fused.getNextPost());
      coeffs.getComb().replaceAllUsesWith(fused.getNextComb());
      coeffs.erase();
      update.getResult().replaceAllUsesWith(fused.getUpdated());
      update.erase();
    }
  }

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      SmallVector<LayerOp> layers = layersOf(func);
      if (crossLayer && !layers.empty()) {
        for (size_t i = 0; i + 1 < layers.size(); ++i)
          hoistSite(layers[i], layers[i + 1]);
        hoistFinalCollapse(func, layers.back());
        // Consumers first, so that what a layer stops reading frees its producer.
        for (LayerOp &layer : llvm::reverse(layers))
          layer = dropUnusedInterface(layer);
      }
      for (LayerOp layer : layers)
        fuseBlock(layer.getBodyBlock());
    });
  }
};
} // namespace
} // namespace mlir::dsf
