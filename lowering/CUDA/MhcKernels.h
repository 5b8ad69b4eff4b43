//===- MhcKernels.h - mHC arithmetic shared by the CUDA mHC passes ---------===//
//
// The n x n combination matrix of an mHC site, held in registers as n*n
// values (row-major), normalised the way dsf-to-linalg's linalg does it:
// each sum from 0 in index order, then x / (sum + eps). dsf-gpu-fuse-sinkhorn
// and dsf-gpu-fuse-mhc build their rounds from these, so their results are
// the linalg's bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_LOWERING_CUDA_MHCKERNELS_H
#define DSF_LOWERING_CUDA_MHCKERNELS_H

#include "mlir/IR/Builders.h"

namespace mlir::dsf {

/// One normalisation of `cells`: over each row (axis 2: the sum runs over
/// the last index) or each column (axis 1).
SmallVector<Value> normaliseCells(OpBuilder &b, Location loc, ArrayRef<Value> cells, int64_t n, int axis, Value eps);

/// `rounds` Sinkhorn rounds (a row, then a column normalisation each) as an
/// scf.for carrying the cells.
SmallVector<Value> sinkhornRounds(OpBuilder &b, Location loc, ArrayRef<Value> cells, int64_t n, int64_t rounds,
                                  Value eps);

} // namespace mlir::dsf

#endif // DSF_LOWERING_CUDA_MHCKERNELS_H
