//===- Quant.cpp - dsf-to-linalg: the cache formats ------------------------===//
//
// dsf.quantize rounds each block of the last dimension to its format with
// MODEL.md's rules, bit for bit as runtime/src/codecs.cpp and the NumPy
// codecs (test/reference/codecs_np.py) do. A quantized tensor is held as the
// f32 values its codes decode to (dequantize is then the identity) or, where
// the type converter says bytes (the pages of a batched entry point's
// caches, Slots.cpp), packed as the runtime's codecs pack a row (the codes,
// then a scale byte a block) and decoded where it is read: the same values
// bit for bit, in a quarter (FP8) or an eighth (FP4) of the bytes.
// Either is one generic: each element (or byte) computes its block's scale
// in its body, from a loop over the block (blockScaleAt), so that a
// quantizer is one kernel on the GPU rather than a fill, an amax
// reduction, the scales and the rounding (and for packed rows the scale
// bytes and two copies into the row).
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

/// The grid index (0 .. 7) of the E2M1 value nearest |x| (<= 6), ties to
/// the even index: grid 0, .5, 1, 1.5, 2, 3, 4, 6; midpoints .25 .. 5.
const float kE2M1Grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
Value e2m1Index(OpBuilder &b, Location loc, Value x) {
  Value a = math::AbsFOp::create(b, loc, x);
  Value index = i32Const(b, loc, 0);
  Value bump = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  for (int m = 0; m < 7; ++m) {
    Value mid = f32Const(b, loc, (kE2M1Grid[m] + kE2M1Grid[m + 1]) / 2);
    Value below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, mid, a);
    index = arith::AddIOp::create(b, loc, index, arith::ExtUIOp::create(b, loc, b.getI32Type(), below));
    if (m % 2 == 1)  // a tie at an odd index goes up to the even one
      bump = arith::OrIOp::create(b, loc, bump, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a, mid));
  }
  return arith::AddIOp::create(b, loc, index, arith::ExtUIOp::create(b, loc, b.getI32Type(), bump));
}

/// The E2M1 value nearest |x| (<= 6) with the sign of x.
Value e2m1Round(OpBuilder &b, Location loc, Value x) {
  Value index = e2m1Index(b, loc, x);
  Value value = f32Const(b, loc, kE2M1Grid[0]);
  for (int g = 1; g < 8; ++g)
    value = arith::SelectOp::create(b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index, i32Const(b, loc, g)),
                                    f32Const(b, loc, kE2M1Grid[g]), value);
  return math::CopySignOp::create(b, loc, value, x);
}

/// A block's scale from its amax: UE8M0, or NVFP4's E4M3.
Value scaleOfAmax(OpBuilder &b, Location loc, Value amax, QuantAttr format) {
  bool e4m3 = format.getElement() == ScalarFormat::e4m3;
  if (format.getScale() == ScaleFormat::ue8m0)
    return e4m3 ? ue8m0Scale(b, loc, amax, 448.0, 1e-4) : ue8m0Scale(b, loc, amax, 6.0, 6.0 * std::ldexp(1.0, -126));
  // NVFP4's E4M3 scale, saturating at 448 (MODEL.md is silent; our choice).
  Value s = arith::DivFOp::create(b, loc, arith::MaximumFOp::create(b, loc, amax, f32Const(b, loc, 6.0 * std::ldexp(1.0, -9))),
                                  f32Const(b, loc, 6.0));
  return e4m3Rne(b, loc, arith::MinimumFOp::create(b, loc, s, f32Const(b, loc, 448.0)));
}

/// The scale of block `blockIndex` of x's last axis at indices `at` of the
/// other axes, for the body of a generic that captures x: its amax is a
/// loop over the block's channels where the block's elements are rounded.
/// A block is 16 or 32 channels, each read by every element of its block
/// (from L1 on the GPU), in place of an amax reduction, a kernel of scales
/// and the rounding as three kernels and a fill: the quantizers of a decode
/// step are launch-bound. max is exact, so the amax is the reduction's bit
/// for bit (NaN included: maximumf keeps it in any order).
Value blockScaleAt(OpBuilder &b, Location loc, Value x, ValueRange at, Value blockIndex, QuantAttr format) {
  int64_t block = format.getBlockCols();
  Value first = arith::MulIOp::create(b, loc, blockIndex, indexConst(b, loc, block));
  Value last = arith::AddIOp::create(b, loc, first, indexConst(b, loc, block));
  auto amax = scf::ForOp::create(b, loc, first, last, indexConst(b, loc, 1), ValueRange{f32Const(b, loc, 0.0)},
                                 [&](OpBuilder &nb, Location l, Value c, ValueRange acc) {
                                   SmallVector<Value> index(at.begin(), at.end());
                                   index.push_back(c);
                                   Value v = tensor::ExtractOp::create(nb, l, x, index);
                                   scf::YieldOp::create(nb, l, arith::MaximumFOp::create(nb, l, acc[0], math::AbsFOp::create(nb, l, v)).getResult());
                                 });
  return scaleOfAmax(b, loc, amax.getResult(0), format);
}

/// The generic's indices of every axis but the last.
SmallVector<Value> leadingIndices(OpBuilder &b, Location loc, unsigned r) {
  SmallVector<Value> at;
  for (unsigned d = 0; d + 1 < r; ++d)
    at.push_back(linalg::IndexOp::create(b, loc, d));
  return at;
}

/// x / scale clamped to the element format's range (448 or 6).
Value scaledElement(OpBuilder &b, Location loc, Value x, Value scale, bool e4m3) {
  double limit = e4m3 ? 448.0 : 6.0;
  Value scaled = arith::DivFOp::create(b, loc, x, scale);
  return arith::MaximumFOp::create(b, loc, arith::MinimumFOp::create(b, loc, scaled, f32Const(b, loc, limit)),
                                   f32Const(b, loc, -limit));
}

/// x rounded to bf16 (RNE), back in f32. With the bits rather than
/// arith.truncf to bf16, which x86 lowers to a compiler-rt call (__truncsfbf2)
/// the host kernels would have to carry; finite values only (the caches'):
/// add 0x7fff plus the lowest kept bit, clear the 16 dropped bits.
Value bf16RoundElement(OpBuilder &b, Location loc, Value x) {
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
  Value keptLsb = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, i32Const(b, loc, 16)), i32Const(b, loc, 1));
  Value rounded = arith::AddIOp::create(b, loc, bits, arith::AddIOp::create(b, loc, keptLsb, i32Const(b, loc, 0x7fff)));
  Value cleared = arith::AndIOp::create(b, loc, rounded, i32Const(b, loc, int32_t(0xffff0000u)));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), cleared);
}

/// Rounds each block of x's last axis to E4M3 / E2M1 with UE8M0 / E4M3
/// scales, the last `tail` channels of a row to bf16 (V4's KV rows); the
/// decoded values, one generic (its blocks' scales in its body).
Value blockQuantize(OpBuilder &b, Location loc, Value x, QuantAttr format) {
  bool e4m3 = format.getElement() == ScalarFormat::e4m3;
  int64_t block = format.getBlockCols(), tail = format.getBf16Tail();
  auto type = tensorType(x);
  unsigned r = type.getRank();
  int64_t width = type.getShape().back();
  return elementwise(b, loc, ValueRange{x}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
    // The indices at the body's level: linalg.index belongs to the generic.
    SmallVector<Value> at = leadingIndices(nb, l, r);
    Value c = linalg::IndexOp::create(nb, l, r - 1);
    auto rounded = [&](OpBuilder &rb) -> Value {
      Value scale = blockScaleAt(rb, l, x, at, arith::DivUIOp::create(rb, l, c, indexConst(rb, l, block)), format);
      Value scaled = scaledElement(rb, l, a[0], scale, e4m3);
      Value q = e4m3 ? e4m3Rne(rb, l, scaled) : e2m1Round(rb, l, scaled);
      return arith::MulFOp::create(rb, l, q, scale);
    };
    if (tail == 0)
      return rounded(nb);
    Value inBlocks = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, c, indexConst(nb, l, width - tail));
    auto part = scf::IfOp::create(nb, l, TypeRange{nb.getF32Type()}, inBlocks, true);
    OpBuilder tb = part.getThenBodyBuilder();
    scf::YieldOp::create(tb, l, rounded(tb));
    OpBuilder eb = part.getElseBodyBuilder();
    scf::YieldOp::create(eb, l, bf16RoundElement(eb, l, a[0]));
    return part.getResult(0);
  });
}

// The bit helpers the decoders use (ScalarMath.h), for the encoders.
using packed_detail::bitsOf;
using packed_detail::mask;
using packed_detail::shl;
using packed_detail::shr;

/// The E4M3FN code (i32, 0 .. 255) of an E4M3 value v (e4m3Rne's): sign
/// bit 7, exponent field (bias 7) bits 3-6, mantissa bits 0-2; below 2^-6 a
/// subnormal, v / 2^-9 in the mantissa.
Value e4m3Code(OpBuilder &b, Location loc, Value v) {
  Value bits = bitsOf(b, loc, v);
  Value sign = mask(b, loc, shr(b, loc, bits, 24), 0x80);
  Value biased = mask(b, loc, shr(b, loc, bits, 23), 0xff);
  Value normal = arith::OrIOp::create(b, loc, shl(b, loc, arith::SubIOp::create(b, loc, biased, i32Const(b, loc, 120)), 3),
                                      mask(b, loc, shr(b, loc, bits, 20), 7));
  Value subnormal = arith::FPToUIOp::create(
      b, loc, b.getI32Type(), arith::MulFOp::create(b, loc, math::AbsFOp::create(b, loc, v), f32Const(b, loc, 512.0)));
  Value isNormal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, biased, i32Const(b, loc, 121));
  return arith::OrIOp::create(b, loc, arith::SelectOp::create(b, loc, isNormal, normal, subnormal), sign);
}

/// The E2M1 code (i32, 0 .. 15) of x rounded: grid index bits 0-2, x's sign bit 3.
Value e2m1Code(OpBuilder &b, Location loc, Value x) {
  return arith::OrIOp::create(b, loc, e2m1Index(b, loc, x), mask(b, loc, shr(b, loc, bitsOf(b, loc, x), 28), 8));
}

/// x rounded to bf16 elementwise.
Value bf16Round(OpBuilder &b, Location loc, Value x) {
  return elementwise(b, loc, ValueRange{x},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value { return bf16RoundElement(nb, l, a[0]); });
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
    // Packed where the converter holds the tensor as bytes (a batched entry
    // point's caches: their pages).
    FailureOr<std::optional<PackedRow>> row = heldRow(getTypeConverter()->convertType(op.getType()), op.getType());
    if (failed(row))
      return b.notifyMatchFailure(op, "bytes for a format without a packed row");
    if (*row) {
      b.replaceOp(op, packRows(b, loc, x, **row));
      return success();
    }
    if (format.getElement() == ScalarFormat::bf16) {
      b.replaceOp(op, bf16Round(b, loc, x));
      return success();
    }
    bool e4m3 = format.getElement() == ScalarFormat::e4m3, e2m1 = format.getElement() == ScalarFormat::e2m1;
    bool ue8m0 = format.getScale() == ScaleFormat::ue8m0, e4m3Scale = format.getScale() == ScaleFormat::e4m3;
    if (!(e4m3 || e2m1) || !(ue8m0 || e4m3Scale) || format.getBlockRows() != 1)
      return b.notifyMatchFailure(op, "only 1-D E4M3 / E2M1 formats with UE8M0 / E4M3 scales are lowered");
    b.replaceOp(op, blockQuantize(b, loc, x, format));
    return success();
  }
};

/// A quantized tensor held as its decoded f32 values: dequantize is the
/// identity; held packed (bytes): decoded.
struct DequantizeLowering : DsfPattern<DequantizeOp> {
  using DsfPattern::DsfPattern;
  LogicalResult matchAndRewrite(DequantizeOp op, OpAdaptor adaptor, ConversionPatternRewriter &b) const override {
    if (!llvm::isa<RankedTensorType>(adaptor.getInput().getType()))
      return b.notifyMatchFailure(op, "operand not lowered");
    FailureOr<std::optional<PackedRow>> row = heldRow(adaptor.getInput().getType(), op.getInput().getType());
    if (failed(row))
      return b.notifyMatchFailure(op, "bytes for a format without a packed row");
    if (*row) {
      b.replaceOp(op, unpackRows(b, op.getLoc(), adaptor.getInput(), **row));
      return success();
    }
    b.replaceOp(op, adaptor.getInput());
    return success();
  }
};

} // namespace

std::optional<PackedRow> packedRow(QuantAttr format, int64_t width) {
  if (!format || format.getBf16Tail() != 0 || format.getBlockRows() != 1)
    return std::nullopt;
  ScalarFormat e = format.getElement();
  ScaleFormat s = format.getScale();
  int64_t block = format.getBlockCols();
  bool fp8 = e == ScalarFormat::e4m3 && s == ScaleFormat::ue8m0 && block == 32;
  bool mxfp4 = e == ScalarFormat::e2m1 && s == ScaleFormat::ue8m0 && block == 32;
  bool nvfp4 = e == ScalarFormat::e2m1 && s == ScaleFormat::e4m3 && block == 16;
  if (!(fp8 || mxfp4 || nvfp4) || width % block != 0)
    return std::nullopt;
  PackedRow row;
  row.format = format;
  row.width = width;
  row.codeBytes = fp8 ? width : width / 2;
  row.bytes = row.codes().rowBytes(width);
  return row;
}

std::optional<PackedRow> packedRowOf(Type dsfType) {
  if (auto q = llvm::dyn_cast<QTensorType>(dsfType))
    return packedRow(q.getFormat(), q.getShape().back());
  if (auto c = llvm::dyn_cast<CacheType>(dsfType))
    return packedRow(c.getFormat(), c.getWidth());
  return std::nullopt;
}

FailureOr<std::optional<PackedRow>> heldRow(Type lowered, Type held) {
  auto tensor = llvm::dyn_cast_or_null<RankedTensorType>(lowered);
  if (!tensor || !tensor.getElementType().isInteger(8))
    return std::optional<PackedRow>();
  std::optional<PackedRow> row = packedRowOf(held);
  if (!row)
    return failure();
  return row;
}

std::string packedRowName(const PackedRow &row) {
  if (!row.fp4())
    return "fp8";
  return row.format.getScale() == ScaleFormat::ue8m0 ? "mxfp4" : "nvfp4";
}

Value packRows(OpBuilder &b, Location loc, Value x, const PackedRow &row) {
  bool e4m3 = !row.fp4();
  int64_t block = row.format.getBlockCols();
  auto type = tensorType(x);
  unsigned r = type.getRank();
  auto i8 = b.getI8Type();
  // One generic over the row's bytes: byte j < codeBytes from element j
  // (E4M3) or elements 2j (low nibble) and 2j + 1 (E2M1), each with its
  // block's scale; byte codeBytes + k the scale of block k.
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = row.bytes;
  auto rowType = RankedTensorType::get(shape, i8);
  return linalg::GenericOp::create(
             b, loc, TypeRange{rowType}, ValueRange{}, ValueRange{emptyTensor(b, loc, rowType, x)},
             ArrayRef<AffineMap>{pick(b.getContext(), r, range(0, r))}, iterators(r),
             [&](OpBuilder &nb, Location l, ValueRange) {
               SmallVector<Value> at = leadingIndices(nb, l, r);
               Value j = linalg::IndexOp::create(nb, l, r - 1);
               Value isCode = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, j, indexConst(nb, l, row.codeBytes));
               auto byte = scf::IfOp::create(nb, l, TypeRange{nb.getI32Type()}, isCode, true);
               auto element = [&](OpBuilder &eb, Value c) {
                 SmallVector<Value> index(at);
                 index.push_back(c);
                 return tensor::ExtractOp::create(eb, l, x, index).getResult();
               };
               OpBuilder cb = byte.getThenBodyBuilder();
               Value first = e4m3 ? j : arith::MulIOp::create(cb, l, j, indexConst(cb, l, 2)).getResult();
               Value scale = blockScaleAt(cb, l, x, at, arith::DivUIOp::create(cb, l, first, indexConst(cb, l, block)), row.format);
               Value code;
               if (e4m3) {
                 code = e4m3Code(cb, l, e4m3Rne(cb, l, scaledElement(cb, l, element(cb, first), scale, true)));
               } else {
                 Value second = arith::AddIOp::create(cb, l, first, indexConst(cb, l, 1));
                 Value low = e2m1Code(cb, l, scaledElement(cb, l, element(cb, first), scale, false));
                 Value high = e2m1Code(cb, l, scaledElement(cb, l, element(cb, second), scale, false));
                 code = arith::OrIOp::create(cb, l, low, shl(cb, l, high, 4));
               }
               scf::YieldOp::create(cb, l, code);
               OpBuilder sb = byte.getElseBodyBuilder();
               Value k = arith::SubIOp::create(sb, l, j, indexConst(sb, l, row.codeBytes));
               Value blockScale = blockScaleAt(sb, l, x, at, k, row.format);
               Value scaleByte = row.format.getScale() == ScaleFormat::e4m3
                                     ? e4m3Code(sb, l, blockScale)
                                     : mask(sb, l, shr(sb, l, bitsOf(sb, l, blockScale), 23), 0xff);
               scf::YieldOp::create(sb, l, scaleByte);
               linalg::YieldOp::create(nb, l, arith::TruncIOp::create(nb, l, i8, byte.getResult(0)).getResult());
             })
      .getResult(0);
}

Value decodeElement(OpBuilder &b, Location loc, Value bytes, ValueRange at, Value c, const PackedRow &row) {
  auto byteAt = [&](Value column) -> Value {
    SmallVector<Value> index(at.begin(), at.end());
    index.push_back(column);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), tensor::ExtractOp::create(b, loc, bytes, index));
  };
  return decodePacked(b, loc, byteAt, c, row.codes());
}

Value unpackRows(OpBuilder &b, Location loc, Value bytes, const PackedRow &row) {
  auto type = tensorType(bytes);
  unsigned r = type.getRank();
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = row.width;
  auto outType = RankedTensorType::get(shape, b.getF32Type());
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{}, ValueRange{emptyTensor(b, loc, outType, bytes)},
             ArrayRef<AffineMap>{pick(b.getContext(), r, range(0, r))}, iterators(r),
             [&](OpBuilder &nb, Location l, ValueRange) {
               SmallVector<Value> at;
               for (unsigned d = 0; d + 1 < r; ++d)
                 at.push_back(linalg::IndexOp::create(nb, l, d));
               linalg::YieldOp::create(nb, l, decodeElement(nb, l, bytes, at, linalg::IndexOp::create(nb, l, r - 1), row));
             })
      .getResult(0);
}

void populateQuantPatterns(RewritePatternSet &patterns, const TypeConverter &types, LoweringState &state) {
  patterns.add<QuantizeLowering, DequantizeLowering>(types, patterns.getContext(), state);
}

} // namespace mlir::dsf::lowering
