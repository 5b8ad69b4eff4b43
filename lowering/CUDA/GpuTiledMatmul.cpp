//===- GpuTiledMatmul.cpp - dsf-gpu-tiled-matmul ----------------------------===//
//
// The classic shared-memory tiled SIMT GEMM (64 x 64 tiles of C, 16-deep
// slices of the reduction, 4 x 4 outputs a thread), built directly as a
// gpu.launch so that the rest of the CUDA pipeline (outlining, NVVM, ptxas)
// treats it like any other kernel. Tensor cores come after it: this is the
// f32 step that keeps every numerics check as it is.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/IR/AffineMap.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUTILEDMATMUL
#include "lowering/Passes.h.inc"

namespace {
constexpr int64_t kDepth = 16, kThreads = 256, kPerThread = 4;

/// f32 operands and a body of out + a * w.
bool hasMultiplyAddBody(linalg::GenericOp g) {
  for (Value v : g->getOperands())
    if (!llvm::cast<MemRefType>(v.getType()).getElementType().isF32())
      return false;
  Block &body = g.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(body.front());
  auto add = dyn_cast<arith::AddFOp>(*std::next(body.begin()));
  auto yield = dyn_cast<linalg::YieldOp>(body.back());
  if (!mul || !add || !yield || yield.getNumOperands() != 1 || yield.getOperand(0) != add.getResult())
    return false;
  Value a = body.getArgument(0), w = body.getArgument(1), c = body.getArgument(2);
  bool mulOk = (mul.getLhs() == a && mul.getRhs() == w) || (mul.getLhs() == w && mul.getRhs() == a);
  bool addOk = (add.getLhs() == c && add.getRhs() == mul.getResult()) ||
               (add.getLhs() == mul.getResult() && add.getRhs() == c);
  return mulOk && addOk;
}

/// C[t, o] += A[t, d] * W[o, d] over d, in f32, on buffers.
bool isRowsTimesTransposed(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 || g.getNumLoops() != 3)
    return false;
  auto it = g.getIteratorTypesArray();
  if (it[0] != utils::IteratorType::parallel || it[1] != utils::IteratorType::parallel ||
      it[2] != utils::IteratorType::reduction)
    return false;
  MLIRContext *ctx = g.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(3, 0, {d(0), d(2)}, ctx) || maps[1] != AffineMap::get(3, 0, {d(1), d(2)}, ctx) ||
      maps[2] != AffineMap::get(3, 0, {d(0), d(1)}, ctx))
    return false;
  return hasMultiplyAddBody(g);
}

} // namespace

/// The same per group: C[t, g, o] += A[t, g, d] * W[g, o, d] (V4's grouped
/// output projection).
static bool isGroupedRowsTimesTransposed(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 || g.getNumLoops() != 4)
    return false;
  auto it = g.getIteratorTypesArray();
  for (unsigned i = 0; i < 4; ++i)
    if ((it[i] == utils::IteratorType::reduction) != (i == 3))
      return false;
  MLIRContext *ctx = g.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (maps[0] != AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx) || maps[1] != AffineMap::get(4, 0, {d(1), d(2), d(3)}, ctx) ||
      maps[2] != AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx))
    return false;
  return hasMultiplyAddBody(g);
}

void buildTiledGemm(OpBuilder &b, Location loc, const TiledGemm &g) {
  MLIRContext *ctx = b.getContext();
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value one = idx(1);
  auto shared = MemRefType::get({kDepth, kTile}, b.getF32Type(), MemRefLayoutAttrInterface{},
                                gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  auto launch = gpu::LaunchOp::create(b, loc, g.gridX, g.gridY, g.gridZ ? g.gridZ : one, idx(kThreads), one, one,
                                      nullptr, nullptr, ValueRange{}, TypeRange{shared, shared});
  Block &entry = launch.getBody().front();
  OpBuilder k = OpBuilder::atBlockEnd(&entry);
  if (g.prologue)
    g.prologue(k, loc, launch.getBlockIds().z);
  Value N = g.N, K = g.K;
  auto [valid, row0, rowEnd] = g.rows(k, loc, launch.getBlockIds().y);
  if (valid) {
    // The whole block takes the branch or not: the barriers inside stay
    // uniform.
    auto body = scf::IfOp::create(k, loc, TypeRange{}, valid, /*withElse=*/false);
    k = body.getThenBodyBuilder();
  }
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(k, loc, v).getResult(); };
  Value As = launch.getWorkgroupAttributions()[0], Ws = launch.getWorkgroupAttributions()[1];
  Value tid = launch.getThreadIds().x;
  Value col0 = arith::MulIOp::create(k, loc, launch.getBlockIds().x, c(kTile));
  Value ty = arith::DivUIOp::create(k, loc, tid, c(kTile / kPerThread));
  Value tx = arith::RemUIOp::create(k, loc, tid, c(kTile / kPerThread));
  Value zero = arith::ConstantFloatOp::create(k, loc, k.getF32Type(), APFloat(0.0f));
  auto lessThan = [&](OpBuilder &o, Value x, Value bound) {
    return arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ult, x, bound).getResult();
  };
  /// load(i, col) if i < bound and col < K, else 0.
  auto guardedLoad = [&](OpBuilder &o, const std::function<Value(OpBuilder &, Location, Value, Value)> &load,
                         Value i, Value bound, Value col) {
    Value in = arith::AndIOp::create(o, loc, lessThan(o, i, bound), lessThan(o, col, K));
    auto branch = scf::IfOp::create(o, loc, TypeRange{o.getF32Type()}, in, /*withElse=*/true);
    OpBuilder t = branch.getThenBodyBuilder();
    scf::YieldOp::create(t, loc, load(t, loc, i, col));
    OpBuilder e = branch.getElseBodyBuilder();
    scf::YieldOp::create(e, loc, zero);
    return branch.getResult(0);
  };

  SmallVector<Value> init(kPerThread * kPerThread, zero);
  auto slices = scf::ForOp::create(
      k, loc, c(0), K, c(kDepth), init, [&](OpBuilder &o, Location l, Value k0, ValueRange acc) {
        // Stage A's rows [row0, +64) and W's rows [col0, +64) at depths
        // [k0, +16): consecutive threads read consecutive depths.
        for (int64_t i = 0; i < kTile * kDepth / kThreads; ++i) {
          Value e = arith::AddIOp::create(o, l, tid, arith::ConstantIndexOp::create(o, l, i * kThreads));
          Value r = arith::DivUIOp::create(o, l, e, arith::ConstantIndexOp::create(o, l, kDepth));
          Value dd = arith::RemUIOp::create(o, l, e, arith::ConstantIndexOp::create(o, l, kDepth));
          Value gk = arith::AddIOp::create(o, l, k0, dd);
          Value a = guardedLoad(o, g.loadA, arith::AddIOp::create(o, l, row0, r), rowEnd, gk);
          memref::StoreOp::create(o, l, a, As, ValueRange{dd, r});
          Value w = guardedLoad(o, g.loadW, arith::AddIOp::create(o, l, col0, r), N, gk);
          memref::StoreOp::create(o, l, w, Ws, ValueRange{dd, r});
        }
        gpu::BarrierOp::create(o, l);
        auto depth = scf::ForOp::create(
            o, l, arith::ConstantIndexOp::create(o, l, 0), arith::ConstantIndexOp::create(o, l, kDepth),
            arith::ConstantIndexOp::create(o, l, 1), acc, [&](OpBuilder &p, Location pl, Value dd, ValueRange sums) {
              SmallVector<Value> av, wv, next;
              for (int64_t i = 0; i < kPerThread; ++i) {
                Value ri = arith::AddIOp::create(p, pl, arith::MulIOp::create(p, pl, ty, arith::ConstantIndexOp::create(p, pl, kPerThread)),
                                                 arith::ConstantIndexOp::create(p, pl, i));
                Value ci = arith::AddIOp::create(p, pl, arith::MulIOp::create(p, pl, tx, arith::ConstantIndexOp::create(p, pl, kPerThread)),
                                                 arith::ConstantIndexOp::create(p, pl, i));
                av.push_back(memref::LoadOp::create(p, pl, As, ValueRange{dd, ri}));
                wv.push_back(memref::LoadOp::create(p, pl, Ws, ValueRange{dd, ci}));
              }
              for (int64_t i = 0; i < kPerThread; ++i)
                for (int64_t j = 0; j < kPerThread; ++j)
                  next.push_back(arith::AddFOp::create(p, pl, sums[i * kPerThread + j],
                                                       arith::MulFOp::create(p, pl, av[i], wv[j])));
              scf::YieldOp::create(p, pl, next);
            });
        gpu::BarrierOp::create(o, l);
        scf::YieldOp::create(o, l, depth.getResults());
      });
  for (int64_t i = 0; i < kPerThread; ++i)
    for (int64_t j = 0; j < kPerThread; ++j) {
      Value r = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, ty, c(kPerThread)), c(i));
      Value col = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, tx, c(kPerThread)), c(j));
      r = arith::AddIOp::create(k, loc, row0, r);
      col = arith::AddIOp::create(k, loc, col0, col);
      Value in = arith::AndIOp::create(k, loc, lessThan(k, r, rowEnd), lessThan(k, col, N));
      auto store = scf::IfOp::create(k, loc, TypeRange{}, in, /*withElse=*/false);
      OpBuilder t = store.getThenBodyBuilder();
      g.store(t, loc, r, col, slices.getResult(i * kPerThread + j));
    }
  OpBuilder end = OpBuilder::atBlockEnd(&entry);
  gpu::TerminatorOp::create(end, loc);
}

void buildWarpGemv(OpBuilder &b, Location loc, const WarpGemv &g) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  constexpr int64_t kWarp = 32, kWarps = kThreads / kWarp;
  Value one = idx(1), N = g.N, K = g.K;
  Value blocks = arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, N, idx(kWarps - 1)), idx(kWarps));
  auto launch = gpu::LaunchOp::create(b, loc, blocks, g.M, g.gridZ ? g.gridZ : one, idx(kThreads), one, one);
  OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
  if (g.prologue)
    g.prologue(k, loc, launch.getBlockIds().z);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(k, loc, v).getResult(); };
  Value tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(k, loc, tid, c(kWarp));
  Value o = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, launch.getBlockIds().x, c(kWarps)),
                                  arith::DivUIOp::create(k, loc, tid, c(kWarp)));
  Value m = launch.getBlockIds().y;
  auto inRange = scf::IfOp::create(k, loc, TypeRange{},
                                   arith::CmpIOp::create(k, loc, arith::CmpIPredicate::ult, o, N), false);
  OpBuilder t = inRange.getThenBodyBuilder();
  Value zero = arith::ConstantFloatOp::create(t, loc, t.getF32Type(), APFloat(0.0f));
  auto dot = scf::ForOp::create(t, loc, lane, K, arith::ConstantIndexOp::create(t, loc, kWarp), ValueRange{zero},
                                [&](OpBuilder &p, Location l, Value d, ValueRange acc) {
                                  Value a = g.loadA(p, l, m, d);
                                  Value w = g.loadW(p, l, m, o, d);
                                  scf::YieldOp::create(p, l, arith::AddFOp::create(p, l, acc[0],
                                                                                    arith::MulFOp::create(p, l, a, w))
                                                                 .getResult());
                                });
  Value sum = dot.getResult(0);
  for (int32_t offset = kWarp / 2; offset > 0; offset /= 2) {
    auto other = gpu::ShuffleOp::create(t, loc, sum, offset, int32_t(kWarp), gpu::ShuffleMode::XOR);
    sum = arith::AddFOp::create(t, loc, sum, other.getShuffleResult());
  }
  Value first = arith::CmpIOp::create(t, loc, arith::CmpIPredicate::eq, lane, arith::ConstantIndexOp::create(t, loc, 0));
  auto write = scf::IfOp::create(t, loc, TypeRange{}, first, false);
  OpBuilder w = write.getThenBodyBuilder();
  g.store(w, loc, m, o, sum);
  gpu::TerminatorOp::create(k, loc);
}

namespace {
/// C[r, col] = C[r, col] + sum: the projection's accumulation.
auto accumulateInto(Value C) {
  return [C](OpBuilder &o, Location l, Value r, Value col, Value sum) {
    Value old = memref::LoadOp::create(o, l, C, ValueRange{r, col});
    memref::StoreOp::create(o, l, arith::AddFOp::create(o, l, old, sum), C, ValueRange{r, col});
  };
}
auto loadFrom(Value X) {
  return [X](OpBuilder &o, Location l, Value r, Value d) {
    return memref::LoadOp::create(o, l, X, ValueRange{r, d}).getResult();
  };
}

void buildTiledKernel(OpBuilder &b, Location loc, Value A, Value W, Value C, Value M, Value N, Value K) {
  auto ceilDiv = [&](Value x, int64_t by) {
    return arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, x, arith::ConstantIndexOp::create(b, loc, by - 1)),
                                  arith::ConstantIndexOp::create(b, loc, by))
        .getResult();
  };
  TiledGemm g;
  g.gridX = ceilDiv(N, kTile);
  g.gridY = ceilDiv(M, kTile);
  g.N = N;
  g.K = K;
  g.rows = [M](OpBuilder &o, Location l, Value blockY) {
    Value row0 = arith::MulIOp::create(o, l, blockY, arith::ConstantIndexOp::create(o, l, kTile));
    return std::make_tuple(Value(), row0, M);
  };
  g.loadA = loadFrom(A);
  g.loadW = loadFrom(W);
  g.store = accumulateInto(C);
  buildTiledGemm(b, loc, g);
}

/// Few rows (decode): a warp per output C[m, o]; its lanes read W's row o
/// (and A's row m) 32 consecutive values at a time, coalesced, and add
/// their partial sums with shuffles. Every lane of a warp has the same o, so
/// a warp past N is out as a whole and the shuffles see full warps.
void buildWarpKernel(OpBuilder &b, Location loc, Value A, Value W, Value C, Value M, Value N, Value K) {
  WarpGemv g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.loadA = loadFrom(A);
  g.loadW = [W](OpBuilder &o, Location l, Value, Value col, Value d) {
    return memref::LoadOp::create(o, l, W, ValueRange{col, d}).getResult();
  };
  g.store = accumulateInto(C);
  buildWarpGemv(b, loc, g);
}

/// Per group g = blockIdx.z: C[t, g, o] += A[t, g, d] * W[g, o, d], tiled
/// from `minRows` rows; below, a warp per output when `warpBelow`, else an
/// empty branch for the caller to fill.
void buildGroupedKernels(OpBuilder &b, Location loc, Value A, Value W, Value C, int64_t minRows, bool warpBelow) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value M = memref::DimOp::create(b, loc, A, 0), G = memref::DimOp::create(b, loc, W, 0),
        N = memref::DimOp::create(b, loc, W, 1), K = memref::DimOp::create(b, loc, W, 2);
  auto group = std::make_shared<Value>();
  auto prologue = [group](OpBuilder &, Location, Value z) { *group = z; };
  auto loadA = [A, group](OpBuilder &o, Location l, Value r, Value d) {
    return memref::LoadOp::create(o, l, A, ValueRange{r, *group, d}).getResult();
  };
  auto store = [C, group](OpBuilder &o, Location l, Value r, Value col, Value sum) {
    Value old = memref::LoadOp::create(o, l, C, ValueRange{r, *group, col});
    memref::StoreOp::create(o, l, arith::AddFOp::create(o, l, old, sum), C, ValueRange{r, *group, col});
  };
  auto ceilDiv = [&](Value x, int64_t by) {
    return arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, x, idx(by - 1)), idx(by)).getResult();
  };
  Value gridX = ceilDiv(N, kTile), gridY = ceilDiv(M, kTile);
  Value tiled = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, M, idx(minRows));
  auto choice = scf::IfOp::create(b, loc, TypeRange{}, tiled, /*withElse=*/true);
  {
    OpBuilder t = choice.getThenBodyBuilder();
    TiledGemm g;
    g.gridX = gridX;
    g.gridY = gridY;
    g.gridZ = G;
    g.N = N;
    g.K = K;
    g.prologue = prologue;
    g.rows = [M](OpBuilder &o, Location l, Value blockY) {
      Value row0 = arith::MulIOp::create(o, l, blockY, arith::ConstantIndexOp::create(o, l, kTile));
      return std::make_tuple(Value(), row0, M);
    };
    g.loadA = loadA;
    g.loadW = [W, group](OpBuilder &o, Location l, Value col, Value d) {
      return memref::LoadOp::create(o, l, W, ValueRange{*group, col, d}).getResult();
    };
    g.store = store;
    buildTiledGemm(t, loc, g);
  }
  if (!warpBelow)
    return;
  OpBuilder e = OpBuilder::atBlockBegin(choice.elseBlock());
  WarpGemv g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.gridZ = G;
  g.prologue = prologue;
  g.loadA = loadA;
  g.loadW = [W, group](OpBuilder &o, Location l, Value, Value col, Value d) {
    return memref::LoadOp::create(o, l, W, ValueRange{*group, col, d}).getResult();
  };
  g.store = store;
  buildWarpGemv(e, loc, g);
}

struct GpuTiledMatmulPass : impl::GpuTiledMatmulBase<GpuTiledMatmulPass> {
  using GpuTiledMatmulBase::GpuTiledMatmulBase;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> matmuls, grouped;
    getOperation().walk([&](linalg::GenericOp g) {
      if (g->getParentOfType<gpu::GPUModuleOp>() || g->getParentOfType<gpu::LaunchOp>())
        return;
      if (isRowsTimesTransposed(g))
        matmuls.push_back(g);
      else if (isGroupedRowsTimesTransposed(g))
        grouped.push_back(g);
    });
    for (linalg::GenericOp g : grouped) {
      OpBuilder b(g);
      // Batch-invariant: below min-rows the generic stays (one order of sums).
      buildGroupedKernels(b, g.getLoc(), g.getDpsInputs()[0], g.getDpsInputs()[1], g.getDpsInits()[0], minRows,
                          /*warpBelow=*/!batchInvariant);
      if (batchInvariant) {
        auto choice = llvm::cast<scf::IfOp>(g->getPrevNode());
        g->moveBefore(choice.elseBlock()->getTerminator());
        continue;
      }
      g.erase();
    }
    for (linalg::GenericOp g : matmuls) {
      OpBuilder b(g);
      Location loc = g.getLoc();
      Value A = g.getDpsInputs()[0], W = g.getDpsInputs()[1], C = g.getDpsInits()[0];
      Value M = memref::DimOp::create(b, loc, A, 0), K = memref::DimOp::create(b, loc, A, 1),
            N = memref::DimOp::create(b, loc, W, 0);
      Value tiled = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, M,
                                          arith::ConstantIndexOp::create(b, loc, minRows));
      auto choice = scf::IfOp::create(b, loc, TypeRange{}, tiled, /*withElse=*/true);
      OpBuilder t = choice.getThenBodyBuilder();
      buildTiledKernel(t, loc, A, W, C, M, N, K);
      if (batchInvariant) {
        g->moveBefore(choice.elseBlock()->getTerminator());
        continue;
      }
      OpBuilder e = OpBuilder::atBlockBegin(choice.elseBlock());
      buildWarpKernel(e, loc, A, W, C, M, N, K);
      g.erase();
    }
  }
};
} // namespace
} // namespace mlir::dsf
