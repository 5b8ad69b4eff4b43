//===- GpuFuseSinkhorn.cpp - dsf-gpu-fuse-sinkhorn --------------------------===//
#include "lowering/CUDA/MhcKernels.h"
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUFUSESINKHORN
#include "lowering/Passes.h.inc"

SmallVector<Value> normaliseCells(OpBuilder &b, Location loc, ArrayRef<Value> cells, int64_t n, int axis, Value eps) {
  SmallVector<Value> c(cells.begin(), cells.end());
  Value zero = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(0.0f));
  for (int64_t kept = 0; kept < n; ++kept) {
    auto at = [&](int64_t reduced) { return axis == 2 ? kept * n + reduced : reduced * n + kept; };
    Value sum = zero;
    for (int64_t q = 0; q < n; ++q)
      sum = arith::AddFOp::create(b, loc, sum, c[at(q)]);
    Value d = arith::AddFOp::create(b, loc, sum, eps);
    for (int64_t q = 0; q < n; ++q)
      c[at(q)] = arith::DivFOp::create(b, loc, c[at(q)], d);
  }
  return c;
}

SmallVector<Value> sinkhornRounds(OpBuilder &b, Location loc, ArrayRef<Value> cells, int64_t n, int64_t rounds,
                                  Value eps) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  auto loop = scf::ForOp::create(b, loc, idx(0), idx(rounds), idx(1), ValueRange(cells),
                                 [&](OpBuilder &r, Location l, Value, ValueRange m) {
                                   SmallVector<Value> c = normaliseCells(r, l, SmallVector<Value>(m), n, 2, eps);
                                   scf::YieldOp::create(r, l, normaliseCells(r, l, c, n, 1, eps));
                                 });
  return SmallVector<Value>(loop.getResults());
}

Value laneValue(OpBuilder &b, Location loc, Value v, Value src) {
  Value from = arith::IndexCastOp::create(b, loc, b.getI32Type(), src);
  Value width = arith::ConstantIntOp::create(b, loc, 32, 32);
  return gpu::ShuffleOp::create(b, loc, v, from, width, gpu::ShuffleMode::IDX).getShuffleResult();
}

Value normaliseLaneCell(OpBuilder &b, Location loc, Value cell, Value lane, int64_t n, int axis, Value eps) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value c = arith::MinUIOp::create(b, loc, lane, idx(n * n - 1));
  // kept: the lane's row (axis 2) or column (axis 1); cell (kept, q) or (q, kept).
  Value kept = axis == 2 ? arith::DivUIOp::create(b, loc, c, idx(n)).getResult()
                         : arith::RemUIOp::create(b, loc, c, idx(n)).getResult();
  Value sum = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(0.0f));
  for (int64_t q = 0; q < n; ++q) {
    Value at = axis == 2 ? arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, kept, idx(n)), idx(q)).getResult()
                         : arith::AddIOp::create(b, loc, idx(q * n), kept).getResult();
    sum = arith::AddFOp::create(b, loc, sum, laneValue(b, loc, cell, at));
  }
  return arith::DivFOp::create(b, loc, cell, arith::AddFOp::create(b, loc, sum, eps));
}

Value sinkhornLaneRounds(OpBuilder &b, Location loc, Value cell, Value lane, int64_t n, int64_t rounds, Value eps) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  auto loop = scf::ForOp::create(b, loc, idx(0), idx(rounds), idx(1), ValueRange{cell},
                                 [&](OpBuilder &r, Location l, Value, ValueRange m) {
                                   Value c = normaliseLaneCell(r, l, m[0], lane, n, 2, eps);
                                   scf::YieldOp::create(r, l, normaliseLaneCell(r, l, c, lane, n, 1, eps));
                                 });
  return loop.getResult(0);
}

namespace {
constexpr int64_t kThreads = 128, kMaxN = 8;

struct GpuFuseSinkhornPass : impl::GpuFuseSinkhornBase<GpuFuseSinkhornPass> {
  void runOnOperation() override {
    for (auto helper : getOperation().getOps<func::FuncOp>()) {
      auto spec = helper->getAttrOfType<DictionaryAttr>("dsf.sinkhorn");
      if (!spec || helper.isExternal())
        continue;
      auto nAttr = spec.getAs<IntegerAttr>("n"), roundsAttr = spec.getAs<IntegerAttr>("rounds");
      auto epsAttr = spec.getAs<FloatAttr>("eps");
      FunctionType type = helper.getFunctionType();
      auto memref = type.getNumInputs() == 1 && type.getNumResults() == 1
                        ? llvm::dyn_cast<MemRefType>(type.getInput(0))
                        : MemRefType();
      if (!nAttr || !roundsAttr || !epsAttr || !memref || memref.getRank() != 3 ||
          memref.getDimSize(1) != nAttr.getInt() || memref.getDimSize(2) != nAttr.getInt()) {
        helper.emitError("dsf-gpu-fuse-sinkhorn: a dsf.sinkhorn helper that is not a bufferized "
                         "memref<?xNxNxf32> -> memref<?xNxNxf32> function with n, rounds and eps");
        return signalPassFailure();
      }
      int64_t n = nAttr.getInt();
      if (n > kMaxN)
        continue;
      Location loc = helper.getLoc();
      Block &body = helper.getBody().front();
      Value in = body.getArgument(0);
      clearBody(body);
      OpBuilder b = OpBuilder::atBlockEnd(&body);
      auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
      Value tokens = memref::DimOp::create(b, loc, in, idx(b, 0));
      auto resultType = llvm::cast<MemRefType>(type.getResult(0));
      Value out = memref::AllocOp::create(b, loc, resultType, ValueRange{tokens});
      Value blocks = arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, tokens, idx(b, kThreads - 1)),
                                            idx(b, kThreads));
      Value one = idx(b, 1);
      auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, idx(b, kThreads), one, one);
      func::ReturnOp::create(b, loc, out);

      OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
      Value t = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, launch.getBlockIds().x, idx(k, kThreads)),
                                      launch.getThreadIds().x);
      auto live = scf::IfOp::create(k, loc, TypeRange{},
                                    arith::CmpIOp::create(k, loc, arith::CmpIPredicate::ult, t, tokens), false);
      gpu::TerminatorOp::create(k, loc);
      OpBuilder w = live.getThenBodyBuilder();
      SmallVector<Value> cells;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          cells.push_back(memref::LoadOp::create(w, loc, in, ValueRange{t, idx(w, i), idx(w, j)}));
      Value eps = arith::ConstantOp::create(w, loc, epsAttr);
      SmallVector<Value> rounds = sinkhornRounds(w, loc, cells, n, roundsAttr.getInt(), eps);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          memref::StoreOp::create(w, loc, rounds[i * n + j], out, ValueRange{t, idx(w, i), idx(w, j)});
    }
  }
};
} // namespace
} // namespace mlir::dsf
