//===- HierarchicalIndexer.cpp - dsf-hierarchical-indexer ------------------===//
#include "passes/LayerUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_HIERARCHICALINDEXER
#include "passes/Passes.h.inc"

namespace {

/// Re-creates `op` with another `within` operand and pool result type.
IndexTopkOp recreateIndexer(IndexTopkOp op, Value within, Type poolResult) {
  OpBuilder b(op);
  auto fresh = IndexTopkOp::create(b, op.getLoc(), op.getSelection().getType(), poolResult,
                                   op.getQueries(), op.getWeights(), op.getKeys(), within, op.getPositions(),
                                   op.getKAttr(), op.getScaleAttr());
  op.getSelection().replaceAllUsesWith(fresh.getSelection());
  op.erase();
  return fresh;
}

/// Index of the result of `layer` that yields `inner`, or -1.
int64_t resultIndexOf(LayerOp layer, Value inner) {
  auto yield = llvm::cast<YieldOp>(layer.getBodyBlock().getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (v == inner)
      return i;
  return -1;
}

struct HierarchicalIndexerPass : impl::HierarchicalIndexerBase<HierarchicalIndexerPass> {
  using Base::Base;

  /// Takes an existing pool out: consumers first, then its source.
  void removePool(SmallVector<LayerOp> &layers) {
    for (LayerOp &layer : layers) {
      SmallVector<unsigned> poolInputs;
      for (auto [i, v] : llvm::enumerate(layer.getInputs()))
        if (llvm::isa<PoolType>(v.getType()))
          poolInputs.push_back(i);
      if (poolInputs.empty())
        continue;
      for (auto idx : llvm::to_vector(layer.getBodyBlock().getOps<IndexTopkOp>()))
        if (idx.getWithin())
          recreateIndexer(idx, Value(), Type());
      layer = rebuildLayer(layer, {}, {}, nullptr, poolInputs);
    }
    for (LayerOp &layer : layers)
      for (auto idx : llvm::to_vector(layer.getBodyBlock().getOps<IndexTopkOp>()))
        if (Value pool = idx.getCandidatePool()) {
          // Stop yielding the pool (its readers are gone), then stop making it.
          if (int64_t r = resultIndexOf(layer, pool); r >= 0)
            layer = rebuildLayer(layer, {}, {}, nullptr, {}, {(unsigned)r});
          recreateIndexer(idx, idx.getWithin(), Type());
        }
  }

  LogicalResult run(ModelOp model) {
    if (!model.isV41())
      return success();
    auto attr = model.getCandidatePool();
    int64_t src = source >= 0 ? (int64_t)source : attr ? (*attr)[0] : -1;
    int64_t nBlocks = blocks != 0 ? (int64_t)blocks : attr ? (*attr)[1] : -1;
    int64_t size = blockSize > 0 ? (int64_t)blockSize : attr ? (*attr)[2] : 8;
    for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
      SmallVector<LayerOp> layers = layersOf(func);
      if (layers.empty())
        continue;
      removePool(layers);
      if (nBlocks < 0)
        continue;
      if (nBlocks == 0 || size <= 0)
        return model.emitOpError() << "candidate pool needs positive blocks and block-size, got "
                                   << nBlocks << " x " << size;
      if (src < 0 || src >= (int64_t)layers.size())
        return model.emitOpError() << "candidate source layer " << src << " is outside [0, "
                                   << layers.size() << ")";
      LayerOp source = layers[src];
      if (source.getMode() != Csa2Mode::full || source.getRatio() != 1)
        return source.emitOpError() << "candidate source layer " << src
                                    << " is not a Full layer of the decoder (ratio 1)";
      auto poolType = PoolType::get(&getContext(), nBlocks, size, 1);
      // Every later Reindex layer of the decoder scores inside the pool.
      SmallVector<size_t> restricted;
      for (size_t i = src + 1; i < layers.size(); ++i)
        if (layers[i].getMode() == Csa2Mode::reindex && layers[i].getRatio() == 1) {
          auto idx = findInLayer<IndexTopkOp>(layers[i]);
          if ((int64_t)idx.getK() > poolType.getCapacity())
            return layers[i].emitOpError() << llvm::formatv(
                       "layer {0}: top-k ({1}) is larger than the candidate pool ({2} blocks x {3} "
                       "= {4} entries)",
                       i, idx.getK(), nBlocks, size, poolType.getCapacity()).str();
          restricted.push_back(i);
        }
      auto idx = recreateIndexer(findInLayer<IndexTopkOp>(source), Value(), poolType);
      source = rebuildLayer(source, {}, {idx.getCandidatePool()});
      layers[src] = source;
      Value pool = source.getResult(source.getNumResults() - 1);
      for (size_t i : restricted) {
        SmallVector<BlockArgument> args;
        LayerOp layer = rebuildLayer(layers[i], {pool}, {}, &args);
        recreateIndexer(findInLayer<IndexTopkOp>(layer), args[0], Type());
        layers[i] = layer;
      }
    }
    if (nBlocks < 0)
      model.removeCandidatePoolAttr();
    else
      model.setCandidatePoolAttr(DenseI64ArrayAttr::get(&getContext(), {src, nBlocks, size}));
    return success();
  }

  void runOnOperation() override {
    if (failed(forEachModel(getOperation(), [&](ModelOp model) { return run(model); })))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
