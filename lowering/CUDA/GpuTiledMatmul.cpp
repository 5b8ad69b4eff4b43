//===- GpuTiledMatmul.cpp - dsf-gpu-tiled-matmul ----------------------------===//
//
// Projections (and V4's grouped output projection) on the kernels of
// TiledKernels.h: the tiled GEMM from `min-rows` rows, a warp per output
// below.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Matchers.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUTILEDMATMUL
#include "lowering/Passes.h.inc"

namespace {
/// f32 operands (the weight f32 or stored narrower) and a body of
/// out + a * w, w widened to f32 first when it is stored narrower.
bool hasMultiplyAddBody(linalg::GenericOp g) {
  for (Value v : g->getOperands()) {
    Type element = llvm::cast<MemRefType>(v.getType()).getElementType();
    if (!(v == g.getDpsInputs()[1] ? lowering::isWidenableFloat(element) : element.isF32()))
      return false;
  }
  Block &body = g.getRegion().front();
  Value a = body.getArgument(0), w = body.getArgument(1), c = body.getArgument(2);
  auto op = body.begin();
  if (!w.getType().isF32()) {
    auto widen = dyn_cast<arith::ExtFOp>(*op++);
    if (!widen || widen.getIn() != w)
      return false;
    w = widen.getResult();
  }
  if (std::distance(op, body.end()) != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(*op);
  auto add = dyn_cast<arith::AddFOp>(*std::next(op));
  auto yield = dyn_cast<linalg::YieldOp>(body.back());
  if (!mul || !add || !yield || yield.getNumOperands() != 1 || yield.getOperand(0) != add.getResult())
    return false;
  bool mulOk = (mul.getLhs() == a && mul.getRhs() == w) || (mul.getLhs() == w && mul.getRhs() == a);
  bool addOk = (add.getLhs() == c && add.getRhs() == mul.getResult()) ||
               (add.getLhs() == mul.getResult() && add.getRhs() == c);
  return mulOk && addOk;
}

/// The indexing maps of C[t, o] += A[t, d] * W[o, d], or with `grouped` of
/// C[t, g, o] += A[t, g, d] * W[g, o, d] (loops t, [g,] o, d).
bool hasProductMaps(linalg::GenericOp g, bool grouped) {
  MLIRContext *ctx = g.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (grouped)
    return maps[0] == AffineMap::get(4, 0, {d(0), d(1), d(3)}, ctx) &&
           maps[1] == AffineMap::get(4, 0, {d(1), d(2), d(3)}, ctx) &&
           maps[2] == AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx);
  return maps[0] == AffineMap::get(3, 0, {d(0), d(2)}, ctx) && maps[1] == AffineMap::get(3, 0, {d(1), d(2)}, ctx) &&
         maps[2] == AffineMap::get(3, 0, {d(0), d(1)}, ctx);
}

/// C[t, o] += A[t, d] * W[o, d] over d, in f32, on buffers.
bool isRowsTimesTransposed(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 || g.getNumLoops() != 3)
    return false;
  auto it = g.getIteratorTypesArray();
  if (it[0] != utils::IteratorType::parallel || it[1] != utils::IteratorType::parallel ||
      it[2] != utils::IteratorType::reduction)
    return false;
  return hasProductMaps(g, /*grouped=*/false) && hasMultiplyAddBody(g);
}

/// An FP8 weight bound packed (dsf-to-linalg's rowsTimesPackedFp8): the
/// codes W, i8 [N, K], and the UE8M0 scales its body reads, i8
/// [ceil(N / rows), ceil(K / cols)]; or per group (groupsTimesPackedFp8):
/// W i8 [G, N, K], scales i8 [G, ceil(N / rows), ceil(K / cols)].
struct PackedFp8 {
  Value scales;
  int64_t blockRows = 0, blockCols = 0;
  bool grouped = false;
};

/// C[t, o] += A[t, d] * decode(W[o, d]) over d, or per group
/// C[t, g, o] += A[t, g, d] * decode(W[g, o, d]), a generic marked
/// dsf.packed_fp8 = [rows, cols]: its codes and scales, or a diagnostic
/// naming what does not fit (the mark promises rowsTimesPackedFp8's or
/// groupsTimesPackedFp8's form, which the kernels compute in their own
/// code).
FailureOr<PackedFp8> matchPackedFp8(linalg::GenericOp g) {
  auto blocks = g->getAttrOfType<DenseI64ArrayAttr>(kPackedFp8Attr);
  auto fail = [&](const Twine &why) {
    g.emitOpError() << kPackedFp8Attr << ": " << why;
    return failure();
  };
  if (!blocks || blocks.size() != 2 || blocks[0] < 1 || blocks[1] < 1)
    return fail("expected [block rows, block columns], both >= 1");
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      (g.getNumLoops() != 3 && g.getNumLoops() != 4))
    return fail("expected a product on buffers: C[t, o] += A[t, d] * W[o, d] or C[t, g, o] += A[t, g, d] * W[g, o, d]");
  const bool grouped = g.getNumLoops() == 4;
  if (!hasProductMaps(g, grouped) || g.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return fail(grouped ? "expected the indexing of C[t, g, o] += A[t, g, d] * W[g, o, d]"
                        : "expected the indexing of C[t, o] += A[t, d] * W[o, d]");
  auto type = [](Value v) { return llvm::cast<MemRefType>(v.getType()); };
  Value A = g.getDpsInputs()[0], W = g.getDpsInputs()[1], C = g.getDpsInits()[0];
  if (!type(A).getElementType().isF32() || !type(C).getElementType().isF32() ||
      !type(W).getElementType().isInteger(8))
    return fail("expected f32 rows and output and i8 E4M3 codes");
  SmallVector<Value> read;
  g.getRegion().walk([&](memref::LoadOp load) {
    if (!llvm::is_contained(read, load.getMemRef()))
      read.push_back(load.getMemRef());
  });
  const int64_t rank = grouped ? 3 : 2;
  if (read.size() != 1 || type(read[0]).getRank() != rank || !type(read[0]).getElementType().isInteger(8))
    return fail(grouped ? "the body must read one i8 [groups, rows, cols] buffer of UE8M0 scales"
                        : "the body must read one i8 [rows, cols] buffer of UE8M0 scales");
  PackedFp8 p{read[0], blocks[0], blocks[1], grouped};
  // Codes [[G,] N, K] in blocks of rows x cols need scales
  // [[G,] ceil(N / rows), ceil(K / cols)] (a group's own when grouped).
  auto text = [](ArrayRef<int64_t> dims) {
    std::string t;
    for (int64_t e : dims)
      t += (t.empty() ? "" : "x") + (ShapedType::isDynamic(e) ? std::string("?") : std::to_string(e));
    return t;
  };
  SmallVector<int64_t> needed(type(W).getShape());
  bool mismatch = false;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t block = i < rank - 2 ? 1 : blocks[i - (rank - 2)], scales = type(p.scales).getDimSize(i);
    if (!ShapedType::isDynamic(needed[i]))
      needed[i] = llvm::divideCeil(needed[i], block);
    mismatch |= !ShapedType::isDynamic(needed[i]) && !ShapedType::isDynamic(scales) && scales != needed[i];
  }
  if (mismatch)
    return fail("codes " + text(type(W).getShape()) + " in blocks of " + std::to_string(blocks[0]) + "x" +
                std::to_string(blocks[1]) + (grouped ? " per group" : "") + " need " + text(needed) + " scales, not " +
                text(type(p.scales).getShape()));
  return p;
}

/// The same per group: C[t, g, o] += A[t, g, d] * W[g, o, d] (V4's grouped
/// output projection).
bool isGroupedRowsTimesTransposed(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 || g.getNumLoops() != 4)
    return false;
  auto it = g.getIteratorTypesArray();
  for (unsigned i = 0; i < 4; ++i)
    if ((it[i] == utils::IteratorType::reduction) != (i == 3))
      return false;
  return hasProductMaps(g, /*grouped=*/true) && hasMultiplyAddBody(g);
}

/// C[t, o] += A[t, d] * W[o, d], or per group g = blockIdx.z:
/// C[t, g, o] += A[t, g, d] * W[g, o, d]; with batch-invariant, the generic
/// stays below min-rows (it adds in the tiled kernel's order).
/// With `consumer` (an elementwiseConsumer reading C element by element:
/// an add into the residual, SwiGLU after its second projection), each
/// kernel computes the consumer's element where it stores C's, from the
/// sum in its registers, at the consumer's place: a launch less.
/// With `fp8` (a weight bound packed, grouped or not), every kernel decodes
/// W's codes: the tiled one a stage's codes at a time in shared memory
/// once cp.async copied them (else each element as it is staged), the warp
/// one eight codes a 64-bit load when each row's bytes and a block's
/// columns are multiples of 8.
void rewriteProduct(linalg::GenericOp g, bool grouped, ProductChoice choice, bool batchInvariant, TileMath math,
                    bool cpAsync, bool bf16Copies, linalg::GenericOp consumer,
                    std::optional<PackedFp8> fp8 = std::nullopt) {
  Location loc = g.getLoc();
  Value A = g.getDpsInputs()[0], W = g.getDpsInputs()[1], C = g.getDpsInits()[0];
  // The fill is found from the product's place, before the kernels move
  // down to the consumer's (only allocations lie between).
  linalg::FillOp zeroed = fillBefore(g, C);
  OpBuilder b(consumer ? consumer.getOperation() : g.getOperation());
  Product p;
  p.M = memref::DimOp::create(b, loc, A, 0);
  p.N = memref::DimOp::create(b, loc, W, grouped ? 1 : 0);
  p.K = memref::DimOp::create(b, loc, W, grouped ? 2 : 1);
  auto group = std::make_shared<Value>();
  auto at = [grouped, group](Value r, Value c) {
    return grouped ? SmallVector<Value>{r, *group, c} : SmallVector<Value>{r, c};
  };
  if (grouped) {
    p.gridZ = memref::DimOp::create(b, loc, W, 0);
    p.prologue = [group](OpBuilder &, Location, Value z) { *group = z; };
  }
  p.loadA = [A, at](OpBuilder &o, Location l, Value r, Value d) {
    return memref::LoadOp::create(o, l, A, at(r, d)).getResult();
  };
  auto weightAt = [grouped, group](OpBuilder &, Location, Value col, Value d) {
    return grouped ? SmallVector<Value>{*group, col, d} : SmallVector<Value>{col, d};
  };
  p.loadW = [W, weightAt](OpBuilder &o, Location l, Value col, Value d) {
    return memref::LoadOp::create(o, l, W, weightAt(o, l, col, d)).getResult();
  };
  p.pairedWeight = pairableWeight(W);
  p.weightIndices = weightAt;
  // FP8: W[col, d] = E4M3(code) x 2^(scale - 127), the scale of block
  // (col / rows, d / cols); the element loads, the warp kernel's words and
  // the staged codes' stages all read it.
  std::function<Value(OpBuilder &, Location, Value col, Value d)> scaleAt;
  if (fp8) {
    scaleAt = [s = *fp8, group](OpBuilder &o, Location l, Value col, Value d) {
      auto ci = [&](int64_t v) { return arith::ConstantIndexOp::create(o, l, v).getResult(); };
      SmallVector<Value> at{arith::DivUIOp::create(o, l, col, ci(s.blockRows)),
                            arith::DivUIOp::create(o, l, d, ci(s.blockCols))};
      if (s.grouped)
        at.insert(at.begin(), *group);
      Value byte = memref::LoadOp::create(o, l, s.scales, at);
      return lowering::packedScaleValue(o, l, arith::ExtUIOp::create(o, l, o.getI32Type(), byte), /*e4m3Scale=*/false);
    };
    p.loadW = [W, weightAt, scaleAt](OpBuilder &o, Location l, Value col, Value d) -> Value {
      Value code = arith::ExtUIOp::create(o, l, o.getI32Type(), memref::LoadOp::create(o, l, W, weightAt(o, l, col, d)));
      return arith::MulFOp::create(o, l, lowering::e4m3Value(o, l, code), scaleAt(o, l, col, d));
    };
    p.pairedWeight = Value();
    // Eight codes a 64-bit load (on an H100 by hand, 0.63-0.65 of the bf16
    // kernel's time against four codes' 0.73-0.86: bench/results/
    // gpu-released-weights.md): each row's K bytes a multiple of 8 (aligned
    // loads once the base is) and a load within one block of scales.
    int64_t K = llvm::cast<MemRefType>(W.getType()).getShape().back();
    if (!ShapedType::isDynamic(K) && K % 8 == 0 && fp8->blockCols % 8 == 0) {
      p.packed.codes = W;
      p.packed.depths = 8;
      p.packed.bytes = 8;
      p.packed.load = [W, weightAt, scaleAt](OpBuilder &o, Location l, Value, Value col, Value d) {
        Value word = vector::LoadOp::create(o, l, VectorType::get({8}, o.getI8Type()), W, weightAt(o, l, col, d),
                                            /*nontemporal=*/false, llvm::MaybeAlign(8));
        return decodePackedWord(o, l, word, scaleAt(o, l, col, d), /*fp8=*/true);
      };
      if (activationsReadable(A)) {
        p.packed.activations = A;
        p.packed.activationIndices = [at](OpBuilder &, Location, Value r, Value d) { return at(r, d); };
      }
    }
  }
  // Each kernel stores every output once, its whole sum: with C just
  // zeroed it stores the sum instead of adding it to C, and the fill's own
  // kernel (a launch a projection) goes.
  if (zeroed && !matchPattern(zeroed.getDpsInputs()[0], m_AnyZeroFloat()))
    zeroed = nullptr;
  p.store = [C, at, overwrite = bool(zeroed), consumer](OpBuilder &o, Location l, Value r, Value col, Value sum) {
    if (!overwrite)
      sum = arith::AddFOp::create(o, l, memref::LoadOp::create(o, l, C, at(r, col)), sum);
    memref::StoreOp::create(o, l, sum, C, at(r, col));
    if (consumer)
      computeConsumerAt(o, l, consumer, at(r, col), C, sum);
  };
  p.math = math;
  // Packed FP8 codes take the cp.async pipeline as codes (a stage of 32
  // depths in one block of scales along the depth), decoded in shared
  // memory: the same tiles and split depth as a bf16 weight, a quarter of
  // its bytes copied. Each row's stage then has one scale.
  // Rows of A at (t[, group]), of W (or its codes) at ([group,] col):
  // contiguous along d.
  auto rowOfA = [grouped, group](OpBuilder &, Location, Value r) {
    return grouped ? SmallVector<Value>{r, *group} : SmallVector<Value>{r};
  };
  auto rowOfW = [grouped, group](OpBuilder &, Location, Value col) {
    return grouped ? SmallVector<Value>{*group, col} : SmallVector<Value>{col};
  };
  const bool codesStaged = fp8 && codesStageable(W) && fp8->blockCols % 32 == 0;
  if (cpAsync && codesStaged && asyncStageable(A)) {
    p.stagedA = {A, rowOfA};
    p.stagedCodesW = {W, rowOfW, /*fp8=*/true, scaleAt};
  } else if (cpAsync && !fp8 && asyncStageable(A) && asyncStageable(W)) {
    p.stagedA = {A, rowOfA};
    p.stagedW = {W, rowOfW};
  }
  p.bf16CopyOfA = bf16Copies;
  // Packed FP8: four loads of eight codes a lane in flight (32 bytes; the
  // hand kernel's best, "fp8 x8 / u4").
  p.warpUnroll = fp8 ? 32 : warpGemvUnroll(llvm::cast<MemRefType>(W.getType()).getElementType());
  // Batch-invariant: the generic below the tiles is slow (a thread an
  // output), so only the row count chooses; no split depth either (its sums
  // are added in another order).
  if (batchInvariant) {
    choice.minBlocks = 0;
    choice.splitMinRows = 0;
    choice.warpBelow = false;
  }
  scf::IfOp kernels = buildProductKernels(b, loc, p, choice);
  if (batchInvariant) {
    // The generic that stays for few rows adds to C: its fill goes with it.
    g->moveBefore(kernels.elseBlock()->getTerminator());
    if (zeroed)
      zeroed->moveBefore(g);
  } else {
    g.erase();
    if (zeroed)
      zeroed.erase();
  }
  if (consumer)
    consumer.erase();
}

/// The consumer a product's kernels compute as they store (see
/// rewriteProduct): an elementwiseConsumer over C's indices that reads C
/// element by element; none with batch-invariant, whose generic below the
/// tiles stays.
linalg::GenericOp productConsumer(linalg::GenericOp g, bool batchInvariant) {
  if (batchInvariant)
    return {};
  Value C = g.getDpsInits()[0];
  unsigned rank = llvm::cast<MemRefType>(C.getType()).getRank();
  linalg::GenericOp c = elementwiseConsumer(g, C, rank);
  return c && c.getNumLoops() == rank ? c : linalg::GenericOp();
}

struct GpuTiledMatmulPass : impl::GpuTiledMatmulBase<GpuTiledMatmulPass> {
  using GpuTiledMatmulBase::GpuTiledMatmulBase;
  void runOnOperation() override {
    FailureOr<TileMath> tileMath = tileMathOption(getOperation(), getArgument(), math);
    if (failed(tileMath))
      return signalPassFailure();
    if (minBlocks < 0) {
      getOperation()->emitError() << getArgument() << ": min-blocks must be a count of tiles >= 0, not "
                                  << static_cast<int64_t>(minBlocks);
      return signalPassFailure();
    }
    if (splitMinRows < 0) {
      getOperation()->emitError() << getArgument() << ": split-min-rows must be a count of rows >= 0, not "
                                  << static_cast<int64_t>(splitMinRows);
      return signalPassFailure();
    }
    ProductChoice choice;
    choice.minRows = minRows;
    choice.minBlocks = minBlocks;
    choice.splitMinRows = splitMinRows;
    SmallVector<linalg::GenericOp> matmuls, grouped;
    SmallVector<std::pair<linalg::GenericOp, PackedFp8>> fp8;
    bool malformed = false;
    getOperation().walk([&](linalg::GenericOp g) {
      if (insideKernel(g))
        return;
      if (g->hasAttr(kPackedFp8Attr)) {
        FailureOr<PackedFp8> packed = matchPackedFp8(g);
        if (failed(packed))
          malformed = true;
        else
          fp8.emplace_back(g, *packed);
      } else if (isRowsTimesTransposed(g))
        matmuls.push_back(g);
      else if (isGroupedRowsTimesTransposed(g))
        grouped.push_back(g);
    });
    // Consumers are found before any rewrite: one is never a product (it is
    // all parallel), and two products never share one (it is each one's
    // next op).
    auto consumerOf = [&](linalg::GenericOp g) {
      return fuseConsumers ? productConsumer(g, batchInvariant) : linalg::GenericOp();
    };
    if (malformed)
      return signalPassFailure();
    SmallVector<linalg::GenericOp> groupedConsumers = llvm::map_to_vector(grouped, consumerOf);
    SmallVector<linalg::GenericOp> consumers = llvm::map_to_vector(matmuls, consumerOf);
    SmallVector<linalg::GenericOp> fp8Consumers =
        llvm::map_to_vector(fp8, [&](auto &gp) { return consumerOf(gp.first); });
    for (auto [g, c] : llvm::zip(grouped, groupedConsumers))
      rewriteProduct(g, /*grouped=*/true, choice, batchInvariant, *tileMath, cpAsync, bf16Copies, c);
    for (auto [g, c] : llvm::zip(matmuls, consumers))
      rewriteProduct(g, /*grouped=*/false, choice, batchInvariant, *tileMath, cpAsync, bf16Copies, c);
    for (auto [gp, c] : llvm::zip(fp8, fp8Consumers))
      rewriteProduct(gp.first, gp.second.grouped, choice, batchInvariant, *tileMath, cpAsync, bf16Copies, c,
                     gp.second);
  }
};
} // namespace
} // namespace mlir::dsf
