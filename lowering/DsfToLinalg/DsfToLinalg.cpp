//===- DsfToLinalg.cpp - dsf-to-linalg -------------------------------------===//
//
// dsf ops on tensors -> linalg.generic (+ tensor, arith, math), f32. Each
// pattern follows the op's math in dialect/DsfOps.td (and MODEL.md); the
// NumPy reference (test/reference) computes the same in the same order.
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>

namespace mlir::dsf {
#define GEN_PASS_DEF_DSFTOLINALG
#include "lowering/Passes.h.inc"

namespace {

/// Per function: the SSA value standing for each weight symbol.
using WeightValues = llvm::DenseMap<Operation *, llvm::StringMap<Value>>;

RankedTensorType tensorType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// An empty tensor of `type` whose dynamic token axis is `like`'s dimension 0.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type, Value like) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    sizes.push_back(type.isDynamicDim(i) ? OpFoldResult(tensor::DimOp::create(b, loc, like, 0).getResult())
                                         : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
  return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
}

Value zeros(OpBuilder &b, Location loc, RankedTensorType type, Value like) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{emptyTensor(b, loc, type, like)})
      .getResult(0);
}

SmallVector<utils::IteratorType> iterators(unsigned parallel, unsigned reduction = 0) {
  SmallVector<utils::IteratorType> it(parallel, utils::IteratorType::parallel);
  it.append(reduction, utils::IteratorType::reduction);
  return it;
}

/// (d0, ..., dn-1) -> (d_i for i in dims)
AffineMap pick(MLIRContext *ctx, unsigned n, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(n, 0, exprs, ctx);
}

SmallVector<unsigned> range(unsigned from, unsigned to) {
  SmallVector<unsigned> r;
  for (unsigned i = from; i < to; ++i)
    r.push_back(i);
  return r;
}

Value f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
}

/// y[t, o] = sum_i x[t, i] * w[o, i] for x [?, I] and w [O, I].
Value rowsTimesTransposed(OpBuilder &b, Location loc, Value x, Value w) {
  MLIRContext *ctx = b.getContext();
  auto type = RankedTensorType::get({ShapedType::kDynamic, tensorType(w).getDimSize(0)}, b.getF32Type());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{x, w}, ValueRange{zeros(b, loc, type, x)},
             ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {1, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
               linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
             })
      .getResult(0);
}

/// 1 / (1 + exp(-x)), as the reference writes it.
Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, f32Const(b, loc, 1), arith::AddFOp::create(b, loc, f32Const(b, loc, 1), e));
}

/// The clamped SwiGLU of the experts: silu(min(g, limit)) * clamp(u, -limit, limit).
Value clampedSwiglu(OpBuilder &b, Location loc, Value g, Value u, double limit) {
  Value lim = f32Const(b, loc, limit), negLim = f32Const(b, loc, -limit);
  Value gc = arith::MinimumFOp::create(b, loc, g, lim);
  Value silu = arith::MulFOp::create(b, loc, gc, sigmoid(b, loc, gc));
  Value uc = arith::MaximumFOp::create(b, loc, arith::MinimumFOp::create(b, loc, u, lim), negLim);
  return arith::MulFOp::create(b, loc, silu, uc);
}

/// Applies `body(a...)` elementwise over same-shaped tensors (the first
/// supplies the dynamic token axis).
Value elementwise(OpBuilder &b, Location loc, ValueRange inputs,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto type = tensorType(inputs[0]);
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
  DsfPattern(MLIRContext *ctx, WeightValues &weights) : OpConversionPattern<OpTy>(ctx), weights(weights) {}
  Value weight(Operation *op, FlatSymbolRefAttr sym) const {
    auto &map = weights[op->getParentOfType<func::FuncOp>()];
    auto it = map.find(sym.getValue());
    return it == map.end() ? Value() : it->second;
  }
  WeightValues &weights;
};

struct EmbedLowering : DsfPattern<EmbedOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(EmbedOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value table = weight(op, op.getWeightAttr());
    auto type = llvm::cast<RankedTensorType>(op.getType());
    MLIRContext *ctx = b.getContext();
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{adaptor.getIds()}, ValueRange{emptyTensor(b, loc, type, adaptor.getIds())},
        ArrayRef<AffineMap>{pick(ctx, 2, {0}), pick(ctx, 2, {0, 1})}, iterators(2),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), args[0]);
          Value col = linalg::IndexOp::create(nb, l, 1);
          linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, table, ValueRange{row, col}).getResult());
        });
    b.replaceOp(op, generic.getResults());
    return success();
  }
};

struct RmsNormLowering : DsfPattern<RmsNormOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(RmsNormOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    unsigned r = type.getRank();
    int64_t width = type.getShape().back();
    auto reducedType = RankedTensorType::get(type.getShape().drop_back(), b.getF32Type());
    auto sumsq = linalg::GenericOp::create(
        b, loc, TypeRange{reducedType}, ValueRange{x}, ValueRange{zeros(b, loc, reducedType, x)},
        ArrayRef<AffineMap>{pick(ctx, r, range(0, r)), pick(ctx, r, range(0, r - 1))}, iterators(r - 1, 1),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value sq = arith::MulFOp::create(nb, l, a[0], a[0]);
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], sq).getResult());
        });
    Value w = op.getWeightAttr() ? weight(op, op.getWeightAttr()) : Value();
    SmallVector<Value> inputs{x, sumsq.getResult(0)};
    SmallVector<AffineMap> maps{pick(ctx, r, range(0, r)), pick(ctx, r, range(0, r - 1))};
    if (w) {
      inputs.push_back(w);
      maps.push_back(pick(ctx, r, {r - 1}));
    }
    maps.push_back(pick(ctx, r, range(0, r)));
    double eps = op.getEps().convertToDouble();
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, inputs, ValueRange{emptyTensor(b, loc, type, x)}, maps, iterators(r),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value mean = arith::DivFOp::create(nb, l, a[1], arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(float(width))));
          Value plus = arith::AddFOp::create(nb, l, mean, arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(float(eps))));
          Value y = arith::MulFOp::create(nb, l, a[0], math::RsqrtOp::create(nb, l, plus));
          if (w)
            y = arith::MulFOp::create(nb, l, y, a[2]);
          linalg::YieldOp::create(nb, l, y);
        });
    b.replaceOp(op, out.getResults());
    return success();
  }
};

struct LinearLowering : DsfPattern<LinearOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(LinearOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value x = adaptor.getInput();
    auto inType = tensorType(x);
    if (inType.getRank() > 2) {
      SmallVector<ReassociationIndices> re{{0}, {}};
      for (int64_t i = 1; i < inType.getRank(); ++i)
        re[1].push_back(i);
      x = tensor::CollapseShapeOp::create(b, loc, x, re);
    }
    Value w = weight(op, op.getWeightAttr());
    auto resultType = llvm::cast<RankedTensorType>(op.getType());
    int64_t outFeatures = tensorType(w).getDimSize(0);
    auto flatType = RankedTensorType::get({ShapedType::kDynamic, outFeatures}, b.getF32Type());
    auto mm = linalg::GenericOp::create(
        b, loc, TypeRange{flatType}, ValueRange{x, w}, ValueRange{zeros(b, loc, flatType, x)},
        ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {1, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
        });
    Value y = mm.getResult(0);
    if (resultType.getRank() > 2) {
      SmallVector<ReassociationIndices> re{{0}, {}};
      SmallVector<OpFoldResult> shape{tensor::DimOp::create(b, loc, y, 0).getResult()};
      for (int64_t i = 1; i < resultType.getRank(); ++i) {
        re[1].push_back(i);
        shape.push_back(b.getIndexAttr(resultType.getDimSize(i)));
      }
      y = tensor::ExpandShapeOp::create(b, loc, resultType, y, re, shape);
    }
    b.replaceOp(op, y);
    return success();
  }
};

/// Inverse frequencies of a rope attribute, as the NumPy reference computes them.
std::vector<float> ropeFrequencies(RopeAttr rope) {
  double theta = rope.getTheta().getValueAsDouble();
  int64_t dims = rope.getDims();
  std::vector<double> f;
  for (int64_t i = 0; i < dims; i += 2)
    f.push_back(1.0 / std::pow(theta, double(i) / double(dims)));
  if (auto factorAttr = rope.getYarnFactor()) {
    double factor = factorAttr.getValueAsDouble(), original = double(*rope.getOriginalMax());
    double fast = rope.getBetaFast().getValueAsDouble(), slow = rope.getBetaSlow().getValueAsDouble();
    auto correction = [&](double rotations) {
      return dims * std::log(original / (rotations * 2 * M_PI)) / (2 * std::log(theta));
    };
    double low = std::max(std::floor(correction(fast)), 0.0);
    double high = std::min(std::ceil(correction(slow)), double(dims - 1));
    if (low == high)
      high += 0.001;
    for (size_t i = 0; i < f.size(); ++i) {
      double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
      double smooth = 1 - ramp;
      f[i] = f[i] / factor * (1 - smooth) + f[i] * smooth;
    }
  }
  return std::vector<float>(f.begin(), f.end());
}

struct RopeLowering : DsfPattern<RopeOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(RopeOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    unsigned r = type.getRank();
    int64_t width = type.getShape().back(), dims = op.getRope().getDims(), nope = width - dims;
    std::vector<float> freqs = ropeFrequencies(op.getRope());
    auto freqType = RankedTensorType::get({int64_t(freqs.size())}, b.getF32Type());
    Value freqTable = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(freqType, ArrayRef<float>(freqs)));
    bool inverse = op.getInverse();
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{x, adaptor.getPositions()}, ValueRange{emptyTensor(b, loc, type, x)},
        ArrayRef<AffineMap>{pick(ctx, r, range(0, r)), pick(ctx, r, {0}), pick(ctx, r, range(0, r))}, iterators(r),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v).getResult(); };
          Value c = linalg::IndexOp::create(nb, l, r - 1);
          // j: the channel within the rope part (clamped so that the unused
          // branch of a nope channel reads in bounds).
          Value j = arith::MaxSIOp::create(nb, l, arith::SubIOp::create(nb, l, c, idx(nope)), idx(0));
          Value odd = arith::RemUIOp::create(nb, l, j, idx(2));
          Value pair = arith::DivUIOp::create(nb, l, j, idx(2));
          Value partner = arith::AddIOp::create(nb, l, idx(nope),
                                                arith::SubIOp::create(nb, l, arith::AddIOp::create(nb, l, j, idx(1)),
                                                                      arith::MulIOp::create(nb, l, odd, idx(2))));
          SmallVector<Value> at;
          for (unsigned d = 0; d + 1 < r; ++d)
            at.push_back(linalg::IndexOp::create(nb, l, d));
          at.push_back(partner);
          Value other = tensor::ExtractOp::create(nb, l, x, at);
          Value freq = tensor::ExtractOp::create(nb, l, freqTable, ValueRange{pair});
          Value pos = arith::SIToFPOp::create(nb, l, nb.getF32Type(), a[1]);
          Value angle = arith::MulFOp::create(nb, l, pos, freq);
          if (inverse)
            angle = arith::NegFOp::create(nb, l, angle);
          Value cs = math::CosOp::create(nb, l, angle), sn = math::SinOp::create(nb, l, angle);
          // even: x cos - x' sin; odd: x cos + x' sin (x' the pair's other channel)
          Value isOdd = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, odd, idx(1));
          Value ps = arith::MulFOp::create(nb, l, other, sn);
          Value rotated = arith::SelectOp::create(nb, l, isOdd, arith::AddFOp::create(nb, l, arith::MulFOp::create(nb, l, a[0], cs), ps),
                                                  arith::SubFOp::create(nb, l, arith::MulFOp::create(nb, l, a[0], cs), ps));
          Value isRope = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, c, idx(nope));
          linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, isRope, rotated, a[0]).getResult());
        });
    b.replaceOp(op, out.getResults());
    return success();
  }
};

struct AddLowering : DsfPattern<AddOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(AddOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto type = tensorType(adaptor.getLhs());
    unsigned r = type.getRank();
    AffineMap id = pick(b.getContext(), r, range(0, r));
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{adaptor.getLhs(), adaptor.getRhs()},
        ValueRange{emptyTensor(b, loc, type, adaptor.getLhs())}, ArrayRef<AffineMap>{id, id, id}, iterators(r),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[0], a[1]).getResult());
        });
    b.replaceOp(op, out.getResults());
    return success();
  }
};

struct TakeLastLowering : DsfPattern<TakeLastOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(TakeLastOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = tensorType(x);
    Value n = tensor::DimOp::create(b, loc, x, 0);
    Value count = arith::ConstantIndexOp::create(b, loc, op.getCount());
    Value size = arith::MinUIOp::create(b, loc, n, count);
    Value offset = arith::SubIOp::create(b, loc, n, size);
    SmallVector<OpFoldResult> offsets{offset}, sizes{size}, strides(type.getRank(), b.getIndexAttr(1));
    for (int64_t i = 1; i < type.getRank(); ++i) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
    }
    b.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, x, offsets, sizes, strides);
    return success();
  }
};

struct HcExpandLowering : DsfPattern<HcExpandOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(HcExpandOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value x = adaptor.getInput();
    auto sType = llvm::cast<RankedTensorType>(op.getStreams().getType());
    auto pType = llvm::cast<RankedTensorType>(op.getPre().getType());
    auto streams = linalg::GenericOp::create(
        b, loc, TypeRange{sType}, ValueRange{x}, ValueRange{emptyTensor(b, loc, sType, x)},
        ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1, 2})}, iterators(3),
        [&](OpBuilder &nb, Location l, ValueRange a) { linalg::YieldOp::create(nb, l, a[0]); });
    auto pre = linalg::GenericOp::create(
        b, loc, TypeRange{pType}, ValueRange{}, ValueRange{emptyTensor(b, loc, pType, x)},
        ArrayRef<AffineMap>{pick(ctx, 2, {0, 1})}, iterators(2),
        [&](OpBuilder &nb, Location l, ValueRange) {
          Value j = linalg::IndexOp::create(nb, l, 1);
          Value first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, j, arith::ConstantIndexOp::create(nb, l, 0));
          linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, first, arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1)),
                                                                  arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0))).getResult());
        });
    b.replaceOp(op, {streams.getResult(0), pre.getResult(0)});
    return success();
  }
};

struct HcCollapseLowering : DsfPattern<HcCollapseOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(HcCollapseOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto type = llvm::cast<RankedTensorType>(op.getType());
    // (t, d, j): x[t, d] = sum_j pre[t, j] * X[t, j, d]
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{adaptor.getStreams(), adaptor.getPre()},
        ValueRange{zeros(b, loc, type, adaptor.getStreams())},
        ArrayRef<AffineMap>{pick(ctx, 3, {0, 2, 1}), pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value p = arith::MulFOp::create(nb, l, a[1], a[0]);
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
        });
    b.replaceOp(op, out.getResults());
    return success();
  }
};

struct HcUpdateLowering : DsfPattern<HcUpdateOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(HcUpdateOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto type = llvm::cast<RankedTensorType>(op.getType());
    Value X = adaptor.getStreams();
    // X'[t, k, d] = post[t, k] F[t, d] + sum_j comb[t, j, k] X[t, j, d]
    auto placed = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{adaptor.getPost(), adaptor.getBlockOutput()},
        ValueRange{emptyTensor(b, loc, type, X)},
        ArrayRef<AffineMap>{pick(ctx, 3, {0, 1}), pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1, 2})}, iterators(3),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          linalg::YieldOp::create(nb, l, arith::MulFOp::create(nb, l, a[0], a[1]).getResult());
        });
    auto mixed = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{adaptor.getComb(), X}, ValueRange{placed.getResult(0)},
        ArrayRef<AffineMap>{pick(ctx, 4, {0, 3, 1}), pick(ctx, 4, {0, 3, 2}), pick(ctx, 4, {0, 1, 2})},
        iterators(3, 1), [&](OpBuilder &nb, Location l, ValueRange a) {
          Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
        });
    b.replaceOp(op, mixed.getResults());
    return success();
  }
};

struct FfnLowering : DsfPattern<FfnOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(FfnOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    double limit = op.getSwigluLimit().convertToDouble();
    Value g = rowsTimesTransposed(b, loc, x, weight(op, op.getW1Attr()));
    Value u = rowsTimesTransposed(b, loc, x, weight(op, op.getW3Attr()));
    Value h = elementwise(b, loc, ValueRange{g, u},
                          [&](OpBuilder &nb, Location l, ValueRange a) { return clampedSwiglu(nb, l, a[0], a[1], limit); });
    b.replaceOp(op, rowsTimesTransposed(b, loc, h, weight(op, op.getW2Attr())));
    return success();
  }
};

/// Routed experts computed per (token, slot): each slot gathers its expert's
/// rows from the stacked weights, so the work is tokens x top_k experts, not
/// tokens x all experts.
struct MoeExpertsLowering : DsfPattern<MoeExpertsOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(MoeExpertsOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value x = adaptor.getInput(), routing = adaptor.getRoutingWeights(), experts = adaptor.getExperts();
    Value w1 = weight(op, op.getW1Attr()), w2 = weight(op, op.getW2Attr()), w3 = weight(op, op.getW3Attr());
    int64_t topK = tensorType(routing).getDimSize(1), inter = tensorType(w1).getDimSize(1);
    double limit = op.getSwigluLimit().convertToDouble();
    auto hType = RankedTensorType::get({ShapedType::kDynamic, topK, inter}, b.getF32Type());
    // (t, k, i, d): g[t, k, i] = sum_d W[e[t, k], i, d] x[t, d]
    auto project = [&](Value stacked) {
      return linalg::GenericOp::create(
                 b, loc, TypeRange{hType}, ValueRange{experts, x}, ValueRange{zeros(b, loc, hType, x)},
                 ArrayRef<AffineMap>{pick(ctx, 4, {0, 1}), pick(ctx, 4, {0, 3}), pick(ctx, 4, {0, 1, 2})},
                 iterators(3, 1),
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value e = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                   Value w = tensor::ExtractOp::create(
                       nb, l, stacked, ValueRange{e, linalg::IndexOp::create(nb, l, 2), linalg::IndexOp::create(nb, l, 3)});
                   Value p = arith::MulFOp::create(nb, l, w, a[1]);
                   linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
                 })
          .getResult(0);
    };
    Value g = project(w1), u = project(w3);
    auto h = linalg::GenericOp::create(
        b, loc, TypeRange{hType}, ValueRange{g, u, routing}, ValueRange{emptyTensor(b, loc, hType, x)},
        ArrayRef<AffineMap>{pick(ctx, 3, {0, 1, 2}), pick(ctx, 3, {0, 1, 2}), pick(ctx, 3, {0, 1}), pick(ctx, 3, {0, 1, 2})},
        iterators(3), [&](OpBuilder &nb, Location l, ValueRange a) {
          linalg::YieldOp::create(nb, l, arith::MulFOp::create(nb, l, a[2], clampedSwiglu(nb, l, a[0], a[1], limit)).getResult());
        });
    // (t, d, k, i): y[t, d] = sum_k sum_i W2[e[t, k], d, i] h[t, k, i]
    auto type = llvm::cast<RankedTensorType>(op.getType());
    auto y = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{experts, h.getResult(0)}, ValueRange{zeros(b, loc, type, x)},
        ArrayRef<AffineMap>{pick(ctx, 4, {0, 2}), pick(ctx, 4, {0, 2, 3}), pick(ctx, 4, {0, 1})}, iterators(2, 2),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value e = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
          Value w = tensor::ExtractOp::create(
              nb, l, w2, ValueRange{e, linalg::IndexOp::create(nb, l, 1), linalg::IndexOp::create(nb, l, 3)});
          Value p = arith::MulFOp::create(nb, l, w, a[1]);
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
        });
    b.replaceOp(op, y.getResults());
    return success();
  }
};

/// The mHC coefficients. The projection and the sum of squares are two
/// reductions over the flattened streams; the n + n + n*n results are then
/// small per-token work: sigmoid, a row softmax and the Sinkhorn rounds (an
/// scf.for over whole [tokens, n, n] tensors).
struct HcCoeffsLowering : DsfPattern<HcCoeffsOp> {
  using DsfPattern::DsfPattern;

  /// comb / (sum over `axis` of comb + eps), axis 1 (j, columns) or 2 (k, rows).
  static Value normalise(OpBuilder &b, Location loc, Value comb, unsigned axis, double eps) {
    MLIRContext *ctx = b.getContext();
    auto type = tensorType(comb);
    auto sumType = RankedTensorType::get({ShapedType::kDynamic, type.getDimSize(1)}, b.getF32Type());
    unsigned kept = axis == 1 ? 2 : 1;
    // (t, kept, reduced)
    SmallVector<unsigned> combDims = axis == 1 ? SmallVector<unsigned>{0, 2, 1} : SmallVector<unsigned>{0, 1, 2};
    Value sums = linalg::GenericOp::create(
                     b, loc, TypeRange{sumType}, ValueRange{comb}, ValueRange{zeros(b, loc, sumType, comb)},
                     ArrayRef<AffineMap>{pick(ctx, 3, combDims), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], a[0]).getResult());
                     })
                     .getResult(0);
    // In place (comb is the output operand): inside the Sinkhorn loop the
    // yielded tensor is then the loop's own buffer, which bufferization needs.
    return linalg::GenericOp::create(
               b, loc, TypeRange{type}, ValueRange{sums}, ValueRange{comb},
               ArrayRef<AffineMap>{pick(ctx, 3, {0, kept}), pick(ctx, 3, {0, 1, 2})}, iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value d = arith::AddFOp::create(nb, l, a[0], f32Const(nb, l, eps));
                 linalg::YieldOp::create(nb, l, arith::DivFOp::create(nb, l, a[1], d).getResult());
               })
        .getResult(0);
  }

  LogicalResult matchAndRewrite(HcCoeffsOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value X = adaptor.getStreams();
    auto sType = tensorType(X);
    int64_t n = sType.getDimSize(1), width = sType.getDimSize(1) * sType.getDimSize(2);
    Value flat = tensor::CollapseShapeOp::create(b, loc, X, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    Value fn = weight(op, op.getFnAttr()), base = weight(op, op.getBaseAttr()), scale = weight(op, op.getScaleAttr());
    Value mix = rowsTimesTransposed(b, loc, flat, fn);
    auto rowType = RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
    Value sumsq = linalg::GenericOp::create(
                      b, loc, TypeRange{rowType}, ValueRange{flat}, ValueRange{zeros(b, loc, rowType, flat)},
                      ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0})}, iterators(1, 1),
                      [&](OpBuilder &nb, Location l, ValueRange a) {
                        Value sq = arith::MulFOp::create(nb, l, a[0], a[0]);
                        linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], sq).getResult());
                      })
                      .getResult(0);
    double eps = op.getEps().convertToDouble(), normEps = op.getNormEps().convertToDouble();
    // logits[t, m] = mix[t, m] / sqrt(mean + norm_eps) * scale[group(m)] + base[m]
    auto mixType = tensorType(mix);
    Value logits = linalg::GenericOp::create(
                       b, loc, TypeRange{mixType}, ValueRange{mix, sumsq, base},
                       ValueRange{emptyTensor(b, loc, mixType, mix)},
                       ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0}), pick(ctx, 2, {1}), pick(ctx, 2, {0, 1})},
                       iterators(2),
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         Value mean = arith::DivFOp::create(nb, l, a[1], f32Const(nb, l, double(width)));
                         Value rms = math::SqrtOp::create(nb, l, arith::AddFOp::create(nb, l, mean, f32Const(nb, l, normEps)));
                         Value m = linalg::IndexOp::create(nb, l, 1);
                         auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v).getResult(); };
                         Value group = arith::MinUIOp::create(nb, l, arith::DivUIOp::create(nb, l, m, idx(n)), idx(2));
                         Value sc = tensor::ExtractOp::create(nb, l, scale, ValueRange{group});
                         Value v = arith::MulFOp::create(nb, l, arith::DivFOp::create(nb, l, a[0], rms), sc);
                         linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, v, a[2]).getResult());
                       })
                       .getResult(0);
    auto slice = [&](int64_t offset, int64_t size) {
      SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(offset)};
      SmallVector<OpFoldResult> sizes{tensor::DimOp::create(b, loc, logits, 0).getResult(), b.getIndexAttr(size)};
      SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(b, loc, logits, offsets, sizes, strides).getResult();
    };
    Value pre = elementwise(b, loc, ValueRange{slice(0, n)}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return arith::AddFOp::create(nb, l, sigmoid(nb, l, a[0]), f32Const(nb, l, eps));
    });
    Value post = elementwise(b, loc, ValueRange{slice(n, n)}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return arith::MulFOp::create(nb, l, f32Const(nb, l, 2), sigmoid(nb, l, a[0]));
    });
    auto combType = llvm::cast<RankedTensorType>(op.getComb().getType());
    SmallVector<OpFoldResult> combShape{tensor::DimOp::create(b, loc, logits, 0).getResult(), b.getIndexAttr(n),
                                        b.getIndexAttr(n)};
    Value comb = tensor::ExpandShapeOp::create(b, loc, combType, slice(2 * n, n * n),
                                               ArrayRef<ReassociationIndices>{{0}, {1, 2}}, combShape);
    // Row softmax (max-subtracted, as the reference) + eps.
    auto rowsType = RankedTensorType::get({ShapedType::kDynamic, n}, b.getF32Type());
    Value lowest = f32Const(b, loc, -std::numeric_limits<float>::infinity());
    Value maxInit = linalg::FillOp::create(b, loc, ValueRange{lowest}, ValueRange{emptyTensor(b, loc, rowsType, comb)})
                        .getResult(0);
    Value rowMax = linalg::GenericOp::create(
                       b, loc, TypeRange{rowsType}, ValueRange{comb}, ValueRange{maxInit},
                       ArrayRef<AffineMap>{pick(ctx, 3, {0, 1, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         linalg::YieldOp::create(nb, l, arith::MaximumFOp::create(nb, l, a[1], a[0]).getResult());
                       })
                       .getResult(0);
    Value exps = linalg::GenericOp::create(
                     b, loc, TypeRange{combType}, ValueRange{comb, rowMax}, ValueRange{emptyTensor(b, loc, combType, comb)},
                     ArrayRef<AffineMap>{pick(ctx, 3, {0, 1, 2}), pick(ctx, 3, {0, 1}), pick(ctx, 3, {0, 1, 2})},
                     iterators(3),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       linalg::YieldOp::create(nb, l, math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1])).getResult());
                     })
                     .getResult(0);
    Value soft = normalise(b, loc, exps, 2, 0.0);
    soft = elementwise(b, loc, ValueRange{soft}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return arith::AddFOp::create(nb, l, a[0], f32Const(nb, l, eps));
    });
    comb = normalise(b, loc, soft, 1, eps);
    int64_t rounds = op.getSinkhornIters() - 1;
    if (rounds > 0) {
      Value lb = arith::ConstantIndexOp::create(b, loc, 0), ub = arith::ConstantIndexOp::create(b, loc, rounds),
            step = arith::ConstantIndexOp::create(b, loc, 1);
      auto loop = scf::ForOp::create(b, loc, lb, ub, step, ValueRange{comb},
                                     [&](OpBuilder &nb, Location l, Value, ValueRange iter) {
                                       Value c = normalise(nb, l, iter[0], 2, eps);
                                       scf::YieldOp::create(nb, l, normalise(nb, l, c, 1, eps));
                                     });
      comb = loop.getResult(0);
    }
    b.replaceOp(op, {pre, post, comb});
    return success();
  }
};

struct DsfToLinalgPass : impl::DsfToLinalgBase<DsfToLinalgPass> {
  /// Replaces each dsf.layer by its body.
  static void inlineLayers(func::FuncOp func) {
    for (auto layer : llvm::to_vector(func.getBody().getOps<LayerOp>())) {
      Block &body = layer.getBodyBlock();
      for (auto [arg, in] : llvm::zip(body.getArguments(), layer.getInputs()))
        arg.replaceAllUsesWith(in);
      auto yield = llvm::cast<YieldOp>(body.getTerminator());
      for (auto [res, v] : llvm::zip(layer.getResults(), yield.getValues()))
        res.replaceAllUsesWith(v);
      yield.erase();
      layer->getBlock()->getOperations().splice(Block::iterator(layer), body.getOperations());
      layer.erase();
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    WeightValues weights;
    for (auto model : llvm::to_vector(module.getBody()->getOps<ModelOp>())) {
      llvm::StringMap<WeightDeclOp> decls;
      SmallVector<WeightDeclOp> order;
      for (auto w : model.getBody().front().getOps<WeightDeclOp>()) {
        decls[w.getSymName()] = w;
        order.push_back(w);
      }
      for (auto func : llvm::to_vector(model.getBody().front().getOps<func::FuncOp>())) {
        inlineLayers(func);
        llvm::StringSet<> used;
        func.walk([&](WeightUserOpInterface user) {
          SmallVector<WeightUse> uses;
          user.getWeightUses(uses);
          for (const WeightUse &u : uses)
            used.insert(u.symbol.getValue());
        });
        auto &map = weights[func];
        SmallVector<Attribute> bound;
        OpBuilder b(func.getContext());
        b.setInsertionPointToStart(&func.getBody().front());
        for (WeightDeclOp w : order) {
          if (!used.contains(w.getSymName()))
            continue;
          auto type = RankedTensorType::get(w.getTensorType().getShape(),
                                            w.getTensorType().getElementType().isInteger(32)
                                                ? w.getTensorType().getElementType()
                                                : Type(b.getF32Type()));
          if (auto value = w.getValueAttr()) {
            if (value.getShapedType() != type) {
              w.emitOpError() << "lowering needs the value of @" << w.getSymName() << " as " << type;
              return signalPassFailure();
            }
            map[w.getSymName()] = arith::ConstantOp::create(b, w.getLoc(), llvm::cast<TypedAttr>(value));
            continue;
          }
          unsigned index = func.getNumArguments();
          if (failed(func.insertArgument(index, type, DictionaryAttr(), w.getLoc())))
            return signalPassFailure();
          map[w.getSymName()] = func.getArgument(index);
          bound.push_back(FlatSymbolRefAttr::get(w.getSymNameAttr()));
        }
        func->setAttr("dsf.weights", b.getArrayAttr(bound));
        func->moveBefore(model);
      }
      model.erase();
    }

    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<DsfDialect>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect, arith::ArithDialect,
                           math::MathDialect, func::FuncDialect, scf::SCFDialect>();
    RewritePatternSet patterns(ctx);
    patterns.add<EmbedLowering, RmsNormLowering, LinearLowering, RopeLowering, AddLowering,
                 TakeLastLowering, HcExpandLowering, HcCollapseLowering, HcUpdateLowering, FfnLowering,
                 MoeExpertsLowering, HcCoeffsLowering>(ctx, weights);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
