//===- GpuSinkAttention.cpp - dsf-gpu-sink-attention ------------------------===//
//
// dsf-to-linalg runs sink attention over a layer's window band and its
// selected cache entries in a helper per shape (`dsf.attention`). Its linalg
// is some fifteen kernels a layer (band dots, entry dots, masks, two maxima,
// two denominators, two weighted sums), each of which re-reads the gathered
// rows and gives a decode token's 64 heads a handful of blocks. On
// bufferized IR this pass replaces the helper's body with one kernel, a
// block of 512 threads per (token, head):
//
//  1. the head's query in shared memory;
//  2. each warp two columns at a time (the W band rows, then the k selected
//     entries; both rows' loads issued together): the lanes' strided
//     products over the width, xor shuffles, the scaled logit (-inf for a
//     band row before the sequence or an entry of -1) into shared memory;
//  3. the maximum with the sink (shuffles, then the warps');
//  4. each column's exp(logit - max) in place, their sum (shuffles, then the
//     warps in order) after exp(sink - max): the denominator;
//  5. each thread its channels: the sum over the columns, in the linalg's
//     order (the band, then the entries), of exp(logit - max) / denominator
//     times the row, sixteen rows' loads issued together.
//
// A decode token has a block per head (64 at V4.1's sizes): each is bound by
// how many loads its SM keeps in flight, hence the wide blocks and the
// loads issued together.
//
// A column that is no row (a band row before the sequence, an entry of -1)
// has weight exp(-inf) = 0; the kernel multiplies it with a row that exists
// (the query's own, entry 0) where the linalg does, so the weighted sums are
// the linalg's. The logits' and the denominator's sums run in another order than
// the linalg's (shuffle trees), one order for any number of tokens: a decode
// equals its prefill bit for bit when the rest of the model does
// (--batch-invariant).
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/SinkAttentionMma.h"
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUSINKATTENTION
#include "lowering/Passes.h.inc"

namespace {
constexpr int64_t kWarp = 32;
/// Threads a block: a decode token's few blocks (a block per head) are each
/// bound by the loads their SM keeps in flight, so they are wide; a
/// prefill's many blocks are bound by how many blocks an SM holds, so they
/// are narrower. The grid's blocks below which the wide blocks run.
constexpr int64_t kWideThreads = 512, kNarrowThreads = 256, kWideBelowBlocks = 1024;
/// The query is kept in shared memory and each lane's share of a product is
/// unrolled: widths up to 4,096.
constexpr int64_t kMaxWidth = 4096;
/// Packed pages: the values of the 256 E4M3 codes, then of the 16 E2M1
/// codes, in shared memory.
constexpr int64_t kDecodeTable = 272;

struct Attention {
  int64_t heads = 0, width = 0, window = 0, k = 0;
  FloatAttr scale;
  /// A batched step's helper (dsf.slot_attention): the windows are rings,
  /// the cache pages of `pageEntries` entries.
  bool slots = false;
  int64_t pageEntries = 0;
  /// Packed pages (`packed`: fp8, mxfp4, nvfp4): each entry its format's
  /// packed row, decoded as the kernel loads it.
  std::optional<lowering::PackedCodes> packed;
};

std::optional<Attention> parseAttention(DictionaryAttr spec, bool slots) {
  auto heads = spec.getAs<IntegerAttr>("heads"), width = spec.getAs<IntegerAttr>("width");
  auto window = spec.getAs<IntegerAttr>("window"), k = spec.getAs<IntegerAttr>("k");
  auto scale = spec.getAs<FloatAttr>("scale");
  auto pageEntries = spec.getAs<IntegerAttr>("page_entries");
  if (!heads || !width || !window || !k || !scale || heads.getInt() < 1 || width.getInt() < 1 ||
      window.getInt() < 1 || k.getInt() < 0 || !scale.getType().isF32() ||
      (slots && (!pageEntries || (k.getInt() > 0 && pageEntries.getInt() < 1))))
    return std::nullopt;
  Attention a{heads.getInt(), width.getInt(), window.getInt(), k.getInt(), scale, slots,
              slots ? pageEntries.getInt() : 0, std::nullopt};
  if (auto packed = spec.getAs<StringAttr>("packed")) {
    a.packed = lowering::packedCodesNamed(packed.getValue(), a.width);
    if (!slots || !a.packed || a.width % a.packed->block != 0)
      return std::nullopt;
  }
  return a;
}

bool hasAttentionSignature(FunctionType type, const Attention &a, Builder &b) {
  int64_t dyn = ShapedType::kDynamic;
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  // (queries, window, [cache, selection], sink), or for slots (queries,
  // rings, positions, [pages, page table, selection], sink).
  SmallVector<std::pair<SmallVector<int64_t>, Type>> inputs{{{dyn, a.heads, a.width}, f32}, {{dyn, a.width}, f32}};
  if (a.slots)
    inputs.push_back({{dyn}, i32});
  if (a.k && a.slots && a.packed)
    inputs.append({{{dyn, a.packed->rowBytes(a.width)}, b.getI8Type()}, {{dyn, dyn}, i32}, {{dyn, a.k}, i32}});
  else if (a.k && a.slots)
    inputs.append({{{dyn, a.width}, f32}, {{dyn, dyn}, i32}, {{dyn, a.k}, i32}});
  else if (a.k)
    inputs.append({{{dyn, a.width}, f32}, {{dyn, a.k}, i32}});
  inputs.push_back({{a.heads}, f32});
  if (type.getNumInputs() != inputs.size() || type.getNumResults() != 1)
    return false;
  for (auto [t, expected] : llvm::zip(type.getInputs(), inputs))
    if (!isIdentityBuffer(t, expected.first, expected.second))
      return false;
  return isIdentityBuffer(type.getResult(0), {dyn, a.heads, a.width}, f32);
}

/// The largest of 16, 8, 4, 2, 1 that divides n: rows whose loads go
/// together.
int64_t unrollFor(int64_t n) {
  for (int64_t u : {16, 8, 4, 2})
    if (n % u == 0)
      return u;
  return 1;
}

struct GpuSinkAttentionPass : impl::GpuSinkAttentionBase<GpuSinkAttentionPass> {
  using GpuSinkAttentionBase::GpuSinkAttentionBase;
  void rewrite(func::FuncOp helper, const Attention &a) {
    MLIRContext *ctx = helper.getContext();
    // Named after the attention ops in profiles (dsf-name-kernels).
    Location loc = NameLoc::get(StringAttr::get(ctx, "attention_attn_attn_sink"), helper.getLoc());
    FunctionType type = helper.getFunctionType();
    Block &body = helper.getBody().front();
    SmallVector<Value> args(body.getArguments());
    clearBody(body);
    Value q = args[0], window = args[1], sink = args.back();
    Value positions = a.slots ? args[2] : Value();
    unsigned firstCache = a.slots ? 3 : 2;
    Value cache = a.k ? args[firstCache] : Value(), selection = a.k ? args[firstCache + (a.slots ? 2 : 1)] : Value();
    Value table = a.k && a.slots ? args[4] : Value();
    int64_t columns = a.window + a.k, width = a.width;

    OpBuilder b = OpBuilder::atBlockEnd(&body);
    auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
    auto f32c = [&](OpBuilder &o, double v) {
      return arith::ConstantFloatOp::create(o, loc, o.getF32Type(), APFloat(float(v))).getResult();
    };
    Value tokens = memref::DimOp::create(b, loc, q, idx(b, 0));
    Value rows = memref::DimOp::create(b, loc, window, idx(b, 0));
    Value entries = cache ? memref::DimOp::create(b, loc, cache, idx(b, 0)).getResult() : Value();
    // Query t is window row off + t.
    Value off = arith::SubIOp::create(b, loc, rows, tokens);
    Value out = memref::AllocOp::create(b, loc, llvm::cast<MemRefType>(type.getResult(0)), ValueRange{tokens});
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    auto shared = [&](int64_t n) {
      return MemRefType::get({n}, b.getF32Type(), MemRefLayoutAttrInterface{}, workgroup);
    };
    // One kernel of `kThreads` threads a block, built at `b` (the builder of
    // the branch that launches it).
    auto buildKernel = [&](OpBuilder &b, const int64_t kThreads) {
      const int64_t kWarps = kThreads / kWarp;
      Value one = idx(b, 1);
      SmallVector<Type> attributions{shared(width), shared(columns), shared(kWarps), shared(kWarps)};
      if (a.packed)
        attributions.push_back(shared(kDecodeTable));
      auto launch = gpu::LaunchOp::create(b, loc, tokens, idx(b, a.heads), one, idx(b, kThreads), one, one, nullptr,
                                          nullptr, ValueRange{}, attributions);

      OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
      Value qs = launch.getWorkgroupAttributions()[0], weights = launch.getWorkgroupAttributions()[1];
      Value maxima = launch.getWorkgroupAttributions()[2], sums = launch.getWorkgroupAttributions()[3];
      Value t = launch.getBlockIds().x, h = launch.getBlockIds().y, tid = launch.getThreadIds().x;
      Value lane = arith::RemUIOp::create(k, loc, tid, idx(k, kWarp));
      Value warp = arith::DivUIOp::create(k, loc, tid, idx(k, kWarp));
      Value minusInf = f32c(k, -std::numeric_limits<double>::infinity());
      Value scale = arith::ConstantOp::create(k, loc, a.scale);
      auto cmp = [&](OpBuilder &o, arith::CmpIPredicate p, Value x, Value y) {
        return arith::CmpIOp::create(o, loc, p, x, y).getResult();
    };
    auto add = [&](OpBuilder &o, Value x, Value y) { return arith::AddIOp::create(o, loc, x, y).getResult(); };
    auto ifThen = [&](OpBuilder &o, Value cond, function_ref<void(OpBuilder &)> then) {
      auto op = scf::IfOp::create(o, loc, TypeRange{}, cond, false);
      OpBuilder w = op.getThenBodyBuilder();
      then(w);
    };
    auto stridedLoop = [&](OpBuilder &o, Value from, Value to, int64_t step, function_ref<void(OpBuilder &, Value)> f) {
      scf::ForOp::create(o, loc, from, to, idx(o, step), ValueRange{},
                         [&](OpBuilder &w, Location, Value i, ValueRange) {
                           f(w, i);
                           scf::YieldOp::create(w, loc);
                         });
    };
    auto warpCombine = [&](OpBuilder &o, Value v, bool isMax) {
      return warpAllReduce(o, loc, v, [&](OpBuilder &w, Value mine, Value theirs) {
        return isMax ? arith::MaximumFOp::create(w, loc, mine, theirs).getResult()
                     : arith::AddFOp::create(w, loc, mine, theirs).getResult();
      });
    };

    // 1. The query; with packed pages the code values' table: E4M3 codes
    // 0 .. 255, then E2M1 codes 0 .. 15 (the values of ScalarMath.h's
    // decoders, so a lookup decodes bit for bit as the linalg does).
    stridedLoop(k, tid, idx(k, width), kThreads, [&](OpBuilder &o, Value d) {
      memref::StoreOp::create(o, loc, memref::LoadOp::create(o, loc, q, ValueRange{t, h, d}), qs, ValueRange{d});
    });
    Value decodeTable = a.packed ? Value(launch.getWorkgroupAttributions()[4]) : Value();
    if (a.packed)
      stridedLoop(k, tid, idx(k, kDecodeTable), kThreads, [&](OpBuilder &o, Value i) {
        Value code = arith::IndexCastOp::create(o, loc, o.getI32Type(), i);
        Value fp4Code = arith::SubIOp::create(o, loc, code, arith::ConstantIntOp::create(o, loc, 256, 32));
        Value isE4M3 = cmp(o, arith::CmpIPredicate::ult, i, idx(o, 256));
        Value v = arith::SelectOp::create(o, loc, isE4M3, lowering::e4m3Value(o, loc, code),
                                          lowering::e2m1Value(o, loc, fp4Code));
        memref::StoreOp::create(o, loc, v, decodeTable, ValueRange{i});
      });
    gpu::BarrierOp::create(k, loc);

    // 2. The logits: each warp two columns at a time, c and c + 16, the
    // loads of both rows issued together. Every load reads a row that
    // exists (a band row before the sequence reads the query's own, an entry
    // of -1 entry 0); the logit of such a column is -inf.
    // The query's own row: off + t, or in a batch its ring's row of its
    // position p (which the band is counted from).
    Value self = add(k, off, t), position;
    if (a.slots) {
      position = arith::IndexCastOp::create(k, loc, k.getIndexType(),
                                            memref::LoadOp::create(k, loc, positions, ValueRange{t}));
      self = add(k, arith::MulIOp::create(k, loc, t, idx(k, a.window)),
                 arith::RemUIOp::create(k, loc, position, idx(k, a.window)));
    }
    // Channel d of a row of the window or the cache: packed pages' entries
    // decoded as they load (the code byte and the block's scale byte, both
    // in the entry's row), as the linalg decodes them.
    auto loadRow = [&](OpBuilder &o, Value src, Value row, Value d) -> Value {
      if (src != cache || !a.packed)
        return memref::LoadOp::create(o, loc, src, ValueRange{row, d});
      auto byteAt = [&](Value column) -> Value {
        return arith::ExtUIOp::create(o, loc, o.getI32Type(), memref::LoadOp::create(o, loc, src, ValueRange{row, column}));
      };
      auto lookup = [&](Value code, bool fp4) -> Value {
        Value at = arith::IndexCastOp::create(o, loc, o.getIndexType(), code);
        if (fp4)
          at = add(o, at, idx(o, 256));
        return memref::LoadOp::create(o, loc, decodeTable, ValueRange{at});
      };
      return lowering::decodePacked(o, loc, byteAt, d, *a.packed, lookup);
    };
    using RowOf = function_ref<std::pair<Value, Value>(OpBuilder &, Value)>;
    auto logits = [&](OpBuilder &o, Value src, int64_t n, int64_t firstColumn, RowOf rowOf) {
      stridedLoop(o, warp, idx(o, n), 2 * kWarps, [&](OpBuilder &w, Value c) {
        Value second = add(w, c, idx(w, kWarps));
        Value hasSecond = cmp(w, arith::CmpIPredicate::ult, second, idx(w, n));
        Value secondAt = arith::SelectOp::create(w, loc, hasSecond, second, c);
        auto [valid0, row0] = rowOf(w, c);
        auto [valid1, row1] = rowOf(w, secondAt);
        SmallVector<Value> xs, ys0, ys1;
        for (int64_t j = 0; j < width / kWarp; ++j) {
          Value d = add(w, lane, idx(w, j * kWarp));
          xs.push_back(memref::LoadOp::create(w, loc, qs, ValueRange{d}));
          ys0.push_back(loadRow(w, src, row0, d));
          ys1.push_back(loadRow(w, src, row1, d));
        }
        Value partial0 = f32c(w, 0), partial1 = f32c(w, 0);
        for (size_t j = 0; j < xs.size(); ++j) {
          partial0 = arith::AddFOp::create(w, loc, partial0, arith::MulFOp::create(w, loc, xs[j], ys0[j]));
          partial1 = arith::AddFOp::create(w, loc, partial1, arith::MulFOp::create(w, loc, xs[j], ys1[j]));
        }
        Value dot0 = warpCombine(w, partial0, false), dot1 = warpCombine(w, partial1, false);
        Value logit0 = arith::SelectOp::create(w, loc, valid0, arith::MulFOp::create(w, loc, dot0, scale), minusInf);
        Value logit1 = arith::SelectOp::create(w, loc, valid1, arith::MulFOp::create(w, loc, dot1, scale), minusInf);
        ifThen(w, cmp(w, arith::CmpIPredicate::eq, lane, idx(w, 0)), [&](OpBuilder &z) {
          memref::StoreOp::create(z, loc, logit0, weights, ValueRange{add(z, c, idx(z, firstColumn))});
          ifThen(z, hasSecond, [&](OpBuilder &y) {
            memref::StoreOp::create(y, loc, logit1, weights, ValueRange{add(y, second, idx(y, firstColumn))});
          });
        });
      });
    };
    // Band column c of query t is window row off + t + c - (W - 1), a row
    // when that is >= 0.
    // In a batch, position p - (W - 1) + c at ring row t W + its position
    // mod W, a row of the sequence when that position is >= 0.
    auto bandRow = [&](OpBuilder &o, Value c) {
      if (a.slots) {
        Value shifted = add(o, position, c);
        Value valid = cmp(o, arith::CmpIPredicate::uge, shifted, idx(o, a.window - 1));
        Value at = arith::RemUIOp::create(o, loc, arith::SubIOp::create(o, loc, shifted, idx(o, a.window - 1)),
                                          idx(o, a.window));
        Value row = arith::SelectOp::create(o, loc, valid, add(o, arith::MulIOp::create(o, loc, t, idx(o, a.window)), at),
                                            self);
        return std::make_pair(valid, row);
      }
      Value shifted = add(o, self, c);
      Value valid = cmp(o, arith::CmpIPredicate::uge, shifted, idx(o, a.window - 1));
      Value row = arith::SelectOp::create(o, loc, valid, arith::SubIOp::create(o, loc, shifted, idx(o, a.window - 1)),
                                          self);
      return std::make_pair(valid, row);
    };
    logits(k, window, a.window, 0, bandRow);
    // Entry s's row: selection[t, s] (-1: none).
    auto entryRow = [&](OpBuilder &o, Value s) {
      Value e = memref::LoadOp::create(o, loc, selection, ValueRange{t, s});
      Value zero = arith::ConstantIntOp::create(o, loc, 0, 32);
      Value valid = cmp(o, arith::CmpIPredicate::sge, e, zero);
      Value row = arith::IndexCastOp::create(o, loc, o.getIndexType(), arith::MaxSIOp::create(o, loc, e, zero));
      if (a.slots) {
        // Entry e of token t: page table[t, e div E], row e mod E of it.
        Value E = idx(o, a.pageEntries);
        Value page = arith::IndexCastOp::create(
            o, loc, o.getIndexType(),
            memref::LoadOp::create(o, loc, table, ValueRange{t, arith::DivUIOp::create(o, loc, row, E)}));
        row = add(o, arith::MulIOp::create(o, loc, page, E), arith::RemUIOp::create(o, loc, row, E));
      }
      return std::make_pair(valid, row);
    };
    // Without entries every selected column is -1 and entry 0 does not exist.
    Value anyEntries = a.k ? cmp(k, arith::CmpIPredicate::ugt, entries, idx(k, 0)) : Value();
    if (a.k) {
      auto any = scf::IfOp::create(k, loc, TypeRange{}, anyEntries, true);
      OpBuilder w = any.getThenBodyBuilder();
      logits(w, cache, a.k, a.window, entryRow);
      OpBuilder e = any.getElseBodyBuilder();
      stridedLoop(e, tid, idx(e, a.k), kThreads, [&](OpBuilder &o, Value s) {
        memref::StoreOp::create(o, loc, minusInf, weights, ValueRange{add(o, s, idx(o, a.window))});
      });
    }
    gpu::BarrierOp::create(k, loc);

    // 3. The maximum, with the sink.
    Value sinkH = memref::LoadOp::create(k, loc, sink, ValueRange{h});
    auto ownColumns = [&](Value init, function_ref<Value(OpBuilder &, Value c, Value acc)> f) {
      auto loop = scf::ForOp::create(k, loc, tid, idx(k, columns), idx(k, kThreads), ValueRange{init},
                                     [&](OpBuilder &o, Location, Value c, ValueRange acc) {
                                       scf::YieldOp::create(o, loc, f(o, c, acc[0]));
                                     });
      return loop.getResult(0);
    };
    auto acrossWarps = [&](Value v, Value scratch, Value init, bool isMax) {
      v = warpCombine(k, v, isMax);
      ifThen(k, cmp(k, arith::CmpIPredicate::eq, lane, idx(k, 0)),
             [&](OpBuilder &w) { memref::StoreOp::create(w, loc, v, scratch, ValueRange{warp}); });
      gpu::BarrierOp::create(k, loc);
      // Every thread combines the warps' values in warp order: the same value.
      Value total = init;
      for (int64_t w = 0; w < kWarps; ++w) {
        Value x = memref::LoadOp::create(k, loc, scratch, ValueRange{idx(k, w)});
        total = isMax ? arith::MaximumFOp::create(k, loc, total, x).getResult()
                      : arith::AddFOp::create(k, loc, total, x).getResult();
      }
      return total;
    };
    Value localMax = ownColumns(minusInf, [&](OpBuilder &o, Value c, Value acc) {
      return arith::MaximumFOp::create(o, loc, acc, memref::LoadOp::create(o, loc, weights, ValueRange{c}));
    });
    Value m = acrossWarps(localMax, maxima, sinkH, true);

    // 4. exp(logit - m) in place, and the denominator.
    Value localSum = ownColumns(f32c(k, 0), [&](OpBuilder &o, Value c, Value acc) {
      Value l = memref::LoadOp::create(o, loc, weights, ValueRange{c});
      Value e = math::ExpOp::create(o, loc, arith::SubFOp::create(o, loc, l, m));
      memref::StoreOp::create(o, loc, e, weights, ValueRange{c});
      return arith::AddFOp::create(o, loc, acc, e).getResult();
    });
    Value denom = acrossWarps(localSum, sums, math::ExpOp::create(k, loc, arith::SubFOp::create(k, loc, sinkH, m)),
                              false);

    // 5. Each thread's channels d = tid + kThreads i: sum over the columns of
    // (exp / denominator) x row, the band's rows then the entries'.
    int64_t perThread = (width + kThreads - 1) / kThreads;
    SmallVector<Value> dims, dimValid;
    for (int64_t i = 0; i < perThread; ++i) {
      Value d = add(k, tid, idx(k, i * kThreads));
      dimValid.push_back(cmp(k, arith::CmpIPredicate::ult, d, idx(k, width)));
      dims.push_back(arith::MinUIOp::create(k, loc, d, idx(k, width - 1)));
    }
    // Columns [0, n) of one source, `unroll` rows' loads together.
    auto accumulate = [&](OpBuilder &o, ValueRange accs, int64_t n, int64_t firstColumn, Value src,
                          function_ref<Value(OpBuilder &, Value)> rowOf) {
      int64_t unroll = unrollFor(n);
      auto loop = scf::ForOp::create(
          o, loc, idx(o, 0), idx(o, n), idx(o, unroll), accs, [&](OpBuilder &w, Location, Value c0, ValueRange acc) {
            SmallVector<Value> p, v;
            for (int64_t u = 0; u < unroll; ++u) {
              Value c = add(w, c0, idx(w, u));
              Value row = rowOf(w, c);
              p.push_back(arith::DivFOp::create(
                  w, loc, memref::LoadOp::create(w, loc, weights, ValueRange{add(w, c, idx(w, firstColumn))}), denom));
              for (Value d : dims)
                v.push_back(loadRow(w, src, row, d));
            }
            SmallVector<Value> next(acc);
            for (int64_t u = 0; u < unroll; ++u)
              for (int64_t i = 0; i < perThread; ++i)
                next[i] = arith::AddFOp::create(w, loc, next[i],
                                                arith::MulFOp::create(w, loc, p[u], v[u * perThread + i]));
            scf::YieldOp::create(w, loc, next);
          });
      return SmallVector<Value>(loop.getResults());
    };
    SmallVector<Value> accs(perThread, f32c(k, 0));
    accs = accumulate(k, accs, a.window, 0, window, [&](OpBuilder &o, Value c) { return bandRow(o, c).second; });
    if (a.k) {
      // Without entries every column is -1 (weight 0) and there is no row to
      // stand in.
      auto any = scf::IfOp::create(k, loc, TypeRange(ValueRange(accs)), anyEntries, true);
      OpBuilder w = any.getThenBodyBuilder();
      scf::YieldOp::create(w, loc, accumulate(w, accs, a.k, a.window, cache, [&](OpBuilder &o, Value s) {
                             return entryRow(o, s).second;
                           }));
      OpBuilder e = any.getElseBodyBuilder();
      scf::YieldOp::create(e, loc, accs);
      accs = SmallVector<Value>(any.getResults());
    }
    for (int64_t i = 0; i < perThread; ++i)
      ifThen(k, dimValid[i],
             [&](OpBuilder &w) { memref::StoreOp::create(w, loc, accs[i], out, ValueRange{t, h, dims[i]}); });
    gpu::TerminatorOp::create(k, loc);
    };

    // The two kernels differ only in the order of the denominator's sum (each
    // thread's columns, then the warps in order); a batch-invariant build
    // keeps the wide one for any number of tokens.
    auto buildSimt = [&](OpBuilder &b) {
      if (batchInvariant) {
        buildKernel(b, kWideThreads);
        return;
      }
      Value blocks = arith::MulIOp::create(b, loc, tokens, idx(b, a.heads));
      auto wide = scf::IfOp::create(
          b, loc, TypeRange{},
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, blocks, idx(b, kWideBelowBlocks)),
          /*withElse=*/true);
      OpBuilder decode = wide.getThenBodyBuilder(), prefill = wide.getElseBodyBuilder();
      buildKernel(decode, kWideThreads);
      buildKernel(prefill, kNarrowThreads);
    };
    // With mma-min-tokens >= 1 a prefill's tokens take the tensor-core
    // kernel (a block per token and group of heads; its operands bf16
    // whatever the projections' tile math); fewer tokens (a decode's) keep
    // the SIMT kernels, whose blocks per (token, head) fill the GPU where a
    // block per token would not. A batched step's helper likewise from
    // mma-min-batch sequences (one query each).
    if (useMma(a)) {
      auto many = scf::IfOp::create(
          b, loc, TypeRange{}, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, tokens, idx(b, mmaMinCalls(a))),
          /*withElse=*/true);
      OpBuilder prefill = many.getThenBodyBuilder(), few = many.getElseBodyBuilder();
      buildSinkAttentionMma(prefill, loc,
                            SinkAttentionMma{a.heads, a.width, a.window, a.k, a.scale, q, window, cache, selection,
                                             sink, out, tokens, rows, entries, a.slots, positions, table,
                                             a.pageEntries, a.packed, splitBelowBlocks});
      buildSimt(few);
    } else {
      buildSimt(b);
    }
    func::ReturnOp::create(b, loc, out);
  }

  /// Whether the tensor-core kernel runs some of `a`'s calls: a build that
  /// need not equal its decodes bit for bit, a threshold for the helper's
  /// kind (the sequence helper's calls or a batched step's), and sizes it
  /// takes.
  bool useMma(const Attention &a) const {
    return mmaMinCalls(a) > 0 && !batchInvariant && sinkAttentionMmaFits(a.heads, a.width);
  }

  /// The tokens (a batched step's: sequences) from which `a`'s calls take
  /// the tensor-core kernel; 0: never.
  int64_t mmaMinCalls(const Attention &a) const { return a.slots ? mmaMinBatch : mmaMinTokens; }

  void runOnOperation() override {
    if (mmaMinTokens < 0) {
      getOperation()->emitError() << getArgument() << ": mma-min-tokens must be a count of tokens >= 0 (0: never), not "
                                  << int64_t(mmaMinTokens);
      return signalPassFailure();
    }
    if (mmaMinBatch < 0) {
      getOperation()->emitError() << getArgument()
                                  << ": mma-min-batch must be a count of sequences >= 0 (0: never), not "
                                  << int64_t(mmaMinBatch);
      return signalPassFailure();
    }
    if (splitBelowBlocks < 0) {
      getOperation()->emitError() << getArgument()
                                  << ": split-below-blocks must be a count of blocks >= 0 (0: never), not "
                                  << int64_t(splitBelowBlocks);
      return signalPassFailure();
    }
    Builder builder(&getContext());
    for (auto helper : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      bool slots = helper->hasAttr("dsf.slot_attention");
      auto spec = helper->getAttrOfType<DictionaryAttr>(slots ? "dsf.slot_attention" : "dsf.attention");
      if (!spec || helper.isExternal())
        continue;
      std::optional<Attention> attention = parseAttention(spec, slots);
      if (!attention || !hasAttentionSignature(helper.getFunctionType(), *attention, builder)) {
        helper.emitError(slots ? "dsf-gpu-sink-attention: a dsf.slot_attention helper that is not the bufferized "
                                 "(queries, rings, positions, [pages, page table, selection], sink) -> output of its "
                                 "heads, width, k and page entries"
                               : "dsf-gpu-sink-attention: a dsf.attention helper that is not the bufferized (queries, "
                                 "window, [cache, selection], sink) -> output of its heads, width and k");
        return signalPassFailure();
      }
      // The lanes' shares of a product are unrolled over width / 32 loads.
      if (attention->width % kWarp || attention->width > kMaxWidth)
        continue;
      rewrite(helper, *attention);
    }
  }
};
} // namespace
} // namespace mlir::dsf
