//===- Attention.cpp - dsf-to-linalg: caches, compressor, indexer, attention ===//
//
// A window is the tensor of its layer's K = V rows (a continued sequence's
// retained rows, then this call's), a compressed cache the tensor of its
// complete entries, a top-k selection a [tokens, k] i32 tensor of entry
// indices (-1: none), a candidate pool a [tokens, entries] i1 mask. The
// queries are the window's last rows; their positions (`at`), when given,
// say which entries they see, else the window is taken to start at
// position 0.
//
// Selections are exact: a row's top-k matches the reference's stable order
// bit for bit. Below a few hundred entries it ranks every candidate against
// every other (O(entries^2) a token, few kernels); from there it searches the
// k-th score's bits and the tie cut (O(entries) a pass), with the same
// result. Window attention reads only each query's band of W rows.
//
//===----------------------------------------------------------------------===//
#include "lowering/DsfToLinalg/Builders.h"


namespace mlir::dsf::lowering {
namespace {

Value dim0(OpBuilder &b, Location loc, Value v) { return tensor::DimOp::create(b, loc, v, 0); }

Value addIndex(OpBuilder &b, Location loc, Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }

/// [top; bottom]: the rows of `top` then those of `bottom` (2-D, one width).
Value concatRows(OpBuilder &b, Location loc, Value top, Value bottom) {
  auto type = tensorType(top);
  Value topRows = dim0(b, loc, top), bottomRows = dim0(b, loc, bottom);
  OpFoldResult width = b.getIndexAttr(type.getDimSize(1)), zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  Value out = emptyWithRows(b, loc, type, addIndex(b, loc, topRows, bottomRows));
  out = tensor::InsertSliceOp::create(b, loc, top, out, ArrayRef<OpFoldResult>{zero, zero},
                                      ArrayRef<OpFoldResult>{topRows, width}, ArrayRef<OpFoldResult>{one, one});
  return tensor::InsertSliceOp::create(b, loc, bottom, out, ArrayRef<OpFoldResult>{topRows, zero},
                                       ArrayRef<OpFoldResult>{bottomRows, width}, ArrayRef<OpFoldResult>{one, one});
}

/// Rows [from, rows) of a 2-D tensor.
Value rowsFrom(OpBuilder &b, Location loc, Value t, Value from) {
  auto type = tensorType(t);
  Value count = arith::SubIOp::create(b, loc, dim0(b, loc, t), from);
  OpFoldResult one = b.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(b, loc, type, t, ArrayRef<OpFoldResult>{from, b.getIndexAttr(0)},
                                        ArrayRef<OpFoldResult>{count, b.getIndexAttr(type.getDimSize(1))},
                                        ArrayRef<OpFoldResult>{one, one});
}

/// dots[t, h, j] = q[t, h, :] . rows[j, :]: every head of every query
/// against every row (index keys, window rows).
Value headDots(OpBuilder &b, Location loc, Value q, Value rows) {
  MLIRContext *ctx = b.getContext();
  auto type = RankedTensorType::get({ShapedType::kDynamic, tensorType(q).getDimSize(1), ShapedType::kDynamic},
                                    b.getF32Type());
  Value init = filled(b, loc, f32Const(b, loc, 0),
                      tensor::EmptyOp::create(b, loc, type, ValueRange{dim0(b, loc, q), dim0(b, loc, rows)}));
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{q, rows}, ValueRange{init},
             ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {2, 3}), pick(ctx, 4, {0, 1, 2})},
             iterators(3, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
               linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
             })
      .getResult(0);
}

/// Window and cache writes keep the rows (quantized ones as their decoded
/// values, see Quant.cpp), after the prior rows of a continued sequence.
template <typename OpTy>
struct StoreLowering : DsfPattern<OpTy> {
  using DsfPattern<OpTy>::DsfPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &b) const override {
    Value rows = adaptor.getOperands()[0];
    if (!llvm::isa<RankedTensorType>(rows.getType()))
      return b.notifyMatchFailure(op, "quantized cache formats are not lowered yet");
    if (Value prior = adaptor.getPrior())
      rows = concatRows(b, op.getLoc(), prior, rows);
    b.replaceOp(op, rows);
    return success();
  }
};

/// The last size - 1 rows (fewer when the sequence is shorter).
struct WindowRetainLowering : DsfPattern<WindowRetainOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(WindowRetainOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value rows = adaptor.getWindow();
    int64_t keep = llvm::cast<WindowType>(op.getType()).getSize() - 1;
    Value n = dim0(b, loc, rows);
    Value from = arith::SubIOp::create(b, loc, n, arith::MinUIOp::create(b, loc, n, indexConst(b, loc, keep)));
    b.replaceOp(op, rowsFrom(b, loc, rows, from));
    return success();
  }
};

/// Entries p0 div r up to (p0 + N) div r, at positions r·j.
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
    Value r = indexConst(b, loc, ratio);
    Value p0 = positionAt(b, loc, pos, indexConst(b, loc, 0));
    Value firstEntry = arith::DivUIOp::create(b, loc, p0, r);
    Value endEntry = arith::DivUIOp::create(b, loc, addIndex(b, loc, p0, dim0(b, loc, pos)), r);
    Value entries = arith::SubIOp::create(b, loc, endEntry, firstEntry);
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{}, ValueRange{emptyWithRows(b, loc, type, entries)},
        ArrayRef<AffineMap>{pick(b.getContext(), 1, {0})}, iterators(1), [&](OpBuilder &nb, Location l, ValueRange) {
          Value j = addIndex(nb, l, firstEntry, linalg::IndexOp::create(nb, l, 0));
          Value p = arith::MulIOp::create(nb, l, j, indexConst(nb, l, ratio));
          linalg::YieldOp::create(nb, l, arith::IndexCastOp::create(nb, l, type.getElementType(), p).getResult());
        });
    b.replaceOp(op, out.getResults());
    return success();
  }
};

} // namespace

SlotSource groupSlot(OpBuilder &nb, Location l, Value group, Value c, Value s, int64_t ratio, int64_t width,
                     bool overlap) {
  SlotSource src{Value(), Value(), c, s};
  Value rc = indexConst(nb, l, ratio);
  if (!overlap) {
    src.row = addIndex(nb, l, arith::MulIOp::create(nb, l, group, rc), s);
    src.valid = arith::ConstantOp::create(nb, l, nb.getBoolAttr(true));
    return src;
  }
  // s < ratio: Ca (channels [0, W)) of the group before; else Cb of this one.
  Value isCa = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, s, rc);
  Value hasBefore = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge, group, indexConst(nb, l, 1));
  src.valid = arith::OrIOp::create(nb, l, arith::XOrIOp::create(nb, l, isCa, arith::ConstantOp::create(nb, l, nb.getBoolAttr(true))), hasBefore);
  Value before = arith::SubIOp::create(nb, l, arith::MaxUIOp::create(nb, l, group, indexConst(nb, l, 1)), indexConst(nb, l, 1));
  src.apeRow = arith::SelectOp::create(nb, l, isCa, s, arith::SubIOp::create(nb, l, s, rc));
  src.row = addIndex(nb, l, arith::MulIOp::create(nb, l, arith::SelectOp::create(nb, l, isCa, before, group), rc), src.apeRow);
  src.col = arith::SelectOp::create(nb, l, isCa, c, addIndex(nb, l, c, indexConst(nb, l, width)));
  return src;
}

Value poolSlots(OpBuilder &b, Location loc, RankedTensorType latentType, Value entries, int64_t slots, Value ck,
                Value z, Value ape, function_ref<SlotSource(OpBuilder &, Location, Value, Value, Value)> where) {
  MLIRContext *ctx = b.getContext();
  // Slot s of entry e, channel c: (valid, gate, value).
  auto slot = [&](OpBuilder &nb, Location l, Value e, Value c, Value s) {
    SlotSource src = where(nb, l, e, c, s);
    Value gate = tensor::ExtractOp::create(nb, l, z, ValueRange{src.row, src.col});
    if (ape)
      gate = arith::AddFOp::create(
          nb, l, gate, widenToF32(nb, l, tensor::ExtractOp::create(nb, l, ape, ValueRange{src.apeRow, src.col}).getResult()));
    Value value = tensor::ExtractOp::create(nb, l, ck, ValueRange{src.row, src.col});
    return std::make_tuple(src.valid, gate, value);
  };
  // Three passes over (entry, channel, slot): max, denominator, weighted sum.
  Value slotAxis = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{slots}, b.getF32Type());
  auto reduce = [&](Value init, ValueRange extra, function_ref<Value(OpBuilder &, Location, Value, Value, Value, ValueRange)> body) {
    SmallVector<Value> inputs{slotAxis};
    SmallVector<AffineMap> maps{pick(ctx, 3, {2})};
    for (Value v : extra) {
      inputs.push_back(v);
      maps.push_back(pick(ctx, 3, {0, 1}));
    }
    maps.push_back(pick(ctx, 3, {0, 1}));
    return linalg::GenericOp::create(
               b, loc, TypeRange{latentType}, inputs, ValueRange{init}, maps, iterators(2, 1),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 auto [valid, gate, value] = slot(nb, l, linalg::IndexOp::create(nb, l, 0),
                                                  linalg::IndexOp::create(nb, l, 1), linalg::IndexOp::create(nb, l, 2));
                 linalg::YieldOp::create(nb, l, body(nb, l, valid, gate, value, a.drop_front()));
               })
        .getResult(0);
  };
  Value empty = emptyWithRows(b, loc, latentType, entries);
  Value mx = reduce(filled(b, loc, minusInfinity(b, loc), empty), {},
                    [](OpBuilder &nb, Location l, Value valid, Value gate, Value, ValueRange acc) -> Value {
                      Value m = arith::MaximumFOp::create(nb, l, acc.back(), gate);
                      return arith::SelectOp::create(nb, l, valid, m, acc.back());
                    });
  auto weightOf = [](OpBuilder &nb, Location l, Value gate, Value m) -> Value {
    return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, gate, m));
  };
  Value zeros = filled(b, loc, f32Const(b, loc, 0), empty);
  Value denom = reduce(zeros, {mx}, [&](OpBuilder &nb, Location l, Value valid, Value gate, Value, ValueRange a) -> Value {
    Value sum = arith::AddFOp::create(nb, l, a.back(), weightOf(nb, l, gate, a[0]));
    return arith::SelectOp::create(nb, l, valid, sum, a.back());
  });
  return reduce(zeros, {mx, denom}, [&](OpBuilder &nb, Location l, Value valid, Value gate, Value value, ValueRange a) -> Value {
    Value p = arith::DivFOp::create(nb, l, weightOf(nb, l, gate, a[0]), a[1]);
    Value sum = arith::AddFOp::create(nb, l, a.back(), arith::MulFOp::create(nb, l, p, value));
    return arith::SelectOp::create(nb, l, valid, sum, a.back());
  });
}

namespace {

/// The compressors. `project` (ratio 1): latent = x·W_kv. The others pool
/// slots of Ck = x·W_kv with softmax(Z + ape) per channel, Z = x·W_gate:
/// `pair` and `pool` the `ratio` rows of their own group, `overlap` also the
/// first halves (Ca) of the group before (2·ratio slots; the sequence's first
/// group has none). A continued sequence's carried rows go in front; the
/// first of them starts a group, and an overlap carry of ratio rows or more
/// begins with the complete group before the pending rows.
struct CompressLowering : DsfPattern<CompressOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(CompressOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    CompressorKind kind = op.getKind();
    int64_t ratio = op.getRatio();
    double eps = op.getEps().convertToDouble();
    Value norm = storedWeight(op, op.getNormAttr());
    if (kind == CompressorKind::project) {
      b.replaceOp(op, rmsNormRows(b, loc, rowsTimesTransposed(b, loc, x, storedWeight(op, op.getWkvAttr())), norm, eps));
      return success();
    }
    bool overlap = kind == CompressorKind::overlap;
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1), r = indexConst(b, loc, ratio);
    Value firstGroup = zero;   // the carried complete group an overlap entry reads Ca from
    if (Value carry = adaptor.getCarry()) {
      if (overlap)
        firstGroup = arith::SelectOp::create(
            b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, dim0(b, loc, carry), r), one, zero);
      x = concatRows(b, loc, carry, x);
    }
    Value ck = rowsTimesTransposed(b, loc, x, storedWeight(op, op.getWkvAttr()));
    Value z = rowsTimesTransposed(b, loc, x, storedWeight(op, op.getWgateAttr()));
    Value ape = op.getApeAttr() ? storedWeight(op, op.getApeAttr()) : Value();
    Value groups = arith::DivUIOp::create(b, loc, dim0(b, loc, x), r);
    Value entries = arith::SubIOp::create(b, loc, groups, firstGroup);
    auto latentType = RankedTensorType::get({ShapedType::kDynamic, tensorType(op.getResult()).getDimSize(1)},
                                            b.getF32Type());
    int64_t width = latentType.getDimSize(1), slots = overlap ? 2 * ratio : ratio;

    // Slot s of entry e, channel c: where its gate and value are (x's rows
    // are the groups' from firstGroup's on).
    auto where = [&](OpBuilder &nb, Location l, Value e, Value c, Value s) {
      return groupSlot(nb, l, addIndex(nb, l, e, firstGroup), c, s, ratio, width, overlap);
    };
    Value pooled = poolSlots(b, loc, latentType, entries, slots, ck, z, ape, where);
    SmallVector<Value> results{rmsNormRows(b, loc, pooled, norm, eps)};
    if (op.getCarryOut()) {
      // What later entries need: the open group's rows, and for overlap the
      // complete group before them.
      Value keepFrom = arith::MulIOp::create(b, loc, groups, r);
      if (overlap) {
        Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, groups, zero);
        keepFrom = arith::SelectOp::create(b, loc, any, arith::SubIOp::create(b, loc, keepFrom, r), zero);
      }
      results.push_back(rowsFrom(b, loc, x, keepFrom));
    }
    b.replaceOp(op, results);
    return success();
  }
};

/// The same selection as rankSelect, in O(entries) a pass. Scores become
/// unsigned keys in the order of their floats (x + 0 first, so that -0 and +0
/// are one key, as they are one float). Then, a row at a time in parallel:
///  1. tau, the k-th largest key: built from the top bit down, keeping a bit
///     when at least k keys are >= the prefix with it (32 passes);
///  2. the ties at tau that fit (k - #keys > tau): those before index cut,
///     cut built the same way over the bits of the index (log2 passes);
///  3. selected = finite and (key > tau or (key == tau and index < cut));
///  4. each entry's inclusive count of selected entries, by blocks of 64
///     (per-block counts, their prefix, the count within the block);
///  5. slot s of the output: the first index whose count exceeds s, by a
///     binary search over those counts.
Value thresholdSelect(OpBuilder &b, Location loc, Value ranked, int64_t k, Value q) {
  MLIRContext *ctx = b.getContext();
  constexpr int64_t kBlock = 64;
  auto scoreType = tensorType(ranked);
  auto i32 = b.getI32Type(), i1 = b.getI1Type();
  Value tokens = dim0(b, loc, ranked), entries = tensor::DimOp::create(b, loc, ranked, 1);
  auto full = [&](OpBuilder &o, Type elem) {
    return tensor::EmptyOp::create(o, loc, RankedTensorType::get(scoreType.getShape(), elem), ValueRange{tokens, entries})
        .getResult();
  };
  auto rowType = RankedTensorType::get({ShapedType::kDynamic}, i32);
  auto perRow = [&](OpBuilder &o) { return tensor::EmptyOp::create(o, loc, rowType, ValueRange{tokens}).getResult(); };
  auto c32 = [&](OpBuilder &o, int64_t v) { return i32Const(o, loc, int32_t(v)); };
  auto asI32 = [&](OpBuilder &o, Location l, Value index) {
    return arith::IndexCastOp::create(o, l, o.getI32Type(), index).getResult();
  };
  // keys[t, j]: the scores' bits, ordered as unsigned integers.
  Value keys = elementwise(
      b, loc, ValueRange{ranked},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value x = arith::AddFOp::create(nb, l, a[0], f32Const(nb, l, 0.0));
        Value bits = arith::BitcastOp::create(nb, l, nb.getI32Type(), x);
        Value negative = arith::ShRSIOp::create(nb, l, bits, c32(nb, 31));
        Value key = arith::XOrIOp::create(nb, l, bits, arith::AndIOp::create(nb, l, negative, c32(nb, 0x7fffffff)));
        return arith::XOrIOp::create(nb, l, key, c32(nb, INT32_MIN));
      },
      i32);
  /// count[t] = #{j : pred(key[t, j], j, rows[t]...)}
  auto countRows = [&](OpBuilder &o, ValueRange rows,
                       function_ref<Value(OpBuilder &, Location, Value, Value, ValueRange)> pred) {
    SmallVector<Value> inputs{keys};
    inputs.append(rows.begin(), rows.end());
    SmallVector<AffineMap> maps{pick(ctx, 2, {0, 1})};
    for (size_t i = 0; i < rows.size(); ++i)
      maps.push_back(pick(ctx, 2, {0}));
    maps.push_back(pick(ctx, 2, {0}));
    return linalg::GenericOp::create(o, loc, TypeRange{rowType}, inputs, ValueRange{filled(o, loc, c32(o, 0), perRow(o))},
                                     maps, iterators(1, 1),
                                     [&](OpBuilder &nb, Location l, ValueRange a) {
                                       Value j = asI32(nb, l, linalg::IndexOp::create(nb, l, 1));
                                       Value hit = pred(nb, l, a[0], j, a.slice(1, rows.size()));
                                       Value one = arith::ExtUIOp::create(nb, l, nb.getI32Type(), hit);
                                       linalg::YieldOp::create(nb, l, arith::AddIOp::create(nb, l, a.back(), one).getResult());
                                     })
        .getResult(0);
  };
  auto idx = [&](OpBuilder &o, int64_t v) { return indexConst(o, loc, v); };
  /// into[t] = f(rows[t]..., into[t]), in place: a loop's carried row tensor
  /// stays one buffer (one-shot bufferization wants a loop's yield to be its
  /// argument's buffer).
  auto updateRows = [&](OpBuilder &o, ValueRange inputs, Value into,
                        function_ref<Value(OpBuilder &, Location, ValueRange)> f) {
    SmallVector<AffineMap> maps(inputs.size() + 1, pick(ctx, 1, {0}));
    return linalg::GenericOp::create(o, loc, TypeRange{rowType}, inputs, ValueRange{into}, maps, iterators(1),
                                     [&](OpBuilder &nb, Location l, ValueRange a) {
                                       linalg::YieldOp::create(nb, l, f(nb, l, a));
                                     })
        .getResult(0);
  };

  // 1. tau.
  auto thresholds = scf::ForOp::create(
      b, loc, idx(b, 0), idx(b, 32), idx(b, 1), ValueRange{filled(b, loc, c32(b, 0), perRow(b))},
      [&](OpBuilder &o, Location l, Value iv, ValueRange it) {
        Value bit = arith::ShLIOp::create(o, l, c32(o, 1), arith::SubIOp::create(o, l, c32(o, 31), asI32(o, l, iv)));
        Value cand = elementwise(o, loc, ValueRange{it[0]}, [&](OpBuilder &nb, Location ll, ValueRange a) {
          return arith::OrIOp::create(nb, ll, a[0], bit).getResult();
        });
        Value atLeast = countRows(o, ValueRange{cand}, [](OpBuilder &nb, Location ll, Value key, Value, ValueRange r) {
          return arith::CmpIOp::create(nb, ll, arith::CmpIPredicate::uge, key, r[0]).getResult();
        });
        Value next = updateRows(o, ValueRange{cand, atLeast}, it[0], [&](OpBuilder &nb, Location ll, ValueRange a) {
          Value enough = arith::CmpIOp::create(nb, ll, arith::CmpIPredicate::sge, a[1], c32(nb, k));
          return arith::SelectOp::create(nb, ll, enough, a[0], a[2]).getResult();
        });
        scf::YieldOp::create(o, l, next);
      });
  Value tau = thresholds.getResult(0);
  // 2. The ties that fit: those before cut.
  Value above = countRows(b, ValueRange{tau}, [](OpBuilder &nb, Location l, Value key, Value, ValueRange r) {
    return arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, key, r[0]).getResult();
  });
  Value allowed = elementwise(b, loc, ValueRange{above}, [&](OpBuilder &nb, Location l, ValueRange a) {
    return arith::SubIOp::create(nb, l, c32(nb, k), a[0]).getResult();
  });
  // Bits of entries + 1: the passes of the index searches.
  Value span = asI32(b, loc, arith::AddIOp::create(b, loc, entries, idx(b, 1)));
  Value bitsI32 = arith::SubIOp::create(b, loc, c32(b, 32), math::CountLeadingZerosOp::create(b, loc, span));
  Value bits = arith::IndexCastOp::create(b, loc, b.getIndexType(), bitsI32);
  auto cuts = scf::ForOp::create(
      b, loc, idx(b, 0), bits, idx(b, 1), ValueRange{filled(b, loc, c32(b, 0), perRow(b))},
      [&](OpBuilder &o, Location l, Value iv, ValueRange it) {
        Value shift = arith::SubIOp::create(o, l, arith::SubIOp::create(o, l, bitsI32, c32(o, 1)), asI32(o, l, iv));
        Value bit = arith::ShLIOp::create(o, l, c32(o, 1), shift);
        Value cand = elementwise(o, loc, ValueRange{it[0]}, [&](OpBuilder &nb, Location ll, ValueRange a) {
          return arith::OrIOp::create(nb, ll, a[0], bit).getResult();
        });
        Value ties = countRows(o, ValueRange{tau, cand}, [](OpBuilder &nb, Location ll, Value key, Value j, ValueRange r) {
          Value tie = arith::CmpIOp::create(nb, ll, arith::CmpIPredicate::eq, key, r[0]);
          Value before = arith::CmpIOp::create(nb, ll, arith::CmpIPredicate::ult, j, r[1]);
          return arith::AndIOp::create(nb, ll, tie, before).getResult();
        });
        Value next = updateRows(o, ValueRange{cand, ties, allowed}, it[0], [&](OpBuilder &nb, Location ll, ValueRange a) {
          Value fewer = arith::CmpIOp::create(nb, ll, arith::CmpIPredicate::slt, a[1], a[2]);
          return arith::SelectOp::create(nb, ll, fewer, a[0], a[3]).getResult();
        });
        scf::YieldOp::create(o, l, next);
      });
  Value cut = elementwise(b, loc, ValueRange{cuts.getResult(0)}, [&](OpBuilder &nb, Location l, ValueRange a) {
    return arith::AddIOp::create(nb, l, a[0], c32(nb, 1)).getResult();
  });
  // 3. The selection as a mask.
  Value selected = linalg::GenericOp::create(
                       b, loc, TypeRange{RankedTensorType::get(scoreType.getShape(), i1)}, ValueRange{ranked, keys, tau, cut},
                       ValueRange{full(b, i1)},
                       ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1}), pick(ctx, 2, {0}), pick(ctx, 2, {0}),
                                           pick(ctx, 2, {0, 1})},
                       iterators(2),
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         Value j = asI32(nb, l, linalg::IndexOp::create(nb, l, 1));
                         Value finite = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT, a[0], minusInfinity(nb, l));
                         Value over = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, a[1], a[2]);
                         Value tie = arith::AndIOp::create(nb, l, arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, a[1], a[2]),
                                                           arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, j, a[3]));
                         linalg::YieldOp::create(nb, l, arith::AndIOp::create(nb, l, finite, arith::OrIOp::create(nb, l, over, tie)).getResult());
                       })
                       .getResult(0);
  // 4. Inclusive counts of selected entries, by blocks.
  Value blocks = arith::CeilDivUIOp::create(b, loc, entries, idx(b, kBlock));
  auto blockType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, i32);
  Value within = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{kBlock}, i32);
  auto selectedAt = [&](OpBuilder &nb, Location l, Value t, Value j) {
    Value inRange = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, j, entries);
    Value safe = arith::SelectOp::create(nb, l, inRange, j, indexConst(nb, l, 0));
    Value v = tensor::ExtractOp::create(nb, l, selected, ValueRange{t, safe});
    return arith::AndIOp::create(nb, l, inRange, v).getResult();
  };
  Value blockCounts = linalg::GenericOp::create(
                          b, loc, TypeRange{blockType}, ValueRange{within},
                          ValueRange{filled(b, loc, c32(b, 0), tensor::EmptyOp::create(b, loc, blockType, ValueRange{tokens, blocks}))},
                          ArrayRef<AffineMap>{pick(ctx, 3, {2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                          [&](OpBuilder &nb, Location l, ValueRange a) {
                            Value j = arith::AddIOp::create(nb, l, arith::MulIOp::create(nb, l, linalg::IndexOp::create(nb, l, 1), indexConst(nb, l, kBlock)),
                                                            linalg::IndexOp::create(nb, l, 2));
                            Value hit = selectedAt(nb, l, linalg::IndexOp::create(nb, l, 0), j);
                            linalg::YieldOp::create(nb, l, arith::AddIOp::create(nb, l, a[1], arith::ExtUIOp::create(nb, l, nb.getI32Type(), hit)).getResult());
                          })
                          .getResult(0);
  Value blockBase = linalg::GenericOp::create(
                        b, loc, TypeRange{blockType}, ValueRange{blockCounts},
                        ValueRange{filled(b, loc, c32(b, 0), tensor::EmptyOp::create(b, loc, blockType, ValueRange{tokens, blocks}))},
                        ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          Value earlier = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, linalg::IndexOp::create(nb, l, 2),
                                                                linalg::IndexOp::create(nb, l, 1));
                          Value add = arith::SelectOp::create(nb, l, earlier, a[0], c32(nb, 0));
                          linalg::YieldOp::create(nb, l, arith::AddIOp::create(nb, l, a[1], add).getResult());
                        })
                        .getResult(0);
  Value inBlock = linalg::GenericOp::create(
                      b, loc, TypeRange{RankedTensorType::get(scoreType.getShape(), i32)}, ValueRange{within},
                      ValueRange{filled(b, loc, c32(b, 0), full(b, i32))},
                      ArrayRef<AffineMap>{pick(ctx, 3, {2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                      [&](OpBuilder &nb, Location l, ValueRange a) {
                        Value j = linalg::IndexOp::create(nb, l, 1);
                        Value start = arith::MulIOp::create(nb, l, arith::DivUIOp::create(nb, l, j, indexConst(nb, l, kBlock)), indexConst(nb, l, kBlock));
                        Value jj = arith::AddIOp::create(nb, l, start, linalg::IndexOp::create(nb, l, 2));
                        Value upTo = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ule, jj, j);
                        Value hit = arith::AndIOp::create(nb, l, upTo, selectedAt(nb, l, linalg::IndexOp::create(nb, l, 0), jj));
                        linalg::YieldOp::create(nb, l, arith::AddIOp::create(nb, l, a[1], arith::ExtUIOp::create(nb, l, nb.getI32Type(), hit)).getResult());
                      })
                      .getResult(0);
  Value inclusive = elementwise(b, loc, ValueRange{inBlock}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    Value block = arith::DivUIOp::create(nb, l, linalg::IndexOp::create(nb, l, 1), indexConst(nb, l, kBlock));
    Value base = tensor::ExtractOp::create(nb, l, blockBase, ValueRange{linalg::IndexOp::create(nb, l, 0), block});
    return arith::AddIOp::create(nb, l, a[0], base);
  });
  // 5. Slot s: the first index whose inclusive count exceeds s, else -1.
  auto selType = RankedTensorType::get({ShapedType::kDynamic, k}, i32);
  Value steps = arith::AddIOp::create(b, loc, bits, idx(b, 1));
  return linalg::GenericOp::create(
             b, loc, TypeRange{selType}, ValueRange{}, ValueRange{emptyTensor(b, loc, selType, q)},
             ArrayRef<AffineMap>{pick(ctx, 2, {0, 1})}, iterators(2),
             [&](OpBuilder &nb, Location l, ValueRange) {
               Value t = linalg::IndexOp::create(nb, l, 0);
               Value s = asI32(nb, l, linalg::IndexOp::create(nb, l, 1));
               auto search = scf::ForOp::create(
                   nb, l, indexConst(nb, l, 0), steps, indexConst(nb, l, 1), ValueRange{indexConst(nb, l, 0), entries},
                   [&](OpBuilder &sb, Location sl, Value, ValueRange lh) {
                     Value open = arith::CmpIOp::create(sb, sl, arith::CmpIPredicate::ult, lh[0], lh[1]);
                     auto step = scf::IfOp::create(sb, sl, TypeRange{sb.getIndexType(), sb.getIndexType()}, open, true);
                     OpBuilder tb = step.getThenBodyBuilder();
                     Value mid = arith::DivUIOp::create(tb, sl, arith::AddIOp::create(tb, sl, lh[0], lh[1]), indexConst(tb, sl, 2));
                     Value count = tensor::ExtractOp::create(tb, sl, inclusive, ValueRange{t, mid});
                     Value past = arith::CmpIOp::create(tb, sl, arith::CmpIPredicate::sgt, count, s);
                     Value lo = arith::SelectOp::create(tb, sl, past, lh[0], arith::AddIOp::create(tb, sl, mid, indexConst(tb, sl, 1)));
                     Value hi = arith::SelectOp::create(tb, sl, past, mid, lh[1]);
                     scf::YieldOp::create(tb, sl, ValueRange{lo, hi});
                     OpBuilder eb = step.getElseBodyBuilder();
                     scf::YieldOp::create(eb, sl, ValueRange{lh[0], lh[1]});
                     scf::YieldOp::create(sb, sl, step.getResults());
                   });
               Value at = search.getResult(0);
               Value found = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, at, entries);
               linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, found, asI32(nb, l, at), c32(nb, -1)).getResult());
             })
      .getResult(0);
}

/// The top-k of each row of `ranked` ([tokens, entries], -inf for none) as
/// ascending entry indices, -1 padded: every candidate ranked against every
/// other (stable: ties by index), the first k kept, then placed by counting
/// the kept ones before each. O(entries^2) a row, a handful of kernels.
Value rankSelect(OpBuilder &b, Location loc, Value ranked, int64_t k, Value q) {
  MLIRContext *ctx = b.getContext();
  auto scoreType = tensorType(ranked);
  Value tokens = dim0(b, loc, ranked), entries = tensor::DimOp::create(b, loc, ranked, 1);
  auto emptyScores = [&](Type elem) {
    return tensor::EmptyOp::create(b, loc, RankedTensorType::get(scoreType.getShape(), elem), ValueRange{tokens, entries})
        .getResult();
  };
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
  return selection;
}

RankedTensorType topkType(MLIRContext *ctx, int64_t k) {
  return RankedTensorType::get({ShapedType::kDynamic, k}, IntegerType::get(ctx, 32));
}

} // namespace

std::string topkName(const TopkSpec &s) {
  return "dsf_topk_k" + std::to_string(s.k) + "_from" + std::to_string(s.thresholdFrom);
}

/// Both searches give the same selection; which one runs depends on the
/// number of entries, known when the kernel runs.
Value selectTopk(OpBuilder &b, Location loc, Value ranked, const TopkSpec &spec) {
  Value entries = tensor::DimOp::create(b, loc, ranked, 1);
  Value useThreshold =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, entries, indexConst(b, loc, spec.thresholdFrom));
  auto choice = scf::IfOp::create(b, loc, TypeRange{topkType(b.getContext(), spec.k)}, useThreshold, /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(choice.thenBlock());
  scf::YieldOp::create(b, loc, thresholdSelect(b, loc, ranked, spec.k, ranked));
  b.setInsertionPointToStart(choice.elseBlock());
  scf::YieldOp::create(b, loc, rankSelect(b, loc, ranked, spec.k, ranked));
  return choice.getResult(0);
}

namespace {

/// The indexer: scores, visibility, the optional pool restriction, the
/// top-k (ascending indices, -1 padded) and optionally a new pool.
struct IndexTopkLowering : DsfPattern<IndexTopkOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(IndexTopkOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value q = adaptor.getQueries(), w = adaptor.getWeights(), keys = adaptor.getKeys();
    auto cacheType = llvm::cast<CacheType>(op.getKeys().getType());
    int64_t ratio = cacheType.getRatio();
    Value dots = headDots(b, loc, q, keys);
    Value tokens = dim0(b, loc, q), entries = dim0(b, loc, keys);
    // Query t is the token at positions[t] or, without positions, at off + t
    // with off = max(0, entries * ratio - tokens).
    Value span = arith::MulIOp::create(b, loc, entries, indexConst(b, loc, ratio));
    Value off = arith::SubIOp::create(b, loc, arith::MaxUIOp::create(b, loc, span, tokens), tokens);
    Value positions = adaptor.getPositions();
    auto visibleCount = [positions, off, ratio](OpBuilder &nb, Location l, Value t) {
      Value p = positions ? positionAt(nb, l, positions, t) : arith::AddIOp::create(nb, l, t, off).getResult();
      Value p1 = arith::AddIOp::create(nb, l, p, indexConst(nb, l, 1));
      return arith::DivUIOp::create(nb, l, p1, indexConst(nb, l, ratio)).getResult();
    };
    b.replaceOp(op, indexSelect(b, loc, op, w, dots, adaptor.getWithin(), tokens, entries, visibleCount, state));
    return success();
  }
};

/// The hierarchical indexer's pool: blocks of `block_size` entries scored by
/// their max; the newest visible block and the best blocks - 1 others.
Value candidatePool(OpBuilder &b, Location loc, Value scores, PoolType poolType,
                    function_ref<Value(OpBuilder &, Location, Value)> visibleCount, Value entries, Value tokens) {
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

} // namespace

SmallVector<Value> indexSelect(OpBuilder &b, Location loc, IndexTopkOp op, Value w, Value dots, Value within,
                               Value tokens, Value entries,
                               std::function<Value(OpBuilder &, Location, Value)> visibleCount, LoweringState &state) {
  MLIRContext *ctx = b.getContext();
  int64_t k = op.getK();
  auto f32 = b.getF32Type();
  // scores[t, j] = sum_h (w[t, h] * scale) * relu(dots[t, h, j])
  auto scoreType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, f32);
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
  if (within)
    ranked = elementwise(b, loc, ValueRange{visibleScores, within}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return arith::SelectOp::create(nb, l, a[1], a[0], minusInfinity(nb, l));
    });
  // The selection: a call of the helper for (k, threshold-from), which the
  // pass adds after the conversion (selectTopk below).
  TopkSpec spec{k, state.topkThresholdFrom};
  std::string name = topkName(spec);
  state.topk[name] = spec;
  Value selection = func::CallOp::create(b, loc, name, TypeRange{topkType(ctx, k)}, ValueRange{ranked}).getResult(0);
  results.push_back(selection);
  if (op.getCandidatePool()) {
    auto poolType = llvm::cast<PoolType>(op.getCandidatePool().getType());
    results.push_back(candidatePool(b, loc, visibleScores, poolType, visibleCount, entries, tokens));
  }
  return results;
}

std::string attentionName(const AttentionSpec &s) {
  float scale = float(s.scale);
  uint32_t bits;
  std::memcpy(&bits, &scale, 4);
  return ("dsf_attention_h" + Twine(s.heads) + "_d" + Twine(s.width) + "_w" + Twine(s.window) + "_k" + Twine(s.k) +
          "_s" + Twine::utohexstr(bits))
      .str();
}

SmallVector<Type> attentionInputTypes(MLIRContext *ctx, const AttentionSpec &s) {
  auto f32 = Float32Type::get(ctx);
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<Type> inputs{RankedTensorType::get({dyn, s.heads, s.width}, f32), RankedTensorType::get({dyn, s.width}, f32)};
  if (s.k)
    inputs.append({RankedTensorType::get({dyn, s.width}, f32), RankedTensorType::get({dyn, s.k}, IntegerType::get(ctx, 32))});
  inputs.push_back(RankedTensorType::get({s.heads}, f32));
  return inputs;
}

QueryRows sequenceRows(OpBuilder &b, Location loc, Value q, Value window, int64_t windowSize, Value cache,
                       int64_t ratio, Value positions) {
  QueryRows rows;
  rows.window = window;
  rows.windowSize = windowSize;
  rows.cache = cache;
  rows.ratio = ratio;
  Value tokens = dim0(b, loc, q);
  Value off = arith::SubIOp::create(b, loc, dim0(b, loc, window), tokens);   // query t is window row off + t
  // Band column w of query t is window row off + t - (W - 1) + w, in the
  // window if that is >= 0.
  rows.bandRow = [off, windowSize](OpBuilder &nb, Location l, Value t, Value w) {
    Value self = arith::AddIOp::create(nb, l, t, off);
    Value shifted = arith::AddIOp::create(nb, l, self, w);   // row + (W - 1)
    Value valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge, shifted, indexConst(nb, l, windowSize - 1));
    Value row = arith::SubIOp::create(nb, l, shifted, indexConst(nb, l, windowSize - 1));
    return std::make_pair(valid, arith::SelectOp::create(nb, l, valid, row, indexConst(nb, l, 0)).getResult());
  };
  if (cache)
    rows.entries = dim0(b, loc, cache);
  // Which entries query t sees follows from its position: positions[t], or
  // off + t when the window holds the whole sequence.
  rows.position = [positions, off](OpBuilder &nb, Location l, Value t) -> Value {
    return positions ? positionAt(nb, l, positions, t) : arith::AddIOp::create(nb, l, t, off).getResult();
  };
  return rows;
}

/// One softmax per (query, head) over [window | selected or visible entries |
/// sink], K = V, over the rows `rows` addresses.
Value sinkAttention(OpBuilder &b, Location loc, Value q, const QueryRows &rows, Value selection, Value sink,
                    double scale) {
  MLIRContext *ctx = b.getContext();
  auto f32 = b.getF32Type();
  auto qType = tensorType(q);
  int64_t heads = qType.getDimSize(1), width = qType.getDimSize(2), windowSize = rows.windowSize;
  Value tokens = dim0(b, loc, q), window = rows.window, cache = rows.cache;
  auto entryRow = [&](OpBuilder &nb, Location l, Value t, Value e) {
    return rows.entryRow ? rows.entryRow(nb, l, t, e) : e;
  };
  // Channel c of a cache row: its f32 value, or decoded from its packed row.
  auto cacheAt = [&](OpBuilder &nb, Location l, Value row, Value c) -> Value {
    if (rows.cacheRow)
      return decodeElement(nb, l, cache, ValueRange{row}, c, *rows.cacheRow);
    return tensor::ExtractOp::create(nb, l, cache, ValueRange{row, c});
  };

  auto logitsType = RankedTensorType::get({ShapedType::kDynamic, heads, ShapedType::kDynamic}, f32);
  // Window logits over the band only (O(tokens x W), not O(tokens x rows));
  // the rows outside it would only have added exp(-inf) = 0 terms, so the
  // sums are the same.
  auto bandRow = [&](OpBuilder &nb, Location l, Value t, Value w) { return rows.bandRow(nb, l, t, w); };
  auto bandType = RankedTensorType::get({ShapedType::kDynamic, heads, windowSize}, f32);
  Value bandInit = filled(b, loc, f32Const(b, loc, 0), tensor::EmptyOp::create(b, loc, bandType, ValueRange{tokens}));
  Value winDots = linalg::GenericOp::create(
                      b, loc, TypeRange{bandType}, ValueRange{q}, ValueRange{bandInit},
                      ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {0, 1, 2})}, iterators(3, 1),
                      [&](OpBuilder &nb, Location l, ValueRange a) {
                        auto [valid, row] = bandRow(nb, l, linalg::IndexOp::create(nb, l, 0), linalg::IndexOp::create(nb, l, 2));
                        (void)valid;
                        Value k = tensor::ExtractOp::create(nb, l, window, ValueRange{row, linalg::IndexOp::create(nb, l, 3)});
                        linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], arith::MulFOp::create(nb, l, a[0], k)).getResult());
                      })
                      .getResult(0);
  Value winLogits = elementwise(b, loc, ValueRange{winDots}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    auto [valid, row] = bandRow(nb, l, linalg::IndexOp::create(nb, l, 0), linalg::IndexOp::create(nb, l, 2));
    (void)row;
    return arith::SelectOp::create(nb, l, valid, arith::MulFOp::create(nb, l, a[0], f32Const(nb, l, scale)), minusInfinity(nb, l));
  });

  // Entry logits: the selected entries (-1: none), or every visible entry.
  Value entryLogits, entryIndex;   // entryIndex[t, s]: the entry of column s (i32, -1 none)
  if (cache) {
    Value columns;
    if (selection) {
      // Every column of a selection over an empty cache (a 1-token prompt
      // at ratio 2) is -1, and the -1 columns read entry 0, which then does
      // not exist: the read was out of bounds, and its value times a weight
      // of 0 was NaN whenever the memory past the cache held a NaN (a flaky
      // batch of sequences). Without entries the selection has no columns.
      Value k = indexConst(b, loc, tensorType(selection).getDimSize(1));
      Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rows.entries, indexConst(b, loc, 0));
      columns = arith::SelectOp::create(b, loc, empty, indexConst(b, loc, 0), k);
      OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
      entryIndex = tensor::ExtractSliceOp::create(b, loc, selection, ArrayRef<OpFoldResult>{zero, zero},
                                                  ArrayRef<OpFoldResult>{tokens, columns},
                                                  ArrayRef<OpFoldResult>{one, one});
    } else {
      columns = rows.entries;
      int64_t ratio = rows.ratio;
      auto idxType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getI32Type());
      entryIndex = linalg::GenericOp::create(
                       b, loc, TypeRange{idxType}, ValueRange{},
                       ValueRange{tensor::EmptyOp::create(b, loc, idxType, ValueRange{tokens, columns})},
                       ArrayRef<AffineMap>{pick(ctx, 2, {0, 1})}, iterators(2),
                       [&](OpBuilder &nb, Location l, ValueRange) {
                         Value t = linalg::IndexOp::create(nb, l, 0), j = linalg::IndexOp::create(nb, l, 1);
                         Value p = rows.position(nb, l, t);
                         Value p1 = arith::AddIOp::create(nb, l, p, indexConst(nb, l, 1));
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
                       Value row = entryRow(nb, l, linalg::IndexOp::create(nb, l, 0), e);
                       Value kv = cacheAt(nb, l, row, linalg::IndexOp::create(nb, l, 3));
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
    SmallVector<Value> inputs{logits, m, denom};
    SmallVector<AffineMap> maps{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {0, 1}), pick(ctx, 4, {0, 1})};
    if (!isWindow) {
      inputs.push_back(gather);
      maps.push_back(pick(ctx, 4, {0, 3}));
    }
    maps.push_back(pick(ctx, 4, {0, 1, 2}));
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, inputs, ValueRange{out}, maps, iterators(3, 1),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value p = arith::DivFOp::create(nb, l, math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1])), a[2]);
                 Value v;
                 if (isWindow) {
                   auto [valid, row] = bandRow(nb, l, linalg::IndexOp::create(nb, l, 0), linalg::IndexOp::create(nb, l, 3));
                   (void)valid;   // p is 0 there
                   v = tensor::ExtractOp::create(nb, l, window, ValueRange{row, linalg::IndexOp::create(nb, l, 2)});
                 } else {
                   Value e = arith::IndexCastOp::create(nb, l, nb.getIndexType(), arith::MaxSIOp::create(nb, l, a[3], i32Const(nb, l, 0)));
                   Value row = entryRow(nb, l, linalg::IndexOp::create(nb, l, 0), e);
                   v = cacheAt(nb, l, row, linalg::IndexOp::create(nb, l, 2));
                 }
                 linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a.back(), arith::MulFOp::create(nb, l, p, v)).getResult());
               })
        .getResult(0);
  };
  out = weighted(winLogits, Value(), true);
  if (entryLogits)
    out = weighted(entryLogits, entryIndex, false);
  return out;
}

namespace {

/// Sink attention over the window (and selected entries) is a call of the
/// helper for its shape (added after the conversion, sinkAttention its
/// body), which a target may build as a kernel of its own
/// (dsf-gpu-sink-attention); attention over every visible entry stays inline.
struct AttentionLowering : DsfPattern<AttentionOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(AttentionOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value q = adaptor.getQueries(), window = adaptor.getWindow(), cache = adaptor.getCache(),
          selection = adaptor.getSelection();
    Value sink = weight(b, op, op.getSinkAttr());
    int64_t windowSize = llvm::cast<WindowType>(op.getWindow().getType()).getSize();
    double scale = op.getScale().convertToDouble();
    if (cache && !selection) {
      int64_t ratio = llvm::cast<CacheType>(op.getCache().getType()).getRatio();
      QueryRows rows = sequenceRows(b, loc, q, window, windowSize, cache, ratio, adaptor.getPositions());
      b.replaceOp(op, sinkAttention(b, loc, q, rows, selection, sink, scale));
      return success();
    }
    auto qType = tensorType(q);
    AttentionSpec spec{qType.getDimSize(1), qType.getDimSize(2), windowSize,
                       selection ? tensorType(selection).getDimSize(1) : 0, scale};
    std::string name = attentionName(spec);
    state.attention[name] = spec;
    SmallVector<Value> args{q, window};
    if (selection)
      args.append({cache, selection});
    args.push_back(sink);
    b.replaceOp(op, func::CallOp::create(b, loc, name, TypeRange{q.getType()}, args).getResults());
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
  patterns.add<StoreLowering<WindowWriteOp>, StoreLowering<CacheWriteOp>, WindowRetainLowering, EntryPositionsLowering, CompressLowering,
               IndexTopkLowering, AttentionLowering>(types, patterns.getContext(), state);
}

} // namespace mlir::dsf::lowering
