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

} // namespace mlir::dsf::lowering

#endif // DSF_LOWERING_SCALARMATH_H
