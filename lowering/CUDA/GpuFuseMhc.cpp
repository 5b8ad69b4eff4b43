//===- GpuFuseMhc.cpp - dsf-gpu-fuse-mhc ------------------------------------===//
//
// dsf-to-linalg runs every mHC site through a helper per shape
// (`dsf.hc_site`): the residual update, the coefficients of the next site
// and the next input's collapse, as some twenty linalg ops, each a kernel
// and most of them a few threads' work at decode. On bufferized IR this pass
// replaces the helper's body with the single pass MODEL.md describes, in two
// kernels:
//
//  1. a block of 256 threads per (token, 256 channels of the width): each
//     thread reads its channel of the n streams (and, when the site updates,
//     of the block output), writes X' and the collapse there, and
//     accumulates its share of the (2+n)n projections and the sum of
//     squares; the block sums its threads' shares (warp shuffles, then the
//     warps in order) into one partial per value;
//  2. a thread per token: the partials summed in order, the logits, sigmoid,
//     the row softmax and every Sinkhorn round in registers.
//
// The update, the collapse and the small per-token arithmetic are the
// linalg's, in its order (sums from 0 in index order). The long sums (over
// n x width values) add in another order than the CPU's, the same for any
// number of tokens, so a decode still equals its prefill bit for bit.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/MhcKernels.h"
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"
#include "lowering/ScalarMath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUFUSEMHC
#include "lowering/Passes.h.inc"

namespace {
constexpr int64_t kChannels = 256, kWarp = 32, kWarps = kChannels / kWarp, kTokenThreads = 128, kMaxN = 8;

/// A helper's `dsf.hc_site` attribute.
struct Site {
  int64_t n = 0, width = 0, iters = 0;
  FloatAttr eps, normEps;
  bool update = false, collapse = false;
  int64_t mix() const { return (2 + n) * n; }
};

std::optional<Site> parseSite(DictionaryAttr spec) {
  auto n = spec.getAs<IntegerAttr>("n"), width = spec.getAs<IntegerAttr>("width"),
       iters = spec.getAs<IntegerAttr>("iters");
  auto eps = spec.getAs<FloatAttr>("eps"), normEps = spec.getAs<FloatAttr>("norm_eps");
  auto update = spec.getAs<BoolAttr>("update"), collapse = spec.getAs<BoolAttr>("collapse");
  if (!n || !width || !iters || !eps || !normEps || !update || !collapse || n.getInt() < 1 || width.getInt() < 1 ||
      iters.getInt() < 1)
    return std::nullopt;
  return Site{n.getInt(), width.getInt(), iters.getInt(), eps, normEps, update.getValue(), collapse.getValue()};
}

/// The bufferized signature dsf-to-linalg gives a site of this shape.
bool hasSiteSignature(FunctionType type, const Site &s) {
  int64_t dyn = ShapedType::kDynamic, n = s.n, w = s.width;
  SmallVector<SmallVector<int64_t>> inputs{{dyn, n, w}}, results;
  if (s.update)
    inputs.append({{dyn, w}, {dyn, n}, {dyn, n, n}});
  if (s.collapse)
    inputs.push_back({dyn, n});
  inputs.append({{s.mix(), n * w}, {s.mix()}, {3}});
  if (s.update)
    results.push_back({dyn, n, w});
  results.append({{dyn, n}, {dyn, n}, {dyn, n, n}});
  if (s.collapse)
    results.push_back({dyn, w});
  if (type.getNumInputs() != inputs.size() || type.getNumResults() != results.size())
    return false;
  for (auto [t, shape] : llvm::zip(type.getInputs(), inputs))
    if (!isIdentityBuffer(t, shape, Float32Type::get(type.getContext())))
      return false;
  for (auto [t, shape] : llvm::zip(type.getResults(), results))
    if (!isIdentityBuffer(t, shape, Float32Type::get(type.getContext())))
      return false;
  return true;
}

/// The per-token arithmetic both coefficient kernels share, the linalg's in
/// its order: rms = sqrt(sumsq / (n width) + norm_eps); logit m = mix[m] /
/// rms * scale[min(m div n, 2)] + base[m]; pre = sigmoid + eps; post = 2
/// sigmoid.
Value streamsRms(OpBuilder &b, Location loc, const Site &s, Value sumsq) {
  Value count = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(float(s.n * s.width)));
  Value mean = arith::DivFOp::create(b, loc, sumsq, count);
  return math::SqrtOp::create(b, loc, arith::AddFOp::create(b, loc, mean, arith::ConstantOp::create(b, loc, s.normEps)));
}
Value siteLogit(OpBuilder &b, Location loc, Value mix, Value rms, Value scale, Value base) {
  return arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, arith::DivFOp::create(b, loc, mix, rms), scale),
                               base);
}
Value preOf(OpBuilder &b, Location loc, Value logit, Value eps) {
  return arith::AddFOp::create(b, loc, lowering::sigmoid(b, loc, logit), eps);
}
Value postOf(OpBuilder &b, Location loc, Value logit) {
  Value two = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(2.0f));
  return arith::MulFOp::create(b, loc, two, lowering::sigmoid(b, loc, logit));
}

struct GpuFuseMhcPass : impl::GpuFuseMhcBase<GpuFuseMhcPass> {
  /// The coefficients from the pass's partial sums, a thread per token: the
  /// partials added in split order, the logits, sigmoids, the row softmax
  /// and every Sinkhorn round in registers.
  void coefficientsByThread(OpBuilder &b, Location loc, const Site &s, Value tokens, Value partials, Value scale,
                            Value base, Value pre, Value postOut, Value combOut) {
    int64_t n = s.n, mix = s.mix(), values = mix + 1;
    int64_t splits = llvm::cast<MemRefType>(partials.getType()).getDimSize(1);
    auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
    auto f32 = [&](OpBuilder &o, double v) {
      return arith::ConstantFloatOp::create(o, loc, o.getF32Type(), APFloat(float(v))).getResult();
    };
    auto ult = [&](OpBuilder &o, Value x, Value y) {
      return arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ult, x, y).getResult();
    };
    Value one = idx(b, 1);
    Value blocks = arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, tokens, idx(b, kTokenThreads - 1)),
                                          idx(b, kTokenThreads));
    auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, idx(b, kTokenThreads), one, one);
    OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value t = arith::AddIOp::create(
        k, loc, arith::MulIOp::create(k, loc, launch.getBlockIds().x, idx(k, kTokenThreads)), launch.getThreadIds().x);
    auto live = scf::IfOp::create(k, loc, TypeRange{}, ult(k, t, tokens), false);
    gpu::TerminatorOp::create(k, loc);
    OpBuilder w = live.getThenBodyBuilder();
    auto summed = scf::ForOp::create(
        w, loc, idx(w, 0), idx(w, splits), idx(w, 1), SmallVector<Value>(values, f32(w, 0)),
        [&](OpBuilder &o, Location l, Value split, ValueRange acc) {
          SmallVector<Value> out;
          for (int64_t v = 0; v < values; ++v)
            out.push_back(arith::AddFOp::create(
                o, l, acc[v], memref::LoadOp::create(o, l, partials, ValueRange{t, split, idx(o, v)})));
          scf::YieldOp::create(o, l, out);
        });
    Value rms = streamsRms(w, loc, s, summed.getResult(mix));
    SmallVector<Value> logits;
    for (int64_t m = 0; m < mix; ++m) {
      Value sc = memref::LoadOp::create(w, loc, scale, ValueRange{idx(w, std::min<int64_t>(m / n, 2))});
      Value bias = memref::LoadOp::create(w, loc, base, ValueRange{idx(w, m)});
      logits.push_back(siteLogit(w, loc, summed.getResult(m), rms, sc, bias));
    }
    Value eps = arith::ConstantOp::create(w, loc, s.eps);
    for (int64_t i = 0; i < n; ++i) {
      memref::StoreOp::create(w, loc, preOf(w, loc, logits[i], eps), pre, ValueRange{t, idx(w, i)});
      memref::StoreOp::create(w, loc, postOf(w, loc, logits[n + i]), postOut, ValueRange{t, idx(w, i)});
    }
    // The row softmax (max-subtracted) + eps, a column normalisation, then
    // the remaining rounds.
    SmallVector<Value> cells(logits.begin() + 2 * n, logits.end());
    Value minusInf = arith::ConstantFloatOp::create(
        w, loc, w.getF32Type(), APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/true));
    for (int64_t i = 0; i < n; ++i) {
      Value rowMax = minusInf;
      for (int64_t j = 0; j < n; ++j)
        rowMax = arith::MaximumFOp::create(w, loc, rowMax, cells[i * n + j]);
      for (int64_t j = 0; j < n; ++j)
        cells[i * n + j] = math::ExpOp::create(w, loc, arith::SubFOp::create(w, loc, cells[i * n + j], rowMax));
    }
    cells = normaliseCells(w, loc, cells, n, 2, f32(w, 0));
    for (Value &c : cells)
      c = arith::AddFOp::create(w, loc, c, eps);
    cells = normaliseCells(w, loc, cells, n, 1, eps);
    if (s.iters > 1)
      cells = sinkhornRounds(w, loc, cells, n, s.iters - 1, eps);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        memref::StoreOp::create(w, loc, cells[i * n + j], combOut, ValueRange{t, idx(w, i), idx(w, j)});
  }

  /// The same values with a warp per token: lane v adds value v's partials
  /// in split order, lane m computes logit m (the sum of squares comes from
  /// lane mix), lanes below n write pre and post, then lane c holds cell c of
  /// the combination matrix for the row softmax and the Sinkhorn rounds
  /// (normaliseLaneCell). Every value is the thread version's, in its order;
  /// a decode token's 19 rounds take a shuffle per term instead of one
  /// thread's n*n cells in sequence.
  void coefficientsByWarp(OpBuilder &b, Location loc, const Site &s, Value tokens, Value partials, Value scale,
                          Value base, Value pre, Value postOut, Value combOut) {
    int64_t n = s.n, mix = s.mix();
    int64_t splits = llvm::cast<MemRefType>(partials.getType()).getDimSize(1);
    constexpr int64_t kTokensPerBlock = kTokenThreads / kWarp;
    auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
    auto f32 = [&](OpBuilder &o, double v) {
      return arith::ConstantFloatOp::create(o, loc, o.getF32Type(), APFloat(float(v))).getResult();
    };
    auto ult = [&](OpBuilder &o, Value x, Value y) {
      return arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ult, x, y).getResult();
    };
    auto minIdx = [&](OpBuilder &o, Value x, int64_t y) { return arith::MinUIOp::create(o, loc, x, idx(o, y)).getResult(); };
    Value one = idx(b, 1);
    Value blocks = arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, tokens, idx(b, kTokensPerBlock - 1)),
                                          idx(b, kTokensPerBlock));
    auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, idx(b, kTokenThreads), one, one);
    OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value tid = launch.getThreadIds().x;
    Value lane = arith::RemUIOp::create(k, loc, tid, idx(k, kWarp));
    Value t = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, launch.getBlockIds().x, idx(k, kTokensPerBlock)),
                                    arith::DivUIOp::create(k, loc, tid, idx(k, kWarp)));
    // The whole warp takes the branch or not: its shuffles stay converged.
    auto live = scf::IfOp::create(k, loc, TypeRange{}, ult(k, t, tokens), false);
    gpu::TerminatorOp::create(k, loc);
    OpBuilder w = live.getThenBodyBuilder();
    Value v = minIdx(w, lane, mix);
    auto summed = scf::ForOp::create(w, loc, idx(w, 0), idx(w, splits), idx(w, 1), ValueRange{f32(w, 0)},
                                     [&](OpBuilder &o, Location l, Value split, ValueRange acc) {
                                       Value p = memref::LoadOp::create(o, l, partials, ValueRange{t, split, v});
                                       scf::YieldOp::create(o, l, arith::AddFOp::create(o, l, acc[0], p).getResult());
                                     });
    Value sum = summed.getResult(0);
    Value sumsq = laneValue(w, loc, sum, idx(w, mix));
    Value rms = streamsRms(w, loc, s, sumsq);
    Value m = minIdx(w, lane, mix - 1);
    Value sc = memref::LoadOp::create(w, loc, scale, ValueRange{minIdx(w, arith::DivUIOp::create(w, loc, m, idx(w, n)), 2)});
    Value bias = memref::LoadOp::create(w, loc, base, ValueRange{m});
    Value logit = siteLogit(w, loc, sum, rms, sc, bias);
    Value eps = arith::ConstantOp::create(w, loc, s.eps);
    auto isPre = scf::IfOp::create(w, loc, TypeRange{}, ult(w, lane, idx(w, n)), true);
    {
      OpBuilder o = isPre.getThenBodyBuilder();
      memref::StoreOp::create(o, loc, preOf(o, loc, logit, eps), pre, ValueRange{t, lane});
      OpBuilder e = isPre.getElseBodyBuilder();
      auto isPost = scf::IfOp::create(e, loc, TypeRange{}, ult(e, lane, idx(e, 2 * n)), false);
      OpBuilder p = isPost.getThenBodyBuilder();
      memref::StoreOp::create(p, loc, postOf(p, loc, logit), postOut,
                              ValueRange{t, arith::SubIOp::create(p, loc, lane, idx(p, n))});
    }
    // Lane c: cell c = logit 2n + c; the row softmax (max-subtracted) + eps,
    // a column normalisation, then the remaining rounds.
    Value cell = laneValue(w, loc, logit, minIdx(w, arith::AddIOp::create(w, loc, lane, idx(w, 2 * n)), mix - 1));
    Value c = minIdx(w, lane, n * n - 1);
    Value row = arith::DivUIOp::create(w, loc, c, idx(w, n)), column = arith::RemUIOp::create(w, loc, c, idx(w, n));
    Value rowMax = arith::ConstantFloatOp::create(w, loc, w.getF32Type(),
                                                  APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/true));
    for (int64_t j = 0; j < n; ++j) {
      Value at = arith::AddIOp::create(w, loc, arith::MulIOp::create(w, loc, row, idx(w, n)), idx(w, j));
      rowMax = arith::MaximumFOp::create(w, loc, rowMax, laneValue(w, loc, cell, at));
    }
    cell = math::ExpOp::create(w, loc, arith::SubFOp::create(w, loc, cell, rowMax));
    cell = normaliseLaneCell(w, loc, cell, lane, n, 2, f32(w, 0));
    cell = arith::AddFOp::create(w, loc, cell, eps);
    cell = normaliseLaneCell(w, loc, cell, lane, n, 1, eps);
    if (s.iters > 1)
      cell = sinkhornLaneRounds(w, loc, cell, lane, n, s.iters - 1, eps);
    auto isCell = scf::IfOp::create(w, loc, TypeRange{}, ult(w, lane, idx(w, n * n)), false);
    OpBuilder o = isCell.getThenBodyBuilder();
    memref::StoreOp::create(o, loc, cell, combOut, ValueRange{t, row, column});
  }

  void rewrite(func::FuncOp helper, const Site &s) {
    MLIRContext *ctx = helper.getContext();
    // Kernels named after the site in profiles (dsf-name-kernels).
    Location loc = NameLoc::get(StringAttr::get(ctx, "mhc_site"), helper.getLoc());
    FunctionType type = helper.getFunctionType();
    Block &body = helper.getBody().front();
    SmallVector<Value> args(body.getArguments());
    clearBody(body);

    unsigned next = 0;
    Value X = args[next++], F, post, comb, collapsePre;
    if (s.update) {
      F = args[next++];
      post = args[next++];
      comb = args[next++];
    }
    if (s.collapse)
      collapsePre = args[next++];
    Value fn = args[next], base = args[next + 1], scale = args[next + 2];

    int64_t n = s.n, width = s.width, mix = s.mix(), values = mix + 1;  // the projections, then the sum of squares
    int64_t splits = (width + kChannels - 1) / kChannels;
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
    auto f32 = [&](OpBuilder &o, double v) {
      return arith::ConstantFloatOp::create(o, loc, o.getF32Type(), APFloat(float(v))).getResult();
    };
    auto ult = [&](OpBuilder &o, Value x, Value y) {
      return arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ult, x, y).getResult();
    };
    Value tokens = memref::DimOp::create(b, loc, X, idx(b, 0));
    auto alloc = [&](Type t) { return memref::AllocOp::create(b, loc, llvm::cast<MemRefType>(t), ValueRange{tokens}); };
    SmallVector<Value> results;
    for (Type t : type.getResults())
      results.push_back(alloc(t));
    unsigned r = 0;
    Value updated = s.update ? results[r++] : Value();
    Value pre = results[r], postOut = results[r + 1], combOut = results[r + 2];
    Value collapsed = s.collapse ? results[r + 3] : Value();
    auto partialType = MemRefType::get({ShapedType::kDynamic, splits, values}, b.getF32Type());
    Value partials = memref::AllocOp::create(b, loc, partialType, ValueRange{tokens});

    // 1. The pass over the streams.
    {
      auto shared = MemRefType::get({kWarps, values}, b.getF32Type(), MemRefLayoutAttrInterface{},
                                    gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
      Value one = idx(b, 1);
      Value blocks = arith::MulIOp::create(b, loc, tokens, idx(b, splits));
      auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, idx(b, kChannels), one, one, nullptr, nullptr,
                                          ValueRange{}, TypeRange{shared});
      OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
      Value sums = launch.getWorkgroupAttributions()[0];
      Value tid = launch.getThreadIds().x, block = launch.getBlockIds().x;
      Value t = arith::DivUIOp::create(k, loc, block, idx(k, splits));
      Value split = arith::RemUIOp::create(k, loc, block, idx(k, splits));
      Value d = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, split, idx(k, kChannels)), tid);
      SmallVector<Type> valueTypes(values, k.getF32Type());
      auto live = scf::IfOp::create(k, loc, valueTypes, ult(k, d, idx(k, width)), true);
      {
        OpBuilder w = live.getThenBodyBuilder();
        SmallVector<Value> streams;
        for (int64_t j = 0; j < n; ++j)
          streams.push_back(memref::LoadOp::create(w, loc, X, ValueRange{t, idx(w, j), d}));
        SmallVector<Value> x = streams;
        if (s.update) {
          // X'[k] = post[k] F + sum_j comb[j, k] X[j]
          Value f = memref::LoadOp::create(w, loc, F, ValueRange{t, d});
          for (int64_t kk = 0; kk < n; ++kk) {
            Value p = memref::LoadOp::create(w, loc, post, ValueRange{t, idx(w, kk)});
            Value acc = arith::MulFOp::create(w, loc, p, f);
            for (int64_t j = 0; j < n; ++j) {
              Value c = memref::LoadOp::create(w, loc, comb, ValueRange{t, idx(w, j), idx(w, kk)});
              acc = arith::AddFOp::create(w, loc, acc, arith::MulFOp::create(w, loc, c, streams[j]));
            }
            x[kk] = acc;
            memref::StoreOp::create(w, loc, acc, updated, ValueRange{t, idx(w, kk), d});
          }
        }
        if (s.collapse) {
          Value h = f32(w, 0);
          for (int64_t j = 0; j < n; ++j) {
            Value p = memref::LoadOp::create(w, loc, collapsePre, ValueRange{t, idx(w, j)});
            h = arith::AddFOp::create(w, loc, h, arith::MulFOp::create(w, loc, p, x[j]));
          }
          memref::StoreOp::create(w, loc, h, collapsed, ValueRange{t, d});
        }
        SmallVector<Value> acc(values, f32(w, 0));
        for (int64_t kk = 0; kk < n; ++kk) {
          Value at = arith::AddIOp::create(w, loc, idx(w, kk * width), d);
          for (int64_t m = 0; m < mix; ++m) {
            Value weight = memref::LoadOp::create(w, loc, fn, ValueRange{idx(w, m), at});
            acc[m] = arith::AddFOp::create(w, loc, acc[m], arith::MulFOp::create(w, loc, x[kk], weight));
          }
          acc[mix] = arith::AddFOp::create(w, loc, acc[mix], arith::MulFOp::create(w, loc, x[kk], x[kk]));
        }
        scf::YieldOp::create(w, loc, acc);
        OpBuilder e = live.getElseBodyBuilder();
        scf::YieldOp::create(e, loc, SmallVector<Value>(values, f32(e, 0)));
      }
      // The block's sum of each value: lane 0 of each warp after the
      // shuffles, then the warps in order.
      Value lane = arith::RemUIOp::create(k, loc, tid, idx(k, kWarp));
      Value warp = arith::DivUIOp::create(k, loc, tid, idx(k, kWarp));
      Value isLane0 = arith::CmpIOp::create(k, loc, arith::CmpIPredicate::eq, lane, idx(k, 0));
      SmallVector<Value> reduced;
      for (int64_t v = 0; v < values; ++v) {
        Value x = live.getResult(v);
        reduced.push_back(warpAllReduce(k, loc, x, [&](OpBuilder &o, Value mine, Value theirs) {
          return arith::AddFOp::create(o, loc, mine, theirs).getResult();
        }));
      }
      auto first = scf::IfOp::create(k, loc, TypeRange{}, isLane0, false);
      {
        OpBuilder w = first.getThenBodyBuilder();
        for (int64_t v = 0; v < values; ++v)
          memref::StoreOp::create(w, loc, reduced[v], sums, ValueRange{warp, idx(w, v)});
      }
      gpu::BarrierOp::create(k, loc);
      auto total = scf::IfOp::create(k, loc, TypeRange{}, ult(k, tid, idx(k, values)), false);
      {
        OpBuilder w = total.getThenBodyBuilder();
        Value sum = f32(w, 0);
        for (int64_t i = 0; i < kWarps; ++i)
          sum = arith::AddFOp::create(w, loc, sum, memref::LoadOp::create(w, loc, sums, ValueRange{idx(w, i), tid}));
        memref::StoreOp::create(w, loc, sum, partials, ValueRange{t, split, tid});
      }
      gpu::TerminatorOp::create(k, loc);
    }

    // 2. The coefficients: a warp per token when the values and the cells fit
    // its lanes (n <= 4), else a thread per token.
    if (values <= kWarp && n * n <= kWarp)
      coefficientsByWarp(b, loc, s, tokens, partials, scale, base, pre, postOut, combOut);
    else
      coefficientsByThread(b, loc, s, tokens, partials, scale, base, pre, postOut, combOut);
    memref::DeallocOp::create(b, loc, partials);
    func::ReturnOp::create(b, loc, results);
  }

  void runOnOperation() override {
    for (auto helper : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      auto spec = helper->getAttrOfType<DictionaryAttr>("dsf.hc_site");
      if (!spec || helper.isExternal())
        continue;
      std::optional<Site> site = parseSite(spec);
      if (!site || !hasSiteSignature(helper.getFunctionType(), *site)) {
        helper.emitError("dsf-gpu-fuse-mhc: a dsf.hc_site helper that is not the bufferized (X, [block output, "
                         "post, comb], [collapse pre], fn, base, scale) -> ([X'], pre, post, comb, [collapse]) of "
                         "its n, width and iters");
        return signalPassFailure();
      }
      // Above 8 streams the per-thread registers would spill; the linalg stays.
      if (site->n > kMaxN)
        continue;
      rewrite(helper, *site);
    }
  }
};
} // namespace
} // namespace mlir::dsf
