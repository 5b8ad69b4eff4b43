//===- GpuSelectTopk.cpp - dsf-gpu-select-topk ------------------------------===//
//
// dsf-to-linalg selects the indexer's top-k in a helper per (k,
// threshold-from) (`dsf.topk`), whose linalg is a threshold search: 32
// passes for the k-th largest key, a pass per index bit for the ties, then
// counts and a binary search per slot, each pass a few kernels over
// [tokens, entries] buffers (some 150 launches a selection). On bufferized
// IR this pass replaces the helper's body with one kernel, a block of 512
// threads per token, that selects the same entries:
//
//  1. tau, the k-th largest key (the scores' bits ordered as unsigned keys,
//     as the linalg makes them), by a radix select over 4 digits of 8 bits:
//     per digit a shared-memory histogram of the keys that share tau's
//     prefix, then warp 0 finds the largest digit with at least k keys at or
//     above it (each lane 8 bins, a shuffle scan, a shuffle max);
//  2. one pass over the entries in index order, 512 at a time: the ties at
//     tau ranked by a block scan, the first k - #(keys > tau) of them kept
//     (the linalg's cut: ties by index), a finite score above tau or a kept
//     tie selected, its slot given by a second block scan;
//  3. the slots past the selected ones -1.
//
// The selection (which entries, in ascending order) is the linalg's bit for
// bit: the keys, tau and the tie rule are the same; only the order of the
// work differs.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUSELECTTOPK
#include "lowering/Passes.h.inc"

namespace {
constexpr int64_t kThreads = 512, kWarp = 32, kWarps = kThreads / kWarp, kBins = 256, kBinsPerLane = kBins / kWarp;

struct Kernel {
  OpBuilder &k;
  Location loc;
  Value tid, lane, warp;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(k, loc, v); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(k, loc, v, 32); }
  Value asI32(Value v) { return arith::IndexCastOp::create(k, loc, k.getI32Type(), v); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) { return arith::CmpIOp::create(k, loc, p, x, y); }
  Value select(Value c, Value x, Value y) { return arith::SelectOp::create(k, loc, c, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(k, loc, x, y); }

  /// The inclusive sum of `v` over the lanes up to this one.
  Value warpInclusiveSum(Value v) {
    for (int32_t offset = 1; offset < kWarp; offset *= 2) {
      auto up = gpu::ShuffleOp::create(k, loc, v, offset, int32_t(kWarp), gpu::ShuffleMode::UP);
      v = add(v, select(up.getValid(), up.getShuffleResult(), i32(0)));
    }
    return v;
  }

  /// The block's exclusive sum of `flag` (i32) in thread order, and the
  /// block's total. `sums` holds kWarps + 1 i32; every thread must call.
  std::pair<Value, Value> blockScan(Value flag, Value sums) {
    Value inclusive = warpInclusiveSum(flag);
    auto last = scf::IfOp::create(k, loc, TypeRange{}, cmp(arith::CmpIPredicate::eq, lane, index(kWarp - 1)), false);
    {
      OpBuilder::InsertionGuard guard(k);
      k.setInsertionPointToStart(last.thenBlock());
      memref::StoreOp::create(k, loc, inclusive, sums, ValueRange{warp});
    }
    gpu::BarrierOp::create(k, loc);
    auto first = scf::IfOp::create(k, loc, TypeRange{}, cmp(arith::CmpIPredicate::eq, warp, index(0)), false);
    {
      OpBuilder::InsertionGuard guard(k);
      k.setInsertionPointToStart(first.thenBlock());
      Value have = cmp(arith::CmpIPredicate::ult, lane, index(kWarps));
      // Only the lanes of a warp read, each its own warp's slot: a lane past
      // the warps reading slot 0 while lane 0 writes it back would be a
      // write-after-read between lanes (racecheck's hazard), ordered here
      // only by the shuffles in between.
      auto read = scf::IfOp::create(k, loc, TypeRange{k.getI32Type()}, have, true);
      {
        OpBuilder::InsertionGuard g2(k);
        k.setInsertionPointToStart(read.thenBlock());
        scf::YieldOp::create(k, loc, memref::LoadOp::create(k, loc, sums, ValueRange{lane}).getResult());
        k.setInsertionPointToStart(read.elseBlock());
        scf::YieldOp::create(k, loc, i32(0));
      }
      Value total = read.getResult(0);
      // Each lane reads and writes only its own warp's slot (and the last
      // the total's), so warp 0 needs no barrier of its own.
      Value upTo = warpInclusiveSum(total);
      auto write = scf::IfOp::create(k, loc, TypeRange{}, have, false);
      {
        OpBuilder::InsertionGuard g2(k);
        k.setInsertionPointToStart(write.thenBlock());
        memref::StoreOp::create(k, loc, arith::SubIOp::create(k, loc, upTo, total), sums, ValueRange{lane});
        auto isLast = scf::IfOp::create(k, loc, TypeRange{}, cmp(arith::CmpIPredicate::eq, lane, index(kWarps - 1)),
                                        false);
        k.setInsertionPointToStart(isLast.thenBlock());
        memref::StoreOp::create(k, loc, upTo, sums, ValueRange{index(kWarps)});
      }
    }
    gpu::BarrierOp::create(k, loc);
    Value base = memref::LoadOp::create(k, loc, sums, ValueRange{warp});
    Value exclusive = arith::SubIOp::create(k, loc, add(base, inclusive), flag);
    Value blockTotal = memref::LoadOp::create(k, loc, sums, ValueRange{index(kWarps)});
    return {exclusive, blockTotal};
  }
};

struct GpuSelectTopkPass : impl::GpuSelectTopkBase<GpuSelectTopkPass> {
  void rewrite(func::FuncOp helper, int64_t topK) {
    MLIRContext *ctx = helper.getContext();
    // Named after the indexer in profiles (dsf-name-kernels).
    Location loc = NameLoc::get(StringAttr::get(ctx, "index_topk"), helper.getLoc());
    Block &body = helper.getBody().front();
    Value scores = body.getArgument(0);
    clearBody(body);
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
    Value tokens = memref::DimOp::create(b, loc, scores, idx(0));
    Value entries = memref::DimOp::create(b, loc, scores, idx(1));
    auto outType = llvm::cast<MemRefType>(helper.getFunctionType().getResult(0));
    Value out = memref::AllocOp::create(b, loc, outType, ValueRange{tokens});
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    auto sharedI32 = [&](int64_t n) { return MemRefType::get({n}, b.getI32Type(), MemRefLayoutAttrInterface{}, workgroup); };
    auto launch = gpu::LaunchOp::create(b, loc, tokens, idx(1), idx(1), idx(kThreads), idx(1), idx(1), nullptr, nullptr,
                                        ValueRange{},
                                        TypeRange{sharedI32(kBins), sharedI32(2), sharedI32(kWarps + 1),
                                                  sharedI32(kWarps + 1)});
    func::ReturnOp::create(b, loc, out);

    OpBuilder kb = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value hist = launch.getWorkgroupAttributions()[0], chosen = launch.getWorkgroupAttributions()[1];
    Value tieSums = launch.getWorkgroupAttributions()[2], selSums = launch.getWorkgroupAttributions()[3];
    Value tid = launch.getThreadIds().x, t = launch.getBlockIds().x;
    Kernel K{kb, loc, tid, arith::RemUIOp::create(kb, loc, tid, arith::ConstantIndexOp::create(kb, loc, kWarp)),
             arith::DivUIOp::create(kb, loc, tid, arith::ConstantIndexOp::create(kb, loc, kWarp))};
    using P = arith::CmpIPredicate;
    Value k32 = K.i32(topK);
    // key(j): the score + 0 (one key for -0 and +0), its bits flipped so that
    // unsigned order is the floats' order.
    auto keyOf = [&](OpBuilder &o, Value score) -> Value {
      Value x = arith::AddFOp::create(o, loc, score, arith::ConstantFloatOp::create(o, loc, o.getF32Type(), APFloat(0.0f)));
      Value bits = arith::BitcastOp::create(o, loc, o.getI32Type(), x);
      Value negative = arith::ShRSIOp::create(o, loc, bits, arith::ConstantIntOp::create(o, loc, 31, 32));
      Value key = arith::XOrIOp::create(
          o, loc, bits, arith::AndIOp::create(o, loc, negative, arith::ConstantIntOp::create(o, loc, 0x7fffffff, 32)));
      return arith::XOrIOp::create(o, loc, key, arith::ConstantIntOp::create(o, loc, INT32_MIN, 32));
    };

    // 1. tau, a digit at a time from the top.
    Value prefix = K.i32(0), greater = K.i32(0);
    for (int digit = 0; digit < 4; ++digit) {
      int64_t shift = 24 - 8 * digit;
      uint32_t highMask = digit == 0 ? 0u : (0xffffffffu << (shift + 8));
      auto zero = scf::IfOp::create(kb, loc, TypeRange{}, K.cmp(P::ult, tid, K.index(kBins)), false);
      {
        OpBuilder::InsertionGuard guard(kb);
        kb.setInsertionPointToStart(zero.thenBlock());
        memref::StoreOp::create(kb, loc, K.i32(0), hist, ValueRange{tid});
      }
      gpu::BarrierOp::create(kb, loc);
      scf::ForOp::create(kb, loc, tid, entries, K.index(kThreads), ValueRange{},
                         [&](OpBuilder &o, Location l, Value j, ValueRange) {
                           Value key = keyOf(o, memref::LoadOp::create(o, l, scores, ValueRange{t, j}));
                           Value high = arith::AndIOp::create(o, l, key, arith::ConstantIntOp::create(o, l, int32_t(highMask), 32));
                           Value match = arith::CmpIOp::create(o, l, P::eq, high, prefix);
                           auto in = scf::IfOp::create(o, l, TypeRange{}, match, false);
                           OpBuilder w = in.getThenBodyBuilder();
                           Value bin = arith::AndIOp::create(
                               w, l, arith::ShRUIOp::create(w, l, key, arith::ConstantIntOp::create(w, l, shift, 32)),
                               arith::ConstantIntOp::create(w, l, kBins - 1, 32));
                           memref::AtomicRMWOp::create(w, l, arith::AtomicRMWKind::addi,
                                                       arith::ConstantIntOp::create(w, l, 1, 32), hist,
                                                       ValueRange{arith::IndexCastOp::create(w, l, w.getIndexType(), bin)});
                           scf::YieldOp::create(o, l);
                         });
      gpu::BarrierOp::create(kb, loc);
      // Warp 0: lane L holds bins 255 - 8L down to 248 - 8L. The digit is the
      // largest d with greater + #(keys with tau's prefix and digit >= d) >= k;
      // none (fewer than k keys in all): 0, as the bitwise search leaves it.
      auto pick = scf::IfOp::create(kb, loc, TypeRange{}, K.cmp(P::eq, K.warp, K.index(0)), false);
      {
        OpBuilder::InsertionGuard guard(kb);
        kb.setInsertionPointToStart(pick.thenBlock());
        Value top = arith::SubIOp::create(kb, loc, K.index(kBins - 1),
                                          arith::MulIOp::create(kb, loc, K.lane, K.index(kBinsPerLane)));
        SmallVector<Value> counts;
        Value mine = K.i32(0);
        for (int64_t i = 0; i < kBinsPerLane; ++i) {
          Value bin = arith::SubIOp::create(kb, loc, top, K.index(i));
          counts.push_back(memref::LoadOp::create(kb, loc, hist, ValueRange{bin}));
          mine = K.add(mine, counts.back());
        }
        Value above = arith::SubIOp::create(kb, loc, K.warpInclusiveSum(mine), mine);
        Value s = K.add(greater, above);
        Value candidate = K.i32(-1), candidateGreater = K.i32(0), beforeLast = s;
        for (int64_t i = 0; i < kBinsPerLane; ++i) {
          Value digitValue = K.asI32(arith::SubIOp::create(kb, loc, top, K.index(i)));
          Value inclusive = K.add(s, counts[i]);
          Value hit = arith::AndIOp::create(kb, loc, K.cmp(P::sge, inclusive, k32), K.cmp(P::eq, candidate, K.i32(-1)));
          candidate = K.select(hit, digitValue, candidate);
          candidateGreater = K.select(hit, s, candidateGreater);
          beforeLast = s;
          s = inclusive;
        }
        Value best = warpAllReduce(kb, loc, candidate, [&](OpBuilder &o, Value mine, Value theirs) {
          return arith::MaxSIOp::create(o, loc, mine, theirs).getResult();
        });
        Value owner = arith::AndIOp::create(kb, loc, K.cmp(P::eq, best, candidate), K.cmp(P::ne, candidate, K.i32(-1)));
        Value none = arith::AndIOp::create(kb, loc, K.cmp(P::eq, best, K.i32(-1)),
                                           K.cmp(P::eq, K.lane, K.index(kWarp - 1)));
        auto writeOwner = scf::IfOp::create(kb, loc, TypeRange{}, owner, false);
        {
          OpBuilder::InsertionGuard g2(kb);
          kb.setInsertionPointToStart(writeOwner.thenBlock());
          memref::StoreOp::create(kb, loc, candidate, chosen, ValueRange{K.index(0)});
          memref::StoreOp::create(kb, loc, candidateGreater, chosen, ValueRange{K.index(1)});
        }
        auto writeNone = scf::IfOp::create(kb, loc, TypeRange{}, none, false);
        {
          OpBuilder::InsertionGuard g2(kb);
          kb.setInsertionPointToStart(writeNone.thenBlock());
          memref::StoreOp::create(kb, loc, K.i32(0), chosen, ValueRange{K.index(0)});
          // Lane 31's last bin is digit 0: everything before it is above.
          memref::StoreOp::create(kb, loc, beforeLast, chosen, ValueRange{K.index(1)});
        }
      }
      gpu::BarrierOp::create(kb, loc);
      Value d = memref::LoadOp::create(kb, loc, chosen, ValueRange{K.index(0)});
      greater = memref::LoadOp::create(kb, loc, chosen, ValueRange{K.index(1)});
      prefix = arith::OrIOp::create(kb, loc, prefix, arith::ShLIOp::create(kb, loc, d, K.i32(shift)));
      // Warp 0 writes `chosen` again only after the next digit's two barriers.
    }
    Value tau = prefix;
    Value allowed = arith::SubIOp::create(kb, loc, k32, greater);

    // 2. Index order, a chunk of kThreads entries at a time.
    auto chunks = scf::ForOp::create(
        kb, loc, K.index(0), entries, K.index(kThreads), ValueRange{K.i32(0), K.i32(0)},
        [&](OpBuilder &o, Location l, Value start, ValueRange bases) {
          OpBuilder::InsertionGuard guard(kb);
          kb.setInsertionPoint(o.getInsertionBlock(), o.getInsertionPoint());
          Value j = K.add(start, tid);
          Value valid = K.cmp(P::ult, j, entries);
          auto read = scf::IfOp::create(kb, l, TypeRange{kb.getF32Type()}, valid, true);
          {
            OpBuilder::InsertionGuard g2(kb);
            kb.setInsertionPointToStart(read.thenBlock());
            scf::YieldOp::create(kb, l, memref::LoadOp::create(kb, l, scores, ValueRange{t, j}).getResult());
            kb.setInsertionPointToStart(read.elseBlock());
            scf::YieldOp::create(kb, l, arith::ConstantFloatOp::create(kb, l, kb.getF32Type(),
                                                                       APFloat::getInf(APFloat::IEEEsingle(), true))
                                            .getResult());
          }
          Value score = read.getResult(0);
          Value key = keyOf(kb, score);
          Value finite = arith::CmpFOp::create(
              kb, l, arith::CmpFPredicate::OGT, score,
              arith::ConstantFloatOp::create(kb, l, kb.getF32Type(), APFloat::getInf(APFloat::IEEEsingle(), true)));
          Value tie = arith::AndIOp::create(kb, l, valid, K.cmp(P::eq, key, tau));
          Value over = arith::AndIOp::create(kb, l, valid, K.cmp(P::ugt, key, tau));
          auto [tieBefore, ties] = K.blockScan(arith::ExtUIOp::create(kb, l, kb.getI32Type(), tie), tieSums);
          Value tieRank = K.add(bases[0], tieBefore);
          Value keptTie = arith::AndIOp::create(kb, l, tie, K.cmp(P::slt, tieRank, allowed));
          Value selected = arith::AndIOp::create(kb, l, finite, arith::OrIOp::create(kb, l, over, keptTie));
          auto [selBefore, chosenHere] = K.blockScan(arith::ExtUIOp::create(kb, l, kb.getI32Type(), selected), selSums);
          Value slot = K.add(bases[1], selBefore);
          Value write = arith::AndIOp::create(kb, l, selected, K.cmp(P::slt, slot, k32));
          auto store = scf::IfOp::create(kb, l, TypeRange{}, write, false);
          {
            OpBuilder::InsertionGuard g2(kb);
            kb.setInsertionPointToStart(store.thenBlock());
            memref::StoreOp::create(kb, l, K.asI32(j), out,
                                    ValueRange{t, arith::IndexCastOp::create(kb, l, kb.getIndexType(), slot)});
          }
          // The scans' tables are written again by the next chunk.
          gpu::BarrierOp::create(kb, l);
          scf::YieldOp::create(kb, l, ValueRange{K.add(bases[0], ties), K.add(bases[1], chosenHere)});
        });
    // 3. The slots past the selected ones.
    Value count = arith::MinSIOp::create(kb, loc, chunks.getResult(1), k32);
    Value from = K.add(arith::IndexCastOp::create(kb, loc, kb.getIndexType(), count), tid);
    scf::ForOp::create(kb, loc, from, K.index(topK), K.index(kThreads), ValueRange{},
                       [&](OpBuilder &o, Location l, Value s, ValueRange) {
                         memref::StoreOp::create(o, l, arith::ConstantIntOp::create(o, l, -1, 32), out, ValueRange{t, s});
                         scf::YieldOp::create(o, l);
                       });
    gpu::TerminatorOp::create(kb, loc);
  }

  void runOnOperation() override {
    for (auto helper : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      auto spec = helper->getAttrOfType<DictionaryAttr>("dsf.topk");
      if (!spec || helper.isExternal())
        continue;
      auto k = spec.getAs<IntegerAttr>("k");
      FunctionType type = helper.getFunctionType();
      int64_t dyn = ShapedType::kDynamic;
      Builder b(&getContext());
      if (!k || k.getInt() < 1 || type.getNumInputs() != 1 || type.getNumResults() != 1 ||
          !isIdentityBuffer(type.getInput(0), {dyn, dyn}, b.getF32Type()) ||
          !isIdentityBuffer(type.getResult(0), {dyn, k.getInt()}, b.getI32Type())) {
        helper.emitError("dsf-gpu-select-topk: a dsf.topk helper that is not a bufferized memref<?x?xf32> -> "
                         "memref<?xKxi32> function with its k");
        return signalPassFailure();
      }
      rewrite(helper, k.getInt());
    }
  }
};
} // namespace
} // namespace mlir::dsf
