//===- GpuBlockReduce.cpp - dsf-gpu-block-reduce --------------------------===//
//
// A reduction generic becomes, through parallel loops, one thread per output
// looping over the whole reduction. At decode the outputs are one token's:
// the indexer's top-k counts ~46 passes over every cache entry with one
// thread each, an RMSNorm sums 5,120 squares in one thread, the mHC 20,480.
// Such reductions run here as a block per output instead: 256 threads take
// the reduction points in strides, then combine through warp shuffles and
// shared memory. Order-free combinations (an integer sum, a float max or
// min) are exact; float sums of a static length from `min-sum-points` add
// in another order than the CPU's, the same for any number of tokens.
// An elementwise generic right after that reads the result broadcast over
// its trailing dimensions (an RMSNorm's scaling by its row's sum of
// squares) runs in the same block once the result is written: one launch
// a norm rather than two, the same values bit for bit.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUBLOCKREDUCE
#include "lowering/Passes.h.inc"

namespace {
constexpr int64_t kThreads = 256, kWarp = 32;

/// The combining op of a reduction this pass takes: the yield is
/// combine(out, value) with `out` used nowhere else, and the combination is
/// order-free or a float sum of a static length of at least `minSumPoints`.
Operation *blockCombiner(linalg::GenericOp g, int64_t minSumPoints) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInits() != 1 || g.getNumReductionLoops() == 0)
    return nullptr;
  // Parallel dimensions first, the output indexed by exactly them.
  auto iterators = g.getIteratorTypesArray();
  unsigned parallel = g.getNumParallelLoops();
  for (unsigned i = 0; i < iterators.size(); ++i)
    if ((i < parallel) != (iterators[i] == utils::IteratorType::parallel))
      return nullptr;
  AffineMap outMap = g.getMatchingIndexingMap(g.getDpsInitOperand(0));
  if (outMap != AffineMap::getMultiDimIdentityMap(g.getNumLoops(), g.getContext()).getMajorSubMap(parallel))
    return nullptr;
  Block &body = g.getRegion().front();
  auto yield = llvm::cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return nullptr;
  Operation *combine = yield.getOperand(0).getDefiningOp();
  BlockArgument out = body.getArguments().back();
  if (!combine || combine->getBlock() != &body || combine->getNumOperands() != 2 || !out.hasOneUse() ||
      (combine->getOperand(0) != out && combine->getOperand(1) != out))
    return nullptr;
  Type type = out.getType();
  if (llvm::isa<arith::AddIOp>(combine) && type.isInteger(32))
    return combine;
  if (llvm::isa<arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(combine) && type.isF32())
    return combine;
  // A float sum changes with its order. One of a static length (not one
  // that depends on the tokens) is summed the same way for any number of
  // tokens, so a decode still equals its prefill; long ones (norms over the
  // model width, the mHC's streams) are where one thread per output is slow.
  if (llvm::isa<arith::AddFOp>(combine) && type.isF32()) {
    int64_t points = 1;
    SmallVector<int64_t> ranges = llvm::cast<linalg::LinalgOp>(g.getOperation()).getStaticLoopRanges();
    for (unsigned i = parallel; i < ranges.size(); ++i) {
      if (ShapedType::isDynamic(ranges[i]))
        return nullptr;
      points *= ranges[i];
    }
    if (points >= minSumPoints)
      return combine;
  }
  return nullptr;
}

/// Points of a row of the consumer a block computes at most: 64 a thread,
/// so that a consumer over a long row (one token's logits) keeps a kernel
/// of its own with a thread per element.
constexpr int64_t kConsumerRowPointsAtMost = 64 * kThreads;

/// The generic that consumes `g`'s result row by row (elementwiseConsumer
/// reading it through the map of `g`'s parallel dimensions), for the same
/// block to compute once the result is written: a block then writes only
/// its row's elements, after its row's reduction. Its other dimensions are
/// static, at most kConsumerRowPointsAtMost points; else null.
linalg::GenericOp rowConsumer(linalg::GenericOp g) {
  linalg::GenericOp c = elementwiseConsumer(g, g.getDpsInits()[0], g.getNumParallelLoops());
  if (!c)
    return {};
  int64_t points = 1;
  SmallVector<int64_t> ranges = llvm::cast<linalg::LinalgOp>(c.getOperation()).getStaticLoopRanges();
  for (unsigned i = g.getNumParallelLoops(); i < ranges.size(); ++i) {
    if (ShapedType::isDynamic(ranges[i]))
      return {};
    points *= ranges[i];
  }
  return points <= kConsumerRowPointsAtMost ? c : linalg::GenericOp();
}

struct GpuBlockReducePass : impl::GpuBlockReduceBase<GpuBlockReducePass> {
  using GpuBlockReduceBase::GpuBlockReduceBase;
  void rewrite(linalg::GenericOp g, Operation *combineOp, linalg::GenericOp consumer) {
    OpBuilder b(g);
    Location loc = g.getLoc();
    MLIRContext *ctx = b.getContext();
    auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
    unsigned parallel = g.getNumParallelLoops(), loops = g.getNumLoops();
    SmallVector<Value> extents = loopExtents(b, loc, g);
    Value outputs = idx(b, 1), points = idx(b, 1);
    for (unsigned i = 0; i < loops; ++i)
      (i < parallel ? outputs : points) = arith::MulIOp::create(b, loc, i < parallel ? outputs : points, extents[i]);
    Block &body = g.getRegion().front();
    Type type = body.getArguments().back().getType();
    auto shared = MemRefType::get({kThreads / kWarp}, type, MemRefLayoutAttrInterface{},
                                  gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
    // The fill is found from the reduction's place, before the kernel moves
    // down to its consumer's (only allocations lie between).
    linalg::FillOp initialized = fillBefore(g, g.getDpsInits()[0]);
    SmallVector<Value> consumerExtents;
    Value consumerPoints;
    if (consumer) {
      b.setInsertionPoint(consumer);
      consumerExtents = loopExtents(b, loc, consumer);
      consumerPoints = idx(b, 1);
      for (unsigned i = parallel; i < consumerExtents.size(); ++i)
        consumerPoints = arith::MulIOp::create(b, loc, consumerPoints, consumerExtents[i]);
    }
    auto launch = gpu::LaunchOp::create(b, loc, outputs, idx(b, 1), idx(b, 1), idx(b, kThreads), idx(b, 1), idx(b, 1),
                                        nullptr, nullptr, ValueRange{}, TypeRange{shared});
    OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value partials = launch.getWorkgroupAttributions()[0];
    Value tid = launch.getThreadIds().x;
    // The output's indices, from the block id (row-major).
    SmallVector<Value> index(loops);
    Value rest = launch.getBlockIds().x;
    for (unsigned i = parallel; i-- > 0;) {
      index[i] = arith::RemUIOp::create(k, loc, rest, extents[i]);
      rest = arith::DivUIOp::create(k, loc, rest, extents[i]);
    }
    auto combine = [&](OpBuilder &o, Value x, Value y) -> Value {
      IRMapping m;
      Operation *c = o.clone(*combineOp, m);
      c->setOperands({x, y});
      return c->getResult(0);
    };
    // The identity of the combination, as this thread's start.
    Value identity;
    if (type.isInteger(32))
      identity = arith::ConstantIntOp::create(k, loc, 0, 32);
    else if (llvm::isa<arith::AddFOp>(combineOp))
      identity = arith::ConstantFloatOp::create(k, loc, k.getF32Type(), APFloat(0.0f));
    else {
      bool isMax = llvm::isa<arith::MaximumFOp, arith::MaxNumFOp>(combineOp);
      identity = arith::ConstantFloatOp::create(k, loc, k.getF32Type(),
                                                APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/isMax));
    }
    // The output filled with the identity just before (a sum's zero, a
    // maximum's -inf, an integer count's 0): the block's result is the
    // output's value, written without reading it, and the fill's kernel
    // goes (one of a norm's three launches).
    if (initialized) {
      Attribute fillValue, identityValue;
      if (!matchPattern(initialized.getDpsInputs()[0], m_Constant(&fillValue)) ||
          !matchPattern(identity, m_Constant(&identityValue)) || fillValue != identityValue)
        initialized = nullptr;
    }
    auto strided = scf::ForOp::create(
        k, loc, tid, points, idx(k, kThreads), ValueRange{identity},
        [&](OpBuilder &o, Location l, Value point, ValueRange acc) {
          SmallVector<Value> at(index);
          Value r = point;
          for (unsigned i = loops; i-- > parallel;) {
            at[i] = arith::RemUIOp::create(o, l, r, extents[i]);
            r = arith::DivUIOp::create(o, l, r, extents[i]);
          }
          IRMapping m;
          mapInputsAt(o, l, g, at, m);
          SmallVector<Operation *> ops;
          for (Operation &op : body.without_terminator())
            if (&op != combineOp)
              ops.push_back(&op);
          cloneAt(o, ops, at, m);
          BlockArgument out = body.getArguments().back();
          Value value = m.lookup(combineOp->getOperand(0) == out ? combineOp->getOperand(1) : combineOp->getOperand(0));
          scf::YieldOp::create(o, l, combine(o, acc[0], value));
        });
    Value mine = strided.getResult(0);
    mine = warpAllReduce(k, loc, mine, combine);
    Value lane = arith::RemUIOp::create(k, loc, tid, idx(k, kWarp));
    Value warp = arith::DivUIOp::create(k, loc, tid, idx(k, kWarp));
    auto isZero = [&](OpBuilder &o, Value v) {
      return arith::CmpIOp::create(o, loc, arith::CmpIPredicate::eq, v, idx(o, 0)).getResult();
    };
    auto first = scf::IfOp::create(k, loc, TypeRange{}, isZero(k, lane), false);
    {
      OpBuilder t = first.getThenBodyBuilder();
      memref::StoreOp::create(t, loc, mine, partials, ValueRange{warp});
    }
    gpu::BarrierOp::create(k, loc);
    auto last = scf::IfOp::create(k, loc, TypeRange{}, isZero(k, warp), false);
    {
      OpBuilder t = last.getThenBodyBuilder();
      // Lanes past the warps' count read the identity.
      Value have = arith::CmpIOp::create(t, loc, arith::CmpIPredicate::ult, lane, idx(t, kThreads / kWarp));
      auto read = scf::IfOp::create(t, loc, TypeRange{type}, have, true);
      OpBuilder rt = read.getThenBodyBuilder();
      scf::YieldOp::create(rt, loc, memref::LoadOp::create(rt, loc, partials, ValueRange{lane}).getResult());
      OpBuilder re = read.getElseBodyBuilder();
      scf::YieldOp::create(re, loc, re.clone(*identity.getDefiningOp())->getResult(0));
      Value total = warpAllReduce(t, loc, read.getResult(0), combine);
      auto write = scf::IfOp::create(t, loc, TypeRange{}, isZero(t, lane), false);
      OpBuilder w = write.getThenBodyBuilder();
      SmallVector<Value> outIndex(index.begin(), index.begin() + parallel);
      Value output = g.getDpsInits()[0];
      Value combined = total;
      if (!initialized) {
        Value old = memref::LoadOp::create(w, loc, output, outIndex);
        BlockArgument out = body.getArguments().back();
        // The generic's own combination of the output's value with the rest.
        combined = combineOp->getOperand(0) == out ? combine(w, old, total) : combine(w, total, old);
      }
      memref::StoreOp::create(w, loc, combined, output, outIndex);
    }
    if (consumer) {
      // The block's row of the consumer once lane 0 has written the result
      // (a barrier makes a block's global writes visible to the block):
      // its points in strides of 256, the body cloned with its inputs loaded.
      gpu::BarrierOp::create(k, loc);
      scf::ForOp::create(k, loc, tid, consumerPoints, idx(k, kThreads), ValueRange{},
                         [&](OpBuilder &o, Location l, Value point, ValueRange) {
                           SmallVector<Value> at(index.begin(), index.begin() + parallel);
                           at.resize(consumerExtents.size());
                           Value r = point;
                           for (unsigned i = consumerExtents.size(); i-- > parallel;) {
                             at[i] = arith::RemUIOp::create(o, l, r, consumerExtents[i]);
                             r = arith::DivUIOp::create(o, l, r, consumerExtents[i]);
                           }
                           // The row's result as lane 0 stored it, read back.
                           computeConsumerAt(o, l, consumer, at, g.getDpsInits()[0], Value());
                           scf::YieldOp::create(o, l);
                         });
    }
    gpu::TerminatorOp::create(k, loc);
    g.erase();
    if (initialized)
      initialized.erase();
    if (consumer)
      consumer.erase();
  }

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Operation *>> found;
    getOperation().walk([&](linalg::GenericOp g) {
      if (insideKernel(g))
        return;
      if (Operation *c = blockCombiner(g, minSumPoints))
        found.push_back({g, c});
    });
    // Consumers are found before any rewrite: a consumer that is itself a
    // reduction this pass takes is never one (it is all parallel).
    SmallVector<linalg::GenericOp> consumers;
    for (auto &[g, c] : found)
      consumers.push_back(fuseConsumers ? rowConsumer(g) : linalg::GenericOp());
    for (auto [found, consumer] : llvm::zip(found, consumers))
      rewrite(found.first, found.second, consumer);
  }
};
} // namespace
} // namespace mlir::dsf
