//===- Builders.h - helpers shared by the dsf-to-linalg patterns -----------===//
//
// Small builders for linalg.generic on f32 tensors whose first axis is the
// dynamic token axis, and the base of every dsf-to-linalg pattern (which
// knows each function's weight values).
//
//===----------------------------------------------------------------------===//
#ifndef DSF_LOWERING_DSFTOLINALG_BUILDERS_H
#define DSF_LOWERING_DSFTOLINALG_BUILDERS_H

#include "lowering/Passes.h"
#include "lowering/ScalarMath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace mlir::dsf::lowering {

/// Per function: the SSA value standing for each weight symbol.
using WeightValues = llvm::DenseMap<Operation *, llvm::StringMap<Value>>;

/// mHC's Sinkhorn rounds run in a helper function per (n, rounds, eps), which
/// the pass adds after the conversion (a loop built inside a conversion
/// pattern crashed MLIR 22's driver); patterns call it by name.
struct SinkhornSpec {
  int64_t n = 0, rounds = 0;
  double eps = 0;
};

/// An mHC site runs in a helper function per shape (dsf_hc_site_...), added
/// after the conversion like the Sinkhorn helpers: the coefficients of
/// streams X [tokens, n, width], and, for a fused site, the residual update
/// before them and the next input's collapse after. Every site of one shape
/// calls the same helper, and a target can replace its body with kernels of
/// its own (dsf-gpu-fuse-mhc) while the CPU runs the linalg below.
struct HcSiteSpec {
  int64_t n = 0, width = 0, iters = 0;
  double eps = 0, normEps = 0;
  bool update = false, collapse = false;
};

/// The indexer's top-k selection runs in a helper function per (k,
/// threshold-from) (dsf_topk_...): scores [tokens, entries] (-inf: not a
/// candidate) -> [tokens, k] ascending entry indices, -1 padded. The CPU runs
/// its linalg (selectTopk); a target may replace the body with a kernel of
/// its own (dsf-gpu-select-topk) that selects the same entries.
struct TopkSpec {
  int64_t k = 0, thresholdFrom = 0;
};
std::string topkName(const TopkSpec &spec);
Value selectTopk(OpBuilder &b, Location loc, Value ranked, const TopkSpec &spec);

/// The MoE router after its projection runs in a helper function per shape
/// (dsf_moe_route_...): logits [tokens, experts], [bias [experts]],
/// [bias_vl [experts], image mask [tokens]] -> routing weights [tokens, k],
/// experts [tokens, k]. The CPU runs its linalg (routeTokens); a target may
/// replace the body with a kernel of its own (dsf-gpu-route-experts).
struct RouterSpec {
  int64_t experts = 0, topK = 0;
  double routedScale = 1;
  bool bias = false, imageBias = false;
};
std::string routerName(const RouterSpec &spec);
SmallVector<Type> routerResultTypes(MLIRContext *ctx, const RouterSpec &spec);
SmallVector<Value> routeTokens(OpBuilder &b, Location loc, const RouterSpec &spec, ValueRange args);

/// A cache row in its packed format, the layout of the runtime's codecs
/// (runtime/src/codecs.cpp): the codes (E4M3 a byte; E2M1 two a byte, the
/// even element in the low nibble, sign bit 3 and grid index bits 0-2), then
/// one scale byte (UE8M0: the biased exponent; or E4M3) per block. The
/// formats the codecs have: FP8 (E4M3, UE8M0 / 32), MXFP4 (E2M1, UE8M0 /
/// 32), NVFP4 (E2M1, E4M3 / 16), 1-D blocks, no bf16 tail.
struct PackedRow {
  QuantAttr format;
  int64_t width = 0, codeBytes = 0, bytes = 0;
  bool fp4() const { return format.getElement() == ScalarFormat::e2m1; }
  PackedCodes codes() const {
    return PackedCodes{fp4(), format.getScale() == ScaleFormat::e4m3, codeBytes, format.getBlockCols()};
  }
};
/// The packed row of `format` over `width` channels, if the codecs have it.
std::optional<PackedRow> packedRow(QuantAttr format, int64_t width);
/// The packed row of a quantized tensor's or a cache's format and width.
std::optional<PackedRow> packedRowOf(Type dsfType);
/// The packed row a lowered value of `lowered` type holds for its dsf type
/// `held` (a qtensor or a cache): none when it holds f32 values; failure when
/// it holds bytes (i8) of a format without a packed row.
FailureOr<std::optional<PackedRow>> heldRow(Type lowered, Type held);
/// "fp8", "mxfp4" or "nvfp4" (the runtime's codec names).
std::string packedRowName(const PackedRow &row);
/// x [..., width] f32 quantized (as dsf.quantize rounds it) and packed:
/// [..., bytes] i8.
Value packRows(OpBuilder &b, Location loc, Value x, const PackedRow &row);
/// Channel c of the packed row at `at` (every index but the last) of
/// `bytes`, decoded: the f32 value dsf.quantize's rounding gives, bit for bit.
Value decodeElement(OpBuilder &b, Location loc, Value bytes, ValueRange at, Value c, const PackedRow &row);
/// Packed rows [..., bytes] decoded whole: [..., width] f32.
Value unpackRows(OpBuilder &b, Location loc, Value bytes, const PackedRow &row);

/// Sink attention over a layer's window band and, with k > 0, the k selected
/// entries of its cache runs in a helper function per shape
/// (dsf_attention_...): queries [tokens, heads, width], window [rows, width],
/// [cache [entries, width], selection [tokens, k] i32 (-1: none)], sink
/// [heads] -> [tokens, heads, width]. The CPU runs its linalg
/// (sinkAttention); a target may replace the body with a kernel of its own
/// (dsf-gpu-sink-attention).
struct AttentionSpec {
  int64_t heads = 0, width = 0, window = 0, k = 0;
  double scale = 1;
};
std::string attentionName(const AttentionSpec &spec);
SmallVector<Type> attentionInputTypes(MLIRContext *ctx, const AttentionSpec &spec);
/// How the queries of an attention reach their rows: the window's band and
/// the cache's entries (a sequence's own tensors, or the slots of a batched
/// entry point).
struct QueryRows {
  Value window;            // [rows, width]
  int64_t windowSize = 0;
  /// Band column w (0 .. W-1, oldest first) of query t: (whether it is a
  /// row of the sequence, a row of `window` to read: one that exists).
  std::function<std::pair<Value, Value>(OpBuilder &, Location, Value t, Value w)> bandRow;
  Value cache;             // [rows, width], or null; packed: [rows, bytes] i8
  std::optional<PackedRow> cacheRow;   // the cache's packed row, if packed
  Value entries;           // the extent of the entry axis
  int64_t ratio = 1;
  /// Entry e of query t: its row of `cache` (null: row e).
  std::function<Value(OpBuilder &, Location, Value t, Value e)> entryRow;
  /// Query t's position (an index).
  std::function<Value(OpBuilder &, Location, Value t)> position;
};

/// A sequence's rows: the queries are the window's last rows; their
/// positions are `positions` or, without them, the window holds the whole
/// sequence from position 0.
QueryRows sequenceRows(OpBuilder &b, Location loc, Value q, Value window, int64_t windowSize, Value cache,
                       int64_t ratio, Value positions);

/// One softmax per (query, head) over [window band | the selected entries
/// (or, without a selection, every visible one) | sink], K = V.
Value sinkAttention(OpBuilder &b, Location loc, Value q, const QueryRows &rows, Value selection, Value sink,
                    double scale);

/// Sink attention in a batched entry point (dsf.batched) runs in a helper
/// per shape too (dsf_attention_slots_...): queries [tokens, heads, width],
/// the windows' rings flattened [tokens * W, width] (position p of token t's
/// sequence at row t * W + p mod W), positions [tokens] i32, [the cache's
/// pages flattened [pages * E, width], the page table [tokens, table] i32
/// (entry e of token t at row table[t, e div E] * E + e mod E), selection
/// [tokens, k] i32], sink [heads] -> [tokens, heads, width].
struct SlotAttentionSpec {
  AttentionSpec attention;
  int64_t pageEntries = 0;
  std::optional<PackedRow> packed;   // the pages' packed row ([pages * E, bytes] i8), if packed
};
std::string slotAttentionName(const SlotAttentionSpec &spec);
SmallVector<Type> slotAttentionInputTypes(MLIRContext *ctx, const SlotAttentionSpec &spec);
/// The rows of a batched attention: `ring` [tokens * W, width], `pool`
/// [pages * E, width] and `table` [tokens, table] (or null), `positions`
/// [tokens] i32.
QueryRows slotRows(OpBuilder &b, Location loc, Value ring, int64_t windowSize, Value pool, Value table,
                   int64_t pageEntries, int64_t ratio, Value positions);

/// How a weight bound packed (weight-storage=released) lays out its bytes:
/// NAME its codes, NAME.scale a UE8M0 byte a block of blockRows x blockCols
/// elements. MXFP4 (routed experts): two E2M1 codes a byte, blocks 1 x 32
/// along the depth; FP8: an E4M3 code a byte, 2-D blocks (V4.1's 32 x 32).
struct PackedLayout {
  bool fp8 = false;
  int64_t blockRows = 1, blockCols = kMxfp4Block;
};

/// What the patterns share: each function's weight values, the Sinkhorn,
/// mHC, top-k, router and attention helpers wanted.
struct LoweringState {
  WeightValues weights;
  /// The weights bound packed, by symbol (weight-storage=released).
  llvm::StringMap<PackedLayout> packed;
  std::map<std::string, SinkhornSpec> sinkhorn;
  std::map<std::string, HcSiteSpec> hcSites;
  std::map<std::string, TopkSpec> topk;
  std::map<std::string, RouterSpec> routers;
  std::map<std::string, AttentionSpec> attention;
  /// Entries from which a top-k runs as a threshold search (O(entries) a
  /// pass) instead of ranking every candidate against every other.
  int64_t topkThresholdFrom = 256;
  /// Batched entry points (dsf.batched) and their layers' functions: each
  /// one's tokens' positions, and its page tables by cache ratio.
  llvm::DenseMap<Operation *, Value> positions;
  llvm::DenseMap<Operation *, std::map<int64_t, Value>> pageTables;
  /// The batched attention helpers wanted (dsf_attention_slots_...).
  std::map<std::string, SlotAttentionSpec> slotAttention;
  /// Tokens a page of a batched entry point's caches covers: a cache of
  /// ratio r keeps max(1, pageTokens / r) entries a page.
  int64_t pageTokens = 64;
  /// Whether a batched entry point's caches of a packed format (PackedRow)
  /// keep their pages packed.
  bool packedPages = true;
  int64_t pageEntries(int64_t ratio) const { return std::max<int64_t>(1, pageTokens / ratio); }
};

inline RankedTensorType tensorType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// An empty tensor of `type` shaped after `like`: a dynamic axis i takes
/// like's axis i when both have the same rank (e.g. [tokens, entries]),
/// otherwise like's axis 0 (the token axis).
inline Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type, Value like) {
  auto likeType = llvm::cast<RankedTensorType>(like.getType());
  bool sameRank = likeType.getRank() == type.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(type.isDynamicDim(i)
                        ? OpFoldResult(tensor::DimOp::create(b, loc, like, sameRank ? i : 0).getResult())
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
  return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
}

inline Value i32Const(OpBuilder &b, Location loc, int32_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}

inline Value minusInfinity(OpBuilder &b, Location loc) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
}

/// `empty` filled with `value`.
inline Value filled(OpBuilder &b, Location loc, Value value, Value empty) {
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty}).getResult(0);
}

inline Value zeros(OpBuilder &b, Location loc, RankedTensorType type, Value like) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{emptyTensor(b, loc, type, like)})
      .getResult(0);
}

inline SmallVector<utils::IteratorType> iterators(unsigned parallel, unsigned reduction = 0) {
  SmallVector<utils::IteratorType> it(parallel, utils::IteratorType::parallel);
  it.append(reduction, utils::IteratorType::reduction);
  return it;
}

/// (d0, ..., dn-1) -> (d_i for i in dims)
inline AffineMap pick(MLIRContext *ctx, unsigned n, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(n, 0, exprs, ctx);
}

inline SmallVector<unsigned> range(unsigned from, unsigned to) {
  SmallVector<unsigned> r;
  for (unsigned i = from; i < to; ++i)
    r.push_back(i);
  return r;
}

/// y[t, o] = sum_i x[t, i] * w[o, i] for x [?, I] and w [O, I] (w f32, or
/// stored narrower and widened as each element is read).
inline Value rowsTimesTransposed(OpBuilder &b, Location loc, Value x, Value w) {
  MLIRContext *ctx = b.getContext();
  auto type = RankedTensorType::get({ShapedType::kDynamic, tensorType(w).getDimSize(0)}, b.getF32Type());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{x, w}, ValueRange{zeros(b, loc, type, x)},
             ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {1, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value p = arith::MulFOp::create(nb, l, a[0], widenToF32(nb, l, a[1]));
               linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
             })
      .getResult(0);
}

/// Inside a generic: the block of `size` that loop `dim`'s index lies in.
inline Value blockOf(OpBuilder &b, Location loc, unsigned dim, int64_t size) {
  return arith::DivUIOp::create(b, loc, linalg::IndexOp::create(b, loc, dim), arith::ConstantIndexOp::create(b, loc, size));
}

/// A packed FP8 product's body: out + a * (E4M3(code) x 2^(scaleByte - 127)),
/// `a` the block's (activation, code, out).
inline void yieldPackedFp8Term(OpBuilder &b, Location loc, ValueRange a, Value scaleByte) {
  Value scale = lowering::packedScaleValue(b, loc, arith::ExtUIOp::create(b, loc, b.getI32Type(), scaleByte),
                                           /*e4m3Scale=*/false);
  Value w = arith::MulFOp::create(b, loc, lowering::e4m3Value(b, loc, arith::ExtUIOp::create(b, loc, b.getI32Type(), a[1])),
                                  scale);
  Value p = arith::MulFOp::create(b, loc, a[0], w);
  linalg::YieldOp::create(b, loc, arith::AddFOp::create(b, loc, a[2], p).getResult());
}

/// rowsTimesTransposed with w an FP8 weight bound packed: `codes` i8 [O, I]
/// (E4M3) and `scales` i8 [ceil(O / blockRows), ceil(I / blockCols)]
/// (UE8M0), each element decoded as it is read: the value the runtime
/// would have rounded to bf16, exactly (E4M3 times a power of two), from
/// half the bytes. The generic carries dsf.packed_fp8 = [blockRows,
/// blockCols] for the GPU pipeline's products (dsf-gpu-tiled-matmul).
inline Value rowsTimesPackedFp8(OpBuilder &b, Location loc, Value x, Value codes, Value scales, int64_t blockRows,
                                int64_t blockCols) {
  MLIRContext *ctx = b.getContext();
  auto type = RankedTensorType::get({ShapedType::kDynamic, tensorType(codes).getDimSize(0)}, b.getF32Type());
  auto product = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{x, codes}, ValueRange{zeros(b, loc, type, x)},
      ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {1, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        yieldPackedFp8Term(nb, l, a,
                           tensor::ExtractOp::create(nb, l, scales, ValueRange{blockOf(nb, l, 1, blockRows), blockOf(nb, l, 2, blockCols)}));
      });
  product->setAttr(kPackedFp8Attr, b.getDenseI64ArrayAttr({blockRows, blockCols}));
  return product.getResult(0);
}

/// The grouped product of V4's output projection with its weight bound
/// packed: y[t, g, o] = sum_d x[t, g, d] * decode(codes[g, o, d]), `codes`
/// i8 [G, r, I] (E4M3) and `scales` i8 [G, ceil(r / blockRows),
/// ceil(I / blockCols)] (UE8M0, a group's rows whole blocks), each element
/// decoded as read as in rowsTimesPackedFp8; the generic carries the same
/// dsf.packed_fp8 = [blockRows, blockCols].
inline Value groupsTimesPackedFp8(OpBuilder &b, Location loc, Value x, Value codes, Value scales, int64_t blockRows,
                                  int64_t blockCols, RankedTensorType type) {
  MLIRContext *ctx = b.getContext();
  auto product = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{x, codes}, ValueRange{zeros(b, loc, type, x)},
      ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {1, 2, 3}), pick(ctx, 4, {0, 1, 2})},
      iterators(3, 1), [&](OpBuilder &nb, Location l, ValueRange a) {
        yieldPackedFp8Term(nb, l, a,
                           tensor::ExtractOp::create(nb, l, scales,
                                                     ValueRange{linalg::IndexOp::create(nb, l, 1), blockOf(nb, l, 2, blockRows),
                                                                blockOf(nb, l, 3, blockCols)}));
      });
  product->setAttr(kPackedFp8Attr, b.getDenseI64ArrayAttr({blockRows, blockCols}));
  return product.getResult(0);
}

/// The clamped SwiGLU of the experts: silu(min(g, limit)) * clamp(u, -limit, limit).
inline Value clampedSwiglu(OpBuilder &b, Location loc, Value g, Value u, double limit) {
  Value lim = f32Const(b, loc, limit), negLim = f32Const(b, loc, -limit);
  Value gc = arith::MinimumFOp::create(b, loc, g, lim);
  Value silu = arith::MulFOp::create(b, loc, gc, sigmoid(b, loc, gc));
  Value uc = arith::MaximumFOp::create(b, loc, arith::MinimumFOp::create(b, loc, u, lim), negLim);
  return arith::MulFOp::create(b, loc, silu, uc);
}

/// Applies `body(a...)` elementwise over same-shaped tensors (the first
/// supplies the dynamic token axis); the result has the first's element type
/// unless `element` is given.
inline Value elementwise(OpBuilder &b, Location loc, ValueRange inputs,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body, Type element = {}) {
  auto type = tensorType(inputs[0]);
  if (element)
    type = RankedTensorType::get(type.getShape(), element);
  unsigned r = type.getRank();
  SmallVector<AffineMap> maps(inputs.size() + 1, pick(b.getContext(), r, range(0, r)));
  return linalg::GenericOp::create(b, loc, TypeRange{type}, inputs, ValueRange{emptyTensor(b, loc, type, inputs[0])},
                                   maps, iterators(r),
                                   [&](OpBuilder &nb, Location l, ValueRange a) {
                                     linalg::YieldOp::create(nb, l, body(nb, l, a.drop_back()));
                                   })
      .getResult(0);
}

template <typename OpTy>
struct DsfPattern : OpConversionPattern<OpTy> {
  DsfPattern(const TypeConverter &types, MLIRContext *ctx, LoweringState &state)
      : OpConversionPattern<OpTy>(types, ctx), state(state) {}
  /// The weight as bound: f32, or the narrower float it is stored in
  /// (bf16), for a body that widens each element it reads (widenToF32), so
  /// the kernels read the stored bytes.
  Value storedWeight(Operation *op, FlatSymbolRefAttr sym) const {
    auto &map = state.weights[op->getParentOfType<func::FuncOp>()];
    auto it = map.find(sym.getValue());
    return it == map.end() ? Value() : it->second;
  }
  /// An FP8 weight bound packed (its codes `w`, i8): its layout and its
  /// scales as bound (NAME.scale); none for any other weight.
  std::optional<std::pair<PackedLayout, Value>> packedFp8(Operation *op, FlatSymbolRefAttr sym, Value w) const {
    auto it = state.packed.find(sym.getValue());
    if (it == state.packed.end() || !it->second.fp8 || !tensorType(w).getElementType().isInteger(8))
      return std::nullopt;
    auto scales = FlatSymbolRefAttr::get(StringAttr::get(op->getContext(), sym.getValue() + kPackedScaleSuffix));
    return std::make_pair(it->second, storedWeight(op, scales));
  }
  /// x [?, I] times the weight's transpose ([?, O]): rowsTimesTransposed on
  /// the weight as bound, or on an FP8 weight bound packed, its codes
  /// decoded as read (rowsTimesPackedFp8).
  Value timesWeight(OpBuilder &b, Location loc, Operation *op, FlatSymbolRefAttr sym, Value x) const {
    Value w = storedWeight(op, sym);
    auto packed = packedFp8(op, sym, w);
    if (!packed)
      return rowsTimesTransposed(b, loc, x, w);
    return rowsTimesPackedFp8(b, loc, x, w, packed->second, packed->first.blockRows, packed->first.blockCols);
  }
  /// The weight in f32 (i32 tables as they are): a weight stored narrower is
  /// widened whole here, for the consumers that read few of its bytes
  /// (biases, mHC's small tensors, the attention sinks).
  Value weight(OpBuilder &b, Operation *op, FlatSymbolRefAttr sym) const {
    Value w = storedWeight(op, sym);
    if (!w || !isNarrowFloat(tensorType(w).getElementType()))
      return w;
    return elementwise(
        b, op->getLoc(), ValueRange{w},
        [](OpBuilder &nb, Location l, ValueRange a) { return widenToF32(nb, l, a[0]); }, b.getF32Type());
  }
  LoweringState &state;
};

/// An empty tensor of `type` whose dynamic axis 0 has `rows` (an index) rows.
inline Value emptyWithRows(OpBuilder &b, Location loc, RankedTensorType type, Value rows) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(type.isDynamicDim(i) ? OpFoldResult(rows) : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
  return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
}

inline Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The position of query t as an index: positions[t].
inline Value positionAt(OpBuilder &b, Location loc, Value positions, Value t) {
  Value p = tensor::ExtractOp::create(b, loc, positions, ValueRange{t});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), p);
}

/// count[t, a] = #{a' : v[t, a'] > v[t, a] or (v[t, a'] == v[t, a] and a' < a)}
/// over a [rows, n] tensor: the position of a in a stable descending sort of
/// row t (i32). With `eligible` (i1, same shape), only eligible a' count.
Value stableDescendingRank(OpBuilder &b, Location loc, Value values, Value eligible = Value());

/// sum(x^2) over the last axis.
Value sumOfSquares(OpBuilder &b, Location loc, Value x);

/// x / sqrt(mean(x^2) + eps) * w over the last axis (w may be null), in the
/// reference's order of operations.
Value rmsNormRows(OpBuilder &b, Location loc, Value x, Value w, double eps);

/// Populates the patterns of Attention.cpp: window and cache writes, the
/// compressor, entry positions, the indexer's top-k and pool, attention.
void populateAttentionPatterns(RewritePatternSet &patterns, const TypeConverter &types, LoweringState &state);

/// Slot s of a compressor group: whether it holds a row, and where its gate
/// and value are (row and column of the projections, row of ape).
struct SlotSource {
  Value valid, row, col, apeRow;
};
/// Slot s (channel c) of group `group` of a compressor of `ratio`: row
/// group r + s of its input; for `overlap` (2 x ratio slots), s < ratio the
/// group before's first halves Ca (none before group 0), from channel 0,
/// else this group's second halves Cb, from channel `width`. The row counts
/// input rows from group 0's first.
SlotSource groupSlot(OpBuilder &b, Location loc, Value group, Value c, Value s, int64_t ratio, int64_t width,
                     bool overlap);

/// latent[e, c] = sum_s softmax_s(gate) * value over `slots` slots per
/// (entry, channel), in three passes (max, denominator, weighted sum), the
/// gates and values read from the projections ck and z (+ ape) where
/// `where` says: the compressors of a sequence and of a batch share it.
Value poolSlots(OpBuilder &b, Location loc, RankedTensorType latentType, Value entries, int64_t slots, Value ck,
                Value z, Value ape, function_ref<SlotSource(OpBuilder &, Location, Value e, Value c, Value s)> where);

/// The indexer after its dots: scores[t, j] = sum_h w[t, h] * scale *
/// relu(dots[t, h, j]) over `entries` entries, -inf where j is not visible
/// (j >= visibleCount(t)) or (with `within`) outside the pool; the top-k
/// (a call of the helper for (k, threshold-from)) and, when `op` asks, the
/// candidate pool.
SmallVector<Value> indexSelect(OpBuilder &b, Location loc, IndexTopkOp op, Value w, Value dots, Value within,
                               Value tokens, Value entries,
                               std::function<Value(OpBuilder &, Location, Value)> visibleCount, LoweringState &state);

/// Populates the patterns of Slots.cpp: the sequence ops of a batched entry
/// point (dsf.batched) over its slots, which the call updates in place.
void populateSlotPatterns(RewritePatternSet &patterns, const TypeConverter &types, LoweringState &state);

/// The state types of a batched entry point: a window its rings [slots, W,
/// width], a cache its pages [pages, E, width] (E for its ratio), or, of a
/// packed format, [pages, E, bytes] i8, and so the quantized rows written
/// to them.
void addSlotTypeConversions(TypeConverter &types, const LoweringState &state);

/// Populates the patterns of Quant.cpp: quantize (bit-exact rounding to the
/// cache formats) and dequantize.
void populateQuantPatterns(RewritePatternSet &patterns, const TypeConverter &types, LoweringState &state);

} // namespace mlir::dsf::lowering

#endif // DSF_LOWERING_DSFTOLINALG_BUILDERS_H
