//===- Slots.cpp - dsf-to-linalg: the sequence ops of a batched decode -----===//
//
// A batched entry point (dsf.batched, from dsf-batch-decode) runs one token
// of each of many sequences: token t is the next token of its own sequence,
// at positions[t]. Each sequence's state lives in a slot of fixed shape,
// which the call updates in place (so a decode step's buffers, and its
// launches, are the same from one step to the next):
//
//  * a window: a ring of W rows per sequence, [slots, W, width], position p
//    at row p mod W. The token's own row is written first, so the ring then
//    holds its whole band (positions p - W + 1 .. p), and what the window
//    retains for the next call is the ring itself;
//  * a cache: pages of E = max(1, page-tokens / ratio) entries,
//    [pages, E, width], shared by every sequence; the page table of the
//    cache's ratio ([tokens, columns] i32, an input) says which page holds
//    entries [E c, E c + E) of token t's sequence. Every cell names a page
//    of the pool (cells past a sequence's entries may name any: their rows
//    are read only where their weight is zero or their score is masked);
//  * a pooling compressor's carry: a ring of its input rows, ratio of them
//    (an overlap compressor also keeps the group before: 2 x ratio),
//    [slots, C, width], position p at row p mod C.
//
// Writes are scatters: an scf.forall of one element a thread, a token's row
// to the place its position says (a cache entry only when the token
// completes it). Reads go through the same addressing: the attention and
// the indexer read rows of the rings and pages where a sequence's own
// tensors had them, in the same order, so a batched step computes what
// each sequence's own @decode does, bit for bit on the CPU.
//
//===----------------------------------------------------------------------===//
#include "lowering/DsfToLinalg/Builders.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::dsf::lowering {
namespace {

Value dimOf(OpBuilder &b, Location loc, Value v, int64_t i) { return tensor::DimOp::create(b, loc, v, i); }

/// [a, b, width] -> [a * b, width]: row (i, j) becomes row i * b + j.
Value flattenRows(OpBuilder &b, Location loc, Value t) {
  return tensor::CollapseShapeOp::create(b, loc, t, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// (whether row n is written, the two leading coordinates it goes to).
using Where = function_ref<std::tuple<Value, Value, Value>(OpBuilder &, Location, Value n)>;

/// `dest` [a, b, width] with row n of `rows` [N, width] at dest[i0, i1, :]
/// for every n that `where` says is written: an scf.forall of one element a
/// thread (a row not written inserts an empty slice), in place on `dest`.
Value scatterRows(OpBuilder &b, Location loc, Value dest, Value rows, Where where) {
  int64_t width = tensorType(rows).getDimSize(1);
  Value n = dimOf(b, loc, rows, 0);
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{n, b.getIndexAttr(width)}, ValueRange{dest},
                                      std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = forall.getBody();
  b.setInsertionPoint(body->getTerminator());
  Value row = body->getArgument(0), c = body->getArgument(1), out = body->getArgument(2);
  auto [written, i0, i1] = where(b, loc, row);
  Value size = arith::SelectOp::create(b, loc, written, indexConst(b, loc, 1), indexConst(b, loc, 0));
  OpFoldResult one = b.getIndexAttr(1);
  auto sliceType = RankedTensorType::get({ShapedType::kDynamic, 1}, tensorType(rows).getElementType());
  Value element = tensor::ExtractSliceOp::create(b, loc, sliceType, rows, ArrayRef<OpFoldResult>{row, c},
                                                 ArrayRef<OpFoldResult>{size, one}, ArrayRef<OpFoldResult>{one, one});
  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, element, out, ArrayRef<OpFoldResult>{i0, i1, c},
                                        ArrayRef<OpFoldResult>{size, one, one}, ArrayRef<OpFoldResult>{one, one, one});
  return forall.getResult(0);
}

Value alwaysWritten(OpBuilder &b, Location loc) { return arith::ConstantOp::create(b, loc, b.getBoolAttr(true)); }

/// Entry e of token t: its row of the flattened pages, table[t, e div E] * E + e mod E.
Value pageRow(OpBuilder &b, Location loc, Value table, int64_t pageEntries, Value t, Value e) {
  Value column = arith::DivUIOp::create(b, loc, e, indexConst(b, loc, pageEntries));
  Value page = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                          tensor::ExtractOp::create(b, loc, table, ValueRange{t, column}));
  return arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, page, indexConst(b, loc, pageEntries)),
                               arith::RemUIOp::create(b, loc, e, indexConst(b, loc, pageEntries)));
}

/// The entry token t's position p completes in a cache of ratio r, (p + 1)
/// div r - 1, and whether it completes one ((p + 1) mod r == 0).
std::pair<Value, Value> completedEntry(OpBuilder &b, Location loc, Value p, int64_t ratio) {
  Value p1 = arith::AddIOp::create(b, loc, p, indexConst(b, loc, 1));
  Value completes = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          arith::RemUIOp::create(b, loc, p1, indexConst(b, loc, ratio)),
                                          indexConst(b, loc, 0));
  Value groups = arith::DivUIOp::create(b, loc, p1, indexConst(b, loc, ratio));
  Value entry = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, groups, indexConst(b, loc, 1)),
                                      indexConst(b, loc, 1));
  return {completes, entry};
}

template <typename OpTy>
struct SlotPattern : DsfPattern<OpTy> {
  using DsfPattern<OpTy>::DsfPattern;
  /// The function's tokens' positions (dsf-to-linalg records them for every
  /// function of a batched entry point).
  FailureOr<Value> positions(Operation *op, ConversionPatternRewriter &b) const {
    Value p = this->state.positions.lookup(op->template getParentOfType<func::FuncOp>());
    if (!p)
      return b.notifyMatchFailure(op, "a batched function without its tokens' positions");
    return p;
  }
  FailureOr<Value> table(Operation *op, int64_t ratio, ConversionPatternRewriter &b) const {
    auto it = this->state.pageTables.find(op->template getParentOfType<func::FuncOp>());
    if (it == this->state.pageTables.end() || !it->second.count(ratio))
      return b.notifyMatchFailure(op, "a batched function without the page table of its cache's ratio");
    return it->second.at(ratio);
  }
};

/// The token's row into its sequence's ring, at its position mod W.
struct SlotWindowWrite : SlotPattern<WindowWriteOp> {
  using SlotPattern::SlotPattern;
  LogicalResult matchAndRewrite(WindowWriteOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    FailureOr<Value> pos = positions(op, b);
    Value ring = adaptor.getPrior(), rows = adaptor.getRows();
    if (failed(pos) || !ring || !llvm::isa<RankedTensorType>(rows.getType()))
      return b.notifyMatchFailure(op, "a batched window write continues a ring with f32 rows");
    FailureOr<std::optional<PackedRow>> row = heldRow(rows.getType(), op.getRows().getType());
    if (failed(row))
      return b.notifyMatchFailure(op, "bytes for a format without a packed row");
    if (*row)   // packed rows, to the f32 ring
      rows = unpackRows(b, op.getLoc(), rows, **row);
    int64_t size = llvm::cast<WindowType>(op.getType()).getSize();
    b.replaceOp(op, scatterRows(b, op.getLoc(), ring, rows, [&](OpBuilder &nb, Location l, Value t) {
                  Value slot = arith::RemUIOp::create(nb, l, positionAt(nb, l, *pos, t), indexConst(nb, l, size));
                  return std::make_tuple(alwaysWritten(nb, l), t, slot);
                }));
    return success();
  }
};

/// The ring is what the window keeps.
struct SlotWindowRetain : SlotPattern<WindowRetainOp> {
  using SlotPattern::SlotPattern;
  LogicalResult matchAndRewrite(WindowRetainOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    b.replaceOp(op, adaptor.getWindow());
    return success();
  }
};

/// The entry a token completes into its page; the rows of the tokens that
/// complete none are not written.
struct SlotCacheWrite : SlotPattern<CacheWriteOp> {
  using SlotPattern::SlotPattern;
  LogicalResult matchAndRewrite(CacheWriteOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    int64_t ratio = llvm::cast<CacheType>(op.getType()).getRatio();
    FailureOr<Value> pos = positions(op, b);
    FailureOr<Value> pages = table(op, ratio, b);
    Value pool = adaptor.getPrior(), rows = adaptor.getEntries();
    if (failed(pos) || failed(pages) || !pool || !llvm::isa<RankedTensorType>(rows.getType()))
      return b.notifyMatchFailure(op, "a batched cache write continues its pages with rows");
    int64_t pageEntries = state.pageEntries(ratio);
    b.replaceOp(op, scatterRows(b, op.getLoc(), pool, rows, [&](OpBuilder &nb, Location l, Value t) {
                  auto [completes, entry] = completedEntry(nb, l, positionAt(nb, l, *pos, t), ratio);
                  Value column = arith::DivUIOp::create(nb, l, entry, indexConst(nb, l, pageEntries));
                  Value page = arith::IndexCastOp::create(
                      nb, l, nb.getIndexType(), tensor::ExtractOp::create(nb, l, *pages, ValueRange{t, column}));
                  Value within = arith::RemUIOp::create(nb, l, entry, indexConst(nb, l, pageEntries));
                  return std::make_tuple(completes, page, within);
                }));
    return success();
  }
};

/// The position of the entry each token completes (r (p + 1) div r - r),
/// rotated there whether or not the token completes one.
struct SlotEntryPositions : SlotPattern<EntryPositionsOp> {
  using SlotPattern::SlotPattern;
  LogicalResult matchAndRewrite(EntryPositionsOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    int64_t ratio = op.getRatio();
    Value pos = adaptor.getPositions();
    if (ratio == 1) {
      b.replaceOp(op, pos);
      return success();
    }
    b.replaceOp(op, elementwise(b, op.getLoc(), ValueRange{pos}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                  Value p = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                  Value entry = completedEntry(nb, l, p, ratio).second;
                  Value first = arith::MulIOp::create(nb, l, entry, indexConst(nb, l, ratio));
                  return arith::IndexCastOp::create(nb, l, a[0].getType(), first);
                }));
    return success();
  }
};

/// Each token's row into its compressor's ring, then the entry of its group
/// pooled from the ring's rows (as if complete: only a token that completes
/// it has it written). The projections run over every row of the rings,
/// as a sequence's run over its carried rows and its new ones.
struct SlotCompress : SlotPattern<CompressOp> {
  using SlotPattern::SlotPattern;
  LogicalResult matchAndRewrite(CompressOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    CompressorKind kind = op.getKind();
    int64_t ratio = op.getRatio();
    double eps = op.getEps().convertToDouble();
    Value norm = storedWeight(op, op.getNormAttr());
    if (kind == CompressorKind::project) {   // row-wise: a batch's rows are a sequence's
      b.replaceOp(op, rmsNormRows(b, loc, rowsTimesTransposed(b, loc, x, storedWeight(op, op.getWkvAttr())), norm, eps));
      return success();
    }
    FailureOr<Value> pos = positions(op, b);
    Value ring = adaptor.getCarry();
    bool overlap = kind == CompressorKind::overlap;
    int64_t slots = overlap ? 2 * ratio : ratio;
    if (failed(pos) || !ring || tensorType(ring).getRank() != 3 || tensorType(ring).getDimSize(1) != slots)
      return b.notifyMatchFailure(op, "a batched compressor continues a ring of its slots' rows");
    ring = scatterRows(b, loc, ring, x, [&](OpBuilder &nb, Location l, Value t) {
      Value slot = arith::RemUIOp::create(nb, l, positionAt(nb, l, *pos, t), indexConst(nb, l, slots));
      return std::make_tuple(alwaysWritten(nb, l), t, slot);
    });
    Value rows = flattenRows(b, loc, ring);
    Value ck = rowsTimesTransposed(b, loc, rows, storedWeight(op, op.getWkvAttr()));
    Value z = rowsTimesTransposed(b, loc, rows, storedWeight(op, op.getWgateAttr()));
    Value ape = op.getApeAttr() ? storedWeight(op, op.getApeAttr()) : Value();
    auto latentType = RankedTensorType::get({ShapedType::kDynamic, tensorType(op.getResult()).getDimSize(1)},
                                            b.getF32Type());
    int64_t width = latentType.getDimSize(1);
    // Slot s of token t's group g = p div r (groupSlot: its position, g r +
    // s, or for overlap the group before's), at ring row t C + position mod C.
    auto where = [&](OpBuilder &nb, Location l, Value t, Value c, Value s) {
      Value group = arith::DivUIOp::create(nb, l, positionAt(nb, l, *pos, t), indexConst(nb, l, ratio));
      SlotSource src = groupSlot(nb, l, group, c, s, ratio, width, overlap);
      Value slotRow = arith::RemUIOp::create(nb, l, src.row, indexConst(nb, l, slots));
      src.row = arith::AddIOp::create(nb, l, arith::MulIOp::create(nb, l, t, indexConst(nb, l, slots)), slotRow);
      return src;
    };
    Value pooled = poolSlots(b, loc, latentType, dimOf(b, loc, x, 0), slots, ck, z, ape, where);
    b.replaceOp(op, {rmsNormRows(b, loc, pooled, norm, eps), ring});
    return success();
  }
};

/// The indexer over each token's own entries, read through its page table;
/// the entry axis is the table's (every column's entries), of which a token
/// sees the first (p + 1) div r.
struct SlotIndexTopk : SlotPattern<IndexTopkOp> {
  using SlotPattern::SlotPattern;
  LogicalResult matchAndRewrite(IndexTopkOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    int64_t ratio = llvm::cast<CacheType>(op.getKeys().getType()).getRatio();
    FailureOr<Value> pos = positions(op, b);
    FailureOr<Value> pages = table(op, ratio, b);
    if (failed(pos) || failed(pages))
      return failure();
    int64_t pageEntries = state.pageEntries(ratio);
    Value q = adaptor.getQueries(), keys = flattenRows(b, loc, adaptor.getKeys());
    Value tokens = dimOf(b, loc, q, 0);
    Value entries = arith::MulIOp::create(b, loc, dimOf(b, loc, *pages, 1), indexConst(b, loc, pageEntries));
    // dots[t, h, j] = q[t, h, :] . keys[row of entry j of token t, :]
    auto type = RankedTensorType::get({ShapedType::kDynamic, tensorType(q).getDimSize(1), ShapedType::kDynamic},
                                      b.getF32Type());
    Value init = filled(b, loc, f32Const(b, loc, 0), tensor::EmptyOp::create(b, loc, type, ValueRange{tokens, entries}));
    Value table = *pages;
    FailureOr<std::optional<PackedRow>> held = heldRow(keys.getType(), op.getKeys().getType());
    if (failed(held))
      return b.notifyMatchFailure(op, "packed index keys of a format without a packed row");
    std::optional<PackedRow> packed = *held;
    Value dots = linalg::GenericOp::create(
                     b, loc, TypeRange{type}, ValueRange{q}, ValueRange{init},
                     ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {0, 1, 2})}, iterators(3, 1),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value row = pageRow(nb, l, table, pageEntries, linalg::IndexOp::create(nb, l, 0),
                                           linalg::IndexOp::create(nb, l, 2));
                       Value c = linalg::IndexOp::create(nb, l, 3);
                       Value key = packed ? decodeElement(nb, l, keys, ValueRange{row}, c, *packed)
                                          : tensor::ExtractOp::create(nb, l, keys, ValueRange{row, c}).getResult();
                       Value p = arith::MulFOp::create(nb, l, a[0], key);
                       linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], p).getResult());
                     })
                     .getResult(0);
    Value positions = *pos;
    auto visibleCount = [positions, ratio](OpBuilder &nb, Location l, Value t) {
      Value p1 = arith::AddIOp::create(nb, l, positionAt(nb, l, positions, t), indexConst(nb, l, 1));
      return arith::DivUIOp::create(nb, l, p1, indexConst(nb, l, ratio)).getResult();
    };
    b.replaceOp(op, indexSelect(b, loc, op, adaptor.getWeights(), dots, adaptor.getWithin(), tokens, entries,
                                visibleCount, state));
    return success();
  }
};

/// Attention over each token's ring and its entries: a call of the batched
/// helper for its shape (sinkAttention over slotRows its body), or, over
/// every visible entry (no selection), inline.
struct SlotAttention : SlotPattern<AttentionOp> {
  using SlotPattern::SlotPattern;
  LogicalResult matchAndRewrite(AttentionOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    FailureOr<Value> pos = positions(op, b);
    if (failed(pos))
      return failure();
    Value q = adaptor.getQueries(), ring = flattenRows(b, loc, adaptor.getWindow());
    Value selection = adaptor.getSelection(), sink = weight(b, op, op.getSinkAttr());
    int64_t windowSize = llvm::cast<WindowType>(op.getWindow().getType()).getSize();
    double scale = op.getScale().convertToDouble();
    Value pool, pages;
    int64_t ratio = 1, pageEntries = 0;
    std::optional<PackedRow> packed;
    if (op.getCache()) {
      ratio = llvm::cast<CacheType>(op.getCache().getType()).getRatio();
      FailureOr<std::optional<PackedRow>> held = heldRow(adaptor.getCache().getType(), op.getCache().getType());
      if (failed(held))
        return b.notifyMatchFailure(op, "packed pages of a format without a packed row");
      packed = *held;
      FailureOr<Value> t = table(op, ratio, b);
      if (failed(t))
        return failure();
      pages = *t;
      pool = flattenRows(b, loc, adaptor.getCache());
      pageEntries = state.pageEntries(ratio);
    }
    if (pool && !selection) {
      QueryRows rows = slotRows(b, loc, ring, windowSize, pool, pages, pageEntries, ratio, *pos);
      rows.cacheRow = packed;
      b.replaceOp(op, sinkAttention(b, loc, q, rows, Value(), sink, scale));
      return success();
    }
    auto qType = tensorType(q);
    SlotAttentionSpec spec{{qType.getDimSize(1), qType.getDimSize(2), windowSize,
                            selection ? tensorType(selection).getDimSize(1) : 0, scale},
                           pageEntries, packed};
    std::string name = slotAttentionName(spec);
    state.slotAttention[name] = spec;
    SmallVector<Value> args{q, ring, *pos};
    if (selection)
      args.append({pool, pages, selection});
    args.push_back(sink);
    b.replaceOp(op, func::CallOp::create(b, loc, name, TypeRange{q.getType()}, args).getResults());
    return success();
  }
};

} // namespace

QueryRows slotRows(OpBuilder &b, Location loc, Value ring, int64_t windowSize, Value pool, Value table,
                   int64_t pageEntries, int64_t ratio, Value positions) {
  QueryRows rows;
  rows.window = ring;
  rows.windowSize = windowSize;
  // Band column w of token t is position p - (W - 1) + w, a row of the
  // sequence when that is >= 0, at ring row t W + its position mod W; a
  // column before the sequence reads the token's own row.
  rows.bandRow = [positions, windowSize](OpBuilder &nb, Location l, Value t, Value w) {
    Value p = positionAt(nb, l, positions, t);
    Value shifted = arith::AddIOp::create(nb, l, p, w);   // position + (W - 1)
    Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge, shifted, indexConst(nb, l, windowSize - 1));
    Value position = arith::SelectOp::create(
        nb, l, valid, arith::SubIOp::create(nb, l, shifted, indexConst(nb, l, windowSize - 1)), p);
    Value slot = arith::RemUIOp::create(nb, l, position, indexConst(nb, l, windowSize));
    Value row = arith::AddIOp::create(nb, l, arith::MulIOp::create(nb, l, t, indexConst(nb, l, windowSize)), slot);
    return std::make_pair(valid, row);
  };
  rows.ratio = ratio;
  if (pool) {
    rows.cache = pool;
    rows.entries = arith::MulIOp::create(b, loc, dimOf(b, loc, table, 1), indexConst(b, loc, pageEntries));
    rows.entryRow = [table, pageEntries](OpBuilder &nb, Location l, Value t, Value e) {
      return pageRow(nb, l, table, pageEntries, t, e);
    };
  }
  rows.position = [positions](OpBuilder &nb, Location l, Value t) { return positionAt(nb, l, positions, t); };
  return rows;
}

std::string slotAttentionName(const SlotAttentionSpec &s) {
  std::string sequence = attentionName(s.attention);   // dsf_attention_h..._s...
  return "dsf_attention_slots_" + sequence.substr(std::string("dsf_attention_").size()) + "_e" +
         std::to_string(s.pageEntries) + (s.packed ? "_" + packedRowName(*s.packed) : std::string());
}

SmallVector<Type> slotAttentionInputTypes(MLIRContext *ctx, const SlotAttentionSpec &s) {
  auto f32 = Float32Type::get(ctx);
  auto i32 = IntegerType::get(ctx, 32);
  int64_t dyn = ShapedType::kDynamic;
  const AttentionSpec &a = s.attention;
  SmallVector<Type> inputs{RankedTensorType::get({dyn, a.heads, a.width}, f32), RankedTensorType::get({dyn, a.width}, f32),
                           RankedTensorType::get({dyn}, i32)};
  if (a.k)
    inputs.append({s.packed ? RankedTensorType::get({dyn, s.packed->bytes}, IntegerType::get(ctx, 8))
                            : RankedTensorType::get({dyn, a.width}, f32),
                   RankedTensorType::get({dyn, dyn}, i32),
                   RankedTensorType::get({dyn, a.k}, i32)});
  inputs.push_back(RankedTensorType::get({a.heads}, f32));
  return inputs;
}

void addSlotTypeConversions(TypeConverter &types, const LoweringState &state) {
  types.addConversion([](WindowType t) -> Type {
    return RankedTensorType::get({ShapedType::kDynamic, t.getSize(), t.getWidth()}, Float32Type::get(t.getContext()));
  });
  types.addConversion([&state](CacheType t) -> Type {
    std::optional<PackedRow> row = state.packedPages ? packedRowOf(t) : std::nullopt;
    if (row)
      return RankedTensorType::get({ShapedType::kDynamic, state.pageEntries(t.getRatio()), row->bytes},
                                   IntegerType::get(t.getContext(), 8));
    return RankedTensorType::get({ShapedType::kDynamic, state.pageEntries(t.getRatio()), t.getWidth()},
                                 Float32Type::get(t.getContext()));
  });
  // The quantized rows a packed page takes are packed as they are rounded
  // (a window's and the indexer queries' too: bit for bit the same values
  // where they are decoded).
  types.addConversion([&state](QTensorType t) -> std::optional<Type> {
    std::optional<PackedRow> row = state.packedPages ? packedRowOf(t) : std::nullopt;
    if (!row)
      return std::nullopt;   // the base conversion: the decoded f32 values
    SmallVector<int64_t> shape(t.getShape());
    shape.back() = row->bytes;
    return RankedTensorType::get(shape, IntegerType::get(t.getContext(), 8));
  });
}

void populateSlotPatterns(RewritePatternSet &patterns, const TypeConverter &types, LoweringState &state) {
  patterns.add<SlotWindowWrite, SlotWindowRetain, SlotCacheWrite, SlotEntryPositions, SlotCompress, SlotIndexTopk,
               SlotAttention>(types, patterns.getContext(), state);
}

} // namespace mlir::dsf::lowering
