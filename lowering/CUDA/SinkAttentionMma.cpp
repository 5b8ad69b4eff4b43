//===- SinkAttentionMma.cpp - sink attention on the tensor cores ----------===//
//
// Two kernels:
//
//  1. The window's rows, then the cache's, rounded to bf16 (to nearest
//     even) into one [rows + entries, width] buffer: four channels a thread.
//     A column's row is then one index into one buffer, and the attention
//     kernel copies rows by cp.async, 16 bytes a copy, with no conversion on
//     the way (cp.async moves bytes; an f32 row would take twice the shared
//     memory, which the queries and two chunks already fill).
//  2. The attention: a block of 256 threads (8 warps) per (token, group of
//     HB heads; HB = 16, 32 or 64), in dynamic shared memory the group's
//     queries in bf16 (staged once through registers), two chunks of 64
//     columns' rows (a ring: chunk c + 1 is copied while chunk c is
//     multiplied), the chunk's probabilities P in bf16, each chunk column's
//     validity and the rows' running maxima. Per chunk:
//       a. S = Q K^T on mma.sync m16n8k16 (ldmatrix fragments): the warps
//          split the HB x 64 tile (two m16 groups when HB >= 32, then
//          column groups), times the scale, -inf where the column is no row
//          (a band row before the sequence, an entry of -1, a column past
//          the last); each row's maximum over the warp's columns (quad
//          shuffles) to shared memory;
//       b. each row's new maximum m' = max(m, the column groups' maxima in
//          order), p = exp(s - m') rounded to bf16 into P, each thread's
//          running sum l = l exp(m - m') + its p's; one warp stores m' and
//          the rescaling exp(m - m');
//       c. O = O exp(m - m') + P V on mma.sync (V = the same rows: one KV
//          head; ldmatrix.trans fragments), each warp width / 8 channels of
//          every head.
//     The running maximum starts at the sink, so the sink is in the maximum;
//     at the end the denominator is exp(sink - m) plus the threads' sums
//     (quad shuffles, then the column groups in order), and O / denominator
//     is stored for the group's heads (a group past the heads computes
//     zero queries and stores nothing).
//
// Checked alone on the GPU against NumPy's same roundings (5e-7 on random
// inputs and on the V4 reference's attentions, test/cuda/attention-kernel
// .test) and in the tiny V4 with f32 projections (5.9e-3 against
// transformers, NumPy's figure for bf16 attention; gpu-check.sh).
//
// Numbers: the queries, the rows and P are bf16 (8 mantissa bits), the sums
// f32; the tile math's bf16 tolerance (test/cuda). One order of sums for any
// number of tokens, but not the SIMT kernel's: a decode (SIMT) does not
// equal its prefill bit for bit, so a batch-invariant build keeps SIMT.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/SinkAttentionMma.h"
#include "lowering/CUDA/TiledKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

namespace mlir::dsf {
namespace {
constexpr int64_t kThreads = 256, kWarps = 8, kWarp = 32;
/// Columns a chunk: 8 n8 tiles of S, 4 k16 steps of P V.
constexpr int64_t kChunk = 64;
/// A shared row is padded by 8 bf16 (16 bytes): ldmatrix's 8 rows of 16
/// bytes then fall in distinct bank groups (a row of 520 bf16 is 1,040
/// bytes, 16 past a multiple of 128).
constexpr int64_t kPad = 8;
/// Channels a thread converts (one 16-byte load).
constexpr int64_t kConvertLanes = 4;

int64_t headsPerBlock(int64_t heads) { return heads <= 16 ? 16 : heads <= 32 ? 32 : 64; }
int64_t alignUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }
} // namespace

bool sinkAttentionMmaFits(int64_t heads, int64_t width) { return heads >= 1 && width % 128 == 0 && width <= 512; }

void buildSinkAttentionMma(OpBuilder &b, Location loc, const SinkAttentionMma &a) {
  MLIRContext *ctx = b.getContext();
  const int64_t D = a.width, HB = headsPerBlock(a.heads), mTiles = HB / 16;
  const int64_t groups = (a.heads + HB - 1) / HB, columns = a.window + a.k;
  const int64_t chunks = (columns + kChunk - 1) / kChunk;
  const int64_t rowStride = D + kPad, pStride = kChunk + kPad;
  // S's split of the HB x 64 tile: mGroups x colGroups warps, each
  // mPerWarp m16 tiles by nPerWarp n8 tiles.
  const int64_t mGroups = mTiles >= 2 ? 2 : 1, colGroups = kWarps / mGroups;
  const int64_t mPerWarp = mTiles / mGroups, nPerWarp = (kChunk / 8) / colGroups;
  // P V's split: warp w the channels [w D / 8, +D / 8) of every head.
  const int64_t pvTiles = D / kWarps / 8;
  FloatType f32 = b.getF32Type();
  Type bf16 = b.getBF16Type(), i32 = b.getI32Type(), index = b.getIndexType();
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);

  auto c = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
  auto ci32 = [&](OpBuilder &o, int64_t v) { return arith::ConstantIntOp::create(o, loc, i32, v).getResult(); };
  auto cf = [&](OpBuilder &o, double v) {
    return arith::ConstantFloatOp::create(o, loc, f32, APFloat(float(v))).getResult();
  };
  auto add = [&](OpBuilder &o, Value x, Value y) { return arith::AddIOp::create(o, loc, x, y).getResult(); };
  auto mul = [&](OpBuilder &o, Value x, Value y) { return arith::MulIOp::create(o, loc, x, y).getResult(); };
  auto sub = [&](OpBuilder &o, Value x, Value y) { return arith::SubIOp::create(o, loc, x, y).getResult(); };
  auto cmp = [&](OpBuilder &o, arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(o, loc, p, x, y).getResult();
  };
  auto select = [&](OpBuilder &o, Value cond, Value x, Value y) {
    return arith::SelectOp::create(o, loc, cond, x, y).getResult();
  };
  auto ifThen = [&](OpBuilder &o, Value cond, function_ref<void(OpBuilder &)> then) {
    auto op = scf::IfOp::create(o, loc, TypeRange{}, cond, /*withElse=*/false);
    OpBuilder w = op.getThenBodyBuilder();
    then(w);
  };
  auto maxf = [&](OpBuilder &o, Value x, Value y) { return arith::MaximumFOp::create(o, loc, x, y).getResult(); };
  auto addf = [&](OpBuilder &o, Value x, Value y) { return arith::AddFOp::create(o, loc, x, y).getResult(); };
  auto mulf = [&](OpBuilder &o, Value x, Value y) { return arith::MulFOp::create(o, loc, x, y).getResult(); };
  auto expf = [&](OpBuilder &o, Value x, Value y) {
    return math::ExpOp::create(o, loc, arith::SubFOp::create(o, loc, x, y)).getResult();
  };

  // 1. The rows in bf16: the helper's window and cache rows, or a batch's
  // gathered columns.
  Value tokens = a.tokens, rows = a.rows, entries = a.k ? a.entries : c(b, 0);
  Value kv, validRows;
  const int64_t perQuadRow = D / kConvertLanes;
  auto vec4 = VectorType::get({kConvertLanes}, f32);
  auto load4 = [&](OpBuilder &w, Value src, Value at, Value d) {
    return vector::LoadOp::create(w, loc, vec4, src, ValueRange{at, d}, /*nontemporal=*/false, llvm::MaybeAlign(16))
        .getResult();
  };
  auto store4 = [&](OpBuilder &w, Value v, Value at, Value d) {
    Value h = arith::TruncFOp::create(w, loc, VectorType::get({kConvertLanes}, bf16), v);
    vector::StoreOp::create(w, loc, h, kv, ValueRange{at, d}, /*nontemporal=*/false, llvm::MaybeAlign(8));
  };
  // One kernel over `rows` rows of kConvertLanes-channel quads, a thread a
  // quad: body(builder, row, first channel).
  auto forEachQuad = [&](Value quadRows, llvm::function_ref<void(OpBuilder &, Value, Value)> body) {
    Value quads = mul(b, quadRows, c(b, perQuadRow));
    Value blocks = ceilDiv(b, loc, quads, kThreads);
    Value one = c(b, 1);
    auto launch = gpu::LaunchOp::create(b, loc, blocks, one, one, c(b, kThreads), one, one);
    OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value i = add(k, mul(k, launch.getBlockIds().x, c(k, kThreads)), launch.getThreadIds().x);
    ifThen(k, cmp(k, arith::CmpIPredicate::ult, i, quads), [&](OpBuilder &o) {
      body(o, arith::DivUIOp::create(o, loc, i, c(o, perQuadRow)),
           mul(o, arith::RemUIOp::create(o, loc, i, c(o, perQuadRow)), c(o, kConvertLanes)));
    });
    gpu::TerminatorOp::create(k, loc);
  };
  if (!a.slots) {
    Value kvRows = a.k ? add(b, rows, entries) : rows;
    kv = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic, D}, bf16), ValueRange{kvRows});
    forEachQuad(kvRows, [&](OpBuilder &o, Value row, Value d) {
      Value v;
      if (a.k) {
        auto fromWindow = scf::IfOp::create(o, loc, TypeRange{vec4}, cmp(o, arith::CmpIPredicate::ult, row, rows),
                                            /*withElse=*/true);
        OpBuilder w = fromWindow.getThenBodyBuilder();
        scf::YieldOp::create(w, loc, load4(w, a.windowRows, row, d));
        OpBuilder e = fromWindow.getElseBodyBuilder();
        scf::YieldOp::create(e, loc, load4(e, a.cacheRows, sub(e, row, rows), d));
        v = fromWindow.getResult(0);
      } else {
        v = load4(o, a.windowRows, row, d);
      }
      store4(o, v, row, d);
    });
  } else {
    // A batch: row t columns + c is sequence t's column c, as the SIMT
    // kernel reads it — band column c its ring's row of position
    // p - (W - 1) + c when that is >= 0, entry s = c - W the row
    // selection[t, s] mod E of page table[t, selection[t, s] div E]
    // (packed rows decoded: E2M1 or E4M3 times its scale is exact in bf16)
    // — or zeros, and validRows[t columns + c] whether it is a row. An
    // entry of -1, or whose page or row lies past the table or the pool,
    // is no row.
    Value gathered = mul(b, tokens, c(b, columns));
    kv = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic, D}, bf16), ValueRange{gathered});
    validRows = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, i32), ValueRange{gathered});
    Value tablePages = a.k ? memref::DimOp::create(b, loc, a.pageTable, c(b, 1)).getResult() : Value();
    forEachQuad(gathered, [&](OpBuilder &o, Value at, Value d) {
      Value t = arith::DivUIOp::create(o, loc, at, c(o, columns)), col = arith::RemUIOp::create(o, loc, at, c(o, columns));
      // Band column col: whether its position is >= 0, and its ring row.
      auto band = [&](OpBuilder &w) -> std::pair<Value, Value> {
        Value position = arith::IndexCastOp::create(w, loc, index, memref::LoadOp::create(w, loc, a.positions, ValueRange{t}));
        Value shifted = add(w, position, col);
        Value ok = cmp(w, arith::CmpIPredicate::uge, shifted, c(w, a.window - 1));
        Value ring = add(w, mul(w, t, c(w, a.window)),
                         arith::RemUIOp::create(w, loc, sub(w, shifted, c(w, a.window - 1)), c(w, a.window)));
        return {ok, select(w, ok, ring, c(w, 0))};
      };
      Value isRow, row, inBand;
      if (!a.k) {
        // No entries: every column is a band column.
        std::tie(isRow, row) = band(o);
      } else {
        inBand = cmp(o, arith::CmpIPredicate::ult, col, c(o, a.window));
        Type i1 = o.getI1Type();
        auto source = scf::IfOp::create(o, loc, TypeRange{i1, index}, inBand, /*withElse=*/true);
        {
          OpBuilder w = source.getThenBodyBuilder();
          auto [ok, ring] = band(w);
          scf::YieldOp::create(w, loc, ValueRange{ok, ring});
        }
        {
          OpBuilder w = source.getElseBodyBuilder();
          Value e = memref::LoadOp::create(w, loc, a.selection, ValueRange{t, sub(w, col, c(w, a.window))});
          Value entry = arith::IndexCastOp::create(w, loc, index, arith::MaxSIOp::create(w, loc, e, ci32(w, 0)));
          Value pageAt = arith::DivUIOp::create(w, loc, entry, c(w, a.pageEntries));
          Value listed = arith::AndIOp::create(w, loc, cmp(w, arith::CmpIPredicate::sge, e, ci32(w, 0)),
                                               cmp(w, arith::CmpIPredicate::ult, pageAt, tablePages));
          auto paged = scf::IfOp::create(w, loc, TypeRange{i1, index}, listed, /*withElse=*/true);
          OpBuilder y = paged.getThenBodyBuilder();
          Value page = memref::LoadOp::create(y, loc, a.pageTable, ValueRange{t, pageAt});
          Value pageRow = add(y, mul(y, arith::IndexCastOp::create(y, loc, index, arith::MaxSIOp::create(y, loc, page, ci32(y, 0))),
                                     c(y, a.pageEntries)),
                              arith::RemUIOp::create(y, loc, entry, c(y, a.pageEntries)));
          Value ok = arith::AndIOp::create(y, loc, cmp(y, arith::CmpIPredicate::sge, page, ci32(y, 0)),
                                           cmp(y, arith::CmpIPredicate::ult, pageRow, entries));
          scf::YieldOp::create(y, loc, ValueRange{ok, select(y, ok, pageRow, c(y, 0))});
          OpBuilder n = paged.getElseBodyBuilder();
          scf::YieldOp::create(n, loc, ValueRange{arith::ConstantIntOp::create(n, loc, 0, 1), c(n, 0)});
          scf::YieldOp::create(w, loc, paged.getResults());
        }
        isRow = source.getResult(0);
        row = source.getResult(1);
      }
      auto value = scf::IfOp::create(o, loc, TypeRange{vec4}, isRow, /*withElse=*/true);
      {
        OpBuilder w = value.getThenBodyBuilder();
        if (!a.k) {
          scf::YieldOp::create(w, loc, load4(w, a.windowRows, row, d));
        } else {
          auto fromRing = scf::IfOp::create(w, loc, TypeRange{vec4}, inBand, /*withElse=*/true);
          OpBuilder r = fromRing.getThenBodyBuilder();
          scf::YieldOp::create(r, loc, load4(r, a.windowRows, row, d));
          OpBuilder p = fromRing.getElseBodyBuilder();
          if (!a.packed) {
            scf::YieldOp::create(p, loc, load4(p, a.cacheRows, row, d));
          } else {
            auto byteAt = [&](Value column) -> Value {
              return arith::ExtUIOp::create(p, loc, i32, memref::LoadOp::create(p, loc, a.cacheRows, ValueRange{row, column}));
            };
            SmallVector<Value> channels;
            for (int64_t j = 0; j < kConvertLanes; ++j)
              channels.push_back(lowering::decodePacked(p, loc, byteAt, add(p, d, c(p, j)), *a.packed));
            scf::YieldOp::create(p, loc, vector::FromElementsOp::create(p, loc, vec4, channels).getResult());
          }
          scf::YieldOp::create(w, loc, fromRing.getResults());
        }
      }
      {
        OpBuilder w = value.getElseBodyBuilder();
        scf::YieldOp::create(w, loc, arith::ConstantOp::create(w, loc, DenseElementsAttr::get(vec4, 0.0f)).getResult());
      }
      store4(o, value.getResult(0), at, d);
      ifThen(o, cmp(o, arith::CmpIPredicate::eq, d, c(o, 0)), [&](OpBuilder &w) {
        memref::StoreOp::create(w, loc, arith::ExtUIOp::create(w, loc, i32, isRow), validRows, ValueRange{at});
      });
    });
  }

  // 2. The attention. Dynamic shared memory, 16-byte aligned parts.
  const int64_t qBytes = HB * rowStride * 2, kBytes = 2 * kChunk * rowStride * 2, pBytes = HB * pStride * 2;
  const int64_t validBytes = 2 * kChunk * 4, partBytes = colGroups * HB * 4, rowMBytes = 2 * HB * 4,
                alphaBytes = HB * 4;
  int64_t at = 0;
  auto place = [&](int64_t bytes) {
    int64_t offset = at;
    at = alignUp(at + bytes, 16);
    return offset;
  };
  const int64_t qAt = place(qBytes), kAt = place(kBytes), pAt = place(pBytes), validAt = place(validBytes),
                maxAt = place(partBytes), sumAt = place(partBytes), rowMAt = place(rowMBytes),
                alphaAt = place(alphaBytes);
  const int64_t sharedBytes = at;

  // The parts a block's columns split into (host values): with fewer
  // blocks than splitBelowBlocks, ceil(splitBelowBlocks / blocks) parts
  // at most, each `perPart` chunks, none empty. Without a split the kernel
  // is built as one part of every chunk, from constants.
  Value one = c(b, 1);
  const bool split = a.splitBelowBlocks > 0 && chunks > 1;
  Value parts = one, perPart, several, partOut, partMax, partSum;
  auto divUp = [&](OpBuilder &o, Value x, Value y) {
    return arith::DivUIOp::create(o, loc, sub(o, add(o, x, y), c(o, 1)), y).getResult();
  };
  if (split) {
    Value blocks = arith::MaxUIOp::create(b, loc, mul(b, tokens, c(b, groups)), one);
    Value wanted = arith::MinUIOp::create(b, loc, divUp(b, c(b, a.splitBelowBlocks), blocks), c(b, chunks));
    perPart = divUp(b, c(b, chunks), wanted);
    parts = divUp(b, c(b, chunks), perPart);
    // Part p of (token t, head h) is row (p tokens + t) heads + h; one row
    // when the call does not split (the buffers are then not touched).
    several = cmp(b, arith::CmpIPredicate::ugt, parts, one);
    Value partRows = select(b, several, mul(b, mul(b, parts, tokens), c(b, a.heads)), one);
    partOut = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic, D}, f32), ValueRange{partRows});
    partMax = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, f32), ValueRange{partRows});
    partSum = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, f32), ValueRange{partRows});
  }
  auto launch = gpu::LaunchOp::create(b, loc, tokens, c(b, groups), parts, c(b, kThreads), one, one,
                                      arith::ConstantIntOp::create(b, loc, i32, sharedBytes).getResult(), nullptr);
  OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
  Value t = launch.getBlockIds().x, group = launch.getBlockIds().y, tid = launch.getThreadIds().x;
  // The block's chunks [firstChunk, endChunk).
  Value firstChunk = c(k, 0), endChunk = c(k, chunks);
  if (split) {
    firstChunk = mul(k, launch.getBlockIds().z, perPart);
    endChunk = arith::MinUIOp::create(k, loc, add(k, firstChunk, perPart), c(k, chunks));
  }
  Value firstSlot = split ? arith::RemUIOp::create(k, loc, firstChunk, c(k, 2)).getResult() : c(k, 0);
  Value lane = arith::RemUIOp::create(k, loc, tid, c(k, kWarp));
  Value warp = arith::DivUIOp::create(k, loc, tid, c(k, kWarp));
  Value g = arith::DivUIOp::create(k, loc, lane, c(k, 4)), tq = arith::RemUIOp::create(k, loc, lane, c(k, 4));
  Value h0 = mul(k, group, c(k, HB));
  Value shared = gpu::DynamicSharedMemoryOp::create(
      k, loc, MemRefType::get({ShapedType::kDynamic}, k.getI8Type(), MemRefLayoutAttrInterface{}, workgroup));
  auto view = [&](int64_t offset, ArrayRef<int64_t> shape, Type element) {
    return memref::ViewOp::create(k, loc, MemRefType::get(shape, element, MemRefLayoutAttrInterface{}, workgroup),
                                  shared, c(k, offset), ValueRange{})
        .getResult();
  };
  Value qs = view(qAt, {HB, rowStride}, bf16), ks = view(kAt, {2, kChunk, rowStride}, bf16);
  Value ps = view(pAt, {HB, pStride}, bf16), valid = view(validAt, {2, kChunk}, i32);
  Value groupMax = view(maxAt, {colGroups, HB}, f32), groupSum = view(sumAt, {colGroups, HB}, f32);
  Value rowMax = view(rowMAt, {2, HB}, f32), alpha = view(alphaAt, {HB}, f32);
  Value minusInf = cf(k, -std::numeric_limits<double>::infinity());
  Value scale = arith::ConstantOp::create(k, loc, a.scale);

  // Column c of the token: its row in kv and whether it is one. Band column
  // c < W is window row off + t + c - (W - 1) when that is >= 0; entry
  // s = c - W is kv row rows + selection[t, s] when that entry exists.
  Value self = a.slots ? Value() : add(k, sub(k, rows, tokens), t);
  auto columnRow = [&](OpBuilder &o, Value col) -> std::pair<Value, Value> {
    if (a.slots) {
      // The gathered row t columns + c and its validity.
      Value row = add(o, mul(o, t, c(o, columns)), arith::MinUIOp::create(o, loc, col, c(o, columns - 1)));
      Value isRow = arith::AndIOp::create(
          o, loc, cmp(o, arith::CmpIPredicate::ult, col, c(o, columns)),
          cmp(o, arith::CmpIPredicate::ne, memref::LoadOp::create(o, loc, validRows, ValueRange{row}), ci32(o, 0)));
      return {isRow, row};
    }
    Value inBand = cmp(o, arith::CmpIPredicate::ult, col, c(o, a.window));
    Value shifted = add(o, self, col);
    Value bandValid = arith::AndIOp::create(o, loc, inBand, cmp(o, arith::CmpIPredicate::uge, shifted,
                                                                 c(o, a.window - 1)));
    Value row = sub(o, shifted, c(o, a.window - 1));
    Value isRow = bandValid;
    if (a.k) {
      Value s = arith::MinUIOp::create(o, loc, sub(o, arith::MaxUIOp::create(o, loc, col, c(o, a.window)),
                                                   c(o, a.window)),
                                       c(o, a.k - 1));
      Value e = memref::LoadOp::create(o, loc, a.selection, ValueRange{t, s});
      Value entry = arith::IndexCastOp::create(o, loc, index, arith::MaxSIOp::create(o, loc, e, ci32(o, 0)));
      Value entryValid = arith::AndIOp::create(
          o, loc, cmp(o, arith::CmpIPredicate::ult, col, c(o, columns)),
          arith::AndIOp::create(o, loc, cmp(o, arith::CmpIPredicate::sge, e, ci32(o, 0)),
                                cmp(o, arith::CmpIPredicate::ult, entry, entries)));
      entryValid = arith::AndIOp::create(o, loc, arith::XOrIOp::create(o, loc, inBand,
                                                                       arith::ConstantIntOp::create(o, loc, 1, 1)),
                                         entryValid);
      row = select(o, inBand, row, add(o, rows, entry));
      isRow = arith::OrIOp::create(o, loc, bandValid, entryValid);
    }
    return {isRow, select(o, isRow, row, c(o, 0))};
  };
  // Chunk `chunk`'s rows into ring slot `slot`: thread tid copies row
  // tid / 4 of the chunk, its 16-byte pieces tid mod 4 + 4 j (a column that
  // is no row is zero-filled, from row 0: cp.async's source size 0), and
  // the first of the four stores the column's validity. One commit group
  // per chunk.
  const int64_t pieces = D / 8;
  Value copyRow = arith::DivUIOp::create(k, loc, tid, c(k, 4)), copyPiece = arith::RemUIOp::create(k, loc, tid, c(k, 4));
  auto copyChunk = [&](OpBuilder &o, Value chunk, Value slot) {
    std::pair<Value, Value> column = columnRow(o, add(o, mul(o, chunk, c(o, kChunk)), copyRow));
    Value isRow = column.first, row = column.second;
    Value sourceElements = select(o, isRow, c(o, 8), c(o, 0));
    for (int64_t j = 0; j < pieces / 4; ++j) {
      Value d = mul(o, add(o, copyPiece, c(o, 4 * j)), c(o, 8));
      nvgpu::DeviceAsyncCopyOp::create(o, loc, ks, ValueRange{slot, copyRow, d}, kv, ValueRange{row, d},
                                       o.getIndexAttr(8), sourceElements, o.getUnitAttr());
    }
    ifThen(o, cmp(o, arith::CmpIPredicate::eq, copyPiece, c(o, 0)), [&](OpBuilder &w) {
      memref::StoreOp::create(w, loc, arith::ExtUIOp::create(w, loc, i32, isRow), valid, ValueRange{slot, copyRow});
    });
    NVVM::CpAsyncCommitGroupOp::create(o, loc);
  };
  copyChunk(k, firstChunk, firstSlot);

  // The group's queries in bf16 (zero past the heads), all loads first; the
  // running maxima start at the sink.
  {
    const int64_t perRow = D / kConvertLanes, loads = HB * perRow / kThreads;
    auto vec = VectorType::get({kConvertLanes}, f32);
    SmallVector<std::pair<Value, Value>> places;
    SmallVector<Value> values;
    for (int64_t j = 0; j < loads; ++j) {
      Value i = add(k, tid, c(k, j * kThreads));
      Value row = arith::DivUIOp::create(k, loc, i, c(k, perRow));
      Value d = mul(k, arith::RemUIOp::create(k, loc, i, c(k, perRow)), c(k, kConvertLanes));
      Value h = add(k, h0, row);
      Value inHeads = cmp(k, arith::CmpIPredicate::ult, h, c(k, a.heads));
      Value hc = arith::MinUIOp::create(k, loc, h, c(k, a.heads - 1));
      Value v = vector::LoadOp::create(k, loc, vec, a.queries, ValueRange{t, hc, d}, false, llvm::MaybeAlign(16));
      Value zero = arith::ConstantOp::create(k, loc, DenseElementsAttr::get(vec, 0.0f));
      values.push_back(select(k, inHeads, v, zero));
      places.push_back({row, d});
    }
    for (int64_t j = 0; j < loads; ++j) {
      Value h = arith::TruncFOp::create(k, loc, VectorType::get({kConvertLanes}, bf16), values[size_t(j)]);
      vector::StoreOp::create(k, loc, h, qs, ValueRange{places[size_t(j)].first, places[size_t(j)].second}, false,
                              llvm::MaybeAlign(8));
    }
    ifThen(k, cmp(k, arith::CmpIPredicate::ult, tid, c(k, HB)), [&](OpBuilder &o) {
      Value h = arith::MinUIOp::create(o, loc, add(o, h0, tid), c(o, a.heads - 1));
      memref::StoreOp::create(o, loc, memref::LoadOp::create(o, loc, a.sink, ValueRange{h}), rowMax,
                              ValueRange{firstSlot, tid});
    });
  }

  // Fragments. ldmatrix x4 (x2): lane l gives the row address of matrix
  // l / 8; a result register holds that matrix's (lane / 4, 2 (lane mod 4)..)
  // pair, or with .trans its (2 (lane mod 4).., lane / 4) pair.
  auto fragments = [&](OpBuilder &o, Value buffer, ValueRange at, bool transpose, int64_t tiles) {
    auto type = VectorType::get({tiles, 2}, bf16);
    Value m = nvgpu::LdMatrixOp::create(o, loc, type, buffer, at, transpose, uint32_t(tiles));
    SmallVector<Value> regs;
    for (int64_t r = 0; r < tiles; ++r) {
      Value pair = vector::ExtractOp::create(o, loc, m, ArrayRef<int64_t>{r});
      Value word = vector::BitCastOp::create(o, loc, VectorType::get({1}, i32), pair);
      regs.push_back(vector::ExtractOp::create(o, loc, word, ArrayRef<int64_t>{0}));
    }
    return regs;
  };
  Value laneRow = arith::RemUIOp::create(k, loc, lane, c(k, 8));
  Value matrix = arith::DivUIOp::create(k, loc, lane, c(k, 8));
  Value matrixLow = arith::RemUIOp::create(k, loc, matrix, c(k, 2)), matrixHigh = arith::DivUIOp::create(k, loc, matrix, c(k, 2));
  // An A fragment (16 x 16 at (r0, k0) of a row-major bf16 buffer):
  // matrices (r0, k0), (r0 + 8, k0), (r0, k0 + 8), (r0 + 8, k0 + 8).
  auto aFragment = [&](OpBuilder &o, Value buffer, ValueRange prefix, Value r0, Value k0) {
    SmallVector<Value> at(prefix);
    at.push_back(add(o, add(o, r0, laneRow), mul(o, matrixLow, c(o, 8))));
    at.push_back(add(o, k0, mul(o, matrixHigh, c(o, 8))));
    return fragments(o, buffer, at, false, 4);
  };
  Type accType = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, f32));
  auto mma = [&](OpBuilder &o, ArrayRef<Value> aRegs, Value b0, Value b1, MutableArrayRef<Value> acc) {
    Value d = NVVM::MmaOp::create(o, loc, accType, ValueRange(aRegs), ValueRange{b0, b1}, ValueRange(ArrayRef<Value>(acc)), ArrayRef<int64_t>{16, 8, 16},
                                  std::nullopt, std::nullopt,
                                  std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
                                  std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col})
                  .getResult();
    for (int64_t e = 0; e < 4; ++e)
      acc[size_t(e)] = LLVM::ExtractValueOp::create(o, loc, d, ArrayRef<int64_t>{e}).getResult();
  };
  auto quadCombine = [&](OpBuilder &o, Value v, bool isMax) {
    for (int64_t offset : {1, 2}) {
      Value other = gpu::ShuffleOp::create(o, loc, v, ci32(o, offset), ci32(o, kWarp), gpu::ShuffleMode::XOR)
                        .getResult(0);
      v = isMax ? maxf(o, v, other) : addf(o, v, other);
    }
    return v;
  };

  // The warp's part of S: m16 tiles mRow0 + 16 i (i < mPerWarp), n8 tiles
  // nCol0 + 8 j (j < nPerWarp) of the chunk; its rows g and g + 8 of each.
  Value mRow0 = mul(k, arith::RemUIOp::create(k, loc, warp, c(k, mGroups)), c(k, 16 * mPerWarp));
  Value colGroup = arith::DivUIOp::create(k, loc, warp, c(k, mGroups));
  Value nCol0 = mul(k, colGroup, c(k, 8 * nPerWarp));
  auto sRow = [&](OpBuilder &o, int64_t i, int64_t half) { return add(o, add(o, mRow0, c(o, 16 * i + 8 * half)), g); };
  auto sCol = [&](OpBuilder &o, int64_t j, int64_t e) {
    return add(o, add(o, nCol0, c(o, 8 * j + e)), mul(o, tq, c(o, 2)));
  };
  const int64_t sAccs = mPerWarp * nPerWarp * 4, sRows = mPerWarp * 2;
  // P V's accumulators: m16 tile i, n8 tile j (channels dCol0 + 8 j), 4 each.
  Value dCol0 = mul(k, warp, c(k, D / kWarps));
  const int64_t oAccs = mTiles * pvTiles * 4;

  // Carried: O's accumulators, then each of the thread's S rows' sum.
  SmallVector<Value> init(size_t(oAccs), cf(k, 0));
  init.append(size_t(sRows), cf(k, 0));
  auto loop = scf::ForOp::create(
      k, loc, firstChunk, endChunk, c(k, 1), init, [&](OpBuilder &o, Location, Value chunk, ValueRange carried) {
        SmallVector<Value> acc(carried.begin(), carried.begin() + oAccs);
        SmallVector<Value> sums(carried.begin() + oAccs, carried.end());
        Value slot = arith::RemUIOp::create(o, loc, chunk, c(o, 2));
        Value next = add(o, chunk, c(o, 1));
        // a. Chunk `chunk` has arrived (its group is the only one pending)
        // and every thread is done with the chunk before: its slot takes
        // the next chunk.
        NVVM::CpAsyncWaitGroupOp::create(o, loc, 0);
        gpu::BarrierOp::create(o, loc);
        ifThen(o, cmp(o, arith::CmpIPredicate::ult, next, endChunk),
               [&](OpBuilder &w) { copyChunk(w, next, arith::RemUIOp::create(w, loc, next, c(w, 2))); });
        SmallVector<Value> s(size_t(sAccs), cf(o, 0));
        auto depth = scf::ForOp::create(
            o, loc, c(o, 0), c(o, D), c(o, 16), s, [&](OpBuilder &w, Location, Value k0, ValueRange sAcc) {
              SmallVector<Value> sNext(sAcc.begin(), sAcc.end());
              // B: rows nCol0 + 8 j.. of the chunk at depths k0.. (x4: two
              // n8 tiles, (n, k0), (n, k0 + 8), (n + 8, k0), (n + 8, k0 + 8)).
              SmallVector<Value> bRegs;
              for (int64_t j = 0; j < nPerWarp; j += 2) {
                int64_t tiles = nPerWarp - j >= 2 ? 4 : 2;
                Value n = add(w, add(w, nCol0, c(w, 8 * j)), laneRow);
                if (tiles == 4)
                  n = add(w, n, mul(w, matrixHigh, c(w, 8)));
                Value kk = add(w, k0, mul(w, matrixLow, c(w, 8)));
                SmallVector<Value> regs = fragments(w, ks, ValueRange{slot, n, kk}, false, tiles);
                bRegs.append(regs.begin(), regs.end());
              }
              for (int64_t i = 0; i < mPerWarp; ++i) {
                SmallVector<Value> aRegs = aFragment(w, qs, {}, add(w, mRow0, c(w, 16 * i)), k0);
                for (int64_t j = 0; j < nPerWarp; ++j)
                  mma(w, aRegs, bRegs[size_t(2 * j)], bRegs[size_t(2 * j + 1)],
                      MutableArrayRef<Value>(sNext).slice(size_t(4 * (i * nPerWarp + j)), 4));
              }
              scf::YieldOp::create(w, loc, sNext);
            });
        s.assign(depth.getResults().begin(), depth.getResults().end());
        // Scaled, -inf where the column is no row; the rows' maxima over
        // the warp's columns.
        SmallVector<Value> rowMaxima(size_t(sRows), minusInf);
        for (int64_t i = 0; i < mPerWarp; ++i)
          for (int64_t j = 0; j < nPerWarp; ++j)
            for (int64_t e = 0; e < 4; ++e) {
              size_t n = size_t(4 * (i * nPerWarp + j) + e);
              Value isRow = cmp(o, arith::CmpIPredicate::ne,
                                memref::LoadOp::create(o, loc, valid, ValueRange{slot, sCol(o, j, e % 2)}), ci32(o, 0));
              s[n] = select(o, isRow, mulf(o, s[n], scale), minusInf);
              size_t r = size_t(2 * i + e / 2);
              rowMaxima[r] = maxf(o, rowMaxima[r], s[n]);
            }
        for (int64_t r = 0; r < sRows; ++r) {
          Value m = quadCombine(o, rowMaxima[size_t(r)], true);
          ifThen(o, cmp(o, arith::CmpIPredicate::eq, tq, c(o, 0)), [&](OpBuilder &w) {
            memref::StoreOp::create(w, loc, m, groupMax, ValueRange{colGroup, sRow(w, r / 2, r % 2)});
          });
        }
        gpu::BarrierOp::create(o, loc);
        // b. The new maxima, P, the sums; column group 0 stores the maxima
        // (in the other slot: this chunk's are still being read) and the
        // rescaling.
        Value oldSlot = slot, newSlot = arith::RemUIOp::create(o, loc, next, c(o, 2));
        for (int64_t r = 0; r < sRows; ++r) {
          Value row = sRow(o, r / 2, r % 2);
          Value old = memref::LoadOp::create(o, loc, rowMax, ValueRange{oldSlot, row});
          Value m = old;
          for (int64_t cg = 0; cg < colGroups; ++cg)
            m = maxf(o, m, memref::LoadOp::create(o, loc, groupMax, ValueRange{c(o, cg), row}));
          Value rescale = expf(o, old, m);
          Value own = cf(o, 0);
          for (int64_t j = 0; j < nPerWarp; ++j) {
            size_t n = size_t(4 * ((r / 2) * nPerWarp + j) + 2 * (r % 2));
            Value p0 = expf(o, s[n], m), p1 = expf(o, s[n + 1], m);
            own = addf(o, own, addf(o, p0, p1));
            Value pair = vector::FromElementsOp::create(o, loc, VectorType::get({2}, f32), ValueRange{p0, p1});
            Value packed = arith::TruncFOp::create(o, loc, VectorType::get({2}, bf16), pair);
            vector::StoreOp::create(o, loc, packed, ps, ValueRange{row, sCol(o, j, 0)}, false, llvm::MaybeAlign(4));
          }
          sums[size_t(r)] = addf(o, mulf(o, sums[size_t(r)], rescale), own);
          ifThen(o,
                 arith::AndIOp::create(o, loc, cmp(o, arith::CmpIPredicate::eq, colGroup, c(o, 0)),
                                       cmp(o, arith::CmpIPredicate::eq, tq, c(o, 0))),
                 [&](OpBuilder &w) {
                   memref::StoreOp::create(w, loc, m, rowMax, ValueRange{newSlot, row});
                   memref::StoreOp::create(w, loc, rescale, alpha, ValueRange{row});
                 });
        }
        gpu::BarrierOp::create(o, loc);
        // c. O = O rescale + P V.
        for (int64_t i = 0; i < mTiles; ++i)
          for (int64_t half = 0; half < 2; ++half) {
            Value rescale = memref::LoadOp::create(o, loc, alpha, ValueRange{add(o, c(o, 16 * i + 8 * half), g)});
            for (int64_t j = 0; j < pvTiles; ++j)
              for (int64_t e = 0; e < 2; ++e) {
                size_t n = size_t(4 * (i * pvTiles + j) + 2 * half + e);
                acc[n] = mulf(o, acc[n], rescale);
              }
          }
        for (int64_t kk = 0; kk < kChunk; kk += 16) {
          // B: V rows kk.. of the chunk at channels dCol0 + 8 j.. (x4 .trans:
          // (kk, d), (kk + 8, d), (kk, d + 8), (kk + 8, d + 8)).
          SmallVector<Value> bRegs;
          for (int64_t j = 0; j < pvTiles; j += 2) {
            Value r = add(o, add(o, c(o, kk), laneRow), mul(o, matrixLow, c(o, 8)));
            Value d = add(o, add(o, dCol0, c(o, 8 * j)), mul(o, matrixHigh, c(o, 8)));
            SmallVector<Value> regs = fragments(o, ks, ValueRange{slot, r, d}, true, 4);
            bRegs.append(regs.begin(), regs.end());
          }
          for (int64_t i = 0; i < mTiles; ++i) {
            SmallVector<Value> aRegs = aFragment(o, ps, {}, c(o, 16 * i), c(o, kk));
            for (int64_t j = 0; j < pvTiles; ++j)
              mma(o, aRegs, bRegs[size_t(2 * j)], bRegs[size_t(2 * j + 1)],
                  MutableArrayRef<Value>(acc).slice(size_t(4 * (i * pvTiles + j)), 4));
          }
        }
        SmallVector<Value> yielded(acc);
        yielded.append(sums.begin(), sums.end());
        scf::YieldOp::create(o, loc, yielded);
      });
  SmallVector<Value> acc(loop.getResults().begin(), loop.getResults().begin() + oAccs);
  SmallVector<Value> sums(loop.getResults().begin() + oAccs, loop.getResults().end());

  // The denominators: the threads' sums over the quad, the column groups in
  // order, plus exp(sink - m).
  for (int64_t r = 0; r < sRows; ++r) {
    Value sum = quadCombine(k, sums[size_t(r)], false);
    ifThen(k, cmp(k, arith::CmpIPredicate::eq, tq, c(k, 0)), [&](OpBuilder &w) {
      memref::StoreOp::create(w, loc, sum, groupSum, ValueRange{colGroup, sRow(w, r / 2, r % 2)});
    });
  }
  gpu::BarrierOp::create(k, loc);
  Value lastSlot = split ? arith::RemUIOp::create(k, loc, endChunk, c(k, 2)).getResult() : c(k, chunks % 2);
  // The group's rows: whole, O / (exp(sink - m) + the sums) into the
  // output; or a part's, O, m and the sums (without the sink) into the
  // parts' buffers (one warp the maxima and sums: every warp holds every
  // row).
  auto storeRows = [&](OpBuilder &o, bool whole) {
    for (int64_t i = 0; i < mTiles; ++i)
      for (int64_t half = 0; half < 2; ++half) {
        Value row = add(o, c(o, 16 * i + 8 * half), g);
        Value h = add(o, h0, row);
        Value inHeads = cmp(o, arith::CmpIPredicate::ult, h, c(o, a.heads));
        Value hc = arith::MinUIOp::create(o, loc, h, c(o, a.heads - 1));
        Value m = memref::LoadOp::create(o, loc, rowMax, ValueRange{lastSlot, row});
        Value denom = whole ? expf(o, memref::LoadOp::create(o, loc, a.sink, ValueRange{hc}), m)
                            : memref::LoadOp::create(o, loc, groupSum, ValueRange{c(o, 0), row}).getResult();
        for (int64_t cg = whole ? 0 : 1; cg < colGroups; ++cg)
          denom = addf(o, denom, memref::LoadOp::create(o, loc, groupSum, ValueRange{c(o, cg), row}));
        ifThen(o, inHeads, [&](OpBuilder &w) {
          Value partRow;
          if (!whole) {
            partRow = add(w, mul(w, add(w, mul(w, launch.getBlockIds().z, tokens), t), c(w, a.heads)), h);
            ifThen(w,
                   arith::AndIOp::create(w, loc, cmp(w, arith::CmpIPredicate::eq, warp, c(w, 0)),
                                         cmp(w, arith::CmpIPredicate::eq, tq, c(w, 0))),
                   [&](OpBuilder &y) {
                     memref::StoreOp::create(y, loc, m, partMax, ValueRange{partRow});
                     memref::StoreOp::create(y, loc, denom, partSum, ValueRange{partRow});
                   });
          }
          for (int64_t j = 0; j < pvTiles; ++j) {
            size_t n = size_t(4 * (i * pvTiles + j) + 2 * half);
            Value x = acc[n], y = acc[n + 1];
            if (whole) {
              x = arith::DivFOp::create(w, loc, x, denom);
              y = arith::DivFOp::create(w, loc, y, denom);
            }
            Value pair = vector::FromElementsOp::create(w, loc, VectorType::get({2}, f32), ValueRange{x, y});
            Value d = add(w, add(w, dCol0, c(w, 8 * j)), mul(w, tq, c(w, 2)));
            if (whole)
              vector::StoreOp::create(w, loc, pair, a.out, ValueRange{t, h, d}, false, llvm::MaybeAlign(8));
            else
              vector::StoreOp::create(w, loc, pair, partOut, ValueRange{partRow, d}, false, llvm::MaybeAlign(8));
          }
        });
      }
  };
  if (!split) {
    storeRows(k, true);
  } else {
    auto onePart = scf::IfOp::create(k, loc, TypeRange{}, cmp(k, arith::CmpIPredicate::eq, parts, c(k, 1)),
                                     /*withElse=*/true);
    OpBuilder whole = onePart.getThenBodyBuilder(), part = onePart.getElseBodyBuilder();
    storeRows(whole, true);
    storeRows(part, false);
  }
  gpu::TerminatorOp::create(k, loc);

  // 3. With parts, their merge: a thread per (token, head, four channels),
  // the maximum over the parts, then the sink's term and each part's sum
  // and output rescaled by exp(its maximum - the maximum), in part order.
  if (split) {
    auto merge = scf::IfOp::create(b, loc, TypeRange{}, several, /*withElse=*/false);
    OpBuilder h = merge.getThenBodyBuilder();
    const int64_t perHead = D / kConvertLanes;
    Value tokenHeads = mul(h, tokens, c(h, a.heads));
    Value quads = mul(h, tokenHeads, c(h, perHead));
    Value hOne = c(h, 1);
    auto mergeLaunch = gpu::LaunchOp::create(h, loc, ceilDiv(h, loc, quads, kThreads), hOne, hOne, c(h, kThreads),
                                             hOne, hOne);
    OpBuilder m = OpBuilder::atBlockEnd(&mergeLaunch.getBody().front());
    Value i = add(m, mul(m, mergeLaunch.getBlockIds().x, c(m, kThreads)), mergeLaunch.getThreadIds().x);
    ifThen(m, cmp(m, arith::CmpIPredicate::ult, i, quads), [&](OpBuilder &o) {
      Value row = arith::DivUIOp::create(o, loc, i, c(o, perHead));
      Value d = mul(o, arith::RemUIOp::create(o, loc, i, c(o, perHead)), c(o, kConvertLanes));
      Value head = arith::RemUIOp::create(o, loc, row, c(o, a.heads));
      Value token = arith::DivUIOp::create(o, loc, row, c(o, a.heads));
      auto partRow = [&](OpBuilder &w, Value p) { return add(w, mul(w, p, tokenHeads), row); };
      auto most = scf::ForOp::create(
          o, loc, c(o, 1), parts, c(o, 1), ValueRange{memref::LoadOp::create(o, loc, partMax, ValueRange{row})},
          [&](OpBuilder &w, Location, Value p, ValueRange carried) {
            Value x = memref::LoadOp::create(w, loc, partMax, ValueRange{partRow(w, p)});
            scf::YieldOp::create(w, loc, ValueRange{maxf(w, carried[0], x)});
          });
      Value top = most.getResult(0);
      Value denom0 = expf(o, memref::LoadOp::create(o, loc, a.sink, ValueRange{head}), top);
      Value zero = arith::ConstantOp::create(o, loc, DenseElementsAttr::get(vec4, 0.0f));
      auto sums = scf::ForOp::create(
          o, loc, c(o, 0), parts, c(o, 1), ValueRange{denom0, zero},
          [&](OpBuilder &w, Location, Value p, ValueRange carried) {
            Value at = partRow(w, p);
            Value weight = expf(w, memref::LoadOp::create(w, loc, partMax, ValueRange{at}), top);
            Value denom = addf(w, carried[0], mulf(w, memref::LoadOp::create(w, loc, partSum, ValueRange{at}), weight));
            Value rows4 = load4(w, partOut, at, d);
            Value scaled = arith::MulFOp::create(w, loc, rows4, vector::BroadcastOp::create(w, loc, vec4, weight));
            scf::YieldOp::create(w, loc, ValueRange{denom, arith::AddFOp::create(w, loc, carried[1], scaled).getResult()});
          });
      Value result = arith::DivFOp::create(o, loc, sums.getResult(1),
                                           vector::BroadcastOp::create(o, loc, vec4, sums.getResult(0)));
      vector::StoreOp::create(o, loc, result, a.out, ValueRange{token, head, d}, false, llvm::MaybeAlign(16));
    });
    gpu::TerminatorOp::create(m, loc);
    memref::DeallocOp::create(b, loc, partOut);
    memref::DeallocOp::create(b, loc, partMax);
    memref::DeallocOp::create(b, loc, partSum);
  }
  memref::DeallocOp::create(b, loc, kv);
  if (validRows)
    memref::DeallocOp::create(b, loc, validRows);
}

} // namespace mlir::dsf
