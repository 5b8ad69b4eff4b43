//===- LayerUtils.h - rewriting dsf.layer interfaces -----------------------===//
//
// Passes that move sharing between layers change what layers take and yield.
// A dsf.layer's operands and results are fixed at creation, so these helpers
// rebuild it with its body moved over.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_PASSES_LAYERUTILS_H
#define DSF_PASSES_LAYERUTILS_H

#include "dialect/DsfDialect.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::dsf {

/// Rebuilds `layer` with `extraInputs` appended to its operands (the new block
/// arguments are returned through `newArgs`) and `extraYields` (values in its
/// body) appended to its results; inputs whose index is in `dropInputs` (their
/// block arguments must be unused) and results in `dropResults` (unused) go.
/// `layer` is erased; the new layer is returned.
LayerOp rebuildLayer(LayerOp layer, ValueRange extraInputs, ValueRange extraYields,
                     SmallVectorImpl<BlockArgument> *newArgs = nullptr,
                     ArrayRef<unsigned> dropInputs = {}, ArrayRef<unsigned> dropResults = {});

/// Changes the type of `value` and of everything it flows into across layer
/// boundaries (dsf.yield -> layer result, layer operand -> block argument).
void retypeAcrossLayers(Value value, Type type);

/// Erases side-effect-free ops without uses, until none is left.
void eraseDeadOps(Block &block);

/// Erases the weight declarations no op reads; returns how many.
int64_t eraseUnusedWeights(ModelOp model);

/// Drops the inputs of `layer` whose block arguments nobody reads and (with
/// `results`) the results nobody uses; returns the (possibly rebuilt) layer.
LayerOp dropUnusedInterface(LayerOp layer, bool results = true);

/// The ops of a Full layer's body that produce its caches and window (the
/// backward slice of its dsf.cache.write and dsf.window.write ops).
llvm::SetVector<Operation *> kvProducingOps(LayerOp layer);

/// The decoder's first Full layer (where prefill can be split), or null.
LayerOp decoderSplitLayer(ArrayRef<LayerOp> layers);

/// Runs `fn` on every dsf.model under `root`, stopping at the first failure.
LogicalResult forEachModel(Operation *root, function_ref<LogicalResult(ModelOp)> fn);

/// The layers of `func`, in order.
SmallVector<LayerOp> layersOf(func::FuncOp func);

/// The single op of type OpTy in a layer's body, or null.
template <typename OpTy>
OpTy findInLayer(LayerOp layer) {
  OpTy found;
  for (auto op : layer.getBodyBlock().getOps<OpTy>())
    if (!found)
      found = op;
  return found;
}

} // namespace mlir::dsf

#endif // DSF_PASSES_LAYERUTILS_H
