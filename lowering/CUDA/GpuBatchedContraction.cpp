//===- GpuBatchedContraction.cpp - dsf-gpu-batched-contraction ------------===//
//
// Attention and the indexer compute, for each token, a small matrix product
// against rows the token gathers: logits[t, h, s] = sum_d q[t, h, d] *
// cache[sel[t, s], d], outputs[t, h, c] = sum_s p[t, h, s] * cache[sel[t, s],
// c], the window band the same way, index scores against the keys. As loops
// each output is a thread that rereads its gathered row alone. This pass
// runs each token's product as the tiled GEMM kernel (blockIdx.z the token):
// the rows gathered for a 64 x 64 tile are staged in shared memory once and
// serve 64 heads. Each output still adds its products in the order of d
// (from zero, then onto C: the generic's result when C starts at zero, as
// dsf-to-linalg's do).
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/IR/IRMapping.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUBATCHEDCONTRACTION
#include "lowering/Passes.h.inc"

namespace {
/// What the kernel needs of a matched generic.
struct Contraction {
  linalg::GenericOp generic;
  OpOperand *rows = nullptr;        // A[b, m, k]: the input the product's row comes from
  Value columnValue;                // the other factor, computed by the body from (b, n, k)
  SmallVector<Operation *> slice;   // the body ops computing it, in order
};

/// C[b, m, n] += A[b, m, k] * X(b, n, k) over k, X anything the body computes
/// without m (a gathered row, a band of the window, a key), with at least
/// `minRows` rows m when that extent is static.
std::optional<Contraction> match(linalg::GenericOp g, int64_t minRows) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInits() != 1 || g.getNumLoops() != 4)
    return std::nullopt;
  // A 64-row tile of a few heads mostly idles (the tiny models' 4 heads):
  // one thread per output is faster there.
  int64_t rows = llvm::cast<linalg::LinalgOp>(g.getOperation()).getStaticLoopRanges()[1];
  if (!ShapedType::isDynamic(rows) && rows < minRows)
    return std::nullopt;
  auto it = g.getIteratorTypesArray();
  for (unsigned i = 0; i < 4; ++i)
    if ((it[i] == utils::IteratorType::reduction) != (i == 3))
      return std::nullopt;
  MLIRContext *ctx = g.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  if (g.getMatchingIndexingMap(g.getDpsInitOperand(0)) != AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx))
    return std::nullopt;
  Block &body = g.getRegion().front();
  BlockArgument out = body.getArguments().back();
  if (!out.getType().isF32() || !out.hasOneUse())
    return std::nullopt;
  auto yield = llvm::cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || (add.getLhs() != out && add.getRhs() != out))
    return std::nullopt;
  auto mul = (add.getLhs() == out ? add.getRhs() : add.getLhs()).getDefiningOp<arith::MulFOp>();
  if (!mul || mul->getBlock() != &body)
    return std::nullopt;
  Contraction c;
  c.generic = g;
  AffineMap rowsMap = AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx);
  for (Value factor : {mul.getLhs(), mul.getRhs()}) {
    auto arg = llvm::dyn_cast<BlockArgument>(factor);
    if (!arg || arg.getOwner() != &body || arg == out)
      continue;
    OpOperand *operand = g.getDpsInputOperand(arg.getArgNumber());
    if (g.getMatchingIndexingMap(operand) == rowsMap && llvm::isa<MemRefType>(operand->get().getType()) &&
        arg.hasOneUse()) {
      c.rows = operand;
      c.columnValue = factor == mul.getLhs() ? mul.getRhs() : mul.getLhs();
      break;
    }
  }
  if (!c.rows)
    return std::nullopt;
  // The other factor's computation must not involve m (dimension 1).
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> work{c.columnValue};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body)
        continue;  // defined above the generic
      if (arg == out)
        return std::nullopt;
      if (g.getMatchingIndexingMap(g.getDpsInputOperand(arg.getArgNumber())).isFunctionOfDim(1))
        return std::nullopt;
      continue;
    }
    Operation *op = v.getDefiningOp();
    if (!op || op->getBlock() != &body || !slice.insert(op))
      continue;
    if (auto index = llvm::dyn_cast<linalg::IndexOp>(op); index && index.getDim() == 1)
      return std::nullopt;
    if (op->getNumRegions() || (!isPure(op) && !llvm::isa<memref::LoadOp>(op)))
      return std::nullopt;
    for (Value operand : op->getOperands())
      work.push_back(operand);
  }
  for (Operation &op : body)
    if (slice.contains(&op))
      c.slice.push_back(&op);
  return c;
}

struct GpuBatchedContractionPass : impl::GpuBatchedContractionBase<GpuBatchedContractionPass> {
  using GpuBatchedContractionBase::GpuBatchedContractionBase;
  void rewrite(const Contraction &c, TileMath tileMath) {
    linalg::GenericOp g = c.generic;
    OpBuilder b(g);
    Location loc = g.getLoc();
    SmallVector<Value> extents = loopExtents(b, loc, g);
    Value A = c.rows->get(), C = g.getDpsInits()[0];
    auto batch = std::make_shared<Value>();
    TiledGemm gemm;
    gemm.tile = gemmTile(tileMath, extents[2]);
    gemm.gridX = ceilDiv(b, loc, extents[2], gemm.tile.cols);
    gemm.gridY = ceilDiv(b, loc, extents[1], gemm.tile.rows);
    gemm.gridZ = extents[0];
    gemm.N = extents[2];
    gemm.K = extents[3];
    gemm.prologue = [batch](OpBuilder &, Location, Value z) { *batch = z; };
    gemm.rows = tileRowsUpTo(extents[1], gemm.tile.rows);
    gemm.loadA = [A, batch](OpBuilder &o, Location l, Value r, Value d) {
      return memref::LoadOp::create(o, l, A, ValueRange{*batch, r, d}).getResult();
    };
    gemm.loadW = [&, batch](OpBuilder &o, Location l, Value col, Value d) {
      Value zero = arith::ConstantIndexOp::create(o, l, 0);
      SmallVector<Value> at{*batch, zero, col, d};  // m is not used
      IRMapping m;
      mapInputsAt(o, l, g, at, m, /*skip=*/c.rows);
      cloneAt(o, c.slice, at, m);
      return m.lookupOrDefault(c.columnValue);
    };
    gemm.store = [C, batch](OpBuilder &o, Location l, Value r, Value col, Value sum) {
      Value old = memref::LoadOp::create(o, l, C, ValueRange{*batch, r, col});
      memref::StoreOp::create(o, l, arith::AddFOp::create(o, l, old, sum), C, ValueRange{*batch, r, col});
    };
    gemm.math = tileMath;
    buildTiledGemm(b, loc, gemm);
    g.erase();
  }

  void runOnOperation() override {
    FailureOr<TileMath> tileMath = tileMathOption(getOperation(), getArgument(), math);
    if (failed(tileMath))
      return signalPassFailure();
    SmallVector<Contraction> found;
    getOperation().walk([&](linalg::GenericOp g) {
      if (insideKernel(g))
        return;
      if (auto c = match(g, minRows))
        found.push_back(*c);
    });
    for (const Contraction &c : found)
      rewrite(c, *tileMath);
  }
};
} // namespace
} // namespace mlir::dsf
