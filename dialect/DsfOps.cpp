//===- DsfOps.cpp - dsf op verifiers and weight uses -----------------------===//
//
// Op verifiers check what one op can see: the shapes of its operands and
// results and its attributes. What needs the whole model (weights against
// their declarations, CSA2 sharing) is in DsfModelVerifier.cpp.
//
//===----------------------------------------------------------------------===//
#include "dialect/DsfDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsf;

#define GET_OP_CLASSES
#include "dialect/DsfOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

RankedTensorType tensorOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
  }
  return s + "]";
}

/// Checks `shape` against `expected`, where kDyn in `expected` accepts any size.
LogicalResult expectShape(Operation *op, StringRef what, ArrayRef<int64_t> shape,
                          ArrayRef<int64_t> expected) {
  bool ok = shape.size() == expected.size();
  for (size_t i = 0; ok && i < shape.size(); ++i)
    ok = dimsAgree(shape[i], expected[i]);
  if (!ok)
    return op->emitOpError() << what << " has shape " << shapeString(shape)
                             << ", expected " << shapeString(expected);
  return success();
}

LogicalResult expectShape(Operation *op, StringRef what, Value v,
                          ArrayRef<int64_t> expected) {
  return expectShape(op, what, tensorOf(v).getShape(), expected);
}

/// Product of the dimensions after the token axis, which must be static.
FailureOr<int64_t> featureSize(Operation *op, StringRef what, Value v) {
  auto type = tensorOf(v);
  if (type.getRank() < 2)
    return op->emitOpError() << what << " needs a token axis and at least one feature dimension";
  int64_t size = 1;
  for (int64_t d : type.getShape().drop_front()) {
    if (ShapedType::isDynamic(d))
      return op->emitOpError() << what << " must have static feature dimensions, got "
                               << shapeString(type.getShape());
    size *= d;
  }
  return size;
}

int64_t tokens(Value v) { return tensorOf(v).getDimSize(0); }

LogicalResult sameTokens(Operation *op, Value a, Value b, StringRef what) {
  if (!dimsAgree(tokens(a), tokens(b)))
    return op->emitOpError() << what << " disagree on the number of tokens";
  return success();
}

WeightUse use(FlatSymbolRefAttr sym, StringRef role, SmallVector<int64_t> shape,
              int64_t rowsTouched = -1) {
  return WeightUse{sym, role, std::move(shape), rowsTouched};
}

int64_t lastDim(Value v) { return tensorOf(v).getShape().back(); }
} // namespace

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

void LayerOp::build(OpBuilder &builder, OperationState &state, TypeRange outputs,
                    int64_t index, AttentionKind attention, int64_t ratio,
                    std::optional<Csa2Mode> mode, std::optional<Stage> stage,
                    ValueRange inputs) {
  MLIRContext *ctx = builder.getContext();
  state.addTypes(outputs);
  state.addOperands(inputs);
  state.addAttribute(getIndexAttrName(state.name), builder.getI64IntegerAttr(index));
  state.addAttribute(getAttentionAttrName(state.name), AttentionKindAttr::get(ctx, attention));
  state.addAttribute(getRatioAttrName(state.name), builder.getI64IntegerAttr(ratio));
  if (mode)
    state.addAttribute(getModeAttrName(state.name), Csa2ModeAttr::get(ctx, *mode));
  if (stage)
    state.addAttribute(getStageAttrName(state.name), StageAttr::get(ctx, *stage));
  Region *body = state.addRegion();
  Block *block = new Block();
  for (Value v : inputs)
    block->addArgument(v.getType(), v.getLoc());
  body->push_back(block);
}

int64_t WeightDeclOp::getStoredBytes() {
  RankedTensorType type = getTensorType();
  if (auto format = getFormatAttr())
    return format.getTensorBytes(type.getShape());
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

LogicalResult WeightDeclOp::verify() {
  RankedTensorType type = getTensorType();
  Type element = type.getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isInteger(32))
    return emitOpError() << "weight @" << getSymName()
                         << " must be f32, bf16 or i32 (a routing table), got " << element;
  for (int64_t d : type.getShape())
    if (d <= 0)
      return emitOpError() << "weight @" << getSymName() << " has an empty dimension";
  if (auto format = getFormatAttr()) {
    if (format.isQuantized() && format.getBlockRows() > 1 && type.getRank() < 2)
      return emitOpError() << "weight @" << getSymName()
                           << " has a 2-D block format but rank " << type.getRank();
    if (format.getBf16Tail() != 0)
      return emitOpError() << "weight formats take no bf16_tail";
  }
  if (auto names = getExpertNamesAttr())
    if (!names.getValue().contains("{e}"))
      return emitOpError() << "expert_names must contain '{e}' for the expert index";
  if (auto value = getValueAttr())
    if (value.getShapedType().getShape() != type.getShape() ||
        value.getShapedType().getElementType() != type.getElementType())
      return emitOpError() << "weight @" << getSymName() << " is " << type << " but its value is "
                           << value.getShapedType();
  return success();
}

LogicalResult LayerOp::verify() {
  AttentionKind kind = getAttention();
  int64_t ratio = getRatio();
  auto prefix = [&]() { return emitOpError() << "layer " << getIndex() << ": "; };
  if ((int64_t)getIndex() < 0)
    return emitOpError() << "layer index must not be negative";
  if (kind == AttentionKind::sliding && ratio != 0)
    return prefix() << "a sliding-only layer has ratio 0, got " << ratio;
  if (kind != AttentionKind::sliding && ratio < 1)
    return prefix() << "a compressed layer needs a ratio of at least 1, got " << ratio;
  if ((kind == AttentionKind::csa || kind == AttentionKind::hca) && ratio < 2)
    return prefix() << "a V4 " << stringifyAttentionKind(kind)
                    << " layer compresses at least 2 tokens, got ratio " << ratio;
  if (getMode() && kind != AttentionKind::csa2)
    return prefix() << "a CSA2 mode is only allowed on compressed V4.1 (csa2) layers";
  if (!getMode() && kind == AttentionKind::csa2)
    return prefix() << "a csa2 layer needs a mode (full, reindex or reuse)";
  if (getPart() && getMode() != Csa2Mode::full)
    return prefix() << "only a Full layer is split into kv and rest parts";
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding, norms, projections, rope
//===----------------------------------------------------------------------===//

LogicalResult EmbedOp::verify() {
  if (tensorOf(getIds()).getRank() != 1)
    return emitOpError() << "ids must be a 1-D tensor of token ids";
  if (failed(expectShape(*this, "result", getResult(), {kDyn, kDyn})))
    return failure();
  return sameTokens(*this, getIds(), getResult(), "ids and result");
}
void EmbedOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  uses.push_back(use(getWeightAttr(), "embedding", {kAnyDim, lastDim(getResult())}, 1));
}

void RmsNormOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  if (auto w = getWeightAttr())
    uses.push_back(use(w, "norm weight", {lastDim(getInput())}));
}

LogicalResult LinearOp::verify() {
  if (failed(featureSize(*this, "input", getInput())) ||
      failed(featureSize(*this, "result", getResult())))
    return failure();
  return sameTokens(*this, getInput(), getResult(), "input and result");
}
void LinearOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  auto in = tensorOf(getInput()).getShape().drop_front();
  auto out = tensorOf(getResult()).getShape().drop_front();
  int64_t inSize = 1, outSize = 1;
  for (int64_t d : in) inSize *= d;
  for (int64_t d : out) outSize *= d;
  uses.push_back(use(getWeightAttr(), "weight", {outSize, inSize}));
}

LogicalResult GroupedLinearOp::verify() {
  auto in = tensorOf(getInput()), out = tensorOf(getResult());
  if (in.getRank() != 3 || out.getRank() != 3)
    return emitOpError() << "expects [tokens, heads, dim] -> [tokens, groups, rank]";
  int64_t groups = getGroups();
  if (groups < 1)
    return emitOpError() << "groups must be positive, got " << groups;
  if (in.getDimSize(1) % groups != 0)
    return emitOpError() << in.getDimSize(1) << " heads do not split into " << groups
                         << " equal groups";
  if (out.getDimSize(1) != groups)
    return emitOpError() << "result has " << out.getDimSize(1) << " groups, expected " << groups;
  return sameTokens(*this, getInput(), getResult(), "input and result");
}
void GroupedLinearOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  auto in = tensorOf(getInput()), out = tensorOf(getResult());
  int64_t g = getGroups();
  uses.push_back(use(getWeightAttr(), "grouped weight",
                     {g * out.getDimSize(2), in.getDimSize(1) / g * in.getDimSize(2)}));
}

LogicalResult RopeOp::verify() {
  if (tensorOf(getPositions()).getRank() != 1)
    return emitOpError() << "positions must be a 1-D tensor";
  int64_t width = lastDim(getInput());
  if (getRope().getDims() > width)
    return emitOpError() << "rotates " << getRope().getDims()
                         << " channels but rows have only " << width;
  return sameTokens(*this, getInput(), getPositions(), "input and positions");
}

LogicalResult TakeLastOp::verify() {
  if (getCount() < 1)
    return emitOpError() << "count must be positive, got " << getCount();
  auto t = tensorOf(getInput());
  if (t.getRank() < 1 || !t.isDynamicDim(0))
    return emitOpError() << "takes rows of a tensor whose token axis is dynamic";
  return success();
}

LogicalResult EntryPositionsOp::verify() {
  if (getRatio() < 1)
    return emitOpError() << "ratio must be at least 1, got " << getRatio();
  if (tensorOf(getPositions()).getRank() != 1 || tensorOf(getResult()).getRank() != 1)
    return emitOpError() << "positions must be 1-D";
  return success();
}

//===----------------------------------------------------------------------===//
// mHC
//===----------------------------------------------------------------------===//

namespace {
/// Checks streams [T, n, D] and returns (n, D).
FailureOr<std::pair<int64_t, int64_t>> streamShape(Operation *op, Value streams) {
  auto t = tensorOf(streams);
  if (t.getRank() != 3 || t.isDynamicDim(1) || t.isDynamicDim(2))
    return op->emitOpError() << "streams must be [tokens, n, D] with static n and D, got "
                             << shapeString(t.getShape());
  return std::make_pair(t.getDimSize(1), t.getDimSize(2));
}
} // namespace

LogicalResult HcExpandOp::verify() {
  auto sd = streamShape(*this, getStreams());
  if (failed(sd))
    return failure();
  auto [n, d] = *sd;
  if (failed(expectShape(*this, "input", getInput(), {kDyn, d})) ||
      failed(expectShape(*this, "pre", getPre(), {kDyn, n})))
    return failure();
  return sameTokens(*this, getInput(), getStreams(), "input and streams");
}

LogicalResult HcCoeffsOp::verify() {
  auto sd = streamShape(*this, getStreams());
  if (failed(sd))
    return failure();
  int64_t n = sd->first;
  if (getSinkhornIters() < 1)
    return emitOpError() << "sinkhorn_iters must be at least 1, got " << getSinkhornIters();
  if (failed(expectShape(*this, "pre", getPre(), {kDyn, n})) ||
      failed(expectShape(*this, "post", getPost(), {kDyn, n})) ||
      failed(expectShape(*this, "comb", getComb(), {kDyn, n, n})))
    return failure();
  return sameTokens(*this, getStreams(), getComb(), "streams and coefficients");
}
void HcCoeffsOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  auto t = tensorOf(getStreams());
  int64_t n = t.getDimSize(1), d = t.getDimSize(2);
  uses.push_back(use(getFnAttr(), "fn", {(2 + n) * n, n * d}));
  uses.push_back(use(getBaseAttr(), "base", {(2 + n) * n}));
  uses.push_back(use(getScaleAttr(), "scale", {3}));
}

LogicalResult HcCollapseOp::verify() {
  auto sd = streamShape(*this, getStreams());
  if (failed(sd))
    return failure();
  auto [n, d] = *sd;
  if (failed(expectShape(*this, "pre", getPre(), {kDyn, n})) ||
      failed(expectShape(*this, "result", getResult(), {kDyn, d})))
    return failure();
  return sameTokens(*this, getStreams(), getPre(), "streams and pre");
}

LogicalResult HcUpdateOp::verify() {
  auto sd = streamShape(*this, getStreams());
  if (failed(sd))
    return failure();
  auto [n, d] = *sd;
  if (failed(expectShape(*this, "block output", getBlockOutput(), {kDyn, d})) ||
      failed(expectShape(*this, "post", getPost(), {kDyn, n})) ||
      failed(expectShape(*this, "comb", getComb(), {kDyn, n, n})))
    return failure();
  if (getResult().getType() != getStreams().getType())
    return emitOpError() << "result type must equal the streams' type";
  return sameTokens(*this, getStreams(), getBlockOutput(), "streams and block output");
}

LogicalResult HcHeadOp::verify() {
  auto sd = streamShape(*this, getStreams());
  if (failed(sd))
    return failure();
  return expectShape(*this, "result", getResult(), {kDyn, sd->second});
}
void HcHeadOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  auto t = tensorOf(getStreams());
  int64_t n = t.getDimSize(1), d = t.getDimSize(2);
  uses.push_back(use(getFnAttr(), "fn", {n, n * d}));
  uses.push_back(use(getBaseAttr(), "base", {n}));
  uses.push_back(use(getScaleAttr(), "scale", {1}));
}

LogicalResult HcFusedUpdateOp::verify() {
  auto sd = streamShape(*this, getStreams());
  if (failed(sd))
    return failure();
  auto [n, d] = *sd;
  if (getSinkhornIters() < 1)
    return emitOpError() << "sinkhorn_iters must be at least 1, got " << getSinkhornIters();
  if (failed(expectShape(*this, "block output", getBlockOutput(), {kDyn, d})) ||
      failed(expectShape(*this, "post", getPost(), {kDyn, n})) ||
      failed(expectShape(*this, "comb", getComb(), {kDyn, n, n})) ||
      failed(expectShape(*this, "next pre", getNextPre(), {kDyn, n})) ||
      failed(expectShape(*this, "next post", getNextPost(), {kDyn, n})) ||
      failed(expectShape(*this, "next comb", getNextComb(), {kDyn, n, n})))
    return failure();
  if (getUpdated().getType() != getStreams().getType())
    return emitOpError() << "updated streams must have the streams' type";
  if (bool(getCollapsePre()) != bool(getCollapsed()))
    return emitOpError() << "a collapse needs both its weights (collapse(...)) and its result";
  if (Value pre = getCollapsePre())
    if (failed(expectShape(*this, "collapse pre", pre, {kDyn, n})) ||
        failed(expectShape(*this, "collapsed", getCollapsed(), {kDyn, d})))
      return failure();
  return sameTokens(*this, getStreams(), getBlockOutput(), "streams and block output");
}
void HcFusedUpdateOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  auto t = tensorOf(getStreams());
  int64_t n = t.getDimSize(1), d = t.getDimSize(2);
  uses.push_back(use(getFnAttr(), "fn", {(2 + n) * n, n * d}));
  uses.push_back(use(getBaseAttr(), "base", {(2 + n) * n}));
  uses.push_back(use(getScaleAttr(), "scale", {3}));
}

//===----------------------------------------------------------------------===//
// Compressor, caches, quantization
//===----------------------------------------------------------------------===//

LogicalResult CompressOp::verify() {
  if (failed(expectShape(*this, "input", getInput(), {kDyn, kDyn})) ||
      failed(expectShape(*this, "result", getResult(), {kDyn, kDyn})))
    return failure();
  int64_t ratio = getRatio();
  CompressorKind kind = getKind();
  StringRef name = stringifyCompressorKind(kind);
  if (ratio < 1)
    return emitOpError() << "ratio must be at least 1, got " << ratio;
  bool needsGate = kind != CompressorKind::project;
  bool needsApe = kind == CompressorKind::overlap || kind == CompressorKind::pool;
  if (needsGate != bool(getWgateAttr()))
    return emitOpError() << "a " << name << " compressor "
                         << (needsGate ? "needs" : "takes no") << " wgate";
  if (needsApe != bool(getApeAttr()))
    return emitOpError() << "a " << name << " compressor "
                         << (needsApe ? "needs" : "takes no") << " position bias (ape)";
  if (kind == CompressorKind::pair && ratio != 2)
    return emitOpError() << "a pair compressor has ratio 2, got " << ratio;
  if (kind == CompressorKind::project && ratio != 1)
    return emitOpError() << "a project compressor has ratio 1, got " << ratio;
  if ((kind == CompressorKind::overlap || kind == CompressorKind::pool) && ratio < 2)
    return emitOpError() << "a " << name << " compressor needs ratio >= 2, got " << ratio;
  if (getCarry() && !getCarryOut())
    return emitOpError() << "takes a carry but yields none: the rows it leaves open would be lost";
  for (Value v : {getCarry(), getCarryOut()})
    if (v && v.getType() != getInput().getType())
      return emitOpError() << "carries rows of the input's type " << getInput().getType() << ", got "
                           << v.getType();
  if (getCarryOut() && kind == CompressorKind::project)
    return emitOpError() << "a project compressor (ratio 1) leaves no rows open: it carries nothing";
  return success();
}
void CompressOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  int64_t width = lastDim(getResult()), d = lastDim(getInput());
  // The overlapping compressor emits two halves per token (Ca, Cb).
  int64_t projected = getKind() == CompressorKind::overlap ? 2 * width : width;
  uses.push_back(use(getWkvAttr(), "wkv", {projected, d}));
  if (auto g = getWgateAttr())
    uses.push_back(use(g, "wgate", {projected, d}));
  if (auto a = getApeAttr())
    uses.push_back(use(a, "ape", {(int64_t)getRatio(), projected}));
  uses.push_back(use(getNormAttr(), "norm", {width}));
}

LogicalResult QuantizeOp::verify() {
  auto packed = llvm::cast<QTensorType>(getResult().getType());
  if (failed(expectShape(*this, "input", getInput(), packed.getShape())))
    return failure();
  return success();
}

LogicalResult DequantizeOp::verify() {
  auto packed = llvm::cast<QTensorType>(getInput().getType());
  return expectShape(*this, "result", getResult(), packed.getShape());
}

namespace {
/// Shared check of what a cache or window is written from.
LogicalResult verifyStored(Operation *op, Value rows, int64_t width, QuantAttr format,
                           StringRef what) {
  int64_t rowsWidth;
  if (auto packed = llvm::dyn_cast<QTensorType>(rows.getType())) {
    if (packed.getRank() != 2)
      return op->emitOpError() << "expects rows [entries, width]";
    if (packed.getFormat() != format)
      return op->emitOpError() << "writes rows stored as " << packed.getFormat()
                               << " into a " << what << " stored as " << format;
    rowsWidth = packed.getShape().back();
  } else {
    auto t = tensorOf(rows);
    if (t.getRank() != 2)
      return op->emitOpError() << "expects rows [entries, width]";
    if (format.isQuantized())
      return op->emitOpError() << "a " << what << " stored as " << format
                               << " takes packed rows: quantize them first (dsf.quantize)";
    rowsWidth = t.getDimSize(1);
  }
  if (rowsWidth != width)
    return op->emitOpError() << "rows have " << rowsWidth << " channels but the " << what
                             << " holds " << width;
  return success();
}
} // namespace

LogicalResult CacheWriteOp::verify() {
  auto cache = llvm::cast<CacheType>(getCache().getType());
  if (Value prior = getPrior(); prior && prior.getType() != cache)
    return emitOpError() << "appends to a prior cache of another type (" << prior.getType() << ")";
  return verifyStored(*this, getEntries(), cache.getWidth(), cache.getFormat(), "cache");
}

LogicalResult WindowWriteOp::verify() {
  auto window = llvm::cast<WindowType>(getWindow().getType());
  if (Value prior = getPrior(); prior && prior.getType() != window)
    return emitOpError() << "continues a prior window of another type (" << prior.getType() << ")";
  return verifyStored(*this, getRows(), window.getWidth(), window.getFormat(), "window");
}

//===----------------------------------------------------------------------===//
// Indexer and attention
//===----------------------------------------------------------------------===//

LogicalResult IndexTopkOp::verify() {
  auto q = tensorOf(getQueries());
  if (q.getRank() != 3)
    return emitOpError() << "queries must be [tokens, index heads, index dim]";
  int64_t heads = q.getDimSize(1), dim = q.getDimSize(2);
  if (failed(expectShape(*this, "weights", getWeights(), {kDyn, heads})))
    return failure();
  auto keys = llvm::cast<CacheType>(getKeys().getType());
  if (keys.getKind() != CacheKind::index_keys)
    return emitOpError() << "scores index keys, but was given a " << stringifyCacheKind(keys.getKind())
                         << " cache";
  if (keys.getWidth() != dim)
    return emitOpError() << "index keys are " << keys.getWidth()
                         << " wide but queries are " << dim;
  if (getK() < 1)
    return emitOpError() << "k must be positive, got " << getK();
  if (Value pos = getPositions(); pos && tensorOf(pos).getRank() != 1)
    return emitOpError() << "positions must be [tokens]";
  auto sel = llvm::cast<TopkType>(getSelection().getType());
  if (sel.getK() != (int64_t)getK() || sel.getRatio() != keys.getRatio())
    return emitOpError() << "selection type must be !dsf.topk<k = " << getK()
                         << ", ratio = " << keys.getRatio() << ">";
  if (Value within = getWithin()) {
    auto pool = llvm::cast<PoolType>(within.getType());
    if (pool.getRatio() != keys.getRatio())
      return emitOpError() << "candidate pool of ratio " << pool.getRatio()
                           << " does not index keys of ratio " << keys.getRatio();
    if ((int64_t)getK() > pool.getCapacity())
      return emitOpError() << "top-k (" << getK() << ") is larger than the candidate pool ("
                           << pool.getBlocks() << " blocks x " << pool.getBlockSize()
                           << " = " << pool.getCapacity() << " entries)";
    if (getCandidatePool())
      return emitOpError() << "a candidate pool is formed from unrestricted scores, "
                              "not from scores already restricted to a pool";
  }
  if (Value made = getCandidatePool()) {
    auto pool = llvm::cast<PoolType>(made.getType());
    if (pool.getRatio() != keys.getRatio())
      return emitOpError() << "candidate pool must have the keys' ratio " << keys.getRatio();
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  auto q = tensorOf(getQueries());
  if (q.getRank() != 3)
    return emitOpError() << "queries must be [tokens, heads, head dim]";
  int64_t hd = q.getDimSize(2);
  if (getResult().getType() != q)
    return emitOpError() << "result type must equal the queries' type";
  auto window = llvm::cast<WindowType>(getWindow().getType());
  if (window.getWidth() != hd)
    return emitOpError() << "window rows are " << window.getWidth()
                         << " wide but heads are " << hd;
  if (getScaleAttr().getValueAsDouble() <= 0)
    return emitOpError() << "scale must be positive";
  if (Value pos = getPositions(); pos && tensorOf(pos).getRank() != 1)
    return emitOpError() << "positions must be [tokens]";
  if (Value c = getCache()) {
    auto cache = llvm::cast<CacheType>(c.getType());
    if (cache.getKind() != CacheKind::kv)
      return emitOpError() << "attends over a kv cache, but was given "
                           << stringifyCacheKind(cache.getKind());
    if (cache.getWidth() != hd)
      return emitOpError() << "cache entries are " << cache.getWidth()
                           << " wide but heads are " << hd;
    if (Value s = getSelection()) {
      auto sel = llvm::cast<TopkType>(s.getType());
      if (sel.getRatio() != cache.getRatio())
        return emitOpError() << "selection of ratio " << sel.getRatio()
                             << " indexes a cache of ratio " << cache.getRatio();
    }
  } else if (getSelection()) {
    return emitOpError() << "a selection needs the cache it selects from";
  }
  return success();
}
void AttentionOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  uses.push_back(use(getSinkAttr(), "sink", {tensorOf(getQueries()).getDimSize(1)}));
}

//===----------------------------------------------------------------------===//
// MoE
//===----------------------------------------------------------------------===//

LogicalResult MoeGateOp::verify() {
  int64_t k = (int64_t)getTopK();
  if (k < 1)
    return emitOpError() << "top_k must be positive, got " << k;
  if (failed(expectShape(*this, "input", getInput(), {kDyn, kDyn})) ||
      failed(expectShape(*this, "routing weights", getRoutingWeights(), {kDyn, k})) ||
      failed(expectShape(*this, "experts", getExperts(), {kDyn, k})))
    return failure();
  if (getHashTableAttr() && !getTokenIds())
    return emitOpError() << "hash routing reads the token ids: pass ids(...)";
  if (getHashTableAttr() && (getBiasAttr() || getBiasVlAttr()))
    return emitOpError() << "hash routing selects from its table; it takes no bias";
  if (getBiasVlAttr() && !getImageMask())
    return emitOpError() << "bias_vl applies to image tokens: pass image(...)";
  if (getBiasVlAttr() && !getBiasAttr())
    return emitOpError() << "bias_vl replaces bias for image tokens; declare bias too";
  if (getImageMask() && !getBiasVlAttr())
    return emitOpError() << "an image mask only matters with bias_vl";
  if (getRoutedScaleAttr().getValueAsDouble() <= 0)
    return emitOpError() << "routed_scale must be positive";
  return sameTokens(*this, getInput(), getExperts(), "input and experts");
}
void MoeGateOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  const int64_t experts = kDimVar0;
  uses.push_back(use(getWeightAttr(), "gate weight", {experts, lastDim(getInput())}));
  if (auto b = getBiasAttr())
    uses.push_back(use(b, "bias", {experts}));
  if (auto b = getBiasVlAttr())
    uses.push_back(use(b, "bias_vl", {experts}));
  if (auto h = getHashTableAttr())
    uses.push_back(use(h, "hash table", {kAnyDim, (int64_t)getTopK()}, 1));
}

LogicalResult MoeExpertsOp::verify() {
  auto w = tensorOf(getRoutingWeights());
  if (w.getRank() != 2 || tensorOf(getExperts()).getShape() != w.getShape())
    return emitOpError() << "routing weights and experts must both be [tokens, top_k]";
  if (getSwigluLimitAttr().getValueAsDouble() <= 0)
    return emitOpError() << "swiglu_limit must be positive";
  if (failed(expectShape(*this, "result", getResult(), {kDyn, lastDim(getInput())})))
    return failure();
  return sameTokens(*this, getInput(), getRoutingWeights(), "input and routing weights");
}
void MoeExpertsOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  const int64_t experts = kDimVar0, inner = kDimVar0 - 1;
  int64_t d = lastDim(getInput()), k = lastDim(getExperts());
  uses.push_back(use(getW1Attr(), "w1", {experts, inner, d}, k));
  uses.push_back(use(getW2Attr(), "w2", {experts, d, inner}, k));
  uses.push_back(use(getW3Attr(), "w3", {experts, inner, d}, k));
}

LogicalResult FfnOp::verify() {
  if (getSwigluLimitAttr().getValueAsDouble() <= 0)
    return emitOpError() << "swiglu_limit must be positive";
  return expectShape(*this, "input", getInput(), {kDyn, kDyn});
}
void FfnOp::getWeightUses(SmallVectorImpl<WeightUse> &uses) {
  const int64_t inner = kDimVar0;
  int64_t d = lastDim(getInput());
  uses.push_back(use(getW1Attr(), "w1", {inner, d}));
  uses.push_back(use(getW2Attr(), "w2", {d, inner}));
  uses.push_back(use(getW3Attr(), "w3", {inner, d}));
}
