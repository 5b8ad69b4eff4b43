//===- Attention.cpp - dsf-to-linalg: caches, compressor, indexer, attention ===//
//
// The lowering of one prefill of a fresh sequence (positions 0..N-1): a
// window is the tensor of its layer's K = V rows, a compressed cache the
// tensor of its complete entries, a top-k selection a [tokens, k] i32 tensor
// of entry indices (-1: none), a candidate pool a [tokens, entries] i1 mask.
// The indexer and attention ops carry no positions, so a query's position is
// derived from the row counts: the queries are the last rows of the tokens
// the window (or, for the indexer, the ratio-1 cache) holds. Quantized
// formats are not lowered yet: their writes fail to legalize by name.
//
// Selections are exact, not fast: a row's top-k is found by ranking every
// candidate against every other (O(entries^2) per token), which matches the
// reference's stable order bit for bit and is fine for the tiny models the
// CPU path checks numbers with.
//
//===----------------------------------------------------------------------===//
#include "lowering/DsfToLinalg/Builders.h"


namespace mlir::dsf::lowering {
namespace {

Value dim0(OpBuilder &b, Location loc, Value v) { return tensor::DimOp::create(b, loc, v, 0); }

/// Window and cache writes of f32 rows keep the rows.
template <typename OpTy>
struct StoreLowering : DsfPattern<OpTy> {
  using DsfPattern<OpTy>::DsfPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &b) const override {
    Value rows = adaptor.getOperands()[0];
    if (!llvm::isa<RankedTensorType>(rows.getType()))
      return b.notifyMatchFailure(op, "quantized cache formats are not lowered yet");
    b.replaceOp(op, rows);
    return success();
  }
};

struct EntryPositionsLowering : DsfPattern<EntryPositionsOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(EntryPositionsOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value pos = adaptor.getPositions();
    int64_t ratio = op.getRatio();
    if (ratio == 1) {
      b.replaceOp(op, pos);
      return success();
    }
    auto type = tensorType(pos);
    Value entries = arith::DivUIOp::create(b, loc, dim0(b, loc, pos), indexConst(b, loc, ratio));
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{}, ValueRange{emptyWithRows(b, loc, type, entries)},
        ArrayRef<AffineMap>{pick(b.getContext(), 1, {0})}, iterators(1), [&](OpBuilder &nb, Location l, ValueRange) {
          Value first = arith::MulIOp::create(nb, l, linalg::IndexOp::create(nb, l, 0), indexConst(nb, l, ratio));
          linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, pos, ValueRange{first}).getResult());
        });
    b.replaceOp(op, out.getResults());
    return success();
  }
};

/// V4.1's compressors: `project` (ratio 1) and `pair` (ratio 2, a softmax
/// over each pair's gates). V4's `overlap` and `pool` are not lowered yet.
struct CompressLowering : DsfPattern<CompressOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(CompressOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    CompressorKind kind = op.getKind();
    if (kind != CompressorKind::project && kind != CompressorKind::pair)
      return b.notifyMatchFailure(op, "only the project and pair compressors are lowered");
    Value ck = rowsTimesTransposed(b, loc, x, weight(op, op.getWkvAttr()));
    Value latent = ck;
    if (kind == CompressorKind::pair) {
      if (!op.getWgateAttr())
        return b.notifyMatchFailure(op, "a pair compressor needs wgate");
      Value z = rowsTimesTransposed(b, loc, x, weight(op, op.getWgateAttr()));
      auto type = tensorType(ck);
      Value groups = arith::DivUIOp::create(b, loc, dim0(b, loc, x), indexConst(b, loc, 2));
      latent = linalg::GenericOp::create(
                   b, loc, TypeRange{type}, ValueRange{}, ValueRange{emptyWithRows(b, loc, type, groups)},
                   ArrayRef<AffineMap>{pick(b.getContext(), 2, {0, 1})}, iterators(2),
                   [&](OpBuilder &nb, Location l, ValueRange) {
                     Value g = linalg::IndexOp::create(nb, l, 0), c = linalg::IndexOp::create(nb, l, 1);
                     Value r0 = arith::MulIOp::create(nb, l, g, indexConst(nb, l, 2));
                     Value r1 = arith::AddIOp::create(nb, l, r0, indexConst(nb, l, 1));
                     auto at = [&](Value t, Value r) { return tensor::ExtractOp::create(nb, l, t, ValueRange{r, c}).getResult(); };
                     Value z0 = at(z, r0), z1 = at(z, r1);
                     Value m = arith::MaximumFOp::create(nb, l, z0, z1);
                     Value e0 = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, z0, m));
                     Value e1 = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, z1, m));
                     Value sum = arith::AddFOp::create(nb, l, e0, e1);
                     Value p0 = arith::DivFOp::create(nb, l, e0, sum), p1 = arith::DivFOp::create(nb, l, e1, sum);
                     Value v = arith::AddFOp::create(nb, l, arith::MulFOp::create(nb, l, p0, at(ck, r0)),
                                                     arith::MulFOp::create(nb, l, p1, at(ck, r1)));
                     linalg::YieldOp::create(nb, l, v);
                   })
                   .getResult(0);
    }
    b.replaceOp(op, rmsNormRows(b, loc, latent, weight(op, op.getNormAttr()), op.getEps().convertToDouble()));
    return success();
  }
};

/// The indexer: scores, visibility, the optional pool restriction, the
/// top-k (ascending indices, -1 padded) and optionally a new pool.
struct IndexTopkLowering : DsfPattern<IndexTopkOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(IndexTopkOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value q = adaptor.getQueries(), w = adaptor.getWeights(), keys = adaptor.getKeys();
    auto cacheType = llvm::cast<CacheType>(op.getKeys().getType());
    int64_t ratio = cacheType.getRatio(), k = op.getK(), heads = tensorType(q).getDimSize(1);
    auto f32 = b.getF32Type();
    // dots[t, h, j] = q[t, h, :] . keys[j, :]
    auto dotType = RankedTensorType::get({ShapedType::kDynamic, heads, ShapedType::kDynamic}, f32);
    Value dotsInit = filled(b, loc, f32Const(b, loc, 0),
                            tensor::EmptyOp::create(b, loc, dotType, ValueRange{dim0(b, loc, q), dim0(b, loc, keys)}));
    Value dots = linalg::GenericOp::create(
                     b, loc, TypeRange{dotType}, ValueRange{q, keys}, ValueRange{dotsInit},
                     ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {2, 3}), pick(ctx, 4, {0, 1, 2})},
                     iterators(3, 1),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
                       linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
                     })
                     .getResult(0);
    // scores[t, j] = sum_h (w[t, h] * scale) * relu(dots[t, h, j])
    auto scoreType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, f32);
    Value tokens = dim0(b, loc, q), entries = dim0(b, loc, keys);
    auto emptyScores = [&](Type elem) {
      return tensor::EmptyOp::create(b, loc, RankedTensorType::get(scoreType.getShape(), elem), ValueRange{tokens, entries})
          .getResult();
    };
    double scale = op.getScale().convertToDouble();
    Value scores = linalg::GenericOp::create(
                       b, loc, TypeRange{scoreType}, ValueRange{w, dots},
                       ValueRange{filled(b, loc, f32Const(b, loc, 0), emptyScores(f32))},
                       ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 2, 1}), pick(ctx, 3, {0, 1})},
                       iterators(2, 1),
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         Value wt = arith::MulFOp::create(nb, l, a[0], f32Const(nb, l, scale));
                         Value relu = arith::MaximumFOp::create(nb, l, a[1], f32Const(nb, l, 0));
                         linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], arith::MulFOp::create(nb, l, wt, relu)).getResult());
                       })
                       .getResult(0);
    // Query t is the token at position off + t, off = max(0, entries * ratio - tokens).
    Value span = arith::MulIOp::create(b, loc, entries, indexConst(b, loc, ratio));
    Value off = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, span, tokens), tokens);
    auto visibleCount = [&](OpBuilder &nb, Location l, Value t) {
      Value p1 = arith::AddIOp::create(nb, l, arith::AddIOp::create(nb, l, t, off), indexConst(nb, l, 1));
      return arith::DivUIOp::create(nb, l, p1, indexConst(nb, l, ratio)).getResult();
    };
    Value visibleScores = linalg::GenericOp::create(
                              b, loc, TypeRange{scoreType}, ValueRange{scores}, ValueRange{emptyScores(f32)},
                              ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1})}, iterators(2),
                              [&](OpBuilder &nb, Location l, ValueRange a) {
                                Value t = linalg::IndexOp::create(nb, l, 0), j = linalg::IndexOp::create(nb, l, 1);
                                Value visible = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, j, visibleCount(nb, l, t));
                                linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, visible, a[0], minusInfinity(nb, l)).getResult());
                              })
                              .getResult(0);
    SmallVector<Value> results;
    Value ranked = visibleScores;
    if (Value pool = adaptor.getWithin())
      ranked = elementwise(b, loc, ValueRange{visibleScores, pool}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::SelectOp::create(nb, l, a[1], a[0], minusInfinity(nb, l));
      });
    Value rank = stableDescendingRank(b, loc, ranked);
    auto maskType = RankedTensorType::get(scoreType.getShape(), b.getI1Type());
    Value selected = linalg::GenericOp::create(
                         b, loc, TypeRange{maskType}, ValueRange{ranked, rank}, ValueRange{emptyScores(b.getI1Type())},
                         ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1})},
                         iterators(2),
                         [&](OpBuilder &nb, Location l, ValueRange a) {
                           Value finite = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT, a[0], minusInfinity(nb, l));
                           Value top = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, a[1], i32Const(nb, l, int32_t(k)));
                           linalg::YieldOp::create(nb, l, arith::AndIOp::create(nb, l, finite, top).getResult());
                         })
                         .getResult(0);
    // slot[t, j] = #{j' < j selected}
    auto slotType = RankedTensorType::get(scoreType.getShape(), b.getI32Type());
    Value slot = linalg::GenericOp::create(
                     b, loc, TypeRange{slotType}, ValueRange{selected},
                     ValueRange{filled(b, loc, i32Const(b, loc, 0), emptyScores(b.getI32Type()))},
                     ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value earlier = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, linalg::IndexOp::create(nb, l, 2),
                                                             linalg::IndexOp::create(nb, l, 1));
                       Value counts = arith::AndIOp::create(nb, l, earlier, a[0]);
                       linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, counts, arith::AddIOp::create(nb, l, a[1], i32Const(nb, l, 1)), a[1]).getResult());
                     })
                     .getResult(0);
    auto selType = RankedTensorType::get({ShapedType::kDynamic, k}, b.getI32Type());
    Value selection = linalg::GenericOp::create(
                          b, loc, TypeRange{selType}, ValueRange{selected, slot},
                          ValueRange{filled(b, loc, i32Const(b, loc, -1), emptyTensor(b, loc, selType, q))},
                          ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1})},
                          iterators(2, 1),
                          [&](OpBuilder &nb, Location l, ValueRange a) {
                            Value s = arith::IndexCastOp::create(nb, l, nb.getI32Type(), linalg::IndexOp::create(nb, l, 1));
                            Value j = arith::IndexCastOp::create(nb, l, nb.getI32Type(), linalg::IndexOp::create(nb, l, 2));
                            Value here = arith::AndIOp::create(nb, l, a[0], arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, a[1], s));
                            linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, here, j, a[2]).getResult());
                          })
                          .getResult(0);
    results.push_back(selection);
    if (op.getCandidatePool()) {
      auto poolType = llvm::cast<PoolType>(op.getCandidatePool().getType());
      results.push_back(candidatePool(b, loc, visibleScores, poolType, visibleCount, entries, tokens));
    }
    b.replaceOp(op, results);
    return success();
  }

  /// The hierarchical indexer's pool: blocks of `block_size` entries scored by
  /// their max; the newest visible block and the best blocks - 1 others.
  static Value candidatePool(OpBuilder &b, Location loc, Value scores, PoolType poolType,
                             function_ref<Value(OpBuilder &, Location, Value)> visibleCount, Value entries,
                             Value tokens) {
    MLIRContext *ctx = b.getContext();
    int64_t size = poolType.getBlockSize(), keepBlocks = poolType.getBlocks();
    auto f32 = b.getF32Type();
    Value nb = arith::CeilDivUIOp::create(b, loc, entries, indexConst(b, loc, size));
    auto blockType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, f32);
    Value init = filled(b, loc, minusInfinity(b, loc), tensor::EmptyOp::create(b, loc, blockType, ValueRange{tokens, nb}));
    // (t, block, i): block max over its (in-range) entries
    auto within = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{size}, f32);
    Value blockMax = linalg::GenericOp::create(
                         b, loc, TypeRange{blockType}, ValueRange{within}, ValueRange{init},
                         ArrayRef<AffineMap>{pick(ctx, 3, {2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                         [&](OpBuilder &nb2, Location l, ValueRange a) {
                           Value t = linalg::IndexOp::create(nb2, l, 0);
                           Value j = arith::AddIOp::create(nb2, l, arith::MulIOp::create(nb2, l, linalg::IndexOp::create(nb2, l, 1), indexConst(nb2, l, size)),
                                                           linalg::IndexOp::create(nb2, l, 2));
                           Value inRange = arith::CmpIOp::create(nb2, l, arith::CmpIPredicate::ult, j, entries);
                           Value safe = arith::SelectOp::create(nb2, l, inRange, j, indexConst(nb2, l, 0));
                           Value v = tensor::ExtractOp::create(nb2, l, scores, ValueRange{t, safe});
                           v = arith::SelectOp::create(nb2, l, inRange, v, minusInfinity(nb2, l));
                           linalg::YieldOp::create(nb2, l, arith::MaximumFOp::create(nb2, l, a[1], v).getResult());
                         })
                         .getResult(0);
    auto newestOf = [&](OpBuilder &nb2, Location l, Value t) {
      Value count = arith::MinUIOp::create(nb2, l, visibleCount(nb2, l, t), entries);
      Value any = arith::CmpIOp::create(nb2, l, arith::CmpIPredicate::ugt, count, indexConst(nb2, l, 0));
      Value last = arith::SubIOp::create(nb2, l, arith::MaxUIOp::create(nb2, l, count, indexConst(nb2, l, 1)), indexConst(nb2, l, 1));
      return std::make_pair(any, arith::DivUIOp::create(nb2, l, last, indexConst(nb2, l, size)).getResult());
    };
    auto maskType = RankedTensorType::get(blockType.getShape(), b.getI1Type());
    Value eligible = linalg::GenericOp::create(
                         b, loc, TypeRange{maskType}, ValueRange{blockMax},
                         ValueRange{tensor::EmptyOp::create(b, loc, maskType, ValueRange{tokens, nb})},
                         ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1})}, iterators(2),
                         [&](OpBuilder &nb2, Location l, ValueRange a) {
                           auto [any, newest] = newestOf(nb2, l, linalg::IndexOp::create(nb2, l, 0));
                           (void)any;
                           Value finite = arith::CmpFOp::create(nb2, l, arith::CmpFPredicate::OGT, a[0], minusInfinity(nb2, l));
                           Value other = arith::CmpIOp::create(nb2, l, arith::CmpIPredicate::ne, linalg::IndexOp::create(nb2, l, 1), newest);
                           linalg::YieldOp::create(nb2, l, arith::AndIOp::create(nb2, l, finite, other).getResult());
                         })
                         .getResult(0);
    Value rank = stableDescendingRank(b, loc, blockMax, eligible);
    Value keepBlock = linalg::GenericOp::create(
                          b, loc, TypeRange{maskType}, ValueRange{eligible, rank},
                          ValueRange{tensor::EmptyOp::create(b, loc, maskType, ValueRange{tokens, nb})},
                          ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1})},
                          iterators(2),
                          [&](OpBuilder &nb2, Location l, ValueRange a) {
                            auto [any, newest] = newestOf(nb2, l, linalg::IndexOp::create(nb2, l, 0));
                            Value isNewest = arith::CmpIOp::create(nb2, l, arith::CmpIPredicate::eq, linalg::IndexOp::create(nb2, l, 1), newest);
                            Value best = arith::AndIOp::create(nb2, l, a[0], arith::CmpIOp::create(nb2, l, arith::CmpIPredicate::slt, a[1], i32Const(nb2, l, int32_t(keepBlocks - 1))));
                            linalg::YieldOp::create(nb2, l, arith::AndIOp::create(nb2, l, any, arith::OrIOp::create(nb2, l, isNewest, best)).getResult());
                          })
                          .getResult(0);
    auto poolMaskType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getI1Type());
    return linalg::GenericOp::create(
               b, loc, TypeRange{poolMaskType}, ValueRange{},
               ValueRange{tensor::EmptyOp::create(b, loc, poolMaskType, ValueRange{tokens, entries})},
               ArrayRef<AffineMap>{pick(ctx, 2, {0, 1})}, iterators(2),
               [&](OpBuilder &nb2, Location l, ValueRange) {
                 Value t = linalg::IndexOp::create(nb2, l, 0);
                 Value block = arith::DivUIOp::create(nb2, l, linalg::IndexOp::create(nb2, l, 1), indexConst(nb2, l, size));
                 linalg::YieldOp::create(nb2, l, tensor::ExtractOp::create(nb2, l, keepBlock, ValueRange{t, block}).getResult());
               })
        .getResult(0);
  }
};

/// One softmax per (query, head) over [window | selected or visible entries |
/// sink], K = V.
struct AttentionLowering : DsfPattern<AttentionOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(AttentionOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto f32 = b.getF32Type();
    Value q = adaptor.getQueries(), window = adaptor.getWindow(), cache = adaptor.getCache(),
          selection = adaptor.getSelection();
    Value sink = weight(op, op.getSinkAttr());
    auto qType = tensorType(q);
    int64_t heads = qType.getDimSize(1), width = qType.getDimSize(2);
    int64_t windowSize = llvm::cast<WindowType>(op.getWindow().getType()).getSize();
    double scale = op.getScale().convertToDouble();
    Value tokens = dim0(b, loc, q), rows = dim0(b, loc, window);
    Value off = arith::SubIOp::create(b, loc, rows, tokens);   // query t is window row off + t

    auto logitsType = RankedTensorType::get({ShapedType::kDynamic, heads, ShapedType::kDynamic}, f32);
    // Window logits, masked to rows (off + t - W, off + t].
    Value winInit = filled(b, loc, f32Const(b, loc, 0), tensor::EmptyOp::create(b, loc, logitsType, ValueRange{tokens, rows}));
    Value winDots = linalg::GenericOp::create(
                        b, loc, TypeRange{logitsType}, ValueRange{q, window}, ValueRange{winInit},
                        ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {2, 3}), pick(ctx, 4, {0, 1, 2})},
                        iterators(3, 1),
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
                          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
                        })
                        .getResult(0);
    Value winLogits = elementwise(b, loc, ValueRange{winDots}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      Value t = linalg::IndexOp::create(nb, l, 0), j = linalg::IndexOp::create(nb, l, 2);
      Value self = arith::AddIOp::create(nb, l, t, off);
      Value notFuture = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ule, j, self);
      Value recent = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, arith::AddIOp::create(nb, l, j, indexConst(nb, l, windowSize)), self);
      Value in = arith::AndIOp::create(nb, l, notFuture, recent);
      return arith::SelectOp::create(nb, l, in, arith::MulFOp::create(nb, l, a[0], f32Const(nb, l, scale)), minusInfinity(nb, l));
    });

    // Entry logits: the selected entries (-1: none), or every visible entry.
    Value entryLogits, entryIndex;   // entryIndex[t, s]: the entry of column s (i32, -1 none)
    if (cache) {
      int64_t ratio = llvm::cast<CacheType>(op.getCache().getType()).getRatio();
      Value columns;
      if (selection) {
        entryIndex = selection;
        columns = indexConst(b, loc, tensorType(selection).getDimSize(1));
      } else {
        columns = dim0(b, loc, cache);
        auto idxType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getI32Type());
        entryIndex = linalg::GenericOp::create(
                         b, loc, TypeRange{idxType}, ValueRange{},
                         ValueRange{tensor::EmptyOp::create(b, loc, idxType, ValueRange{tokens, columns})},
                         ArrayRef<AffineMap>{pick(ctx, 2, {0, 1})}, iterators(2),
                         [&](OpBuilder &nb, Location l, ValueRange) {
                           Value t = linalg::IndexOp::create(nb, l, 0), j = linalg::IndexOp::create(nb, l, 1);
                           Value p1 = arith::AddIOp::create(nb, l, arith::AddIOp::create(nb, l, t, off), indexConst(nb, l, 1));
                           Value visible = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, j,
                                                                 arith::DivUIOp::create(nb, l, p1, indexConst(nb, l, ratio)));
                           Value ji = arith::IndexCastOp::create(nb, l, nb.getI32Type(), j);
                           linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, visible, ji, i32Const(nb, l, -1)).getResult());
                         })
                         .getResult(0);
      }
      Value init = filled(b, loc, f32Const(b, loc, 0), tensor::EmptyOp::create(b, loc, logitsType, ValueRange{tokens, columns}));
      Value dots = linalg::GenericOp::create(
                       b, loc, TypeRange{logitsType}, ValueRange{q, entryIndex}, ValueRange{init},
                       ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {0, 2}), pick(ctx, 4, {0, 1, 2})},
                       iterators(3, 1),
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         Value e = arith::IndexCastOp::create(nb, l, nb.getIndexType(), arith::MaxSIOp::create(nb, l, a[1], i32Const(nb, l, 0)));
                         Value kv = tensor::ExtractOp::create(nb, l, cache, ValueRange{e, linalg::IndexOp::create(nb, l, 3)});
                         Value p = arith::MulFOp::create(nb, l, a[0], kv);
                         linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
                       })
                       .getResult(0);
      entryLogits = linalg::GenericOp::create(
                        b, loc, TypeRange{logitsType}, ValueRange{dots, entryIndex},
                        ValueRange{tensor::EmptyOp::create(b, loc, logitsType, ValueRange{tokens, columns})},
                        ArrayRef<AffineMap>{pick(ctx, 3, {0, 1, 2}), pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1, 2})},
                        iterators(3),
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, a[1], i32Const(nb, l, 0));
                          linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, valid, arith::MulFOp::create(nb, l, a[0], f32Const(nb, l, scale)), minusInfinity(nb, l)).getResult());
                        })
                        .getResult(0);
    }

    // m[t, h] = max(sink[h], logits), then the denominator.
    auto rowType = RankedTensorType::get({ShapedType::kDynamic, heads}, f32);
    Value sinkRows = linalg::GenericOp::create(
                         b, loc, TypeRange{rowType}, ValueRange{sink}, ValueRange{emptyTensor(b, loc, rowType, q)},
                         ArrayRef<AffineMap>{pick(ctx, 2, {1}), pick(ctx, 2, {0, 1})}, iterators(2),
                         [&](OpBuilder &nb, Location l, ValueRange a) { linalg::YieldOp::create(nb, l, a[0]); })
                         .getResult(0);
    auto reduceRows = [&](Value logits, Value init, bool isMax, Value m) {
      SmallVector<Value> inputs{logits};
      SmallVector<AffineMap> maps{pick(ctx, 3, {0, 1, 2})};
      if (m) {
        inputs.push_back(m);
        maps.push_back(pick(ctx, 3, {0, 1}));
      }
      maps.push_back(pick(ctx, 3, {0, 1}));
      return linalg::GenericOp::create(
                 b, loc, TypeRange{rowType}, inputs, ValueRange{init}, maps, iterators(2, 1),
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value r = isMax ? arith::MaximumFOp::create(nb, l, a[1], a[0]).getResult()
                                   : arith::AddFOp::create(nb, l, a[2], math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1])))
                                         .getResult();
                   linalg::YieldOp::create(nb, l, r);
                 })
          .getResult(0);
    };
    Value m = reduceRows(winLogits, sinkRows, true, Value());
    if (entryLogits)
      m = reduceRows(entryLogits, m, true, Value());
    Value denom = elementwise(b, loc, ValueRange{sinkRows, m}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
    });
    denom = reduceRows(winLogits, denom, false, m);
    if (entryLogits)
      denom = reduceRows(entryLogits, denom, false, m);

    // out[t, h, d] = sum_j p[t, h, j] v[j, d], p = exp(logit - m) / denom
    auto outType = RankedTensorType::get({ShapedType::kDynamic, heads, width}, f32);
    Value out = zeros(b, loc, outType, q);
    auto weighted = [&](Value logits, Value gather, bool isWindow) {
      SmallVector<Value> inputs{logits, m, denom, gather};
      SmallVector<AffineMap> maps{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {0, 1}), pick(ctx, 4, {0, 1}),
                                  isWindow ? pick(ctx, 4, {3, 2}) : pick(ctx, 4, {0, 3}), pick(ctx, 4, {0, 1, 2})};
      return linalg::GenericOp::create(
                 b, loc, TypeRange{outType}, inputs, ValueRange{out}, maps, iterators(3, 1),
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value p = arith::DivFOp::create(nb, l, math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1])), a[2]);
                   Value v = a[3];
                   if (!isWindow) {
                     Value e = arith::IndexCastOp::create(nb, l, nb.getIndexType(), arith::MaxSIOp::create(nb, l, a[3], i32Const(nb, l, 0)));
                     v = tensor::ExtractOp::create(nb, l, cache, ValueRange{e, linalg::IndexOp::create(nb, l, 2)});
                   }
                   linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[4], arith::MulFOp::create(nb, l, p, v)).getResult());
                 })
          .getResult(0);
    };
    out = weighted(winLogits, window, true);
    if (entryLogits)
      out = weighted(entryLogits, entryIndex, false);
    b.replaceOp(op, out);
    return success();
  }
};

} // namespace

Value stableDescendingRank(OpBuilder &b, Location loc, Value values, Value eligible) {
  MLIRContext *ctx = b.getContext();
  auto vType = tensorType(values);
  auto rType = RankedTensorType::get(vType.getShape(), b.getI32Type());
  Value init = filled(b, loc, i32Const(b, loc, 0), emptyTensor(b, loc, rType, values));
  SmallVector<Value> inputs{values, values};
  SmallVector<AffineMap> maps{pick(ctx, 3, {0, 1}), pick(ctx, 3, {0, 2})};
  if (eligible) {
    inputs.push_back(eligible);
    maps.push_back(pick(ctx, 3, {0, 2}));
  }
  maps.push_back(pick(ctx, 3, {0, 1}));
  return linalg::GenericOp::create(
             b, loc, TypeRange{rType}, inputs, ValueRange{init}, maps, iterators(2, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value self = linalg::IndexOp::create(nb, l, 1), other = linalg::IndexOp::create(nb, l, 2);
               Value greater = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT, a[1], a[0]);
               Value equal = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[1], a[0]);
               Value earlier = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, other, self);
               Value before = arith::OrIOp::create(nb, l, greater, arith::AndIOp::create(nb, l, equal, earlier));
               if (eligible)
                 before = arith::AndIOp::create(nb, l, before, a[2]);
               Value acc = a.back();
               linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, before, arith::AddIOp::create(nb, l, acc, i32Const(nb, l, 1)), acc).getResult());
             })
      .getResult(0);
}

void populateAttentionPatterns(RewritePatternSet &patterns, const TypeConverter &types, LoweringState &state) {
  patterns.add<StoreLowering<WindowWriteOp>, StoreLowering<CacheWriteOp>, EntryPositionsLowering, CompressLowering,
               IndexTopkLowering, AttentionLowering>(types, patterns.getContext(), state);
}

} // namespace mlir::dsf::lowering
