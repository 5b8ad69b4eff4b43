//===- TileParallelLoops.cpp - dsf-tile-parallel-loops ----------------------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace mlir::dsf {
#define GEN_PASS_DEF_TILEPARALLELLOOPS
#include "lowering/Passes.h.inc"

namespace {
std::optional<int64_t> staticTripCount(scf::ParallelOp loop, unsigned dim) {
  auto lb = getConstantIntValue(loop.getLowerBound()[dim]);
  auto ub = getConstantIntValue(loop.getUpperBound()[dim]);
  auto step = getConstantIntValue(loop.getStep()[dim]);
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return std::max<int64_t>(0, (*ub - *lb + *step - 1) / *step);
}

/// CUDA's bound on gridDim.y and gridDim.z.
constexpr int64_t kMaxGridYZ = 65535;

int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

struct TileParallelLoopsPass : impl::TileParallelLoopsBase<TileParallelLoopsPass> {
  using TileParallelLoopsBase::TileParallelLoopsBase;
  void runOnOperation() override {
    if (threads < 1) {
      getOperation().emitError("dsf-tile-parallel-loops: threads must be at least 1, not ") << int64_t(threads);
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() && !loop->getParentOfType<gpu::GPUModuleOp>())
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops) {
      unsigned rank = loop.getNumLoops();
      SmallVector<int64_t> sizes(rank, 1);
      int64_t left = threads;
      for (unsigned d = rank; d-- > 0 && left > 1;) {
        std::optional<int64_t> trip = staticTripCount(loop, d);
        int64_t take = trip ? std::min(left, powerOfTwoAtLeast(std::max<int64_t>(*trip, 1))) : left;
        sizes[d] = take;
        left /= take;
      }
      // The blocks a dimension gets: its trip count over its tile (the
      // tiled loop's steps are products, not constants).
      SmallVector<std::optional<int64_t>> blockTrips(rank);
      for (unsigned d = 0; d < rank; ++d)
        if (std::optional<int64_t> trip = staticTripCount(loop, d))
          blockTrips[d] = (*trip + sizes[d] - 1) / sizes[d];
      scf::ParallelOp blocks = scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true).first;
      // gpu-map-parallel-loops gives the blocks' innermost dimension
      // gridDim.x (up to 2^31 - 1) and the next ones y and z, which CUDA
      // bounds to 65,535: a dynamic one (tokens, cache entries) can pass
      // that (a copy of a 65,536-entry cache did), so such a loop's block
      // dimensions become one (the innermost still fastest) on x.
      bool mayExceed = false;
      for (unsigned d = 0; d + 1 < rank; ++d)
        mayExceed |= !blockTrips[d] || *blockTrips[d] > kMaxGridYZ;
      if (mayExceed) {
        std::vector<unsigned> all(rank);
        std::iota(all.begin(), all.end(), 0u);
        IRRewriter rewriter(blocks.getContext());
        collapseParallelLoops(rewriter, blocks, {all});
      }
    }
  }
};
} // namespace
} // namespace mlir::dsf
