//===- Quant.cpp - dsf-to-linalg: the cache formats ------------------------===//
//
// dsf.quantize rounds each block of the last dimension to its format with
// MODEL.md's rules, bit for bit as runtime/src/codecs.cpp and the NumPy
// codecs (test/reference/codecs_np.py) do; on the CPU a quantized tensor is
// held as the f32 values its codes decode to (dequantize is then the
// identity), so the numbers are those of the packed format while the bytes
// are not yet packed: packed storage comes with the runtime's cache tiers.
// Supported: E4M3 or E2M1 elements with 1-D UE8M0 or E4M3 block scales (the
// window, the index keys and queries, the compressed KV), V4's rows with a
// bf16 tail, plain bf16; 2-D block scales fail to legalize by name.
//
//===----------------------------------------------------------------------===//
#include "lowering/DsfToLinalg/Builders.h"

namespace mlir::dsf::lowering {
namespace {

/// 2^e for an i32 exponent e in [-126, 127] (a normal f32).
Value powerOfTwo(OpBuilder &b, Location loc, Value e) {
  Value biased = arith::AddIOp::create(b, loc, e, i32Const(b, loc, 127));
  Value bits = arith::ShLIOp::create(b, loc, biased, i32Const(b, loc, 23));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// The unbiased exponent field of |x| (as f32 bits; -127 for zero and subnormals).
Value exponentOf(OpBuilder &b, Location loc, Value a) {
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), a);
  Value field = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, i32Const(b, loc, 23)), i32Const(b, loc, 0xff));
  return arith::SubIOp::create(b, loc, field, i32Const(b, loc, 127));
}

/// Round x (|x| <= 448) to E4M3FN, ties to even: quantum 2^(max(e, -6) - 3).
Value e4m3Rne(OpBuilder &b, Location loc, Value x) {
  Value a = math::AbsFOp::create(b, loc, x);
  Value e = arith::MaxSIOp::create(b, loc, exponentOf(b, loc, a), i32Const(b, loc, -6));
  Value quantum = powerOfTwo(b, loc, arith::SubIOp::create(b, loc, e, i32Const(b, loc, 3)));
  Value steps = math::RoundEvenOp::create(b, loc, arith::DivFOp::create(b, loc, a, quantum));
  Value magnitude = arith::MulFOp::create(b, loc, steps, quantum);
  return math::CopySignOp::create(b, loc, magnitude, x);
}

/// A UE8M0 scale: 2^(E(t) - 127 + [mantissa(t) != 0]), t = max(amax, floor) * fp32(1/maximum).
Value ue8m0Scale(OpBuilder &b, Location loc, Value amax, double maximum, double floor) {
  Value t = arith::MulFOp::create(b, loc, arith::MaximumFOp::create(b, loc, amax, f32Const(b, loc, floor)),
                                  f32Const(b, loc, float(1.0 / maximum)));
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), t);
  Value field = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, i32Const(b, loc, 23)), i32Const(b, loc, 0xff));
  Value mantissa = arith::AndIOp::create(b, loc, bits, i32Const(b, loc, 0x7fffff));
  Value up = arith::ExtUIOp::create(b, loc, b.getI32Type(),
                                    arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, mantissa, i32Const(b, loc, 0)));
  Value byte = arith::AddIOp::create(b, loc, field, up);
  // byte 0 is 2^-127, the one subnormal scale.
  Value normal = arith::BitcastOp::create(b, loc, b.getF32Type(), arith::ShLIOp::create(b, loc, byte, i32Const(b, loc, 23)));
  Value smallest = arith::BitcastOp::create(b, loc, b.getF32Type(), i32Const(b, loc, 0x400000));
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, byte, i32Const(b, loc, 0));
  return arith::SelectOp::create(b, loc, isZero, smallest, normal);
}

/// The E2M1 value nearest |x| (<= 6) with the sign of x, ties to the even
/// grid index: grid 0, .5, 1, 1.5, 2, 3, 4, 6; midpoints .25 .. 5.
Value e2m1Round(OpBuilder &b, Location loc, Value x) {
  static const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  Value a = math::AbsFOp::create(b, loc, x);
  Value index = i32Const(b, loc, 0);
  Value bump = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  for (int m = 0; m < 7; ++m) {
    Value mid = f32Const(b, loc, (grid[m] + grid[m + 1]) / 2);
    Value below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, mid, a);
    index = arith::AddIOp::create(b, loc, index, arith::ExtUIOp::create(b, loc, b.getI32Type(), below));
    if (m % 2 == 1)  // a tie at an odd index goes up to the even one
      bump = arith::OrIOp::create(b, loc, bump, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a, mid));
  }
  index = arith::AddIOp::create(b, loc, index, arith::ExtUIOp::create(b, loc, b.getI32Type(), bump));
  Value value = f32Const(b, loc, grid[0]);
  for (int g = 1; g < 8; ++g)
    value = arith::SelectOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index, i32Const(b, loc, g)),
                                    f32Const(b, loc, grid[g]), value);
  return math::CopySignOp::create(b, loc, value, x);
}

/// Rounds each block of x's last axis to E4M3 / E2M1 with UE8M0 / E4M3
/// scales; the decoded values.
Value blockQuantize(OpBuilder &b, Location loc, Value x, QuantAttr format) {
  MLIRContext *ctx = b.getContext();
  bool e4m3 = format.getElement() == ScalarFormat::e4m3, ue8m0 = format.getScale() == ScaleFormat::ue8m0;
  int64_t block = format.getBlockCols();
  auto type = tensorType(x);
  unsigned r = type.getRank();
  int64_t width = type.getShape().back();
  // amax per block: x viewed as [..., width / B, B], reduced over the last axis.
  SmallVector<int64_t> blockShape(type.getShape().drop_back());
  blockShape.push_back(width / block);
  auto blockType = RankedTensorType::get(blockShape, b.getF32Type());
  SmallVector<int64_t> viewShape(blockShape);
  viewShape.push_back(block);
  SmallVector<ReassociationIndices> groups;
  for (unsigned d = 0; d + 1 < r; ++d)
    groups.push_back({int64_t(d)});
  groups.push_back({int64_t(r - 1), int64_t(r)});
  SmallVector<OpFoldResult> viewSizes;
  for (unsigned d = 0; d <= r; ++d)
    viewSizes.push_back(ShapedType::isDynamic(viewShape[d])
                            ? OpFoldResult(tensor::DimOp::create(b, loc, x, d).getResult())
                            : OpFoldResult(b.getIndexAttr(viewShape[d])));
  Value view = tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(viewShape, b.getF32Type()), x, groups,
                                             viewSizes);
  Value amax = linalg::GenericOp::create(
                   b, loc, TypeRange{blockType}, ValueRange{view}, ValueRange{zeros(b, loc, blockType, x)},
                   ArrayRef<AffineMap>{pick(ctx, r + 1, range(0, r + 1)), pick(ctx, r + 1, range(0, r))},
                   iterators(r, 1),
                   [&](OpBuilder &nb, Location l, ValueRange a) {
                     linalg::YieldOp::create(nb, l, arith::MaximumFOp::create(nb, l, a[1], math::AbsFOp::create(nb, l, a[0])).getResult());
                   })
                   .getResult(0);
  Value scale = elementwise(b, loc, ValueRange{amax}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    if (ue8m0)
      return e4m3 ? ue8m0Scale(nb, l, a[0], 448.0, 1e-4) : ue8m0Scale(nb, l, a[0], 6.0, 6.0 * std::ldexp(1.0, -126));
    // NVFP4's E4M3 scale, saturating at 448 (MODEL.md is silent; our choice).
    Value s = arith::DivFOp::create(nb, l, arith::MaximumFOp::create(nb, l, a[0], f32Const(nb, l, 6.0 * std::ldexp(1.0, -9))),
                                    f32Const(nb, l, 6.0));
    return e4m3Rne(nb, l, arith::MinimumFOp::create(nb, l, s, f32Const(nb, l, 448.0)));
  });
  SmallVector<AffineExpr> scaleAt;
  for (unsigned d = 0; d + 1 < r; ++d)
    scaleAt.push_back(getAffineDimExpr(d, ctx));
  scaleAt.push_back(getAffineDimExpr(r - 1, ctx).floorDiv(block));
  double limit = e4m3 ? 448.0 : 6.0;
  Value out = linalg::GenericOp::create(
                  b, loc, TypeRange{type}, ValueRange{x, scale}, ValueRange{emptyTensor(b, loc, type, x)},
                  ArrayRef<AffineMap>{pick(ctx, r, range(0, r)), AffineMap::get(r, 0, scaleAt, ctx), pick(ctx, r, range(0, r))},
                  iterators(r),
                  [&](OpBuilder &nb, Location l, ValueRange a) {
                    Value scaled = arith::DivFOp::create(nb, l, a[0], a[1]);
                    scaled = arith::MaximumFOp::create(nb, l, arith::MinimumFOp::create(nb, l, scaled, f32Const(nb, l, limit)),
                                                       f32Const(nb, l, -limit));
                    Value q = e4m3 ? e4m3Rne(nb, l, scaled) : e2m1Round(nb, l, scaled);
                    linalg::YieldOp::create(nb, l, arith::MulFOp::create(nb, l, q, a[1]).getResult());
                  })
                  .getResult(0);
  return out;
}

/// x rounded to bf16 (RNE), back in f32. With the bits rather than
/// arith.truncf to bf16, which x86 lowers to a compiler-rt call (__truncsfbf2)
/// the host kernels would have to carry; finite values only (the caches'):
/// add 0x7fff plus the lowest kept bit, clear the 16 dropped bits.
Value bf16Round(OpBuilder &b, Location loc, Value x) {
  return elementwise(b, loc, ValueRange{x}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    Value bits = arith::BitcastOp::create(nb, l, nb.getI32Type(), a[0]);
    Value keptLsb = arith::AndIOp::create(nb, l, arith::ShRUIOp::create(nb, l, bits, i32Const(nb, l, 16)), i32Const(nb, l, 1));
    Value rounded = arith::AddIOp::create(nb, l, bits, arith::AddIOp::create(nb, l, keptLsb, i32Const(nb, l, 0x7fff)));
    Value cleared = arith::AndIOp::create(nb, l, rounded, i32Const(nb, l, int32_t(0xffff0000u)));
    return arith::BitcastOp::create(nb, l, nb.getF32Type(), cleared);
  });
}

/// The slice of x's channels [from, from + count) (every other axis whole):
/// offsets, sizes and strides for tensor.extract_slice / insert_slice.
struct ChannelSlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
ChannelSlice channels(OpBuilder &b, Location loc, Value x, int64_t from, int64_t count) {
  auto type = tensorType(x);
  ChannelSlice s;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool last = d + 1 == type.getRank();
    s.offsets.push_back(b.getIndexAttr(last ? from : 0));
    s.sizes.push_back(last ? OpFoldResult(b.getIndexAttr(count))
                           : type.isDynamicDim(d) ? OpFoldResult(tensor::DimOp::create(b, loc, x, d).getResult())
                                                  : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
    s.strides.push_back(b.getIndexAttr(1));
  }
  return s;
}

Value lastAxisSlice(OpBuilder &b, Location loc, Value x, int64_t from, int64_t count) {
  auto type = tensorType(x);
  ChannelSlice s = channels(b, loc, x, from, count);
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = count;
  return tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), x, s.offsets,
                                        s.sizes, s.strides);
}

/// Formats: E4M3 or E2M1 elements with 1-D UE8M0 / E4M3 block scales,
/// optionally with the last channels of a row kept in bf16 (V4's KV rows),
/// and plain bf16.
struct QuantizeLowering : DsfPattern<QuantizeOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(QuantizeOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto format = llvm::cast<QTensorType>(op.getType()).getFormat();
    Value x = adaptor.getInput();
    if (format.getElement() == ScalarFormat::bf16) {
      b.replaceOp(op, bf16Round(b, loc, x));
      return success();
    }
    bool e4m3 = format.getElement() == ScalarFormat::e4m3, e2m1 = format.getElement() == ScalarFormat::e2m1;
    bool ue8m0 = format.getScale() == ScaleFormat::ue8m0, e4m3Scale = format.getScale() == ScaleFormat::e4m3;
    if (!(e4m3 || e2m1) || !(ue8m0 || e4m3Scale) || format.getBlockRows() != 1)
      return b.notifyMatchFailure(op, "only 1-D E4M3 / E2M1 formats with UE8M0 / E4M3 scales are lowered");
    int64_t tail = format.getBf16Tail(), width = tensorType(x).getShape().back();
    if (tail == 0) {
      b.replaceOp(op, blockQuantize(b, loc, x, format));
      return success();
    }
    // [blocks | bf16 tail]: each part rounded, then put back side by side.
    Value head = blockQuantize(b, loc, lastAxisSlice(b, loc, x, 0, width - tail), format);
    Value rest = bf16Round(b, loc, lastAxisSlice(b, loc, x, width - tail, tail));
    auto type = tensorType(x);
    Value out = emptyTensor(b, loc, type, x);
    for (auto [part, from, count] : {std::make_tuple(head, int64_t(0), width - tail), std::make_tuple(rest, width - tail, tail)}) {
      ChannelSlice s = channels(b, loc, x, from, count);
      out = tensor::InsertSliceOp::create(b, loc, part, out, s.offsets, s.sizes, s.strides);
    }
    b.replaceOp(op, out);
    return success();
  }
};

/// A quantized tensor is held as its decoded f32 values: dequantize is the identity.
struct DequantizeLowering : DsfPattern<DequantizeOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(DequantizeOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    if (!llvm::isa<RankedTensorType>(adaptor.getInput().getType()))
      return b.notifyMatchFailure(op, "operand not lowered");
    b.replaceOp(op, adaptor.getInput());
    return success();
  }
};

} // namespace

void populateQuantPatterns(RewritePatternSet &patterns, const TypeConverter &types, LoweringState &state) {
  patterns.add<QuantizeLowering, DequantizeLowering>(types, patterns.getContext(), state);
}

} // namespace mlir::dsf::lowering
