//===- DsfToLinalg.cpp - dsf-to-linalg -------------------------------------===//
//
// dsf ops on tensors -> linalg.generic (+ tensor, arith, math), f32. Each
// pattern follows the op's math in dialect/DsfOps.td (and MODEL.md); the
// NumPy reference (test/reference) computes the same in the same order.
//
//===----------------------------------------------------------------------===//
#include "lowering/DsfToLinalg/Builders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <set>
#include <cstring>
#include <limits>

namespace mlir::dsf {
#define GEN_PASS_DEF_DSFTOLINALG
#include "lowering/Passes.h.inc"

Value lowering::sumOfSquares(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(x);
  unsigned r = type.getRank();
  auto reducedType = RankedTensorType::get(type.getShape().drop_back(), b.getF32Type());
  return linalg::GenericOp::create(
             b, loc, TypeRange{reducedType}, ValueRange{x}, ValueRange{zeros(b, loc, reducedType, x)},
             ArrayRef<AffineMap>{pick(ctx, r, range(0, r)), pick(ctx, r, range(0, r - 1))}, iterators(r - 1, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value sq = arith::MulFOp::create(nb, l, a[0], a[0]);
               linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], sq).getResult());
             })
      .getResult(0);
}

Value lowering::rmsNormRows(OpBuilder &b, Location loc, Value x, Value w, double eps) {
    MLIRContext *ctx = b.getContext();
    auto type = tensorType(x);
    unsigned r = type.getRank();
    int64_t width = type.getShape().back();
    SmallVector<Value> inputs{x, sumOfSquares(b, loc, x)};
    SmallVector<AffineMap> maps{pick(ctx, r, range(0, r)), pick(ctx, r, range(0, r - 1))};
    if (w) {
      inputs.push_back(w);
      maps.push_back(pick(ctx, r, {r - 1}));
    }
    maps.push_back(pick(ctx, r, range(0, r)));
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, inputs, ValueRange{emptyTensor(b, loc, type, x)}, maps, iterators(r),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value mean = arith::DivFOp::create(nb, l, a[1], arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(float(width))));
          Value plus = arith::AddFOp::create(nb, l, mean, arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(float(eps))));
          Value y = arith::MulFOp::create(nb, l, a[0], math::RsqrtOp::create(nb, l, plus));
          if (w)
            y = arith::MulFOp::create(nb, l, y, widenToF32(nb, l, a[2]));
          linalg::YieldOp::create(nb, l, y);
        });
  return out.getResult(0);
}

namespace {
using namespace lowering;

struct EmbedLowering : DsfPattern<EmbedOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(EmbedOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value table = storedWeight(op, op.getWeightAttr());
    auto type = llvm::cast<RankedTensorType>(op.getType());
    MLIRContext *ctx = b.getContext();
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{adaptor.getIds()}, ValueRange{emptyTensor(b, loc, type, adaptor.getIds())},
        ArrayRef<AffineMap>{pick(ctx, 2, {0}), pick(ctx, 2, {0, 1})}, iterators(2),
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), args[0]);
          Value col = linalg::IndexOp::create(nb, l, 1);
          linalg::YieldOp::create(
              nb, l, widenToF32(nb, l, tensor::ExtractOp::create(nb, l, table, ValueRange{row, col}).getResult()));
        });
    b.replaceOp(op, generic.getResults());
    return success();
  }
};

struct RmsNormLowering : DsfPattern<RmsNormOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(RmsNormOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Value w = op.getWeightAttr() ? storedWeight(op, op.getWeightAttr()) : Value();
    b.replaceOp(op, rmsNormRows(b, op.getLoc(), adaptor.getInput(), w, op.getEps().convertToDouble()));
    return success();
  }
};

struct LinearLowering : DsfPattern<LinearOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(LinearOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto inType = tensorType(x);
    if (inType.getRank() > 2) {
      SmallVector<ReassociationIndices> re{{0}, {}};
      for (int64_t i = 1; i < inType.getRank(); ++i)
        re[1].push_back(i);
      x = tensor::CollapseShapeOp::create(b, loc, x, re);
    }
    auto resultType = llvm::cast<RankedTensorType>(op.getType());
    Value y = timesWeight(b, loc, op, op.getWeightAttr(), x);
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

/// RoPE on the last `dims` channels, a pair (2i, 2i + 1) an iteration: the
/// generic updates two strided slices of the input (its even and its odd
/// rope channels) in place, so the nope channels are neither read nor
/// written and each pair's angle gets one cos and one sin. Bufferized, the
/// slices are views of the input's buffer (copied first only when the
/// unrotated input is used again); on the GPU a decode query's rope is 64 x
/// 32 pairs, not 64 x 512 channels.
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
    // Channel nope + 2i + parity of every row, i < dims / 2.
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.back() = b.getIndexAttr(dims / 2);
    SmallVector<OpFoldResult> strides(r, b.getIndexAttr(1));
    strides.back() = b.getIndexAttr(2);
    auto offsets = [&](int64_t parity) {
      SmallVector<OpFoldResult> at(r, b.getIndexAttr(0));
      at.back() = b.getIndexAttr(nope + parity);
      return at;
    };
    Value even = tensor::ExtractSliceOp::create(b, loc, x, offsets(0), sizes, strides);
    Value odd = tensor::ExtractSliceOp::create(b, loc, x, offsets(1), sizes, strides);
    auto all = pick(ctx, r, range(0, r));
    auto pairs = linalg::GenericOp::create(
        b, loc, TypeRange{even.getType(), odd.getType()}, ValueRange{adaptor.getPositions()}, ValueRange{even, odd},
        ArrayRef<AffineMap>{pick(ctx, r, {0}), all, all}, iterators(r),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value pair = linalg::IndexOp::create(nb, l, r - 1);
          Value freq = tensor::ExtractOp::create(nb, l, freqTable, ValueRange{pair});
          Value pos = arith::SIToFPOp::create(nb, l, nb.getF32Type(), a[0]);
          Value angle = arith::MulFOp::create(nb, l, pos, freq);
          if (inverse)
            angle = arith::NegFOp::create(nb, l, angle);
          Value cs = math::CosOp::create(nb, l, angle), sn = math::SinOp::create(nb, l, angle);
          // even: x cos - x' sin; odd: x cos + x' sin (x' the pair's other channel)
          auto mul = [&](Value p, Value q) { return arith::MulFOp::create(nb, l, p, q).getResult(); };
          Value evenOut = arith::SubFOp::create(nb, l, mul(a[1], cs), mul(a[2], sn));
          Value oddOut = arith::AddFOp::create(nb, l, mul(a[2], cs), mul(a[1], sn));
          linalg::YieldOp::create(nb, l, ValueRange{evenOut, oddOut});
        });
    Value out = tensor::InsertSliceOp::create(b, loc, pairs.getResult(0), x, offsets(0), sizes, strides);
    out = tensor::InsertSliceOp::create(b, loc, pairs.getResult(1), out, offsets(1), sizes, strides);
    b.replaceOp(op, out);
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

/// x[t, d] = sum_j pre[t, j] * X[t, j, d]
Value hcCollapse(OpBuilder &b, Location loc, Value X, Value pre) {
  MLIRContext *ctx = b.getContext();
  auto sType = tensorType(X);
  auto type = RankedTensorType::get({ShapedType::kDynamic, sType.getDimSize(2)}, b.getF32Type());
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{X, pre}, ValueRange{zeros(b, loc, type, X)},
             ArrayRef<AffineMap>{pick(ctx, 3, {0, 2, 1}), pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value p = arith::MulFOp::create(nb, l, a[1], a[0]);
               linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
             })
      .getResult(0);
}

struct HcCollapseLowering : DsfPattern<HcCollapseOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(HcCollapseOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    b.replaceOp(op, hcCollapse(b, op.getLoc(), adaptor.getStreams(), adaptor.getPre()));
    return success();
  }
};

/// X'[t, k, d] = post[t, k] F[t, d] + sum_j comb[t, j, k] X[t, j, d]
Value hcUpdate(OpBuilder &b, Location loc, Value X, Value F, Value post, Value comb) {
  MLIRContext *ctx = b.getContext();
  auto type = tensorType(X);
  auto placed = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{post, F}, ValueRange{emptyTensor(b, loc, type, X)},
      ArrayRef<AffineMap>{pick(ctx, 3, {0, 1}), pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1, 2})}, iterators(3),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(nb, l, arith::MulFOp::create(nb, l, a[0], a[1]).getResult());
      });
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{comb, X}, ValueRange{placed.getResult(0)},
             ArrayRef<AffineMap>{pick(ctx, 4, {0, 3, 1}), pick(ctx, 4, {0, 3, 2}), pick(ctx, 4, {0, 1, 2})},
             iterators(3, 1),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
               linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
             })
      .getResult(0);
}

struct HcUpdateLowering : DsfPattern<HcUpdateOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(HcUpdateOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    b.replaceOp(op, hcUpdate(b, op.getLoc(), adaptor.getStreams(), adaptor.getBlockOutput(), adaptor.getPost(),
                             adaptor.getComb()));
    return success();
  }
};

struct FfnLowering : DsfPattern<FfnOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(FfnOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    double limit = op.getSwigluLimit().convertToDouble();
    Value g = timesWeight(b, loc, op, op.getW1Attr(), x);
    Value u = timesWeight(b, loc, op, op.getW3Attr(), x);
    Value h = elementwise(b, loc, ValueRange{g, u},
                          [&](OpBuilder &nb, Location l, ValueRange a) { return clampedSwiglu(nb, l, a[0], a[1], limit); });
    b.replaceOp(op, timesWeight(b, loc, op, op.getW2Attr(), h));
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
    Value w1 = storedWeight(op, op.getW1Attr()), w2 = storedWeight(op, op.getW2Attr()), w3 = storedWeight(op, op.getW3Attr());
    int64_t topK = tensorType(routing).getDimSize(1), inter = tensorType(w1).getDimSize(1);
    // W[e, i, d] as f32: the stored element widened, or with the weight
    // bound packed (weight-storage=released) its E2M1 code times its
    // block's UE8M0 scale, decoded here: the value the runtime would have
    // widened, bit for bit, from a quarter of the bytes.
    auto element = [&](OpBuilder &nb, Location l, FlatSymbolRefAttr sym, Value stored, Value e, Value i, Value d) {
      if (!tensorType(stored).getElementType().isInteger(8))
        return widenToF32(nb, l, tensor::ExtractOp::create(nb, l, stored, ValueRange{e, i, d}));
      Value scales = storedWeight(op, FlatSymbolRefAttr::get(nb.getStringAttr(sym.getValue() + kPackedScaleSuffix)));
      auto byte = [&](Value t, Value at) {
        return arith::ExtUIOp::create(nb, l, nb.getI32Type(), tensor::ExtractOp::create(nb, l, t, ValueRange{e, i, at}))
            .getResult();
      };
      auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v).getResult(); };
      Value odd = arith::IndexCastOp::create(nb, l, nb.getI32Type(), arith::RemUIOp::create(nb, l, d, index(2)));
      Value shift = arith::MulIOp::create(nb, l, odd, arith::ConstantIntOp::create(nb, l, 4, 32));
      Value code = arith::AndIOp::create(
          nb, l, arith::ShRUIOp::create(nb, l, byte(stored, arith::DivUIOp::create(nb, l, d, index(2))), shift),
          arith::ConstantIntOp::create(nb, l, 15, 32));
      Value scale = lowering::packedScaleValue(nb, l, byte(scales, arith::DivUIOp::create(nb, l, d, index(kMxfp4Block))),
                                               /*e4m3Scale=*/false);
      return arith::MulFOp::create(nb, l, lowering::e2m1Value(nb, l, code), scale).getResult();
    };
    double limit = op.getSwigluLimit().convertToDouble();
    auto hType = RankedTensorType::get({ShapedType::kDynamic, topK, inter}, b.getF32Type());
    // (t, k, i, d): g[t, k, i] = sum_d W[e[t, k], i, d] x[t, d]
    auto project = [&](FlatSymbolRefAttr sym, Value stacked) {
      return linalg::GenericOp::create(
                 b, loc, TypeRange{hType}, ValueRange{experts, x}, ValueRange{zeros(b, loc, hType, x)},
                 ArrayRef<AffineMap>{pick(ctx, 4, {0, 1}), pick(ctx, 4, {0, 3}), pick(ctx, 4, {0, 1, 2})},
                 iterators(3, 1),
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value e = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                   Value w = element(nb, l, sym, stacked, e, linalg::IndexOp::create(nb, l, 2),
                                     linalg::IndexOp::create(nb, l, 3));
                   Value p = arith::MulFOp::create(nb, l, w, a[1]);
                   linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
                 })
          .getResult(0);
    };
    Value g = project(op.getW1Attr(), w1), u = project(op.getW3Attr(), w3);
    // What the CUDA pipeline runs as grouped GEMMs (dsf-gpu-grouped-experts).
    for (Value v : {g, u})
      v.getDefiningOp()->setAttr("dsf.experts", b.getStringAttr("project"));
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
          Value w = element(nb, l, op.getW2Attr(), w2, e, linalg::IndexOp::create(nb, l, 1),
                            linalg::IndexOp::create(nb, l, 3));
          Value p = arith::MulFOp::create(nb, l, w, a[1]);
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
        });
    y->setAttr("dsf.experts", b.getStringAttr("down"));
    b.replaceOp(op, y.getResults());
    return success();
  }
};

/// logits[t, m] = (flat[t] . fn[m]) / sqrt(mean(flat[t]^2) + norm_eps) * scale[group(m)] + base[m],
/// group(m) = min(m div n, 2): the pre / post / comb thirds of mHC's mix.
Value hcLogits(OpBuilder &b, Location loc, Value X, Value fn, Value base, Value scale, double normEps) {
  MLIRContext *ctx = b.getContext();
  auto sType = tensorType(X);
  int64_t n = sType.getDimSize(1), width = sType.getDimSize(1) * sType.getDimSize(2);
  Value flat = tensor::CollapseShapeOp::create(b, loc, X, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  Value mix = rowsTimesTransposed(b, loc, flat, fn);
  Value sumsq = sumOfSquares(b, loc, flat);
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
  return logits;
}

/// dsf_sinkhorn_n<N>_r<rounds>_e<eps bits>: one helper per distinct site shape.
std::string sinkhornName(const SinkhornSpec &s) {
  float eps = float(s.eps);
  uint32_t bits;
  std::memcpy(&bits, &eps, 4);
  return ("dsf_sinkhorn_n" + Twine(s.n) + "_r" + Twine(s.rounds) + "_e" + Twine::utohexstr(bits)).str();
}

HcSiteSpec hcSiteSpec(Value streams, int64_t iters, APFloat eps, APFloat normEps, bool update, bool collapse) {
  auto type = tensorType(streams);
  return HcSiteSpec{type.getDimSize(1), type.getDimSize(2), iters, eps.convertToDouble(), normEps.convertToDouble(),
                    update, collapse};
}

/// dsf_hc_site_n<N>_w<width>_i<iters>_e<eps bits>_ne<norm eps bits>[_update][_collapse]
std::string hcSiteName(const HcSiteSpec &s) {
  auto bits = [](double v) {
    float f = float(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return Twine::utohexstr(u).str();
  };
  return ("dsf_hc_site_n" + Twine(s.n) + "_w" + Twine(s.width) + "_i" + Twine(s.iters) + "_e" + bits(s.eps) + "_ne" +
          bits(s.normEps) + (s.update ? "_update" : "") + (s.collapse ? "_collapse" : ""))
      .str();
}

/// The helper's results: [X' (update)], pre, post, comb, [collapse].
SmallVector<Type> hcSiteResultTypes(MLIRContext *ctx, const HcSiteSpec &s) {
  Type f32 = Float32Type::get(ctx);
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<Type> types;
  if (s.update)
    types.push_back(RankedTensorType::get({dyn, s.n, s.width}, f32));
  types.push_back(RankedTensorType::get({dyn, s.n}, f32));
  types.push_back(RankedTensorType::get({dyn, s.n}, f32));
  types.push_back(RankedTensorType::get({dyn, s.n, s.n}, f32));
  if (s.collapse)
    types.push_back(RankedTensorType::get({dyn, s.width}, f32));
  return types;
}

/// A call of the site's helper (added after the conversion, see
/// DsfToLinalgPass): args are X, [block output, post, comb (update)],
/// [collapse pre], fn, base, scale.
SmallVector<Value> callHcSite(OpBuilder &b, Location loc, const HcSiteSpec &spec, ValueRange args,
                              LoweringState &state) {
  std::string name = hcSiteName(spec);
  state.hcSites[name] = spec;
  return func::CallOp::create(b, loc, name, hcSiteResultTypes(b.getContext(), spec), args).getResults();
}

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
    // In place (comb is the output operand): one buffer serves every round.
    return linalg::GenericOp::create(
               b, loc, TypeRange{type}, ValueRange{sums}, ValueRange{comb},
               ArrayRef<AffineMap>{pick(ctx, 3, {0, kept}), pick(ctx, 3, {0, 1, 2})}, iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value d = arith::AddFOp::create(nb, l, a[0], f32Const(nb, l, eps));
                 linalg::YieldOp::create(nb, l, arith::DivFOp::create(nb, l, a[1], d).getResult());
               })
        .getResult(0);
  }

  /// pre, post and the Sinkhorn-normalised comb of streams X.
  static SmallVector<Value> coeffs(OpBuilder &b, Location loc, Value X, Value fn, Value base, Value scale,
                                   int64_t iters, double eps, double normEps, LoweringState &state) {
    MLIRContext *ctx = b.getContext();
    int64_t n = tensorType(X).getDimSize(1);
    Value logits = hcLogits(b, loc, X, fn, base, scale, normEps);
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
    auto combType = RankedTensorType::get({ShapedType::kDynamic, n, n}, b.getF32Type());
    SmallVector<OpFoldResult> combShape{tensor::DimOp::create(b, loc, logits, 0).getResult(), b.getIndexAttr(n),
                                        b.getIndexAttr(n)};
    Value comb = tensor::ExpandShapeOp::create(b, loc, combType, slice(2 * n, n * n),
                                               ArrayRef<ReassociationIndices>{{0}, {1, 2}}, combShape);
    // Row softmax (max-subtracted, as the reference) + eps.
    auto rowsType = RankedTensorType::get({ShapedType::kDynamic, n}, b.getF32Type());
    Value maxInit = filled(b, loc, minusInfinity(b, loc), emptyTensor(b, loc, rowsType, comb));
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
    // The remaining rounds: a call of the helper for (n, rounds, eps).
    if (iters > 1) {
      SinkhornSpec spec{n, iters - 1, eps};
      std::string name = sinkhornName(spec);
      state.sinkhorn[name] = spec;
      comb = func::CallOp::create(b, loc, name, TypeRange{combType}, ValueRange{comb}).getResult(0);
    }
    return {pre, post, comb};
  }

  LogicalResult matchAndRewrite(HcCoeffsOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    HcSiteSpec spec = hcSiteSpec(adaptor.getStreams(), op.getSinkhornIters(), op.getEps(), op.getNormEps(), false,
                                 false);
    SmallVector<Value> args{adaptor.getStreams(), weight(b, op, op.getFnAttr()), weight(b, op, op.getBaseAttr()),
                            weight(b, op, op.getScaleAttr())};
    b.replaceOp(op, callHcSite(b, op.getLoc(), spec, args, state));
    return success();
  }
};

/// update, then the next site's coefficients over the result, then (when
/// asked) the next block's input. On the CPU the three stay separate loops;
/// the single pass is the GPU kernel's business.
struct HcFusedUpdateLowering : DsfPattern<HcFusedUpdateOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(HcFusedUpdateOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Value collapsePre = adaptor.getCollapsePre();
    HcSiteSpec spec = hcSiteSpec(adaptor.getStreams(), op.getSinkhornIters(), op.getEps(), op.getNormEps(), true,
                                 bool(collapsePre));
    SmallVector<Value> args{adaptor.getStreams(), adaptor.getBlockOutput(), adaptor.getPost(), adaptor.getComb()};
    if (collapsePre)
      args.push_back(collapsePre);
    args.append({weight(b, op, op.getFnAttr()), weight(b, op, op.getBaseAttr()), weight(b, op, op.getScaleAttr())});
    b.replaceOp(op, callHcSite(b, op.getLoc(), spec, args, state));
    return success();
  }
};

/// V4's head: pre = sigmoid(logits) + eps over the streams, then collapse.
struct HcHeadLowering : DsfPattern<HcHeadOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(HcHeadOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value X = adaptor.getStreams();
    double eps = op.getEps().convertToDouble();
    Value logits = hcLogits(b, loc, X, weight(b, op, op.getFnAttr()), weight(b, op, op.getBaseAttr()),
                            weight(b, op, op.getScaleAttr()), op.getNormEps().convertToDouble());
    Value pre = elementwise(b, loc, ValueRange{logits}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
      return arith::AddFOp::create(nb, l, sigmoid(nb, l, a[0]), f32Const(nb, l, eps));
    });
    b.replaceOp(op, hcCollapse(b, loc, X, pre));
    return success();
  }
};

struct GroupedLinearLowering : DsfPattern<GroupedLinearOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(GroupedLinearOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value x = adaptor.getInput(), w = storedWeight(op, op.getWeightAttr());
    auto xType = tensorType(x);
    int64_t groups = op.getGroups(), channels = xType.getDimSize(1) * xType.getDimSize(2) / groups;
    int64_t rank = tensorType(w).getDimSize(0) / groups;
    // [?, H, d] -> [?, H*d] -> [?, G, H*d/G]; weight [G*r, I] -> [G, r, I]
    Value flat = tensor::CollapseShapeOp::create(b, loc, x, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    auto grouped = RankedTensorType::get({ShapedType::kDynamic, groups, channels}, b.getF32Type());
    Value xg = tensor::ExpandShapeOp::create(
        b, loc, grouped, flat, ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        ArrayRef<OpFoldResult>{tensor::DimOp::create(b, loc, x, 0).getResult(), b.getIndexAttr(groups), b.getIndexAttr(channels)});
    Value wg = tensor::ExpandShapeOp::create(b, loc,
                                             RankedTensorType::get({groups, rank, channels}, tensorType(w).getElementType()), w,
                                             ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    auto type = llvm::cast<RankedTensorType>(op.getType());
    if (auto packed = packedFp8(op, op.getWeightAttr(), w)) {
      Value scales = packed->second;
      int64_t blockRows = packed->first.blockRows, scaleCols = tensorType(scales).getDimSize(1);
      // [G*r/rows, I/cols] -> [G, r/rows, I/cols]: packedWeights packs only
      // when a group's rows are whole blocks.
      Value sg = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({groups, rank / blockRows, scaleCols}, tensorType(scales).getElementType()),
          scales, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
      b.replaceOp(op, groupsTimesPackedFp8(b, loc, xg, wg, sg, blockRows, packed->first.blockCols, type));
      return success();
    }
    auto out = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{xg, wg}, ValueRange{zeros(b, loc, type, x)},
        ArrayRef<AffineMap>{pick(ctx, 4, {0, 1, 3}), pick(ctx, 4, {1, 2, 3}), pick(ctx, 4, {0, 1, 2})}, iterators(3, 1),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value p = arith::MulFOp::create(nb, l, a[0], widenToF32(nb, l, a[1]));
          linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
        });
    b.replaceOp(op, out.getResults());
    return success();
  }
};

/// The router's scores: s = sqrt(softplus(logits)).
Value routerScores(OpBuilder &b, Location loc, Value logits) {
  return elementwise(b, loc, ValueRange{logits},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value { return sqrtSoftplus(nb, l, a[0]); });
}

/// weights[t, slot] = s[t, chosen[t, slot]] / (sum over slots + 1e-20) * routed_scale.
Value routerWeights(OpBuilder &b, Location loc, Value s, Value chosen, double routedScale) {
  MLIRContext *ctx = b.getContext();
  int64_t topK = tensorType(chosen).getDimSize(1);
  auto wType = RankedTensorType::get({ShapedType::kDynamic, topK}, b.getF32Type());
  Value picked = linalg::GenericOp::create(
                     b, loc, TypeRange{wType}, ValueRange{chosen}, ValueRange{emptyTensor(b, loc, wType, chosen)},
                     ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0, 1})}, iterators(2),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value e = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                       linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, s, ValueRange{linalg::IndexOp::create(nb, l, 0), e}).getResult());
                     })
                     .getResult(0);
  auto rowType = RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  Value sum = linalg::GenericOp::create(
                  b, loc, TypeRange{rowType}, ValueRange{picked}, ValueRange{zeros(b, loc, rowType, chosen)},
                  ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0})}, iterators(1, 1),
                  [&](OpBuilder &nb, Location l, ValueRange a) {
                    linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], a[0]).getResult());
                  })
                  .getResult(0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{wType}, ValueRange{picked, sum}, ValueRange{emptyTensor(b, loc, wType, chosen)},
             ArrayRef<AffineMap>{pick(ctx, 2, {0, 1}), pick(ctx, 2, {0}), pick(ctx, 2, {0, 1})}, iterators(2),
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value d = arith::AddFOp::create(nb, l, a[1], f32Const(nb, l, 1e-20));
               Value v = arith::MulFOp::create(nb, l, arith::DivFOp::create(nb, l, a[0], d), f32Const(nb, l, routedScale));
               linalg::YieldOp::create(nb, l, v);
             })
      .getResult(0);
}

} // namespace

std::string lowering::routerName(const RouterSpec &r) {
  float scale = float(r.routedScale);
  uint32_t bits;
  std::memcpy(&bits, &scale, 4);
  return ("dsf_moe_route_e" + Twine(r.experts) + "_k" + Twine(r.topK) + "_s" + Twine::utohexstr(bits) +
          (r.bias ? "_bias" : "") + (r.imageBias ? "_image" : ""))
      .str();
}

SmallVector<Type> lowering::routerResultTypes(MLIRContext *ctx, const RouterSpec &r) {
  return {RankedTensorType::get({ShapedType::kDynamic, r.topK}, Float32Type::get(ctx)),
          RankedTensorType::get({ShapedType::kDynamic, r.topK}, IntegerType::get(ctx, 32))};
}

SmallVector<Value> lowering::routeTokens(OpBuilder &b, Location loc, const RouterSpec &r, ValueRange args) {
  MLIRContext *ctx = b.getContext();
  Value logits = args[0];
  Value bias = r.bias ? args[1] : Value();
  Value biasVl = r.imageBias ? args[2] : Value(), image = r.imageBias ? args[3] : Value();
  Value s = routerScores(b, loc, logits);
  auto sType = tensorType(s);
  SmallVector<Value> inputs{s};
  SmallVector<AffineMap> maps{pick(ctx, 2, {0, 1})};
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(pick(ctx, 2, {1}));
  }
  if (image) {
    inputs.append({biasVl, image});
    maps.append({pick(ctx, 2, {1}), pick(ctx, 2, {0})});
  }
  maps.push_back(pick(ctx, 2, {0, 1}));
  Value biased = linalg::GenericOp::create(
                     b, loc, TypeRange{sType}, inputs, ValueRange{emptyTensor(b, loc, sType, logits)}, maps, iterators(2),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value v = a[0];
                       if (bias) {
                         Value chosenBias = image ? arith::SelectOp::create(nb, l, a[3], a[2], a[1]).getResult() : a[1];
                         v = arith::AddFOp::create(nb, l, v, chosenBias);
                       }
                       linalg::YieldOp::create(nb, l, v);
                     })
                     .getResult(0);
  // The experts in a stable descending order of biased score.
  Value rank = stableDescendingRank(b, loc, biased);
  // chosen[t, slot] = the e whose rank is slot
  auto idxType = RankedTensorType::get({ShapedType::kDynamic, r.topK}, b.getI32Type());
  Value chosen = linalg::GenericOp::create(
                     b, loc, TypeRange{idxType}, ValueRange{rank},
                     ValueRange{filled(b, loc, i32Const(b, loc, 0), emptyTensor(b, loc, idxType, logits))},
                     ArrayRef<AffineMap>{pick(ctx, 3, {0, 2}), pick(ctx, 3, {0, 1})}, iterators(2, 1),
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value slot = arith::IndexCastOp::create(nb, l, nb.getI32Type(), linalg::IndexOp::create(nb, l, 1));
                       Value e = arith::IndexCastOp::create(nb, l, nb.getI32Type(), linalg::IndexOp::create(nb, l, 2));
                       Value here = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, a[0], slot);
                       linalg::YieldOp::create(nb, l, arith::SelectOp::create(nb, l, here, e, a[1]).getResult());
                     })
                     .getResult(0);
  return {routerWeights(b, loc, s, chosen, r.routedScale), chosen};
}

namespace {

/// The router: s = sqrt(softplus(x W^T)); the top_k of s + bias (bias_vl for
/// image tokens) in a stable descending order (a call of the router helper
/// for its shape, after the projection), or V4's hash table; weights
/// s[sel] / (sum + 1e-20) * routed_scale.
struct MoeGateLowering : DsfPattern<MoeGateOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(MoeGateOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Value x = adaptor.getInput();
    int64_t topK = op.getTopK();
    double routedScale = op.getRoutedScale().convertToDouble();
    Value logits = rowsTimesTransposed(b, loc, x, storedWeight(op, op.getWeightAttr()));
    if (op.getHashTableAttr()) {
      if (!adaptor.getTokenIds())
        return b.notifyMatchFailure(op, "hash routing needs the token ids");
      auto idxType = RankedTensorType::get({ShapedType::kDynamic, topK}, b.getI32Type());
      Value table = weight(b, op, op.getHashTableAttr()), ids = adaptor.getTokenIds();
      Value chosen = linalg::GenericOp::create(
                         b, loc, TypeRange{idxType}, ValueRange{ids}, ValueRange{emptyTensor(b, loc, idxType, x)},
                         ArrayRef<AffineMap>{pick(ctx, 2, {0}), pick(ctx, 2, {0, 1})}, iterators(2),
                         [&](OpBuilder &nb, Location l, ValueRange a) {
                           Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                           linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, table, ValueRange{row, linalg::IndexOp::create(nb, l, 1)}).getResult());
                         })
                         .getResult(0);
      b.replaceOp(op, {routerWeights(b, loc, routerScores(b, loc, logits), chosen, routedScale), chosen});
      return success();
    }
    RouterSpec spec{tensorType(logits).getDimSize(1), topK, routedScale, bool(op.getBiasAttr()),
                    op.getBiasAttr() && op.getBiasVlAttr() && adaptor.getImageMask()};
    SmallVector<Value> args{logits};
    if (spec.bias)
      args.push_back(weight(b, op, op.getBiasAttr()));
    if (spec.imageBias)
      args.append({weight(b, op, op.getBiasVlAttr()), adaptor.getImageMask()});
    std::string name = routerName(spec);
    state.routers[name] = spec;
    b.replaceOp(op, func::CallOp::create(b, loc, name, routerResultTypes(ctx, spec), args).getResults());
    return success();
  }
};

struct DsfToLinalgPass : impl::DsfToLinalgBase<DsfToLinalgPass> {
  using DsfToLinalgBase::DsfToLinalgBase;
  /// Turns each dsf.layer of `func` into a call of a private function
  /// `<func>_layer<N>`, so that LLVM optimizes one layer at a time (compile
  /// time grows linearly with depth) and code is per layer, as kernels are.
  static SmallVector<func::FuncOp> outlineLayers(func::FuncOp func) {
    SmallVector<func::FuncOp> outlined;
    OpBuilder b(func);
    for (auto layer : llvm::to_vector(func.getBody().getOps<LayerOp>())) {
      std::string name = (func.getSymName() + "_layer" + Twine(outlined.size())).str();
      auto type = b.getFunctionType(layer.getInputs().getTypes(), layer.getResultTypes());
      auto callee = func::FuncOp::create(b, layer.getLoc(), name, type);
      callee.setPrivate();
      callee.getBody().takeBody(layer.getBody());
      auto yield = llvm::cast<YieldOp>(callee.getBody().front().getTerminator());
      OpBuilder at(yield);
      func::ReturnOp::create(at, yield.getLoc(), yield.getValues());
      yield.erase();
      OpBuilder call(layer);
      auto c = func::CallOp::create(call, layer.getLoc(), callee, layer.getInputs());
      layer.replaceAllUsesWith(c.getResults());
      layer.erase();
      outlined.push_back(callee);
    }
    return outlined;
  }

  /// With weight-storage=released, the weights bound packed, as the
  /// released checkpoint holds them, with no value of their own:
  /// - MXFP4 (E2M1, a UE8M0 scale per 32 along the last axis) that only
  ///   dsf.moe_experts reads (its products decode each element as read);
  /// - FP8 (E4M3, UE8M0 scales over 2-D blocks) of rank 2 that only
  ///   projections read (dsf.linear, dsf.ffn: rowsTimesPackedFp8; and
  ///   dsf.grouped_linear when each group's rows are whole blocks of
  ///   scales, so that a group's scales are a slice of them:
  ///   groupsTimesPackedFp8).
  /// Any other reader would need the decoded tensor, so a weight it shares
  /// stays widened.
  static llvm::StringMap<PackedLayout> packedWeights(ModelOp model, ArrayRef<WeightDeclOp> order) {
    llvm::StringSet<> experts, projections, others;
    llvm::StringMap<SmallVector<int64_t>> groupCounts;   // the groups each dsf.grouped_linear reads a weight in
    model.walk([&](WeightUserOpInterface user) {
      SmallVector<WeightUse> uses;
      user.getWeightUses(uses);
      Operation *op = user.getOperation();
      auto &readers = llvm::isa<MoeExpertsOp>(op)                             ? experts
                      : llvm::isa<LinearOp, FfnOp, GroupedLinearOp>(op) ? projections
                                                                              : others;
      for (const WeightUse &u : uses) {
        readers.insert(u.symbol.getValue());
        if (auto grouped = llvm::dyn_cast<GroupedLinearOp>(op))
          groupCounts[u.symbol.getValue()].push_back(grouped.getGroups());
      }
    });
    // Each grouped reader's group of rows starts and ends on a block of scales.
    auto groupsWholeBlocks = [&](StringRef name, int64_t rows, int64_t blockRows) {
      auto it = groupCounts.find(name);
      return it == groupCounts.end() || llvm::all_of(it->second, [&](int64_t groups) {
               return groups > 0 && rows % groups == 0 && (rows / groups) % blockRows == 0;
             });
    };
    auto onlyIn = [&](const llvm::StringSet<> &readers, StringRef name) {
      return readers.contains(name) && !others.contains(name) &&
             (&readers == &experts ? !projections.contains(name) : !experts.contains(name));
    };
    llvm::StringMap<PackedLayout> packed;
    for (WeightDeclOp w : order) {
      QuantAttr format = w.getFormatAttr();
      ArrayRef<int64_t> shape = w.getTensorType().getShape();
      if (!format || w.getValueAttr() || format.getScale() != ScaleFormat::ue8m0 || format.getBf16Tail() != 0)
        continue;
      if (format.getElement() == ScalarFormat::e2m1 && format.getBlockRows() == 1 &&
          format.getBlockCols() == kMxfp4Block && shape.size() == 3 && shape.back() % kMxfp4Block == 0 &&
          onlyIn(experts, w.getSymName()))
        packed[w.getSymName()] = PackedLayout{};
      else if (format.getElement() == ScalarFormat::e4m3 && format.getBlockRows() > 0 && format.getBlockCols() > 0 &&
               shape.size() == 2 && onlyIn(projections, w.getSymName()) &&
               groupsWholeBlocks(w.getSymName(), shape[0], format.getBlockRows()))
        packed[w.getSymName()] = PackedLayout{true, format.getBlockRows(), format.getBlockCols()};
    }
    return packed;
  }

  /// Binds the weights `func` uses (or `extra` names) as constants (a weight
  /// with a value) or trailing arguments, in the element type they are stored
  /// in (see the pass's weight-storage option); returns the symbols bound as
  /// arguments, in declaration order.
  static FailureOr<SmallVector<StringRef>> bindWeights(func::FuncOp func, ArrayRef<WeightDeclOp> order,
                                                       const llvm::StringSet<> &extra, bool keepNarrow,
                                                       const llvm::StringMap<PackedLayout> &packed,
                                                       WeightValues &weights) {
    llvm::StringSet<> used = extra;
    func.walk([&](WeightUserOpInterface user) {
      SmallVector<WeightUse> uses;
      user.getWeightUses(uses);
      for (const WeightUse &u : uses)
        used.insert(u.symbol.getValue());
    });
    auto &map = weights[func];
    SmallVector<StringRef> bound;
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&func.getBody().front());
    for (WeightDeclOp w : order) {
      if (!used.contains(w.getSymName()))
        continue;
      Type element = w.getTensorType().getElementType();
      Type stored = element.isInteger(32) || (keepNarrow && element.isBF16()) ? element : Type(b.getF32Type());
      auto type = RankedTensorType::get(w.getTensorType().getShape(), stored);
      if (auto value = w.getValueAttr()) {
        if (value.getShapedType() != type &&
            value.getShapedType() != RankedTensorType::get(w.getTensorType().getShape(), b.getF32Type())) {
          w.emitOpError() << "lowering needs the value of @" << w.getSymName() << " as " << type;
          return failure();
        }
        map[w.getSymName()] = arith::ConstantOp::create(b, w.getLoc(), llvm::cast<TypedAttr>(value));
        continue;
      }
      if (auto layout = packed.find(w.getSymName()); layout != packed.end()) {
        // The codes (E2M1 two a byte, low nibble first; or E4M3 one a
        // byte) and one UE8M0 byte a block: `name` and `name.scale`, bound
        // as the checkpoint holds them.
        ArrayRef<int64_t> shape = w.getTensorType().getShape();
        SmallVector<int64_t> codes(shape), scales(shape);
        const PackedLayout &p = layout->second;
        if (!p.fp8)
          codes.back() /= 2;
        scales[scales.size() - 2] = llvm::divideCeil(scales[scales.size() - 2], p.blockRows);
        scales.back() = llvm::divideCeil(scales.back(), p.blockCols);
        StringRef scaleName = b.getStringAttr(w.getSymName() + kPackedScaleSuffix).getValue();
        for (auto [name, bytes] : {std::make_pair(w.getSymName(), codes), std::make_pair(scaleName, scales)}) {
          unsigned index = func.getNumArguments();
          if (failed(func.insertArgument(index, RankedTensorType::get(bytes, b.getI8Type()), DictionaryAttr(),
                                         w.getLoc())))
            return failure();
          map[name] = func.getArgument(index);
          bound.push_back(name);
        }
        continue;
      }
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, type, DictionaryAttr(), w.getLoc())))
        return failure();
      map[w.getSymName()] = func.getArgument(index);
      bound.push_back(w.getSymName());
    }
    return bound;
  }

  /// A batched entry point (dsf.batched) and its layers' functions, before
  /// the conversion: each function's tokens' positions (the entry's second
  /// input, passed on), one page table per cache ratio (appended to the
  /// entry's inputs after its state, `dsf.page_tables` their ratios, and to
  /// every layer function's) and each compressor's carry as the ring its
  /// slot holds ([slots, C, width]: the state types that are dsf types
  /// convert by type, a carry is a plain tensor of rows).
  static LogicalResult prepareBatched(func::FuncOp entry, ArrayRef<func::FuncOp> layers, LoweringState &state) {
    MLIRContext *ctx = entry.getContext();
    auto names = entry->getAttrOfType<ArrayAttr>("dsf.state");
    if (!names || entry.getNumArguments() < names.size() + 2)
      return entry.emitOpError() << "is batched (dsf.batched) but has no threaded state after its token inputs";
    unsigned tokenInputs = entry.getNumArguments() - names.size();
    BlockArgument positions = entry.getArgument(1);
    auto posType = llvm::dyn_cast<RankedTensorType>(positions.getType());
    if (!posType || posType.getRank() != 1 || !posType.getElementType().isInteger(32))
      return entry.emitOpError() << "is batched (dsf.batched) but its second input is not the tokens' positions";
    for (func::FuncOp f : layers)
      f->setAttr("dsf.batched", UnitAttr::get(ctx));
    llvm::StringMap<func::FuncOp> byName;
    for (func::FuncOp f : layers)
      byName[f.getSymName()] = f;
    SmallVector<func::CallOp> calls;
    entry.walk([&](func::CallOp call) {
      if (byName.count(call.getCallee()))
        calls.push_back(call);
    });
    state.positions[entry] = positions;
    for (func::CallOp call : calls)
      for (auto [i, operand] : llvm::enumerate(call.getOperands()))
        if (operand == positions)
          state.positions[byName[call.getCallee()]] = byName[call.getCallee()].getArgument(i);

    // Carries: the entry's argument, the layer argument it is passed as, the
    // compressor that continues it and the carry it yields.
    for (auto [k, name] : llvm::enumerate(names)) {
      if (!llvm::cast<StringAttr>(name).getValue().ends_with(".carry"))
        continue;
      BlockArgument arg = entry.getArgument(tokenInputs + k);
      for (func::CallOp call : calls)
        for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
          if (operand != arg)
            continue;
          BlockArgument inner = byName[call.getCallee()].getArgument(i);
          for (Operation *user : inner.getUsers()) {
            auto compress = llvm::dyn_cast<CompressOp>(user);
            if (!compress || compress.getCarry() != inner || !compress.getCarryOut())
              continue;
            int64_t slots = compress.getKind() == CompressorKind::overlap ? 2 * compress.getRatio() : compress.getRatio();
            auto rows = llvm::cast<RankedTensorType>(inner.getType());
            auto ring = RankedTensorType::get({ShapedType::kDynamic, slots, rows.getDimSize(1)}, rows.getElementType());
            arg.setType(ring);
            inner.setType(ring);
            compress.getCarryOut().setType(ring);
          }
        }
    }
    // The page tables, one per ratio of the caches the entry continues.
    std::set<int64_t> ratios;
    for (unsigned i = tokenInputs; i < entry.getNumArguments(); ++i)
      if (auto cache = llvm::dyn_cast<CacheType>(entry.getArgument(i).getType()))
        ratios.insert(cache.getRatio());
    auto tableType = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, IntegerType::get(ctx, 32));
    SmallVector<Attribute> ratioAttrs;
    for (int64_t r : ratios) {
      unsigned index = entry.getNumArguments();
      if (failed(entry.insertArgument(index, tableType, DictionaryAttr(), entry.getLoc())))
        return failure();
      state.pageTables[entry][r] = entry.getArgument(index);
      ratioAttrs.push_back(IntegerAttr::get(IntegerType::get(ctx, 64), r));
      for (func::FuncOp f : layers) {
        unsigned at = f.getNumArguments();
        if (failed(f.insertArgument(at, tableType, DictionaryAttr(), f.getLoc())))
          return failure();
        state.pageTables[f][r] = f.getArgument(at);
      }
    }
    entry->setAttr("dsf.page_tables", ArrayAttr::get(ctx, ratioAttrs));
    // Signatures after the retyping, and the calls passing the tables on.
    auto resync = [&](func::FuncOp f) {
      auto ret = llvm::cast<func::ReturnOp>(f.getBody().front().getTerminator());
      f.setType(FunctionType::get(ctx, f.getBody().front().getArgumentTypes(), ret.getOperandTypes()));
    };
    for (func::FuncOp f : layers)
      resync(f);
    for (func::CallOp call : calls) {
      SmallVector<Value> operands(call.getOperands());
      for (int64_t r : ratios)
        operands.push_back(state.pageTables[entry][r]);
      call->setOperands(operands);
      for (auto [result, type] : llvm::zip(call.getResults(), byName[call.getCallee()].getResultTypes()))
        result.setType(type);
    }
    resync(entry);
    return success();
  }

  /// A function that returns one value twice (a Full layer yields its
  /// cache to later layers and as its state) makes one-shot bufferization
  /// copy the argument the value updates in place, at the call. Each value
  /// is returned once instead; the calls' other results use the first.
  static void returnEachOnce(func::FuncOp f, ModuleOp module) {
    auto ret = llvm::cast<func::ReturnOp>(f.getBody().front().getTerminator());
    llvm::DenseMap<Value, unsigned> first;
    SmallVector<int64_t> sameAs(ret.getNumOperands(), -1);
    llvm::BitVector drop(ret.getNumOperands());
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto [it, inserted] = first.try_emplace(v, i);
      if (!inserted) {
        sameAs[i] = it->second;
        drop.set(i);
      }
    }
    if (drop.none())
      return;
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee() == f.getSymName())
        calls.push_back(call);
    });
    SmallVector<Value> kept;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      if (!drop.test(i))
        kept.push_back(v);
    ret->setOperands(kept);
    (void)f.eraseResults(drop);
    // Result i of a call becomes result newIndex[i] of the new one (a
    // dropped one that of its first occurrence, always kept).
    SmallVector<unsigned> newIndex(sameAs.size());
    for (unsigned i = 0, next = 0; i < sameAs.size(); ++i)
      newIndex[i] = drop.test(i) ? newIndex[sameAs[i]] : next++;
    for (func::CallOp call : calls) {
      OpBuilder b(call);
      auto fresh = func::CallOp::create(b, call.getLoc(), f, call.getOperands());
      for (unsigned i = 0; i < call.getNumResults(); ++i)
        call.getResult(i).replaceAllUsesWith(fresh.getResult(newIndex[i]));
      call.erase();
    }
  }

  /// Tags each dsf op's location with what it is ("attention", and for an
  /// op of one weight that weight, as in "linear.attn.wq_b"): the ops it
  /// lowers to inherit the location, so kernels can be named after it
  /// (dsf-name-kernels) and later diagnostics say which op they came from.
  static void tagLocations(ModuleOp module) {
    module.walk([](Operation *op) {
      if (!llvm::isa<DsfDialect>(op->getDialect()) || llvm::isa<NameLoc>(op->getLoc()) ||
          llvm::isa<ModelOp, LayerOp, YieldOp, WeightDeclOp>(op))
        return;
      std::string tag = op->getName().stripDialect().str();
      if (auto user = llvm::dyn_cast<WeightUserOpInterface>(op)) {
        SmallVector<WeightUse> uses;
        user.getWeightUses(uses);
        if (uses.size() == 1) {
          StringRef weight = uses.front().symbol.getValue();
          if (weight.consume_front("layers.")) // drop the layer: the function names it
            weight = weight.drop_until([](char c) { return c == '.'; }).drop_front();
          weight.consume_back(".weight");
          tag += "." + weight.str();
        }
      }
      op->setLoc(NameLoc::get(StringAttr::get(op->getContext(), tag), op->getLoc()));
    });
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    tagLocations(module);
    LoweringState state;
    state.topkThresholdFrom = topkThresholdFrom;
    if (weightStorage != "declared" && weightStorage != "f32" && weightStorage != "released") {
      module.emitError() << "dsf-to-linalg: weight-storage must be 'declared', 'f32' or 'released', not '"
                         << weightStorage << "'";
      return signalPassFailure();
    }
    bool keepNarrow = weightStorage != "f32", released = weightStorage == "released";
    if (pageTokens < 1) {
      module.emitError() << "dsf-to-linalg: page-tokens must be at least 1, not " << int64_t(pageTokens);
      return signalPassFailure();
    }
    state.pageTokens = int64_t(pageTokens);
    state.packedPages = packedPages;
    WeightValues &weights = state.weights;
    SmallVector<func::FuncOp> batched;   // batched entry points and their layers' functions
    for (auto model : llvm::to_vector(module.getBody()->getOps<ModelOp>())) {
      SmallVector<WeightDeclOp> order(model.getBody().front().getOps<WeightDeclOp>());
      if (released)
        state.packed = packedWeights(model, order);
      const llvm::StringMap<PackedLayout> &packed = state.packed;
      SmallVector<func::FuncOp> moved;
      for (auto entry : llvm::to_vector(model.getBody().front().getOps<func::FuncOp>())) {
        llvm::StringMap<SmallVector<StringRef>> layerWeights;
        llvm::StringSet<> passedOn;
        SmallVector<func::FuncOp> layers = outlineLayers(entry);
        if (entry->hasAttr("dsf.batched")) {
          if (failed(prepareBatched(entry, layers, state)))
            return signalPassFailure();
          batched.push_back(entry);
          batched.append(layers.begin(), layers.end());
        }
        for (func::FuncOp layer : layers) {
          auto bound = bindWeights(layer, order, {}, keepNarrow, packed, weights);
          if (failed(bound))
            return signalPassFailure();
          for (StringRef w : *bound)
            passedOn.insert(w);
          layerWeights[layer.getSymName()] = *bound;
          moved.push_back(layer);
        }
        auto bound = bindWeights(entry, order, passedOn, keepNarrow, packed, weights);
        if (failed(bound))
          return signalPassFailure();
        // Each call passes its layer's weights on from the entry's arguments.
        auto &entryMap = weights[entry];
        entry.walk([&](func::CallOp call) {
          SmallVector<Value> operands(call.getOperands());
          for (StringRef w : layerWeights[call.getCallee()])
            operands.push_back(entryMap[w]);
          call->setOperands(operands);
        });
        SmallVector<Attribute> symbols;
        for (StringRef w : *bound)
          symbols.push_back(FlatSymbolRefAttr::get(ctx, w));
        entry->setAttr("dsf.weights", ArrayAttr::get(ctx, symbols));
        // _mlir_ciface_<name>: memref arguments by descriptor pointer, the
        // form the runtime calls (through dsf_entry_<name>).
        entry->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
        moved.push_back(entry);
      }
      for (func::FuncOp f : moved)
        f->moveBefore(model);
      model.erase();
    }

    // Values of the cache types become the tensors they hold (see
    // Attention.cpp): a cache or window its f32 rows, a selection its
    // [tokens, k] entry indices, a pool its [tokens, entries] mask; in a
    // batched entry point a window its rings and a cache its pages
    // (Slots.cpp).
    auto baseTypes = [](TypeConverter &types) {
      types.addConversion([](Type t) { return t; });
      types.addConversion([](CacheType t) -> Type {
        return RankedTensorType::get({ShapedType::kDynamic, t.getWidth()}, Float32Type::get(t.getContext()));
      });
      types.addConversion([](WindowType t) -> Type {
        return RankedTensorType::get({ShapedType::kDynamic, t.getWidth()}, Float32Type::get(t.getContext()));
      });
      types.addConversion([](TopkType t) -> Type {
        return RankedTensorType::get({ShapedType::kDynamic, t.getK()}, IntegerType::get(t.getContext(), 32));
      });
      types.addConversion([](QTensorType t) -> Type {
        return RankedTensorType::get(t.getShape(), Float32Type::get(t.getContext()));
      });
      types.addConversion([](PoolType t) -> Type {
        return RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, IntegerType::get(t.getContext(), 1));
      });
    };
    TypeConverter types, slotTypes;
    baseTypes(types);
    baseTypes(slotTypes);
    addSlotTypeConversions(slotTypes, state);

    auto convert = [&](const TypeConverter &converter, bool slots, auto &&apply) {
      ConversionTarget target(*ctx);
      target.addIllegalDialect<DsfDialect>();
      target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect, arith::ArithDialect, math::MathDialect,
                             scf::SCFDialect>();
      target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
        return converter.isSignatureLegal(f.getFunctionType()) && converter.isLegal(&f.getBody());
      });
      target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>([&](Operation *op) { return converter.isLegal(op); });
      RewritePatternSet patterns(ctx);
      patterns.add<EmbedLowering, RmsNormLowering, LinearLowering, RopeLowering, AddLowering,
                   TakeLastLowering, HcExpandLowering, HcCollapseLowering, HcUpdateLowering, FfnLowering,
                   MoeExpertsLowering, HcCoeffsLowering, HcFusedUpdateLowering, HcHeadLowering,
                   GroupedLinearLowering, MoeGateLowering>(converter, ctx, state);
      if (slots)
        populateSlotPatterns(patterns, converter, state);
      else
        populateAttentionPatterns(patterns, converter, state);
      populateQuantPatterns(patterns, converter, state);
      populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns, converter);
      populateCallOpTypeConversionPattern(patterns, converter);
      populateReturnOpTypeConversionPattern(patterns, converter);
      return apply(target, FrozenRewritePatternSet(std::move(patterns)));
    };
    // The batched functions first, with their own state types; the rest
    // then finds them converted.
    if (!batched.empty()) {
      SmallVector<Operation *> ops(batched.begin(), batched.end());
      if (failed(convert(slotTypes, true, [&](ConversionTarget &target, const FrozenRewritePatternSet &patterns) {
            return applyPartialConversion(ops, target, patterns);
          })))
        return signalPassFailure();
    }
    if (failed(convert(types, false, [&](ConversionTarget &target, const FrozenRewritePatternSet &patterns) {
          return applyPartialConversion(module, target, patterns);
        })))
      return signalPassFailure();

    for (func::FuncOp f : batched)
      if (f.isPrivate())
        returnEachOnce(f, module);

    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    // A private helper at the module's end, marked with what it computes
    // (`marker` = `fields`) for targets that build its body as kernels of
    // their own (dsf-gpu-fuse-mhc, -route-experts, -select-topk,
    // -fuse-sinkhorn); its entry block is where the linalg body goes.
    auto addHelper = [&](StringRef name, TypeRange inputs, TypeRange results, StringRef marker,
                         ArrayRef<NamedAttribute> fields) {
      auto helper = func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType(inputs, results));
      helper.setPrivate();
      helper->setAttr(marker, b.getDictionaryAttr(fields));
      return helper.addEntryBlock();
    };
    // The mHC site helpers, in linalg: [update], coefficients (which ask
    // for a Sinkhorn helper, hence first), [collapse].
    for (const auto &[name, spec] : state.hcSites) {
      Location loc = module.getLoc();
      auto tensorOf = [&](ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, b.getF32Type()); };
      int64_t dyn = ShapedType::kDynamic, n = spec.n, width = spec.width, mix = (2 + n) * n;
      SmallVector<Type> inputs{tensorOf({dyn, n, width})};
      if (spec.update)
        inputs.append({tensorOf({dyn, width}), tensorOf({dyn, n}), tensorOf({dyn, n, n})});
      if (spec.collapse)
        inputs.push_back(tensorOf({dyn, n}));
      inputs.append({tensorOf({mix, n * width}), tensorOf({mix}), tensorOf({3})});
      Block *entry = addHelper(name, inputs, hcSiteResultTypes(ctx, spec), "dsf.hc_site",
                               {b.getNamedAttr("n", b.getI64IntegerAttr(n)),
                                b.getNamedAttr("width", b.getI64IntegerAttr(width)),
                                b.getNamedAttr("iters", b.getI64IntegerAttr(spec.iters)),
                                b.getNamedAttr("eps", b.getF32FloatAttr(float(spec.eps))),
                                b.getNamedAttr("norm_eps", b.getF32FloatAttr(float(spec.normEps))),
                                b.getNamedAttr("update", b.getBoolAttr(spec.update)),
                                b.getNamedAttr("collapse", b.getBoolAttr(spec.collapse))});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      ValueRange args = entry->getArguments();
      Value X = args[0];
      unsigned next = 1;
      SmallVector<Value> results;
      if (spec.update) {
        X = hcUpdate(b, loc, X, args[1], args[2], args[3]);
        results.push_back(X);
        next = 4;
      }
      Value collapsePre = spec.collapse ? args[next++] : Value();
      results.append(HcCoeffsLowering::coeffs(b, loc, X, args[next], args[next + 1], args[next + 2], spec.iters,
                                              spec.eps, spec.normEps, state));
      if (collapsePre)
        results.push_back(hcCollapse(b, loc, X, collapsePre));
      func::ReturnOp::create(b, loc, results);
    }

    // The router helpers.
    for (const auto &[name, spec] : state.routers) {
      Location loc = module.getLoc();
      SmallVector<Type> inputs{RankedTensorType::get({ShapedType::kDynamic, spec.experts}, b.getF32Type())};
      if (spec.bias)
        inputs.push_back(RankedTensorType::get({spec.experts}, b.getF32Type()));
      if (spec.imageBias)
        inputs.append({RankedTensorType::get({spec.experts}, b.getF32Type()),
                       RankedTensorType::get({ShapedType::kDynamic}, b.getI1Type())});
      Block *entry = addHelper(name, inputs, routerResultTypes(ctx, spec), "dsf.router",
                               {b.getNamedAttr("experts", b.getI64IntegerAttr(spec.experts)),
                                b.getNamedAttr("top_k", b.getI64IntegerAttr(spec.topK)),
                                b.getNamedAttr("routed_scale", b.getF32FloatAttr(float(spec.routedScale))),
                                b.getNamedAttr("bias", b.getBoolAttr(spec.bias)),
                                b.getNamedAttr("image_bias", b.getBoolAttr(spec.imageBias))});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      func::ReturnOp::create(b, loc, routeTokens(b, loc, spec, entry->getArguments()));
    }

    // The attention helpers.
    auto attentionFields = [&](const AttentionSpec &spec) {
      return SmallVector<NamedAttribute>{b.getNamedAttr("heads", b.getI64IntegerAttr(spec.heads)),
                                         b.getNamedAttr("width", b.getI64IntegerAttr(spec.width)),
                                         b.getNamedAttr("window", b.getI64IntegerAttr(spec.window)),
                                         b.getNamedAttr("k", b.getI64IntegerAttr(spec.k)),
                                         b.getNamedAttr("scale", b.getF32FloatAttr(float(spec.scale)))};
    };
    for (const auto &[name, spec] : state.attention) {
      Location loc = module.getLoc();
      SmallVector<Type> inputs = attentionInputTypes(ctx, spec);
      auto out = RankedTensorType::get({ShapedType::kDynamic, spec.heads, spec.width}, b.getF32Type());
      Block *entry = addHelper(name, inputs, {out}, "dsf.attention", attentionFields(spec));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      ValueRange args = entry->getArguments();
      Value cache = spec.k ? args[2] : Value(), selection = spec.k ? args[3] : Value();
      QueryRows rows = sequenceRows(b, loc, args[0], args[1], spec.window, cache, /*ratio=*/1, Value());
      func::ReturnOp::create(b, loc, sinkAttention(b, loc, args[0], rows, selection, args.back(), spec.scale));
    }

    // The batched attention helpers (their own marker: the rows they read
    // are a batch's rings and pages).
    for (const auto &[name, spec] : state.slotAttention) {
      Location loc = module.getLoc();
      const AttentionSpec &a = spec.attention;
      SmallVector<Type> inputs = slotAttentionInputTypes(ctx, spec);
      auto out = RankedTensorType::get({ShapedType::kDynamic, a.heads, a.width}, b.getF32Type());
      SmallVector<NamedAttribute> fields = attentionFields(a);
      fields.push_back(b.getNamedAttr("page_entries", b.getI64IntegerAttr(spec.pageEntries)));
      if (spec.packed)
        fields.push_back(b.getNamedAttr("packed", b.getStringAttr(packedRowName(*spec.packed))));
      Block *entry = addHelper(name, inputs, {out}, "dsf.slot_attention", fields);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      ValueRange args = entry->getArguments();
      Value pool = a.k ? args[3] : Value(), table = a.k ? args[4] : Value(), selection = a.k ? args[5] : Value();
      QueryRows rows = slotRows(b, loc, args[1], a.window, pool, table, spec.pageEntries, /*ratio=*/1, args[2]);
      rows.cacheRow = spec.packed;
      func::ReturnOp::create(b, loc, sinkAttention(b, loc, args[0], rows, selection, args.back(), a.scale));
    }

    // The top-k helpers.
    for (const auto &[name, spec] : state.topk) {
      Location loc = module.getLoc();
      auto scores = RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type());
      auto selection = RankedTensorType::get({ShapedType::kDynamic, spec.k}, b.getI32Type());
      Block *entry = addHelper(name, {scores}, {selection}, "dsf.topk", {b.getNamedAttr("k", b.getI64IntegerAttr(spec.k))});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      func::ReturnOp::create(b, loc, selectTopk(b, loc, entry->getArgument(0), spec));
    }

    // The Sinkhorn helpers: comb -> `rounds` x (row, then column
    // normalisation), an scf.for over whole [tokens, n, n] tensors.
    for (const auto &[name, spec] : state.sinkhorn) {
      Location loc = module.getLoc();
      auto combType = RankedTensorType::get({ShapedType::kDynamic, spec.n, spec.n}, b.getF32Type());
      Block *entry = addHelper(name, {combType}, {combType}, "dsf.sinkhorn",
                               {b.getNamedAttr("n", b.getI64IntegerAttr(spec.n)),
                                b.getNamedAttr("rounds", b.getI64IntegerAttr(spec.rounds)),
                                b.getNamedAttr("eps", b.getF32FloatAttr(float(spec.eps)))});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      Value lb = arith::ConstantIndexOp::create(b, loc, 0), ub = arith::ConstantIndexOp::create(b, loc, spec.rounds),
            step = arith::ConstantIndexOp::create(b, loc, 1);
      double eps = spec.eps;
      auto loop = scf::ForOp::create(b, loc, lb, ub, step, ValueRange{entry->getArgument(0)},
                                     [&](OpBuilder &nb, Location l, Value, ValueRange iter) {
                                       Value c = HcCoeffsLowering::normalise(nb, l, iter[0], 2, eps);
                                       scf::YieldOp::create(nb, l, HcCoeffsLowering::normalise(nb, l, c, 1, eps));
                                     });
      func::ReturnOp::create(b, loc, loop.getResults());
    }
  }
};
} // namespace
} // namespace mlir::dsf
