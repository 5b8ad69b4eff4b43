//===- GraphBuilder.cpp - a validated config to dsf IR ---------------------===//
//
// Emits the forward graph of MODEL.md: for V4, mHC at both sub-blocks with
// the HC head at the end; for V4.1, the single-pass mHC whose collapse uses
// the previous site's pre. Weight symbols are the released checkpoint names.
//
// The graph is the model before the V4.1 passes: every compressed V4.1 layer
// computes its own compressed KV, index keys and top-k (as a Full layer would),
// and every cache is stored in f32. The model carries the schedule it is meant
// to run and its candidate pool as attributes; dsf-schedule-csa2 demotes layers
// to Reindex / Reuse and shares their groups' values, dsf-hierarchical-indexer
// adds the pool, dsf-quantize-kv the cache formats.
//
//===----------------------------------------------------------------------===//
#include "models/import/GraphBuilder.h"

#include "passes/Schedule.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsf;

namespace dsf {
namespace {

class GraphBuilder {
public:
  GraphBuilder(OpBuilder &b, Location loc, const ModelConfig &c)
      : b(b), loc(loc), c(c), ctx(b.getContext()), f32(b.getF32Type()) {}

  ModelOp build();

private:
  // --- types -------------------------------------------------------------
  RankedTensorType act(ArrayRef<int64_t> featureDims, Type element = {}) {
    SmallVector<int64_t> shape{ShapedType::kDynamic};
    shape.append(featureDims.begin(), featureDims.end());
    return RankedTensorType::get(shape, element ? element : f32);
  }
  bool v41() const { return c.family == Family::V41; }
  /// Caches are f32 until dsf-quantize-kv gives them their formats.
  QuantAttr plainFormat() const { return QuantAttr::getPlain(ctx, ScalarFormat::f32); }
  CacheType kvCache(int64_t ratio) const {
    return CacheType::get(ctx, CacheKind::kv, ratio, c.headDim, plainFormat());
  }
  CacheType indexCache(int64_t ratio) const {
    return CacheType::get(ctx, CacheKind::index_keys, ratio, c.indexDim, plainFormat());
  }
  TopkType topk(int64_t ratio) const { return TopkType::get(ctx, c.indexTopk, ratio); }
  RopeAttr ropeAttr(const RopeParams &p) const {
    if (!p.yarn)
      return RopeAttr::get(ctx, b.getF64FloatAttr(p.theta), p.dims, nullptr, std::nullopt,
                           nullptr, nullptr);
    return RopeAttr::get(ctx, b.getF64FloatAttr(p.theta), p.dims,
                         b.getF64FloatAttr(p.yarn->factor), p.yarn->originalMax,
                         b.getF64FloatAttr(p.yarn->betaFast), b.getF64FloatAttr(p.yarn->betaSlow));
  }

  // --- weights -----------------------------------------------------------
  enum class Storage { Plain, Dense, Expert, Fp32, Int };
  FlatSymbolRefAttr weight(const std::string &name, ArrayRef<int64_t> shape, Storage storage,
                           StringRef expertNames = {}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(firstFunc);
    Type element;
    QuantAttr format;
    auto fromStorage = [&](const WeightStorage &s) {
      switch (s.kind) {
      case WeightStorage::F32: element = f32; break;
      case WeightStorage::BF16: element = b.getBF16Type(); break;
      case WeightStorage::FP8:
        element = b.getBF16Type();
        format = QuantAttr::get(ctx, ScalarFormat::e4m3, ScaleFormat::ue8m0,
                                shape.size() >= 2 ? s.blockRows : 1, s.blockCols, 0, 1);
        break;
      case WeightStorage::MXFP4:
        element = b.getBF16Type();
        format = QuantAttr::get1D(ctx, ScalarFormat::e2m1, ScaleFormat::ue8m0, 32);
        break;
      }
    };
    switch (storage) {
    case Storage::Dense: fromStorage(c.denseWeights); break;
    case Storage::Expert: fromStorage(c.expertWeights); break;
    case Storage::Plain: // norms, embeddings, router: never block-quantized
      element = c.denseWeights.kind == WeightStorage::F32 ? Type(f32) : Type(b.getBF16Type());
      break;
    case Storage::Fp32: element = f32; break;  // mHC parameters, sinks: fp32 in every checkpoint
    case Storage::Int: element = b.getI32Type(); break;
    }
    auto decl = WeightDeclOp::create(b, loc, b.getStringAttr(name),
                                     TypeAttr::get(RankedTensorType::get(shape, element)), format,
                                     expertNames.empty() ? StringAttr() : b.getStringAttr(expertNames),
                                     ElementsAttr());
    (void)decl;
    return FlatSymbolRefAttr::get(ctx, name);
  }
  std::string layerName(int64_t i, StringRef rest) const {
    return ("layers." + Twine(i) + "." + rest).str();
  }

  // --- ops ---------------------------------------------------------------
  Value linear(Value x, const std::string &name, ArrayRef<int64_t> outDims, Storage s) {
    int64_t in = 1, out = 1;
    for (int64_t d : llvm::cast<RankedTensorType>(x.getType()).getShape().drop_front()) in *= d;
    for (int64_t d : outDims) out *= d;
    return LinearOp::create(b, loc, act(outDims), x, weight(name, {out, in}, s));
  }
  Value norm(Value x, const std::string &name) {
    int64_t width = llvm::cast<RankedTensorType>(x.getType()).getShape().back();
    FlatSymbolRefAttr w = name.empty() ? FlatSymbolRefAttr() : weight(name, {width}, Storage::Plain);
    return RmsNormOp::create(b, loc, x, w, b.getF64FloatAttr(c.rmsEps));
  }
  Value rope(Value x, Value pos, RopeAttr r, bool inverse = false) {
    return RopeOp::create(b, loc, x, pos, r, inverse ? b.getUnitAttr() : UnitAttr());
  }
  struct Coeffs { Value pre, post, comb; };
  Coeffs coeffs(Value X, int64_t layer, StringRef site) {
    int64_t n = c.hcMult;
    std::string p = layerName(layer, ("hc_" + site).str());
    auto op = HcCoeffsOp::create(
        b, loc, act({n}), act({n}), act({n, n}), X,
        weight(p + "_fn", {(2 + n) * n, n * c.hidden}, Storage::Fp32),
        weight(p + "_base", {(2 + n) * n}, Storage::Fp32), weight(p + "_scale", {3}, Storage::Fp32),
        b.getI64IntegerAttr(c.hcIters), b.getF64FloatAttr(c.hcEps), b.getF64FloatAttr(c.rmsEps));
    return {op.getPre(), op.getPost(), op.getComb()};
  }
  Value collapse(Value X, Value pre) {
    return HcCollapseOp::create(b, loc, act({c.hidden}), X, pre);
  }
  Value update(Value X, Value y, Value post, Value comb) {
    return HcUpdateOp::create(b, loc, X.getType(), X, y, post, comb);
  }

  /// The compressor of a Full / V4 compressed layer; returns the latent.
  Value compressor(Value x, int64_t layer, StringRef prefix, CompressorKind kind, int64_t ratio,
                   int64_t width) {
    int64_t projected = kind == CompressorKind::overlap ? 2 * width : width;
    std::string p = layerName(layer, prefix);
    FlatSymbolRefAttr wkv = weight(p + ".wkv.weight", {projected, c.hidden}, Storage::Plain);
    FlatSymbolRefAttr wgate = kind == CompressorKind::project
                                  ? FlatSymbolRefAttr()
                                  : weight(p + ".wgate.weight", {projected, c.hidden}, Storage::Plain);
    FlatSymbolRefAttr ape = (kind == CompressorKind::overlap || kind == CompressorKind::pool)
                                ? weight(p + ".ape", {ratio, projected}, Storage::Fp32)
                                : FlatSymbolRefAttr();
    FlatSymbolRefAttr normW = weight(p + ".norm.weight", {width}, Storage::Plain);
    return CompressOp::create(b, loc, act({width}), /*carry_out=*/Type(), x, /*carry=*/Value(),
                              CompressorKindAttr::get(ctx, kind),
                              b.getI64IntegerAttr(ratio), wkv, wgate, ape, normW,
                              b.getF64FloatAttr(c.rmsEps))
        .getResult();
  }

  void buildLayer(int64_t i);
  Value buildMoe(Value z, int64_t i, Value ids, Value image);

  OpBuilder &b;
  Location loc;
  const ModelConfig &c;
  MLIRContext *ctx;
  Type f32;
  Operation *firstFunc = nullptr;
  // Function-level values.
  Value ids, positions, image, streams, prePrev;
};

Value GraphBuilder::buildMoe(Value z, int64_t i, Value idsArg, Value imageArg) {
  const LayerSpec &l = c.layers[i];
  int64_t k = c.topK, e = c.nRouted, d = c.hidden, inter = c.moeInter;
  std::string p = layerName(i, "ffn.");
  FlatSymbolRefAttr gateW = weight(p + "gate.weight", {e, d}, Storage::Plain);
  FlatSymbolRefAttr bias, biasVl, table;
  if (l.hashMoe) {
    table = weight(p + "gate.tid2eid", {c.vocab, k}, Storage::Int);
  } else {
    bias = weight(p + "gate.bias", {e}, Storage::Fp32);
    if (c.hasImageBias)
      biasVl = weight(p + "gate.bias_vl", {e}, Storage::Fp32);
  }
  auto gate = MoeGateOp::create(b, loc, act({k}), act({k}, b.getI32Type()), z,
                                l.hashMoe ? idsArg : Value(), biasVl ? imageArg : Value(), gateW,
                                bias, biasVl, table, b.getI64IntegerAttr(k),
                                b.getF64FloatAttr(c.routedScale));
  auto expertWeight = [&](StringRef w, ArrayRef<int64_t> shape) {
    return weight((p + "experts." + w + ".weight").str(), shape, Storage::Expert,
                  (p + "experts.{e}." + w + ".weight").str());
  };
  Value routed = MoeExpertsOp::create(
      b, loc, act({d}), z, gate.getRoutingWeights(), gate.getExperts(),
      expertWeight("w1", {e, inter, d}), expertWeight("w2", {e, d, inter}),
      expertWeight("w3", {e, inter, d}), b.getF64FloatAttr(c.swigluLimit));
  if (c.nShared == 0)
    return routed;
  int64_t sharedInter = c.nShared * inter;
  Value sharedOut = FfnOp::create(
      b, loc, z, weight(p + "shared_experts.w1.weight", {sharedInter, d}, Storage::Dense),
      weight(p + "shared_experts.w2.weight", {d, sharedInter}, Storage::Dense),
      weight(p + "shared_experts.w3.weight", {sharedInter, d}, Storage::Dense),
      b.getF64FloatAttr(c.swigluLimit));
  return AddOp::create(b, loc, routed, sharedOut);
}

void GraphBuilder::buildLayer(int64_t i) {
  const LayerSpec &l = c.layers[i];
  int64_t d = c.hidden, h = c.numHeads, hd = c.headDim;
  int64_t r = l.ratio;
  // Before dsf-schedule-csa2 every compressed V4.1 layer is Full.
  bool full = v41() && l.role != LayerRole::Sliding;
  bool csa = l.role == LayerRole::Csa, hca = l.role == LayerRole::Hca;

  SmallVector<Value> inputs{streams};
  if (v41())
    inputs.push_back(prePrev);
  inputs.push_back(positions);
  bool needsIds = l.hashMoe;
  if (needsIds)
    inputs.push_back(ids);
  bool needsImage = c.hasImageBias && !l.hashMoe;
  if (needsImage)
    inputs.push_back(image);
  SmallVector<Type> outputs{streams.getType()};
  if (v41())
    outputs.push_back(prePrev.getType());

  AttentionKind kind = l.role == LayerRole::Sliding ? AttentionKind::sliding
                       : csa                        ? AttentionKind::csa
                       : hca                        ? AttentionKind::hca
                                                    : AttentionKind::csa2;
  std::optional<Csa2Mode> mode;
  if (kind == AttentionKind::csa2)
    mode = Csa2Mode::full;
  std::optional<Stage> stage;
  if (v41())
    stage = i < c.decoderStart ? Stage::encoder : Stage::decoder;
  auto layer = LayerOp::create(b, loc, outputs, i, kind, r, mode, stage, inputs);

  OpBuilder::InsertionGuard guard(b);
  Block &body = layer.getBodyBlock();
  b.setInsertionPointToStart(&body);
  Value X = body.getArgument(0);
  size_t arg = 1;
  Value pre = v41() ? body.getArgument(arg++) : Value();
  Value pos = body.getArgument(arg++);
  Value idsArg = needsIds ? body.getArgument(arg++) : Value();
  Value imageArg = needsImage ? body.getArgument(arg++) : Value();
  RopeAttr layerRope = ropeAttr(r > 0 ? c.compressRope : c.mainRope);

  // --- attention sub-block ----------------------------------------------
  Coeffs a = coeffs(X, i, "attn");
  Value x = norm(collapse(X, v41() ? pre : a.pre), layerName(i, "attn_norm.weight"));
  Value qr = norm(linear(x, layerName(i, "attn.wq_a.weight"), {c.qLora}, Storage::Dense),
                  layerName(i, "attn.q_norm.weight"));
  Value q = linear(qr, layerName(i, "attn.wq_b.weight"), {h, hd}, Storage::Dense);
  if (!v41())
    q = norm(q, ""); // V4's per-head query RMS, no weight
  q = rope(q, pos, layerRope);
  Value kv = norm(linear(x, layerName(i, "attn.wkv.weight"), {hd}, Storage::Dense),
                  layerName(i, "attn.kv_norm.weight"));
  kv = rope(kv, pos, layerRope);
  Value window = WindowWriteOp::create(b, loc, WindowType::get(ctx, c.window, hd, plainFormat()), kv,
                                     /*prior=*/Value());

  Value cache, keys, selection;
  if (full || csa || hca) {
    CompressorKind ck = csa ? CompressorKind::overlap
                        : hca ? CompressorKind::pool
                        : r == 2 ? CompressorKind::pair
                                 : CompressorKind::project;
    Value latent = compressor(x, i, "attn.compressor", ck, r, hd);
    Value entryPos = EntryPositionsOp::create(b, loc, pos, b.getI64IntegerAttr(r));
    if (full) {
      // V4.1: index keys from the same latent, before its rope.
      Value k = norm(linear(latent, layerName(i, "attn.indexer.wk.weight"), {c.indexDim},
                            Storage::Plain),
                     layerName(i, "attn.indexer.k_norm.weight"));
      keys = CacheWriteOp::create(b, loc, indexCache(r), rope(k, entryPos, layerRope), /*prior=*/Value());
    } else if (csa) {
      // V4: the indexer has its own overlapping compressor.
      Value k = compressor(x, i, "attn.indexer.compressor", CompressorKind::overlap, r, c.indexDim);
      keys = CacheWriteOp::create(b, loc, indexCache(r), rope(k, entryPos, layerRope), /*prior=*/Value());
    }
    cache = CacheWriteOp::create(b, loc, kvCache(r), rope(latent, entryPos, layerRope), /*prior=*/Value());
  }
  if (keys) {
    Value qi = rope(linear(qr, layerName(i, "attn.indexer.wq_b.weight"), {c.indexHeads, c.indexDim},
                           Storage::Dense),
                    pos, layerRope);
    Value w = linear(x, layerName(i, "attn.indexer.weights_proj.weight"), {c.indexHeads},
                     Storage::Plain);
    double scale = 1.0 / std::sqrt(double(c.indexHeads) * double(c.indexDim));
    selection = IndexTopkOp::create(b, loc, topk(r), Type(), qi, w, keys, Value(), /*positions=*/Value(),
                                    b.getI64IntegerAttr(c.indexTopk), b.getF64FloatAttr(scale))
                    .getSelection();
  }

  Value o = AttentionOp::create(b, loc, q.getType(), q, window, cache, selection, /*positions=*/Value(),
                                weight(layerName(i, "attn.attn_sink"), {h}, Storage::Fp32),
                                b.getF64FloatAttr(1.0 / std::sqrt(double(hd))));
  o = rope(o, pos, layerRope, /*inverse=*/true);
  Value oa = GroupedLinearOp::create(
      b, loc, act({c.oGroups, c.oLora}), o,
      weight(layerName(i, "attn.wo_a.weight"), {c.oGroups * c.oLora, h / c.oGroups * hd},
             Storage::Dense),
      b.getI64IntegerAttr(c.oGroups));
  Value y = linear(oa, layerName(i, "attn.wo_b.weight"), {d}, Storage::Dense);
  Value X2 = update(X, y, a.post, a.comb);

  // --- MoE sub-block ------------------------------------------------------
  Coeffs f = coeffs(X2, i, "ffn");
  Value z = norm(collapse(X2, v41() ? a.pre : f.pre), layerName(i, "ffn_norm.weight"));
  Value m = buildMoe(z, i, idsArg, imageArg);
  Value X3 = update(X2, m, f.post, f.comb);

  SmallVector<Value> yields{X3};
  if (v41())
    yields.push_back(f.pre); // the next site collapses with this site's pre
  YieldOp::create(b, loc, yields);

  b.setInsertionPointAfter(layer);
  streams = layer.getResult(0);
  if (v41())
    prePrev = layer.getResult(1);
}

ModelOp GraphBuilder::build() {
  SmallVector<NamedAttribute> attrs;
  std::optional<int64_t> decoderStart;
  if (v41())
    decoderStart = c.decoderStart;
  StringAttr schedule;
  DenseI64ArrayAttr pool;
  if (v41()) {
    std::vector<char> letters;
    for (const LayerSpec &l : c.layers)
      letters.push_back(roleLetter(l.role)[0]);
    schedule = b.getStringAttr(formatSchedule(letters, c.decoderStart));
    if (c.candidateSource >= 0)
      pool = b.getDenseI64ArrayAttr({c.candidateSource, c.candidateBlocks, c.candidateBlockSize});
  }
  auto model = ModelOp::create(b, loc, b.getStringAttr(c.name),
                               b.getStringAttr(v41() ? "deepseek_v41" : "deepseek_v4"),
                               b.getI64IntegerAttr(c.vocab), b.getI64IntegerAttr(c.hidden),
                               b.getI64IntegerAttr(c.numLayers), b.getI64IntegerAttr(c.hcMult),
                               decoderStart ? b.getI64IntegerAttr(*decoderStart) : IntegerAttr(),
                               schedule, pool);
  Block *body = new Block();
  model.getBody().push_back(body);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);

  auto idsType = act({}, b.getI32Type());
  SmallVector<Type> argTypes{idsType, idsType};
  if (c.hasImageBias)
    argTypes.push_back(act({}, b.getI1Type()));
  auto funcType = b.getFunctionType(argTypes, {act({c.vocab})});
  auto func = func::FuncOp::create(b, loc, "forward", funcType);
  firstFunc = func;
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ids = entry->getArgument(0);
  positions = entry->getArgument(1);
  if (c.hasImageBias)
    image = entry->getArgument(2);

  Value embedded = EmbedOp::create(b, loc, act({c.hidden}), ids,
                                   weight("embed.weight", {c.vocab, c.hidden}, Storage::Plain));
  auto expand = HcExpandOp::create(b, loc, act({c.hcMult, c.hidden}), act({c.hcMult}), embedded);
  streams = expand.getStreams();
  prePrev = expand.getPre();
  for (int64_t i = 0; i < c.numLayers; ++i)
    buildLayer(i);

  Value h;
  if (v41()) {
    h = collapse(streams, prePrev);
  } else {
    int64_t n = c.hcMult;
    h = HcHeadOp::create(b, loc, act({c.hidden}), streams,
                         weight("hc_head_fn", {n, n * c.hidden}, Storage::Fp32),
                         weight("hc_head_base", {n}, Storage::Fp32),
                         weight("hc_head_scale", {1}, Storage::Fp32), b.getF64FloatAttr(c.hcEps),
                         b.getF64FloatAttr(c.rmsEps));
  }
  Value logits = linear(norm(h, "norm.weight"), "head.weight", {c.vocab}, Storage::Plain);
  func::ReturnOp::create(b, loc, logits);
  return model;
}

} // namespace

ModelOp buildModel(OpBuilder &builder, Location loc, const ModelConfig &config) {
  return GraphBuilder(builder, loc, config).build();
}

} // namespace dsf
