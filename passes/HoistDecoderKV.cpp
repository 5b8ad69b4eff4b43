//===- HoistDecoderKV.cpp - dsf-hoist-decoder-kv ---------------------------===//
#include "passes/LayerUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_HOISTDECODERKV
#include "passes/Passes.h.inc"

namespace {

bool tokenMajor(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() >= 1 && t.isDynamicDim(0);
}

struct HoistDecoderKVPass : impl::HoistDecoderKVBase<HoistDecoderKVPass> {
  using Base::Base;

  LogicalResult hoist(ModelOp model) {
    if (prefill != "full" && prefill != "exact-tail" && prefill != "bounded-replay")
      return model.emitOpError() << "unknown prefill mode '" << prefill
                                 << "' (expected full, exact-tail or bounded-replay)";
    auto forward = llvm::dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward"));
    if (!forward)
      return success(); // already split into @prefill / @decode
    if (SymbolTable::lookupSymbolIn(model, "prefill") || SymbolTable::lookupSymbolIn(model, "decode"))
      return model.emitOpError() << "has @forward next to @prefill or @decode";
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPointAfter(forward);
    auto decode = llvm::cast<func::FuncOp>(b.clone(*forward));
    decode.setSymName("decode");
    forward.setSymName("prefill");
    func::FuncOp pre = forward;
    pre->setAttr("dsf.prefill", StringAttr::get(ctx, prefill));
    if (prefill == "full")
      return success();

    if (!model.isV41())
      return model.emitOpError() << "prefill=" << prefill
                                 << " splits V4.1's decoder; a deepseek_v4 model has none";
    SmallVector<LayerOp> layers = layersOf(pre);
    LayerOp split = decoderSplitLayer(layers);
    if (!split)
      return model.emitOpError() << "prefill=" << prefill << " needs a Full layer in the decoder";
    auto window = llvm::cast<WindowType>(findInLayer<WindowWriteOp>(split).getWindow().getType());
    int64_t w = window.getSize();
    int64_t decoderLayers = layers.end() - llvm::find(layers, split);
    int64_t tail = prefill == "exact-tail" ? w + (decoderLayers - 1) * (w - 1) : w;

    // Token-major values that reach the split layer and after: their tails.
    b.setInsertionPoint(split);
    llvm::DenseMap<Value, Value> tails;
    auto tailOf = [&](Value v) -> Value {
      if (!tokenMajor(v))
        return v;
      auto it = tails.find(v);
      if (it != tails.end())
        return it->second;
      Value t = TakeLastOp::create(b, v.getLoc(), v, b.getI64IntegerAttr(tail));
      tails[v] = t;
      return t;
    };

    // The KV-producing part: a copy of the layer keeping what writes its
    // window and caches, over every token.
    auto kvPart = llvm::cast<LayerOp>(b.clone(*split));
    Value kvWindow, kvCache, kvKeys;
    for (Operation &op : kvPart.getBodyBlock()) {
      if (auto ww = llvm::dyn_cast<WindowWriteOp>(op))
        kvWindow = ww.getWindow();
      if (auto cw = llvm::dyn_cast<CacheWriteOp>(op))
        (llvm::cast<CacheType>(cw.getCache().getType()).getKind() == CacheKind::kv ? kvCache : kvKeys) =
            cw.getCache();
    }
    SmallVector<unsigned> allResults;
    for (unsigned i = 0; i < kvPart.getNumResults(); ++i)
      allResults.push_back(i);
    kvPart = rebuildLayer(kvPart, {}, {kvWindow, kvCache, kvKeys}, nullptr, {}, allResults);
    kvPart.setPartAttr(LayerPartAttr::get(ctx, LayerPart::kv));
    eraseDeadOps(kvPart.getBodyBlock());
    kvPart = dropUnusedInterface(kvPart, /*results=*/false);

    // The rest: the original layer over the tail, reading the window and
    // caches of its kv part; later layers read the caches from the kv part.
    for (OpOperand &operand : split->getOpOperands())
      operand.set(tailOf(operand.get()));
    SmallVector<std::pair<unsigned, Value>> rewire;
    auto yield = llvm::cast<YieldOp>(split.getBodyBlock().getTerminator());
    for (auto [i, v] : llvm::enumerate(yield.getValues())) {
      auto cache = llvm::dyn_cast<CacheType>(v.getType());
      if (!cache)
        continue;
      rewire.push_back({(unsigned)i, cache.getKind() == CacheKind::kv ? kvPart.getResult(1)
                                                                      : kvPart.getResult(2)});
    }
    for (auto [i, replacement] : rewire)
      split.getResult(i).replaceAllUsesWith(replacement);
    SmallVector<BlockArgument> args;
    split = rebuildLayer(split, {kvPart.getResult(0), kvPart.getResult(1), kvPart.getResult(2)}, {},
                         &args);
    for (Operation &op : llvm::make_early_inc_range(split.getBodyBlock())) {
      if (auto ww = llvm::dyn_cast<WindowWriteOp>(op))
        ww.getWindow().replaceAllUsesWith(args[0]);
      if (auto cw = llvm::dyn_cast<CacheWriteOp>(op))
        cw.getCache().replaceAllUsesWith(
            llvm::cast<CacheType>(cw.getCache().getType()).getKind() == CacheKind::kv ? args[1]
                                                                                   : args[2]);
    }
    eraseDeadOps(split.getBodyBlock());
    split = dropUnusedInterface(split);
    split.setPartAttr(LayerPartAttr::get(ctx, LayerPart::rest));

    // Later layers take the tails of what they read from outside the layers.
    bool after = false;
    for (LayerOp layer : layersOf(pre)) {
      if (layer == split) {
        after = true;
        continue;
      }
      if (!after)
        continue;
      for (OpOperand &operand : layer->getOpOperands())
        if (!operand.get().getDefiningOp<LayerOp>())
          operand.set(tailOf(operand.get()));
    }
    pre->setAttr("dsf.tail_tokens", IntegerAttr::get(IntegerType::get(ctx, 64), tail));
    return success();
  }

  void runOnOperation() override {
    if (failed(forEachModel(getOperation(), [&](ModelOp model) { return hoist(model); })))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
