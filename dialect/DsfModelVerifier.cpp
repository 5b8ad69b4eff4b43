//===- DsfModelVerifier.cpp - rules that need a layer or the whole model ---===//
//
// LayerOp::verifyRegions checks a layer's body against its attention kind and
// CSA2 mode. ModelOp::verifyRegions checks weight uses against declarations,
// layer numbering and stages, and the sharing rules between layers.
//
//===----------------------------------------------------------------------===//
#include "dialect/DsfDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::dsf;

namespace {
/// The ratio a shared value belongs to, or nullopt for other types.
std::optional<int64_t> sharedRatio(Type t) {
  if (auto c = llvm::dyn_cast<CacheType>(t)) return c.getRatio();
  if (auto s = llvm::dyn_cast<TopkType>(t)) return s.getRatio();
  if (auto p = llvm::dyn_cast<PoolType>(t)) return p.getRatio();
  return std::nullopt;
}

bool isBlockArgOf(Value v, Block &block) {
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &block;
}

/// "[a, 8, *]": '*' is any size, letters are sizes the op's weights share.
std::string dimsString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i) s += ", ";
    if (d == kAnyDim)
      s += "*";
    else if (d <= kDimVar0)
      s += char('a' + (kDimVar0 - d));
    else
      s += std::to_string(d);
  }
  return s + "]";
}
} // namespace

LogicalResult LayerOp::verifyRegions() {
  Block &body = getBodyBlock();
  auto prefix = [&]() { return emitOpError() << "layer " << getIndex() << ": "; };
  if (body.getNumArguments() != getInputs().size())
    return prefix() << "region has " << body.getNumArguments() << " arguments for "
                    << getInputs().size() << " inputs";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return prefix() << "region argument types must match the inputs";
  auto yield = llvm::cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getOutputs().getTypes())
    return prefix() << "yields " << yield.getValues().size()
                    << " values whose types differ from the layer's outputs";

  // Every shared value this layer touches must belong to its own ratio.
  int64_t ratio = getRatio();
  // (A sliding-only layer gets the clearer "window only" message below.)
  auto checkRatio = [&](Value v) -> LogicalResult {
    if (getAttention() == AttentionKind::sliding)
      return success();
    if (auto r = sharedRatio(v.getType()); r && *r != ratio)
      return prefix() << "(ratio " << ratio << ") touches " << v.getType()
                      << " of another ratio";
    return success();
  };
  for (Value v : body.getArguments())
    if (failed(checkRatio(v)))
      return failure();

  SmallVector<CompressOp> compressors;
  SmallVector<IndexTopkOp> indexers;
  SmallVector<AttentionOp> attentions;
  bool writesKv = false;
  for (Operation &op : body) {
    for (Value r : op.getResults())
      if (failed(checkRatio(r)))
        return failure();
    if (auto c = llvm::dyn_cast<CompressOp>(op)) compressors.push_back(c);
    if (auto i = llvm::dyn_cast<IndexTopkOp>(op)) indexers.push_back(i);
    if (auto a = llvm::dyn_cast<AttentionOp>(op)) attentions.push_back(a);
    if (auto w = llvm::dyn_cast<CacheWriteOp>(op))
      writesKv |= llvm::cast<CacheType>(w.getCache().getType()).getKind() == CacheKind::kv;
    if (llvm::isa<LayerOp, ModelOp>(op))
      return prefix() << "layers do not nest";
  }
  std::optional<LayerPart> part = getPart();
  if (part == LayerPart::kv) {
    // The KV-producing half: compressor, index keys, window; nothing per query.
    if (!attentions.empty() || !indexers.empty())
      return prefix() << "the kv part of a split layer computes no queries, indexer or attention";
    if (compressors.empty() || !writesKv)
      return prefix() << "the kv part of a split layer computes its compressed KV (dsf.compress "
                         "and a kv dsf.cache.write)";
    return success();
  }
  if (attentions.size() != 1)
    return prefix() << "has " << attentions.size() << " attention ops, expected exactly one";
  AttentionOp attn = attentions.front();
  if (part == LayerPart::rest) {
    if (!compressors.empty() || writesKv)
      return prefix() << "the rest part of a split layer reads the caches of its kv part";
    if (indexers.empty())
      return prefix() << "the rest part of a split Full layer computes its own top-k";
    if (!isBlockArgOf(attn.getCache(), body) || !isBlockArgOf(attn.getWindow(), body))
      return prefix() << "the rest part of a split layer reads its cache and window as inputs";
    return success();
  }

  AttentionKind kind = getAttention();
  std::optional<Csa2Mode> mode = getMode();
  bool producesKv = kind == AttentionKind::csa || kind == AttentionKind::hca ||
                    mode == Csa2Mode::full;
  bool scores = kind == AttentionKind::csa ||
                (mode && *mode != Csa2Mode::reuse);
  std::string role = mode ? std::string(stringifyCsa2Mode(*mode))
                          : std::string(stringifyAttentionKind(kind));

  // @replay (dsf-thread-state) reads restored global caches instead.
  auto func = (*this)->getParentOfType<func::FuncOp>();
  bool replaying = func && func->hasAttr("dsf.replay");
  if (producesKv && !writesKv && !replaying)
    return prefix() << "a " << role << " layer computes its compressed KV (dsf.compress "
                                       "and a kv dsf.cache.write)";
  if (!producesKv && !compressors.empty())
    return prefix() << "a " << role << " layer has no compressor: it "
                    << (kind == AttentionKind::sliding ? "attends over its window only"
                                                       : "reads the cache of its group's Full layer");
  if (scores && indexers.empty())
    return prefix() << "a " << role << " layer computes its own top-k (dsf.index_topk)";
  if (!scores && !indexers.empty())
    return prefix() << "a " << role << " layer has no indexer"
                    << (mode == Csa2Mode::reuse ? ": it reuses the top-k of the nearest "
                                                  "preceding index source"
                                                : "");
  if (kind == AttentionKind::sliding && attn.getCache())
    return prefix() << "a sliding-only layer attends over its window only";
  if (kind != AttentionKind::sliding && !attn.getCache())
    return prefix() << "a compressed layer attends over a compressed cache";
  if ((kind == AttentionKind::csa || kind == AttentionKind::csa2) && !attn.getSelection())
    return prefix() << "a sparse layer attends over a top-k selection";
  if (kind == AttentionKind::hca && attn.getSelection())
    return prefix() << "an hca layer attends over all visible entries, not a selection";

  if (mode == Csa2Mode::reindex)
    for (IndexTopkOp idx : indexers)
      if (!isBlockArgOf(idx.getKeys(), body))
        return prefix() << "a reindex layer scores the index keys of its group's Full "
                           "layer, passed in as an input";
  if (mode == Csa2Mode::reuse) {
    if (!isBlockArgOf(attn.getCache(), body) || !isBlockArgOf(attn.getSelection(), body))
      return prefix() << "a reuse layer reads the cache and the selection of earlier "
                         "layers, passed in as inputs";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyWeightUses(ModelOp model) {
  llvm::StringMap<WeightDeclOp> weights;
  for (auto w : model.getBody().front().getOps<WeightDeclOp>())
    weights[w.getSymName()] = w;

  WalkResult result = model.walk([&](WeightUserOpInterface user) {
    SmallVector<WeightUse> uses;
    user.getWeightUses(uses);
    llvm::DenseMap<int64_t, int64_t> vars;
    for (const WeightUse &u : uses) {
      auto it = weights.find(u.symbol.getValue());
      if (it == weights.end()) {
        user->emitOpError() << "refers to an undeclared weight " << u.symbol << " (" << u.role << ")";
        return WalkResult::interrupt();
      }
      ArrayRef<int64_t> shape = it->second.getTensorType().getShape();
      bool ok = shape.size() == u.shape.size();
      for (size_t i = 0; ok && i < shape.size(); ++i) {
        int64_t want = u.shape[i];
        if (want == kAnyDim) continue;
        if (want <= kDimVar0) {
          auto [slot, inserted] = vars.try_emplace(want, shape[i]);
          ok = inserted || slot->second == shape[i];
        } else {
          ok = want == shape[i];
        }
      }
      if (!ok) {
        user->emitOpError() << u.role << " " << u.symbol << " is declared "
                            << dimsString(shape) << " but this op needs " << dimsString(u.shape)
                            << " ('*': any size; a, b: sizes its weights share)";
        return WalkResult::interrupt();
      }
      bool integral = it->second.getTensorType().getElementType().isInteger(32);
      if (integral != (u.role == "hash table")) {
        user->emitOpError() << u.role << " " << u.symbol << " has element type "
                            << it->second.getTensorType().getElementType();
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Whether input `k` of `layer` is a continued sequence's prior cache: a
/// function argument its body only appends to, or any function argument in
/// @replay, which reads restored caches (dsf-thread-state).
bool isPriorCache(LayerOp layer, unsigned k) {
  if (!llvm::isa<BlockArgument>(layer.getInputs()[k]))
    return false;
  // @replay reads a restored cache as it is.
  if (auto func = layer->getParentOfType<func::FuncOp>(); func && func->hasAttr("dsf.replay"))
    return true;
  BlockArgument arg = layer.getBodyBlock().getArgument(k);
  return !arg.use_empty() && llvm::all_of(arg.getUses(), [](OpOperand &use) {
    auto write = llvm::dyn_cast<CacheWriteOp>(use.getOwner());
    return write && write.getPrior() == use.get();
  });
}

/// The layer that yields `v`, or null.
LayerOp producerLayer(Value v) {
  return v.getDefiningOp<LayerOp>();
}

LogicalResult verifyLayers(ModelOp model, func::FuncOp func) {
  SmallVector<LayerOp> layers(func.getBody().getOps<LayerOp>());
  if (layers.empty())
    return success();
  // A split layer is two ops with one index: its kv part, then its rest.
  int64_t count = llvm::count_if(layers, [](LayerOp l) { return l.getPart() != LayerPart::kv; });
  if (count != (int64_t)model.getNumLayers())
    return func.emitOpError() << "has " << count << " layers but the model declares num_layers = "
                              << model.getNumLayers();
  std::optional<int64_t> decoderStart = model.getDecoderStart();
  bool v41 = model.isV41();
  // Nearest preceding producers, per ratio.
  llvm::DenseMap<int64_t, LayerOp> lastFull, lastIndexSource;
  int64_t i = -1;
  for (auto [position, layer] : llvm::enumerate(layers)) {
    bool restOfSplit = layer.getPart() == LayerPart::rest;
    if (restOfSplit) {
      if (position == 0 || layers[position - 1].getPart() != LayerPart::kv ||
          layers[position - 1].getIndex() != layer.getIndex())
        return layer.emitOpError() << "layer " << layer.getIndex()
                                   << ": a rest part follows the kv part of the same layer";
    } else {
      ++i;
    }
    if ((int64_t)layer.getIndex() != i)
      return layer.emitOpError() << "layer " << layer.getIndex() << " stands at position " << i
                                 << "; layers are numbered 0, 1, 2, ... in order";
    AttentionKind kind = layer.getAttention();
    if (v41 && (kind == AttentionKind::csa || kind == AttentionKind::hca))
      return layer.emitOpError() << "layer " << i << ": a deepseek_v41 model has no V4 "
                                 << stringifyAttentionKind(kind) << " layers";
    if (!v41 && kind == AttentionKind::csa2)
      return layer.emitOpError() << "layer " << i << ": csa2 layers need family deepseek_v41";
    if (decoderStart) {
      if (!layer.getStage())
        return layer.emitOpError() << "layer " << i << ": a model with decoder_start needs a stage on every layer";
      Stage want = (int64_t)i < (int64_t)*decoderStart ? Stage::encoder : Stage::decoder;
      if (*layer.getStage() != want)
        return layer.emitOpError() << "layer " << i << " is in the " << stringifyStage(want)
                                   << " (decoder_start = " << *decoderStart << ") but is marked "
                                   << stringifyStage(*layer.getStage());
    } else if (layer.getStage()) {
      return layer.emitOpError() << "layer " << i << ": a stage needs the model's decoder_start";
    }

    int64_t ratio = layer.getRatio();
    for (auto [k, in] : llvm::enumerate(layer.getInputs())) {
      Type t = in.getType();
      if (!sharedRatio(t) || isPriorCache(layer, k))
        continue;
      LayerOp from = producerLayer(in);
      bool ownKvPart = from && restOfSplit && from.getPart() == LayerPart::kv &&
                       from.getIndex() == layer.getIndex();
      if (!from || (from.getIndex() >= layer.getIndex() && !ownKvPart))
        return layer.emitOpError() << "layer " << i << ": input #" << k << " (" << t
                                   << ") is not produced by an earlier layer";
      if (llvm::isa<CacheType>(t)) {
        LayerOp full = lastFull.lookup(ratio);
        if (from != full)
          return layer.emitOpError()
                 << "layer " << i << " reads the cache of layer " << from.getIndex()
                 << ", but its group's Full layer (the nearest preceding one of ratio " << ratio
                 << ") is " << (full ? std::to_string(full.getIndex()) : std::string("none"));
      } else if (llvm::isa<TopkType>(t)) {
        LayerOp src = lastIndexSource.lookup(ratio);
        if (from != src)
          return layer.emitOpError()
                 << "layer " << i << " reuses the top-k of layer " << from.getIndex()
                 << ", but the nearest preceding index source of ratio " << ratio << " is "
                 << (src ? std::to_string(src.getIndex()) : std::string("none"));
      } else if (llvm::isa<PoolType>(t)) {
        if (from.getMode() != Csa2Mode::full)
          return layer.emitOpError() << "layer " << i << " reads a candidate pool from layer "
                                     << from.getIndex() << ", which is not a Full layer";
      }
    }
    if (kind != AttentionKind::sliding) {
      // A split layer's caches come from its kv part, its selection from its rest.
      if ((layer.getMode() == Csa2Mode::full || kind == AttentionKind::csa ||
           kind == AttentionKind::hca) && !restOfSplit)
        lastFull[ratio] = layer;
      bool indexSource = (kind == AttentionKind::csa ||
                          (layer.getMode() && *layer.getMode() != Csa2Mode::reuse)) &&
                         layer.getPart() != LayerPart::kv;
      if (indexSource)
        lastIndexSource[ratio] = layer;
    }
  }
  return success();
}
} // namespace

LogicalResult ModelOp::verifyRegions() {
  if (getFamily() != "deepseek_v4" && getFamily() != "deepseek_v41")
    return emitOpError() << "family must be deepseek_v4 or deepseek_v41, got '" << getFamily() << "'";
  if (getNumLayers() < 1 || getVocabSize() < 1 || getHiddenSize() < 1 || getHcMult() < 1)
    return emitOpError() << "vocab_size, hidden_size, num_layers and hc_mult must be positive";
  if (auto d = getDecoderStart()) {
    if (!isV41())
      return emitOpError() << "decoder_start describes V4.1's encoder-decoder split";
    if ((int64_t)*d < 0 || *d > getNumLayers())
      return emitOpError() << "decoder_start " << *d << " is outside [0, " << getNumLayers() << "]";
  }
  if (auto pool = getCandidatePool()) {
    if (pool->size() != 3)
      return emitOpError() << "candidate_pool is [source layer, blocks, block size], got "
                           << pool->size() << " values";
    if ((*pool)[0] < 0 || (*pool)[0] >= (int64_t)getNumLayers() || (*pool)[1] < 1 || (*pool)[2] < 1)
      return emitOpError() << "candidate_pool needs a source layer in [0, " << getNumLayers()
                           << ") and positive block count and size";
  }
  for (Operation &op : getBody().front())
    if (!llvm::isa<WeightDeclOp, func::FuncOp>(op))
      return op.emitOpError() << "is not allowed at the top of a dsf.model (weights and functions only)";
  if (failed(verifyWeightUses(*this)))
    return failure();
  for (auto func : getBody().front().getOps<func::FuncOp>())
    if (failed(verifyLayers(*this, func)))
      return failure();
  return success();
}
