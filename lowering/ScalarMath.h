//===- ScalarMath.h - scalar formulas shared by the linalg and the kernels -===//
//
// The few per-element formulas that dsf-to-linalg writes into generics and
// that the CUDA passes write again into the kernels that replace a helper
// (dsf-gpu-fuse-mhc, dsf-gpu-route-experts) or a product (a weight stored
// narrower, widened as it is read). Built from one definition, the kernels'
// values are the linalg's by construction.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_LOWERING_SCALARMATH_H
#define DSF_LOWERING_SCALARMATH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::dsf::lowering {

inline Value f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
}

/// A float narrower than f32: how a weight may be stored (bf16, f16).
inline bool isNarrowFloat(Type t) { return llvm::isa<FloatType>(t) && t.getIntOrFloatBitWidth() < 32; }
/// f32 or narrower: a weight's element that the kernels can read.
inline bool isWidenableFloat(Type t) { return t.isF32() || isNarrowFloat(t); }

/// `v` in f32: extended exactly when stored narrower, else itself.
inline Value widenToF32(OpBuilder &b, Location loc, Value v) {
  return isNarrowFloat(v.getType()) ? arith::ExtFOp::create(b, loc, b.getF32Type(), v).getResult() : v;
}

/// 1 / (1 + exp(-x)), as the reference writes it.
inline Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, f32Const(b, loc, 1), arith::AddFOp::create(b, loc, f32Const(b, loc, 1), e));
}

/// The router's score sqrt(softplus(z)), softplus(z) = max(z, 0) +
/// log1p(exp(-|z|)) as np.logaddexp(0, z).
inline Value sqrtSoftplus(OpBuilder &b, Location loc, Value z) {
  Value pos = arith::MaximumFOp::create(b, loc, z, f32Const(b, loc, 0));
  Value tail = math::Log1pOp::create(
      b, loc, math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, z))));
  return math::SqrtOp::create(b, loc, arith::AddFOp::create(b, loc, pos, tail));
}

/// Where a packed cache row keeps an element and how it decodes (the
/// runtime's codecs' row: the codes, E4M3 a byte or E2M1 two a byte with
/// the even element in the low nibble, then a scale byte a block, UE8M0 or
/// E4M3): dsf-to-linalg's PackedRow, and the kernels that read its pages.
struct PackedCodes {
  bool fp4 = false;        // E2M1 elements (else E4M3)
  bool e4m3Scale = false;  // E4M3 scales (else UE8M0)
  int64_t codeBytes = 0, block = 0;
  /// A row's bytes: its codes, then a scale byte a block of its `width` channels.
  int64_t rowBytes(int64_t width) const { return codeBytes + width / block; }
};
/// The codes of "fp8", "mxfp4" or "nvfp4" rows of `width` channels.
inline std::optional<PackedCodes> packedCodesNamed(llvm::StringRef name, int64_t width) {
  if (name == "fp8")
    return PackedCodes{false, false, width, 32};
  if (name == "mxfp4")
    return PackedCodes{true, false, width / 2, 32};
  if (name == "nvfp4")
    return PackedCodes{true, true, width / 2, 16};
  return std::nullopt;
}

namespace packed_detail {
inline Value i32(OpBuilder &b, Location loc, int32_t v) { return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v)); }
inline Value shr(OpBuilder &b, Location loc, Value x, int32_t n) { return arith::ShRUIOp::create(b, loc, x, i32(b, loc, n)); }
inline Value shl(OpBuilder &b, Location loc, Value x, int32_t n) { return arith::ShLIOp::create(b, loc, x, i32(b, loc, n)); }
inline Value mask(OpBuilder &b, Location loc, Value x, int32_t m) { return arith::AndIOp::create(b, loc, x, i32(b, loc, m)); }
inline Value bitsOf(OpBuilder &b, Location loc, Value f) { return arith::BitcastOp::create(b, loc, b.getI32Type(), f); }
inline Value floatOf(OpBuilder &b, Location loc, Value i) { return arith::BitcastOp::create(b, loc, b.getF32Type(), i); }
} // namespace packed_detail

/// The f32 value of an E4M3FN code (i32, 0 .. 255): sign bit 7, exponent
/// field (bias 7) bits 3-6, mantissa bits 0-2; field 0 a subnormal m 2^-9.
inline Value e4m3Value(OpBuilder &b, Location loc, Value code) {
  using namespace packed_detail;
  Value sign = shl(b, loc, mask(b, loc, code, 0x80), 24);
  Value field = mask(b, loc, shr(b, loc, code, 3), 15), mantissa = mask(b, loc, code, 7);
  Value normal = arith::OrIOp::create(b, loc, shl(b, loc, arith::AddIOp::create(b, loc, field, i32(b, loc, 120)), 23),
                                      shl(b, loc, mantissa, 20));
  Value subnormal = bitsOf(b, loc, arith::MulFOp::create(b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), mantissa),
                                                         f32Const(b, loc, 1.0 / 512)));
  Value isSubnormal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, field, i32(b, loc, 0));
  return floatOf(b, loc, arith::OrIOp::create(b, loc, arith::SelectOp::create(b, loc, isSubnormal, subnormal, normal), sign));
}

/// The f32 value of an E2M1 code (i32, 0 .. 15; grid index i = 2e + m in
/// bits 0-2, sign bit 3): m / 2 for e = 0, else 2^(e - 1) (1 + m / 2).
inline Value e2m1Value(OpBuilder &b, Location loc, Value code) {
  using namespace packed_detail;
  Value index = mask(b, loc, code, 7);
  Value e = shr(b, loc, index, 1), m = mask(b, loc, index, 1);
  Value normal = arith::OrIOp::create(b, loc, shl(b, loc, arith::AddIOp::create(b, loc, e, i32(b, loc, 126)), 23),
                                      shl(b, loc, m, 22));
  Value half = bitsOf(b, loc, arith::MulFOp::create(b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), m),
                                                    f32Const(b, loc, 0.5)));
  Value isHalf = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, e, i32(b, loc, 0));
  Value sign = shl(b, loc, mask(b, loc, code, 8), 28);
  return floatOf(b, loc, arith::OrIOp::create(b, loc, arith::SelectOp::create(b, loc, isHalf, half, normal), sign));
}

/// A scale byte's value: UE8M0 2^(byte - 127) (byte 0: 2^-127), or E4M3.
inline Value packedScaleValue(OpBuilder &b, Location loc, Value byte, bool e4m3Scale) {
  using namespace packed_detail;
  if (e4m3Scale)
    return e4m3Value(b, loc, byte);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, byte, i32(b, loc, 0));
  return floatOf(b, loc, arith::SelectOp::create(b, loc, isZero, i32(b, loc, 0x400000), shl(b, loc, byte, 23)));
}

/// Channel c (an index) of a packed row, decoded: element times its
/// block's scale, the value dsf.quantize rounded it to. `byteAt(column)`
/// reads the row's byte at an index column, as i32 (zero-extended). With
/// `lookup(code, fp4)`, an E2M1 or E4M3 code's value is read from a table
/// of the values e2m1Value / e4m3Value give (a kernel's shared memory: one
/// load where the bits take a dozen operations), else computed here.
inline Value decodePacked(OpBuilder &b, Location loc, llvm::function_ref<Value(Value)> byteAt, Value c,
                          const PackedCodes &codes,
                          llvm::function_ref<Value(Value code, bool fp4)> lookup = nullptr) {
  using namespace packed_detail;
  auto index = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  auto e2m1 = [&](Value code) { return lookup ? lookup(code, true) : e2m1Value(b, loc, code); };
  auto e4m3 = [&](Value code) { return lookup ? lookup(code, false) : e4m3Value(b, loc, code); };
  Value value;
  if (codes.fp4) {
    Value byte = byteAt(arith::DivUIOp::create(b, loc, c, index(2)));
    Value odd = arith::IndexCastOp::create(b, loc, b.getI32Type(), arith::RemUIOp::create(b, loc, c, index(2)));
    Value nibble = mask(b, loc, arith::ShRUIOp::create(b, loc, byte, arith::MulIOp::create(b, loc, odd, i32(b, loc, 4))), 15);
    value = e2m1(nibble);
  } else {
    value = e4m3(byteAt(c));
  }
  Value scaleColumn = arith::AddIOp::create(b, loc, index(codes.codeBytes),
                                            arith::DivUIOp::create(b, loc, c, index(codes.block)));
  Value scaleByte = byteAt(scaleColumn);
  Value scale = codes.e4m3Scale ? e4m3(scaleByte) : packedScaleValue(b, loc, scaleByte, false);
  return arith::MulFOp::create(b, loc, value, scale);
}

} // namespace mlir::dsf::lowering

#endif // DSF_LOWERING_SCALARMATH_H
