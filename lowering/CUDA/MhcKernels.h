//===- MhcKernels.h - mHC arithmetic shared by the CUDA mHC passes ---------===//
//
// The n x n combination matrix of an mHC site, held in registers as n*n
// values (row-major), normalised the way dsf-to-linalg's linalg does it:
// each sum from 0 in index order, then x / (sum + eps). dsf-gpu-fuse-sinkhorn
// and dsf-gpu-fuse-mhc build their rounds from these (a thread per matrix, or
// a warp per matrix with a cell a lane), so their results are the linalg's
// bit for bit.
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

/// The same normalisations with a warp per matrix: lane c < n*n holds cell
/// c (row c div n, column c mod n); the other lanes follow along on lane
/// n*n - 1's position (a shuffle needs the whole warp). Each lane gathers
/// its row's (axis 2) or column's (axis 1) cells by index shuffles and adds
/// them from 0 in index order: every lane's value is normaliseCells's bit for
/// bit. n*n <= 32.
Value normaliseLaneCell(OpBuilder &b, Location loc, Value cell, Value lane, int64_t n, int axis, Value eps);
/// `rounds` Sinkhorn rounds of normaliseLaneCell as an scf.for.
Value sinkhornLaneRounds(OpBuilder &b, Location loc, Value cell, Value lane, int64_t n, int64_t rounds, Value eps);
/// The value of `v` at lane `src` (an index below 32) of the warp.
Value laneValue(OpBuilder &b, Location loc, Value v, Value src);

} // namespace mlir::dsf

#endif // DSF_LOWERING_CUDA_MHCKERNELS_H
