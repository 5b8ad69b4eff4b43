//===- TiledKernels.h - the GEMM kernels that CUDA passes build -----------===//
//
// Two kernel builders shared by dsf-gpu-tiled-matmul (projections) and
// dsf-gpu-grouped-experts (routed experts): what a kernel reads and writes
// comes as callbacks that build IR inside it, so one tiling serves a plain
// C += A W^T and an expert's rows gathered through a permutation.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_LOWERING_CUDA_TILEDKERNELS_H
#define DSF_LOWERING_CUDA_TILEDKERNELS_H

#include "mlir/IR/Builders.h"

#include <functional>
#include <tuple>

namespace mlir::dsf {

/// Rows, columns and depths of a tile of the tiled kernel.
constexpr int64_t kTile = 64;

/// C[r, col] <- sum over d < K of A[r, d] * W[col, d], as 64 x 64 tiles of C
/// (blocks of 256 threads, 16-deep slices staged in shared memory, 4 x 4
/// outputs a thread), each output's products added in the order of d.
struct TiledGemm {
  Value gridX, gridY;  // host values: blocks along the columns and the rows
  Value gridZ;         // host value: independent products (null: one)
  /// At the kernel's start, with blockIdx.z (a batch index, for the
  /// callbacks to capture); may be empty.
  std::function<void(OpBuilder &, Location, Value blockZ)> prologue;
  Value N, K;          // host values: columns, reduction depth
  /// At the block's start, from blockIdx.y: whether the block has work (a
  /// null Value: always), its first row and the end of its rows.
  std::function<std::tuple<Value, Value, Value>(OpBuilder &, Location, Value blockY)> rows;
  std::function<Value(OpBuilder &, Location, Value r, Value d)> loadA;    // r < row end, d < K
  std::function<Value(OpBuilder &, Location, Value col, Value d)> loadW;  // col < N, d < K
  std::function<void(OpBuilder &, Location, Value r, Value col, Value sum)> store;
};
void buildTiledGemm(OpBuilder &b, Location loc, const TiledGemm &g);

/// Few rows: a warp per output (r < M, col < N), its lanes 32 apart along d,
/// partial sums added with xor shuffles; lane 0 stores.
struct WarpGemv {
  Value M, N, K;  // host values
  Value gridZ;    // host value: independent products (null: one)
  std::function<void(OpBuilder &, Location, Value blockZ)> prologue;
  std::function<Value(OpBuilder &, Location, Value r, Value d)> loadA;
  std::function<Value(OpBuilder &, Location, Value r, Value col, Value d)> loadW;
  std::function<void(OpBuilder &, Location, Value r, Value col, Value sum)> store;
};
void buildWarpGemv(OpBuilder &b, Location loc, const WarpGemv &g);

} // namespace mlir::dsf

#endif // DSF_LOWERING_CUDA_TILEDKERNELS_H
