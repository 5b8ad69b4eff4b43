//===- ThreadState.cpp - dsf-thread-state ----------------------------------===//
//
// Before this pass an entry point computes one call's logits from its tokens
// alone: windows, caches and compressors see only those tokens. After it,
// what a sequence keeps between calls is ordinary dataflow: function
// arguments and results, layer operands and results, the `after` / `carry`
// operands of the ops that extend it. Nothing is hidden in the runtime.
//
//===----------------------------------------------------------------------===//
#include "passes/LayerUtils.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_THREADSTATE
#include "passes/Passes.h.inc"

namespace {

/// One piece of a sequence's state, found in a layer body.
struct Slot {
  std::string name;
  Operation *op;   // the window.write, cache.write or compress that extends it
  Type type;
};

std::string slotName(LayerOp layer, Operation *op) {
  std::string layerPrefix = "layers." + std::to_string(layer.getIndex()) + ".";
  if (llvm::isa<WindowWriteOp>(op))
    return layerPrefix + "window";
  if (auto c = llvm::dyn_cast<CacheWriteOp>(op))
    return layerPrefix + stringifyCacheKind(llvm::cast<CacheType>(c.getType()).getKind()).str();
  // A compressor's weights name it: "<prefix>.wkv.weight".
  StringRef wkv = llvm::cast<CompressOp>(op).getWkv();
  return (wkv.consume_back(".wkv.weight") ? wkv.str() : layerPrefix + "compressor") + ".carry";
}

/// The layer's token positions: the block argument its RoPE ops rotate by.
Value positionsOf(LayerOp layer) {
  for (auto rope : layer.getBodyBlock().getOps<RopeOp>())
    if (auto arg = llvm::dyn_cast<BlockArgument>(rope.getPositions()); arg && arg.getOwner() == &layer.getBodyBlock())
      return arg;
  return Value();
}

struct ThreadStatePass : impl::ThreadStateBase<ThreadStatePass> {
  using Base::Base;
  LogicalResult threadEntry(func::FuncOp func, SmallVectorImpl<std::string> &names) {
    MLIRContext *ctx = func.getContext();
    bool continues = !func->hasAttr("dsf.prefill");
    SmallVector<Value> stateOut;
    for (LayerOp layer : layersOf(func)) {
      Block &body = layer.getBodyBlock();
      if (Value pos = positionsOf(layer)) {
        for (auto attn : body.getOps<AttentionOp>())
          if (!attn.getPositions())
            attn.getPositionsMutable().assign(pos);
        for (auto index : body.getOps<IndexTopkOp>())
          if (!index.getPositions())
            index.getPositionsMutable().assign(pos);
      }
      SmallVector<Slot> slots;
      for (Operation &op : body) {
        if (auto w = llvm::dyn_cast<WindowWriteOp>(op); w && !w.getPrior())
          slots.push_back({slotName(layer, w), w, w.getType()});
        else if (auto c = llvm::dyn_cast<CacheWriteOp>(op); c && !c.getPrior())
          slots.push_back({slotName(layer, c), c, c.getType()});
        else if (auto k = llvm::dyn_cast<CompressOp>(op);
                 k && !k.getCarryOut() && k.getKind() != CompressorKind::project)
          slots.push_back({slotName(layer, k), k, k.getInput().getType()});
      }
      if (slots.empty())
        continue;
      // Inputs: one function argument per slot, passed into the layer.
      SmallVector<BlockArgument> priors;
      if (continues) {
        SmallVector<Value> args;
        for (const Slot &s : slots) {
          unsigned index = func.getNumArguments();
          if (failed(func.insertArgument(index, s.type, DictionaryAttr(), layer.getLoc())))
            return failure();
          args.push_back(func.getArgument(index));
        }
        layer = rebuildLayer(layer, args, {}, &priors);
      }
      // Outputs: what each slot holds after this call.
      SmallVector<Value> yields;
      for (auto [i, s] : llvm::enumerate(slots)) {
        Value prior = continues ? Value(priors[i]) : Value();
        OpBuilder b(s.op);
        b.setInsertionPointAfter(s.op);
        if (auto w = llvm::dyn_cast<WindowWriteOp>(s.op)) {
          if (prior)
            w.getPriorMutable().assign(prior);
          yields.push_back(WindowRetainOp::create(b, w.getLoc(), w.getType(), w.getWindow()));
        } else if (auto c = llvm::dyn_cast<CacheWriteOp>(s.op)) {
          if (prior)
            c.getPriorMutable().assign(prior);
          yields.push_back(c.getCache());
        } else {
          auto k = llvm::cast<CompressOp>(s.op);
          b.setInsertionPoint(k);
          auto fresh = CompressOp::create(b, k.getLoc(), k.getResult().getType(), k.getInput().getType(), k.getInput(),
                                          prior, k.getKindAttr(), k.getRatioAttr(), k.getWkvAttr(), k.getWgateAttr(),
                                          k.getApeAttr(), k.getNormAttr(), k.getEpsAttr());
          fresh->setDiscardableAttrs(k->getDiscardableAttrDictionary());
          k.getResult().replaceAllUsesWith(fresh.getResult());
          k.erase();
          yields.push_back(fresh.getCarryOut());
        }
        names.push_back(s.name);
      }
      unsigned first = layer.getNumResults();
      layer = rebuildLayer(layer, {}, yields);
      for (unsigned i = first; i < layer.getNumResults(); ++i)
        stateOut.push_back(layer.getResult(i));
    }
    auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    SmallVector<Value> results(ret.getOperands());
    results.append(stateOut);
    ret->setOperands(results);
    func.setFunctionType(FunctionType::get(ctx, func.getArgumentTypes(), ValueRange(results).getTypes()));
    SmallVector<Attribute> attrs;
    for (const std::string &n : names)
      attrs.push_back(StringAttr::get(ctx, n));
    func->setAttr("dsf.state", ArrayAttr::get(ctx, attrs));
    return success();
  }

  /// @replay: @decode without extending the global caches or the
  /// compressors: given the caches and carries of a sequence of P tokens and
  /// empty windows, run over tokens [s, P) it rebuilds the windows (exactly
  /// when P - s >= W + (L-1)(W-1), approximately for fewer) — how a sequence
  /// whose global KV was restored from the prefix cache gets its windows back.
  LogicalResult addReplay(func::FuncOp decode) {
    OpBuilder b(decode);
    b.setInsertionPointAfter(decode);
    auto replay = llvm::cast<func::FuncOp>(b.clone(*decode));
    replay.setSymName("replay");
    replay->setAttr("dsf.replay", UnitAttr::get(decode.getContext()));
    for (LayerOp layer : layersOf(replay)) {
      Block &body = layer.getBodyBlock();
      for (Operation &op : llvm::make_early_inc_range(body)) {
        if (auto c = llvm::dyn_cast<CacheWriteOp>(op); c && c.getPrior()) {
          c.getCache().replaceAllUsesWith(c.getPrior());
          c.erase();
        } else if (auto k = llvm::dyn_cast<CompressOp>(op); k && k.getCarry()) {
          k.getCarryOut().replaceAllUsesWith(k.getCarry());
        }
      }
      eraseDeadOps(body);
    }
    return success();
  }

  void runOnOperation() override {
    LogicalResult result = forEachModel(getOperation(), [&](ModelOp model) -> LogicalResult {
      std::optional<std::pair<func::FuncOp, SmallVector<std::string>>> reference;
      for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
        if (func->hasAttr("dsf.state"))
          return func.emitOpError() << "already has its state threaded (dsf.state)";
        SmallVector<std::string> names;
        if (failed(threadEntry(func, names)))
          return failure();
        // The runtime hands one entry point's state to another, by name.
        SmallVector<std::string> sorted = names;
        llvm::sort(sorted);
        if (!reference) {
          reference.emplace(func, sorted);
        } else if (reference->second != sorted) {
          return func.emitOpError() << "keeps another state than @" << reference->first.getSymName() << " ("
                                    << names.size() << " slots against " << reference->second.size()
                                    << "): a sequence could not pass from one to the other";
        }
      }
      if (replay)
        for (auto func : llvm::to_vector(model.getBody().front().getOps<func::FuncOp>()))
          if (!func->hasAttr("dsf.prefill") && func.getSymName() == "decode" && failed(addReplay(func)))
            return failure();
      return success();
    });
    if (failed(result))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
