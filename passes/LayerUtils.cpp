//===- LayerUtils.cpp - rewriting dsf.layer interfaces ---------------------===//
#include "passes/LayerUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::dsf;

LayerOp mlir::dsf::rebuildLayer(LayerOp layer, ValueRange extraInputs, ValueRange extraYields,
                                SmallVectorImpl<BlockArgument> *newArgs,
                                ArrayRef<unsigned> dropInputs, ArrayRef<unsigned> dropResults) {
  Block &oldBody = layer.getBodyBlock();
  auto yield = llvm::cast<YieldOp>(oldBody.getTerminator());

  SmallVector<Value> inputs;
  SmallVector<unsigned> keptArgs;
  for (auto [i, v] : llvm::enumerate(layer.getInputs()))
    if (!llvm::is_contained(dropInputs, i)) {
      inputs.push_back(v);
      keptArgs.push_back(i);
    }
  inputs.append(extraInputs.begin(), extraInputs.end());

  SmallVector<Value> yields;
  SmallVector<unsigned> keptResults;
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (!llvm::is_contained(dropResults, i)) {
      yields.push_back(v);
      keptResults.push_back(i);
    }
  yields.append(extraYields.begin(), extraYields.end());
  SmallVector<Type> outputs;
  for (Value v : yields)
    outputs.push_back(v.getType());

  OpBuilder b(layer);
  auto rebuilt = LayerOp::create(b, layer.getLoc(), outputs, layer.getIndex(), layer.getAttention(),
                                 layer.getRatio(), layer.getMode(), layer.getStage(), inputs);
  if (auto part = layer.getPartAttr())
    rebuilt.setPartAttr(part);
  // Keep discardable attributes (e.g. plans) of the old layer.
  for (NamedAttribute attr : layer->getDiscardableAttrs())
    rebuilt->setAttr(attr.getName(), attr.getValue());
  Block &body = rebuilt.getBodyBlock();
  for (auto [k, oldIndex] : llvm::enumerate(keptArgs))
    oldBody.getArgument(oldIndex).replaceAllUsesWith(body.getArgument(k));
  body.getOperations().splice(body.end(), oldBody.getOperations());
  auto newYield = llvm::cast<YieldOp>(body.getTerminator());
  OpBuilder yb(newYield);
  YieldOp::create(yb, newYield.getLoc(), yields);
  newYield.erase();
  if (newArgs)
    for (unsigned k = keptArgs.size(); k < body.getNumArguments(); ++k)
      newArgs->push_back(body.getArgument(k));
  for (auto [k, oldIndex] : llvm::enumerate(keptResults))
    layer.getResult(oldIndex).replaceAllUsesWith(rebuilt.getResult(k));
  layer.erase();
  return rebuilt;
}

void mlir::dsf::retypeAcrossLayers(Value value, Type type) {
  if (value.getType() == type)
    return;
  value.setType(type);
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto yield = llvm::dyn_cast<YieldOp>(user))
      retypeAcrossLayers(yield->getParentOp()->getResult(use.getOperandNumber()), type);
    else if (auto layer = llvm::dyn_cast<LayerOp>(user))
      retypeAcrossLayers(layer.getBodyBlock().getArgument(use.getOperandNumber()), type);
  }
}

void mlir::dsf::eraseDeadOps(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
      if (op.hasTrait<OpTrait::IsTerminator>() || !op.use_empty() || !isPure(&op))
        continue;
      op.erase();
      changed = true;
    }
  }
}

int64_t mlir::dsf::eraseUnusedWeights(ModelOp model) {
  llvm::StringSet<> used;
  model.walk([&](WeightUserOpInterface user) {
    SmallVector<WeightUse> uses;
    user.getWeightUses(uses);
    for (const WeightUse &u : uses)
      used.insert(u.symbol.getValue());
  });
  int64_t erased = 0;
  for (auto w : llvm::make_early_inc_range(model.getBody().front().getOps<WeightDeclOp>()))
    if (!used.contains(w.getSymName())) {
      w.erase();
      ++erased;
    }
  return erased;
}

LayerOp mlir::dsf::dropUnusedInterface(LayerOp layer, bool dropResults) {
  SmallVector<unsigned> inputs, results;
  for (BlockArgument arg : layer.getBodyBlock().getArguments())
    if (arg.use_empty())
      inputs.push_back(arg.getArgNumber());
  for (OpResult r : layer->getResults())
    if (dropResults && r.use_empty())
      results.push_back(r.getResultNumber());
  if (inputs.empty() && results.empty())
    return layer;
  LayerOp rebuilt = rebuildLayer(layer, {}, {}, nullptr, inputs, results);
  eraseDeadOps(rebuilt.getBodyBlock());
  return rebuilt;
}

llvm::SetVector<Operation *> mlir::dsf::kvProducingOps(LayerOp layer) {
  llvm::SetVector<Operation *> slice;
  SmallVector<Operation *> work;
  for (Operation &op : layer.getBodyBlock())
    if (llvm::isa<CacheWriteOp, WindowWriteOp>(op))
      work.push_back(&op);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!slice.insert(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && def->getBlock() == &layer.getBodyBlock())
        work.push_back(def);
  }
  return slice;
}

LayerOp mlir::dsf::decoderSplitLayer(ArrayRef<LayerOp> layers) {
  for (LayerOp layer : layers)
    if (layer.getStage() == Stage::decoder && layer.getMode() == Csa2Mode::full)
      return layer;
  return nullptr;
}

LogicalResult mlir::dsf::forEachModel(Operation *root, function_ref<LogicalResult(ModelOp)> fn) {
  WalkResult r = root->walk([&](ModelOp model) {
    return failed(fn(model)) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

SmallVector<LayerOp> mlir::dsf::layersOf(func::FuncOp func) {
  return SmallVector<LayerOp>(func.getBody().getOps<LayerOp>());
}
