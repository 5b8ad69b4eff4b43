//===- GpuGroupedExperts.cpp - dsf-gpu-grouped-experts --------------------===//
//
// dsf-to-linalg writes the routed experts as generics that read, for every
// (token, slot), the weight of the expert chosen for it (marked
// `dsf.experts`). As loops that is one thread per output over gathered
// weights: no reuse of a weight tile across tokens, uncoalesced reads; it
// was half of a small V4 prefill's kernel time. This pass groups the rows
// by expert and runs the tiled GEMM kernel over each expert's rows:
//
//   counts[e]  = rows routed to e, each row's rank among them (atomics; the
//                order inside an expert does not matter: a row's outputs
//                depend only on that row)
//   starts     = exclusive sums of counts and of their tiles of rows
//   perm[slot] = the row in expert order
//   a tiled GEMM whose block y finds its expert from the tile sums, reads
//   its rows through perm and the expert's weight, and writes each row back
//   in place (the projection's rows) or to z[t, slot, :] (the down
//   projection), whose slots are then added in slot order.
//
// Few rows (decode: fewer than min-rows, or fewer than
// min-rows-per-expert times the experts) take a warp per output instead,
// reading its row's expert directly. With batch-invariant, every row count
// takes the tiled path, so a row's sums never depend on how many rows ran
// with it.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUGROUPEDEXPERTS
#include "lowering/Passes.h.inc"

namespace {
struct ExpertMatmul {
  linalg::GenericOp generic;
  bool down = false;  // "down": [t, d] = sum_slot W2[e, d, :] . h[t, slot, :]
  Value experts, input, output, weight;
  /// A weight bound packed (weight-storage=released): `weight` is then its
  /// MXFP4 codes [E, out, in / 2] and `scales` its UE8M0 bytes
  /// [E, out, in / 32].
  Value scales;
  /// Packed: the UE8M0 scale of W[e, col, d]'s 32-block, as f32.
  Value scaleAt(OpBuilder &o, Location l, Value e, Value col, Value d) const {
    Value block = arith::DivUIOp::create(o, l, d, arith::ConstantIndexOp::create(o, l, 32));
    Value byte = memref::LoadOp::create(o, l, scales, ValueRange{e, col, block});
    return lowering::packedScaleValue(o, l, arith::ExtUIOp::create(o, l, o.getI32Type(), byte), /*e4m3Scale=*/false);
  }
  /// W[e, col, d] as f32: the stored element (widened where the kernel
  /// multiplies), or decoded from the packed codes.
  Value element(OpBuilder &o, Location l, Value e, Value col, Value d) const {
    if (!scales)
      return memref::LoadOp::create(o, l, weight, ValueRange{e, col, d}).getResult();
    auto ci = [&](int64_t v) { return arith::ConstantIndexOp::create(o, l, v).getResult(); };
    Value byte = arith::ExtUIOp::create(
        o, l, o.getI32Type(),
        memref::LoadOp::create(o, l, weight, ValueRange{e, col, arith::DivUIOp::create(o, l, d, ci(2))}));
    Value odd = arith::IndexCastOp::create(o, l, o.getI32Type(), arith::RemUIOp::create(o, l, d, ci(2)));
    Value code = arith::AndIOp::create(
        o, l, arith::ShRUIOp::create(o, l, byte, arith::MulIOp::create(o, l, odd, arith::ConstantIntOp::create(o, l, 4, 32))),
        arith::ConstantIntOp::create(o, l, 15, 32));
    return arith::MulFOp::create(o, l, lowering::e2m1Value(o, l, code), scaleAt(o, l, e, col, d)).getResult();
  }
};

/// The generic's parts, or a diagnostic naming what is missing.
FailureOr<ExpertMatmul> match(linalg::GenericOp g, StringRef kind) {
  ExpertMatmul m;
  m.generic = g;
  if (kind != "project" && kind != "down")
    return g.emitOpError("dsf.experts must be \"project\" or \"down\", not \"") << kind << "\"", failure();
  m.down = kind == "down";
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1)
    return g.emitOpError("dsf.experts: expected a bufferized generic of two inputs and one output"), failure();
  m.experts = g.getDpsInputs()[0];
  m.input = g.getDpsInputs()[1];
  m.output = g.getDpsInits()[0];
  auto expertsType = llvm::dyn_cast<MemRefType>(m.experts.getType());
  if (!expertsType || expertsType.getRank() != 2 || !expertsType.getElementType().isInteger(32) ||
      expertsType.isDynamicDim(1))
    return g.emitOpError("dsf.experts: the first input must be the [tokens, slots] i32 expert indices"), failure();
  SmallVector<Value> read;   // the buffers the body loads from, other than its operands
  g.getRegion().walk([&](memref::LoadOp load) {
    if ((!llvm::isa<BlockArgument>(load.getMemRef()) || load.getMemRef().getParentRegion() != &g.getRegion()) &&
        !llvm::is_contained(read, load.getMemRef()))
      read.push_back(load.getMemRef());
  });
  auto rank3 = [](Value v, bool bytes) {
    auto t = llvm::dyn_cast<MemRefType>(v.getType());
    return t && t.getRank() == 3 &&
           (bytes ? t.getElementType().isInteger(8) : lowering::isWidenableFloat(t.getElementType()));
  };
  if (read.size() == 2 && rank3(read[0], true) && rank3(read[1], true)) {
    // Packed MXFP4: the codes take 16 bytes for each scale byte.
    auto depth = [](Value v) { return llvm::cast<MemRefType>(v.getType()).getDimSize(2); };
    if (depth(read[0]) < depth(read[1]))
      std::swap(read[0], read[1]);
    if (ShapedType::isDynamic(depth(read[0])) || depth(read[0]) != 16 * depth(read[1]))
      return g.emitOpError("dsf.experts: packed codes [experts, out, in / 2] need UE8M0 scales "
                           "[experts, out, in / 32]"),
             failure();
    m.weight = read[0];
    m.scales = read[1];
  } else if (read.size() == 1 && rank3(read[0], false)) {
    m.weight = read[0];
  } else {
    return g.emitOpError("dsf.experts: the body must read a [experts, out, in] float weight, or its MXFP4 codes "
                         "and scales"),
           failure();
  }
  unsigned inputRank = m.down ? 3 : 2, outputRank = m.down ? 2 : 3;
  if (llvm::cast<MemRefType>(m.input.getType()).getRank() != inputRank ||
      llvm::cast<MemRefType>(m.output.getType()).getRank() != outputRank)
    return g.emitOpError("dsf.experts: operand ranks do not match a \"") << kind << "\" product", failure();
  return m;
}

struct GpuGroupedExpertsPass : impl::GpuGroupedExpertsBase<GpuGroupedExpertsPass> {
  using GpuGroupedExpertsBase::GpuGroupedExpertsBase;

  /// With `consumer` (a "project" product's elementwiseConsumer: the
  /// experts' SwiGLU after their second projection), the kernels compute
  /// its element where they store the product's, at its place.
  void rewrite(const ExpertMatmul &m, TileMath tileMath, linalg::GenericOp consumer) {
    linalg::GenericOp g = m.generic;
    Location loc = g.getLoc();
    // Every (token, slot) row is computed once, each output stored once:
    // when the output was just zeroed, the kernels store their sums (the
    // down product's slots are added from 0) and the fill's kernel goes.
    // Found from the product's place, before the kernels move down to the
    // consumer's (only allocations lie between).
    linalg::FillOp zeroed = fillBefore(g, m.output);
    if (zeroed && !matchPattern(zeroed.getDpsInputs()[0], m_AnyZeroFloat()))
      zeroed = nullptr;
    OpBuilder b(consumer ? consumer.getOperation() : g.getOperation());
    auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
    auto i32 = [&](OpBuilder &o, int64_t v) { return arith::ConstantIntOp::create(o, loc, v, 32).getResult(); };
    auto toIndex = [&](OpBuilder &o, Value v) { return arith::IndexCastOp::create(o, loc, o.getIndexType(), v).getResult(); };
    int64_t slots = llvm::cast<MemRefType>(m.experts.getType()).getDimSize(1);
    Value tokens = memref::DimOp::create(b, loc, m.experts, 0);
    Value E = memref::DimOp::create(b, loc, m.weight, 0), N = memref::DimOp::create(b, loc, m.weight, 1),
          K = memref::DimOp::create(b, loc, m.weight, 2);
    if (m.scales)   // two depths a byte of codes
      K = arith::MulIOp::create(b, loc, K, idx(b, 2));
    Value rows = arith::MulIOp::create(b, loc, tokens, idx(b, slots));
    auto f32 = b.getF32Type();
    Value z;
    if (m.down)
      z = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic, slots, ShapedType::kDynamic}, f32),
                                  ValueRange{tokens, N});
    // Row r is (token r / slots, slot r % slots).
    auto tokenSlot = [&](OpBuilder &o, Value r) {
      return std::make_pair(arith::DivUIOp::create(o, loc, r, idx(o, slots)).getResult(),
                            arith::RemUIOp::create(o, loc, r, idx(o, slots)).getResult());
    };
    auto loadInput = [&](OpBuilder &o, Value t, Value s, Value d) {
      return m.down ? memref::LoadOp::create(o, loc, m.input, ValueRange{t, s, d}).getResult()
                    : memref::LoadOp::create(o, loc, m.input, ValueRange{t, d}).getResult();
    };
    auto storeRow = [&](OpBuilder &o, Value t, Value s, Value col, Value sum) {
      if (m.down) {
        memref::StoreOp::create(o, loc, sum, z, ValueRange{t, s, col});
        return;
      }
      if (!zeroed)
        sum = arith::AddFOp::create(o, loc, memref::LoadOp::create(o, loc, m.output, ValueRange{t, s, col}), sum);
      memref::StoreOp::create(o, loc, sum, m.output, ValueRange{t, s, col});
      if (consumer)
        computeConsumerAt(o, loc, consumer, {t, s, col}, m.output, sum);
    };

    // The tiles compute whole tiles of rows for every expert that has one:
    // with a few rows an expert (a batched decode's) that is mostly padding,
    // and a warp per (row, output) reading its row's expert is faster (the
    // rows of one weight chunk run together: its reads past the first come
    // from L2).
    auto atLeast = [&](OpBuilder &o, Value v, Value bound) {
      return arith::CmpIOp::create(o, loc, arith::CmpIPredicate::uge, v, bound).getResult();
    };
    Value grouped =
        batchInvariant ? arith::ConstantIntOp::create(b, loc, 1, 1).getResult()
                       : arith::AndIOp::create(b, loc, atLeast(b, rows, idx(b, minRows)),
                                               atLeast(b, rows, arith::MulIOp::create(b, loc, E, idx(b, minRowsPerExpert))))
                             .getResult();
    auto choice = scf::IfOp::create(b, loc, TypeRange{}, grouped, /*withElse=*/true);
    // The tiles for N columns; where those are 128 x 128, narrow 64 x 64
    // ones too, for fewer than wide-min-rows-per-expert rows an expert on
    // average (a batched decode's): a 128-row tile of 48 rows is mostly
    // padding, and 18 column tiles an expert leave the GPU one wave of
    // lopsided blocks. Each output's sum is the same mma sequence over the
    // depth on either tile: the choice changes no bit of the result.
    const GemmTile wide = gemmTile(tileMath, N);
    const bool twoTiles = wide.rows == 128 && wideMinRowsPerExpert > 0;
    const GemmTile narrow = twoTiles ? GemmTile{64, 64} : wide;
    {
      OpBuilder t = choice.getThenBodyBuilder();
      auto i32Buffer = [&](ArrayRef<int64_t> shape, ValueRange sizes) {
        return memref::AllocOp::create(t, loc, MemRefType::get(shape, t.getI32Type()), sizes).getResult();
      };
      Value counts = i32Buffer({ShapedType::kDynamic}, E);
      linalg::FillOp::create(t, loc, ValueRange{i32(t, 0)}, ValueRange{counts});
      Value rank = i32Buffer({ShapedType::kDynamic, slots}, tokens);
      Value zero = idx(t, 0), one = idx(t, 1);
      scf::ParallelOp::create(t, loc, ValueRange{zero, zero}, ValueRange{tokens, idx(t, slots)}, ValueRange{one, one},
                              [&](OpBuilder &o, Location l, ValueRange ivs) {
                                Value e = toIndex(o, memref::LoadOp::create(o, l, m.experts, ivs));
                                Value before = memref::AtomicRMWOp::create(o, l, arith::AtomicRMWKind::addi, i32(o, 1),
                                                                           counts, ValueRange{e});
                                memref::StoreOp::create(o, l, before, rank, ivs);
                              });
      // starts[0, e]: the expert's first row in expert order; starts[1, e]:
      // its first tile of `narrow` rows; starts[2, e] (with two tiles): of
      // `wide` rows. One thread: E is a few hundred at most.
      const SmallVector<int64_t> tileRows =
          twoTiles ? SmallVector<int64_t>{narrow.rows, wide.rows} : SmallVector<int64_t>{wide.rows};
      Value E1 = arith::AddIOp::create(t, loc, E, one);
      Value starts = i32Buffer({int64_t(1 + tileRows.size()), ShapedType::kDynamic}, E1);
      scf::ParallelOp::create(
          t, loc, ValueRange{zero}, ValueRange{one}, ValueRange{one}, [&](OpBuilder &o, Location l, ValueRange) {
            SmallVector<Value> init(1 + tileRows.size(), i32(o, 0));
            auto scan = scf::ForOp::create(
                o, l, idx(o, 0), E, idx(o, 1), init, [&](OpBuilder &p, Location pl, Value e, ValueRange acc) {
                  for (auto [i, sum] : llvm::enumerate(acc))
                    memref::StoreOp::create(p, pl, sum, starts, ValueRange{idx(p, int64_t(i)), e});
                  Value c = memref::LoadOp::create(p, pl, counts, ValueRange{e});
                  SmallVector<Value> next{arith::AddIOp::create(p, pl, acc[0], c)};
                  for (auto [i, rowsOfTile] : llvm::enumerate(tileRows)) {
                    Value tiles = arith::DivUIOp::create(
                        p, pl, arith::AddIOp::create(p, pl, c, i32(p, rowsOfTile - 1)), i32(p, rowsOfTile));
                    next.push_back(arith::AddIOp::create(p, pl, acc[1 + i], tiles));
                  }
                  scf::YieldOp::create(p, pl, next);
                });
            for (auto [i, total] : llvm::enumerate(scan.getResults()))
              memref::StoreOp::create(o, l, total, starts, ValueRange{idx(o, int64_t(i)), E});
          });
      Value perm = i32Buffer({ShapedType::kDynamic}, rows);
      scf::ParallelOp::create(t, loc, ValueRange{zero, zero}, ValueRange{tokens, idx(t, slots)}, ValueRange{one, one},
                              [&](OpBuilder &o, Location l, ValueRange ivs) {
                                Value e = toIndex(o, memref::LoadOp::create(o, l, m.experts, ivs));
                                Value first = memref::LoadOp::create(o, l, starts, ValueRange{idx(o, 0), e});
                                Value slot = arith::AddIOp::create(
                                    o, l, first, memref::LoadOp::create(o, l, rank, ivs).getResult());
                                Value row = arith::AddIOp::create(
                                    o, l, arith::MulIOp::create(o, l, ivs[0], idx(o, slots)), ivs[1]);
                                memref::StoreOp::create(o, l, arith::IndexCastOp::create(o, l, o.getI32Type(), row),
                                                        perm, ValueRange{toIndex(o, slot)});
                              });
      // The rows the tiles copy by cp.async: the input's own, or with
      // bf16-copies and bf16 math a bf16 copy of an f32 input, made once for
      // either tile (its column tiles each read half the bytes of it).
      // Packed MXFP4 codes are staged as codes (a stage's 32 depths are one
      // block of scales), decoded in shared memory.
      const bool staged = cpAsync && asyncStageable(m.input) &&
                          (m.scales ? codesStageable(m.weight) : asyncStageable(m.weight));
      Value stagedInput = m.input, inputCopy;
      if (staged && bf16Copies && bf16CopyApplies(tileMath, m.input))
        stagedInput = inputCopy = bf16CopyOf(t, loc, m.input);
      // The tiled GEMM on `tile`, whose tile starts are starts[tileRow].
      auto buildExpertGemm = [&](OpBuilder &t, GemmTile tile, int64_t tileRow) {
        TiledGemm gemm;
        gemm.tile = tile;
        gemm.gridX = ceilDiv(t, loc, N, tile.cols);
        // At most one partial tile per expert beyond the full ones.
        gemm.gridY = arith::AddIOp::create(t, loc, ceilDiv(t, loc, rows, tile.rows), E);
        gemm.N = N;
        gemm.K = K;
        auto expert = std::make_shared<Value>();
        gemm.rows = [&, expert, tile, tileRow](OpBuilder &o, Location l, Value blockY) {
          // The block's expert: how many experts' tiles end at or before it.
          Value y = arith::IndexCastOp::create(o, l, o.getI32Type(), blockY);
          auto count = scf::ForOp::create(
              o, l, idx(o, 0), E, idx(o, 1), ValueRange{idx(o, 0)},
              [&](OpBuilder &p, Location pl, Value e, ValueRange acc) {
                Value end = memref::LoadOp::create(
                    p, pl, starts, ValueRange{idx(p, tileRow), arith::AddIOp::create(p, pl, e, idx(p, 1))});
                Value before = arith::CmpIOp::create(p, pl, arith::CmpIPredicate::sle, end, y);
                Value add = arith::SelectOp::create(p, pl, before, idx(p, 1), idx(p, 0));
                scf::YieldOp::create(p, pl, ValueRange{arith::AddIOp::create(p, pl, acc[0], add)});
              });
          Value e = count.getResult(0);
          *expert = e;
          Value total = memref::LoadOp::create(o, l, starts, ValueRange{idx(o, tileRow), E});
          Value valid = arith::CmpIOp::create(o, l, arith::CmpIPredicate::slt, y, total);
          // Past the last tile e is E; its row range is then empty.
          Value next = arith::MinUIOp::create(o, l, arith::AddIOp::create(o, l, e, idx(o, 1)), E);
          Value firstRow = toIndex(o, memref::LoadOp::create(o, l, starts, ValueRange{idx(o, 0), e}));
          Value firstTile = toIndex(o, memref::LoadOp::create(o, l, starts, ValueRange{idx(o, tileRow), e}));
          Value row0 = arith::AddIOp::create(
              o, l, firstRow,
              arith::MulIOp::create(o, l, arith::SubIOp::create(o, l, blockY, firstTile), idx(o, tile.rows)));
          Value rowEnd = toIndex(o, memref::LoadOp::create(o, l, starts, ValueRange{idx(o, 0), next}));
          return std::make_tuple(valid, row0, rowEnd);
        };
        gemm.loadA = [&](OpBuilder &o, Location l, Value r, Value d) {
          auto [tok, s] = tokenSlot(o, toIndex(o, memref::LoadOp::create(o, l, perm, ValueRange{r})));
          return loadInput(o, tok, s, d);
        };
        gemm.loadW = [&, expert](OpBuilder &o, Location l, Value col, Value d) {
          return m.element(o, l, *expert, col, d);
        };
        gemm.store = [&](OpBuilder &o, Location l, Value r, Value col, Value sum) {
          auto [tok, s] = tokenSlot(o, toIndex(o, memref::LoadOp::create(o, l, perm, ValueRange{r})));
          storeRow(o, tok, s, col, sum);
        };
        gemm.math = tileMath;
        if (staged) {
          // Row r's input is x[token] (project) or h[token, slot] (down);
          // column col of the block's expert is weight[expert, col].
          gemm.stagedA = {stagedInput, [&](OpBuilder &o, Location l, Value r) {
                            auto [tok, s] =
                                tokenSlot(o, toIndex(o, memref::LoadOp::create(o, l, perm, ValueRange{r})));
                            return m.down ? SmallVector<Value>{tok, s} : SmallVector<Value>{tok};
                          }};
          auto columnOf = [expert](OpBuilder &, Location, Value col) { return SmallVector<Value>{*expert, col}; };
          if (m.scales)
            gemm.stagedCodesW = {m.weight, columnOf, /*fp8=*/false,
                                 [&, expert](OpBuilder &o, Location l, Value col, Value d0) {
                                   return m.scaleAt(o, l, *expert, col, d0);
                                 }};
          else
            gemm.stagedW = {m.weight, columnOf};
        }
        buildTiledGemm(t, loc, gemm);
      };
      if (twoTiles) {
        Value wideTiles = atLeast(t, rows, arith::MulIOp::create(t, loc, E, idx(t, wideMinRowsPerExpert)));
        auto tiles = scf::IfOp::create(t, loc, TypeRange{}, wideTiles, /*withElse=*/true);
        OpBuilder wideBranch = tiles.getThenBodyBuilder(), narrowBranch = tiles.getElseBodyBuilder();
        buildExpertGemm(wideBranch, wide, 2);
        buildExpertGemm(narrowBranch, narrow, 1);
      } else {
        buildExpertGemm(t, wide, 1);
      }
      for (Value buffer : {counts, rank, starts, perm, inputCopy})
        if (buffer)
          memref::DeallocOp::create(t, loc, buffer);
    }
    {
      OpBuilder e = OpBuilder::atBlockBegin(choice.elseBlock());
      WarpGemv gemv;
      gemv.M = rows;
      gemv.N = N;
      gemv.K = K;
      gemv.loadA = [&](OpBuilder &o, Location, Value r, Value d) {
        auto [tok, s] = tokenSlot(o, r);
        return loadInput(o, tok, s, d);
      };
      gemv.weightIndices = [&](OpBuilder &o, Location l, Value r, Value col, Value d) {
        auto [tok, s] = tokenSlot(o, r);
        Value ex = toIndex(o, memref::LoadOp::create(o, l, m.experts, ValueRange{tok, s}));
        return SmallVector<Value>{ex, col, d};
      };
      gemv.loadW = [&](OpBuilder &o, Location l, Value r, Value col, Value d) {
        SmallVector<Value> at = gemv.weightIndices(o, l, r, col, d);
        return m.element(o, l, at[0], at[1], at[2]);
      };
      if (m.scales) {
        // Eight E2M1 codes a 32-bit load (a row's in / 2 bytes are a
        // multiple of 16, in being of whole 32-blocks: loads stay aligned
        // once the base is, and a load's codes share one block's scale). By
        // hand on an H100, eight a load four loads deep took 0.69-0.87 of
        // the bf16 kernel's time, sixteen 0.85-0.88, thirty-two 1.3
        // (bench/results/gpu-released-weights.md).
        gemv.packed.codes = m.weight;
        gemv.packed.depths = 8;
        gemv.packed.bytes = 4;
        gemv.packed.load = [&](OpBuilder &o, Location l, Value r, Value col, Value d) {
          SmallVector<Value> at = gemv.weightIndices(o, l, r, col, d);
          Value byte = arith::DivUIOp::create(o, l, d, idx(o, 2));
          Value word = vector::LoadOp::create(o, l, VectorType::get({4}, o.getI8Type()), m.weight,
                                              ValueRange{at[0], col, byte}, /*nontemporal=*/false, llvm::MaybeAlign(4));
          return decodePackedWord(o, l, word, m.scaleAt(o, l, at[0], col, d), /*fp8=*/false);
        };
        if (activationsReadable(m.input)) {
          gemv.packed.activations = m.input;
          gemv.packed.activationIndices = [&](OpBuilder &o, Location, Value r, Value d) {
            auto [tok, s] = tokenSlot(o, r);
            return m.down ? SmallVector<Value>{tok, s, d} : SmallVector<Value>{tok, d};
          };
        }
      } else {
        gemv.pairedWeight = pairableWeight(m.weight);
      }
      gemv.store = [&](OpBuilder &o, Location, Value r, Value col, Value sum) {
        auto [tok, s] = tokenSlot(o, r);
        storeRow(o, tok, s, col, sum);
      };
      gemv.split = warpGemvSplit(N, K, Value());
      // Packed: four loads of eight codes a lane in flight (16 bytes).
      gemv.unroll = m.scales ? 32 : warpGemvUnroll(llvm::cast<MemRefType>(m.weight.getType()).getElementType());
      buildWarpGemv(e, loc, gemv);
    }
    if (m.down) {
      // y[t, n] += z[t, 0, n] + z[t, 1, n] + ...: the slots in order.
      Value zero = idx(b, 0), one = idx(b, 1);
      scf::ParallelOp::create(
          b, loc, ValueRange{zero, zero}, ValueRange{tokens, N}, ValueRange{one, one},
          [&](OpBuilder &o, Location l, ValueRange ivs) {
            Value start = zeroed ? arith::ConstantFloatOp::create(o, l, f32, APFloat(0.0f)).getResult()
                                 : memref::LoadOp::create(o, l, m.output, ivs).getResult();
            auto sum = scf::ForOp::create(
                o, l, idx(o, 0), idx(o, slots), idx(o, 1), ValueRange{start},
                [&](OpBuilder &p, Location pl, Value s, ValueRange acc) {
                  Value v = memref::LoadOp::create(p, pl, z, ValueRange{ivs[0], s, ivs[1]});
                  scf::YieldOp::create(p, pl, ValueRange{arith::AddFOp::create(p, pl, acc[0], v)});
                });
            memref::StoreOp::create(o, l, sum.getResult(0), m.output, ivs);
          });
      memref::DeallocOp::create(b, loc, z);
    }
    g.erase();
    if (zeroed)
      zeroed.erase();
    if (consumer)
      consumer.erase();
  }

  void runOnOperation() override {
    FailureOr<TileMath> tileMath = tileMathOption(getOperation(), getArgument(), math);
    if (failed(tileMath))
      return signalPassFailure();
    // Negative, the unsigned comparisons against rows would never hold.
    for (auto [name, value] : {std::make_pair("min-rows-per-expert", int64_t(minRowsPerExpert)),
                               std::make_pair("wide-min-rows-per-expert", int64_t(wideMinRowsPerExpert))})
      if (value < 0) {
        getOperation()->emitError() << getArgument() << ": " << name << " must be a count of rows >= 0, not "
                                    << value;
        return signalPassFailure();
      }
    SmallVector<ExpertMatmul> found;
    bool bad = false;
    getOperation().walk([&](linalg::GenericOp g) {
      auto kind = g->getAttrOfType<StringAttr>("dsf.experts");
      if (!kind || insideKernel(g))
        return;
      FailureOr<ExpertMatmul> m = match(g, kind.getValue());
      if (failed(m))
        bad = true;
      else
        found.push_back(*m);
    });
    if (bad)
      return signalPassFailure();
    // Consumers are found before any rewrite (one is never a product: it is
    // all parallel); the down product's sum is its own loop, left alone.
    SmallVector<linalg::GenericOp> consumers;
    for (const ExpertMatmul &m : found) {
      unsigned rank = llvm::cast<MemRefType>(m.output.getType()).getRank();
      linalg::GenericOp c = fuseConsumers && !m.down ? elementwiseConsumer(m.generic, m.output, rank) : nullptr;
      consumers.push_back(c && c.getNumLoops() == rank ? c : linalg::GenericOp());
    }
    for (auto [m, c] : llvm::zip(found, consumers))
      rewrite(m, *tileMath, c);
  }
};
} // namespace
} // namespace mlir::dsf
