//===- TiledKernels.cpp - the kernel builders shared by CUDA passes -------===//
//
// The classic shared-memory tiled SIMT GEMM (64 x 64 tiles of C, 16-deep
// slices of the reduction, 4 x 4 outputs a thread) and a warp-per-output
// product for few rows, built directly as gpu.launch ops so that the rest of
// the CUDA pipeline (outlining, NVVM, ptxas) treats them like any other
// kernel; and the helpers that rewrite a generic's body into a kernel.
// The tiled kernel also runs on the tensor cores (mma.sync m16n8k8 tf32 or
// m16n8k16 bf16, TileMath): the same staging, a warp per 16 x 32 of the tile;
// with bf16, operands whose rows are contiguous skip the registers: cp.async
// copies them into a ring of stages (TiledGemm::stagedA). Hand-written
// rather than through nvgpu's matmul lowerings (vector-to-gpu, the
// transform dialect's rewrite_matmul_as_mma_sync): the gathered rows of the
// experts and the callbacks' loads and stores are not a vector.contract.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dsf {
namespace {
constexpr int64_t kDepth = 16, kThreads = 256;
/// The SIMT threads of the tiled kernel as a kSide x kSide grid.
constexpr int64_t kSide = 16;

/// A constant, or the static size memref.dim reads.
std::optional<int64_t> staticExtent(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return c;
  if (auto dim = v.getDefiningOp<memref::DimOp>())
    if (std::optional<int64_t> i = dim.getConstantIndex()) {
      auto type = llvm::cast<MemRefType>(dim.getSource().getType());
      if (*i < type.getRank() && !type.isDynamicDim(*i))
        return type.getDimSize(*i);
    }
  return std::nullopt;
}

} // namespace

Value viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

bool onlyAllocates(Operation *op) {
  if (isMemoryEffectFree(op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects || op->getNumRegions())
    return false;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::all_of(list, [](const MemoryEffects::EffectInstance &e) { return isa<MemoryEffects::Allocate>(e.getEffect()); });
}

linalg::FillOp fillBefore(linalg::GenericOp g, Value buffer) {
  // An input that is (a view of) the buffer would read the fill's values.
  for (Value input : g.getDpsInputs())
    if (viewRoot(input) == viewRoot(buffer))
      return {};
  for (Operation *op = g->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      return fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == buffer ? fill : linalg::FillOp();
    if (!onlyAllocates(op))
      return {};
  }
  return {};
}

linalg::GenericOp elementwiseConsumer(linalg::GenericOp producer, Value output, unsigned leading) {
  Operation *next = producer->getNextNode();
  while (next && onlyAllocates(next))
    next = next->getNextNode();
  auto c = llvm::dyn_cast_or_null<linalg::GenericOp>(next);
  if (!c || insideKernel(c) || !c.hasPureBufferSemantics() || c.getNumDpsInits() != 1 ||
      c.getNumReductionLoops() != 0 || c.getNumLoops() < leading)
    return {};
  MLIRContext *ctx = c.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(c.getNumLoops(), ctx);
  Value result = c.getDpsInits()[0];
  if (viewRoot(result) == viewRoot(output) ||
      llvm::any_of(producer.getDpsInputs(), [&](Value in) { return viewRoot(in) == viewRoot(result); }))
    return {};
  if (!c.getRegion().front().getArguments().back().use_empty() ||
      c.getMatchingIndexingMap(c.getDpsInitOperand(0)) != identity)
    return {};
  AffineMap leadingMap = identity.getMajorSubMap(leading);
  bool reads = false;
  for (OpOperand *in : c.getDpsInputOperands()) {
    if (!llvm::isa<MemRefType>(in->get().getType()) || viewRoot(in->get()) != viewRoot(output))
      continue;
    if (in->get() != output || c.getMatchingIndexingMap(in) != leadingMap)
      return {};
    reads = true;
  }
  return reads ? c : linalg::GenericOp();
}

void computeConsumerAt(OpBuilder &b, Location loc, linalg::GenericOp consumer, ArrayRef<Value> at, Value output,
                       Value value) {
  Block &body = consumer.getRegion().front();
  OpOperand *given = nullptr;
  if (value)
    for (OpOperand *in : consumer.getDpsInputOperands())
      if (in->get() == output && !given)
        given = in;
  IRMapping m;
  mapInputsAt(b, loc, consumer, at, m, given);
  if (given)
    m.map(body.getArgument(given->getOperandNumber()), value);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  cloneAt(b, ops, at, m);
  Value result = m.lookup(body.getTerminator()->getOperand(0));
  memref::StoreOp::create(b, loc, result, consumer.getDpsInits()[0], at);
}

Value ceilDiv(OpBuilder &b, Location loc, Value x, int64_t by) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  return arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, x, idx(by - 1)), idx(by)).getResult();
}

TileRows tileRowsUpTo(Value M, int64_t tileRows) {
  return [M, tileRows](OpBuilder &o, Location l, Value blockY) {
    Value row0 = arith::MulIOp::create(o, l, blockY, arith::ConstantIndexOp::create(o, l, tileRows));
    return std::make_tuple(Value(), row0, M);
  };
}

bool insideKernel(Operation *op) {
  return op->getParentOfType<gpu::GPUModuleOp>() || op->getParentOfType<gpu::LaunchOp>();
}

void clearBody(Block &body) {
  body.getTerminator()->erase();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body.getOperations())))
    op.erase();
}

bool isIdentityBuffer(Type type, ArrayRef<int64_t> shape, Type element) {
  auto m = llvm::dyn_cast<MemRefType>(type);
  return m && m.getLayout().isIdentity() && m.getElementType() == element && m.getShape() == shape;
}

std::optional<TileMath> parseTileMath(llvm::StringRef name) {
  if (name == "f32")
    return TileMath::F32;
  if (name == "tf32")
    return TileMath::Tf32;
  if (name == "3xtf32")
    return TileMath::Tf32x3;
  if (name == "bf16")
    return TileMath::Bf16;
  return std::nullopt;
}

FailureOr<TileMath> tileMathOption(Operation *op, llvm::StringRef pass, llvm::StringRef value) {
  if (std::optional<TileMath> math = parseTileMath(value))
    return *math;
  return op->emitError() << pass << ": unknown math '" << value << "' (f32, tf32, 3xtf32 or bf16)";
}

namespace {
/// The tensor-core half of the tiled kernel: warp w of the block's 8 takes
/// rows [16 (w mod 4), +16) and columns [32 (w div 4), +32) of the 64 x 64
/// tile, four m16n8 accumulators of 4 f32 a lane. The fragments are PTX's
/// for mma.m16n8k8 .tf32 (row-major A, column-major B): lane = 4 g + t,
/// A holds (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); B holds (k t, n g),
/// (k t + 4, n g); C holds (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
/// The staged slices are [depth][72]: a row of 72 floats puts the 32 lanes'
/// reads of a fragment in 32 different banks.
struct MmaTile {
  Value g, t, rowBase, colBase;   // in the tile
  /// m16 tiles down and n8 tiles across a warp's part (tf32: 1 x 4, a
  /// warp's 16 x 32 of a 64 x 64 tile; bf16: 1 x 4 of a 64 x 64 tile or
  /// 4 x 4, 64 x 32, of a 128 x 128 one). Accumulator (m, n, e) is
  /// 4 (m nTiles + n) + e.
  int64_t mTiles = 1, nTiles = 4;
};

SmallVector<Value> mmaStep(OpBuilder &o, Location l, TileMath math, Value As, Value Ws, Value k0, const MmaTile &w,
                           ValueRange acc) {
  MLIRContext *ctx = o.getContext();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(o, l, v).getResult(); };
  auto add = [&](Value a, Value b) { return arith::AddIOp::create(o, l, a, b).getResult(); };
  auto load = [&](Value buf, Value d, Value x) { return memref::LoadOp::create(o, l, buf, ValueRange{d, x}).getResult(); };
  Type i32 = o.getI32Type();
  auto rna = NVVM::FPRoundingModeAttr::get(ctx, NVVM::FPRoundingMode::RNA);
  auto tf32 = [&](Value x) { return NVVM::ConvertFloatToTF32Op::create(o, l, i32, x, rna).getResult(); };
  // x = hi + lo with both in tf32: hi rounds x, lo rounds what hi missed.
  auto split = [&](Value x, Value &hi, Value &lo) {
    hi = tf32(x);
    Value hiValue = arith::BitcastOp::create(o, l, o.getF32Type(), hi);
    lo = tf32(arith::SubFOp::create(o, l, x, hiValue));
  };
  Type result = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, o.getF32Type()));
  auto mma = [&](ValueRange a, ValueRange b, SmallVector<Value> &cAcc) {
    Value d = NVVM::MmaOp::create(o, l, result, a, b, cAcc, ArrayRef<int64_t>{16, 8, 8}, std::nullopt, std::nullopt,
                                  std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::tf32, NVVM::MMATypes::tf32},
                                  std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col})
                  .getResult();
    for (int64_t i = 0; i < 4; ++i)
      cAcc[size_t(i)] = LLVM::ExtractValueOp::create(o, l, d, ArrayRef<int64_t>{i}).getResult();
  };
  Value kt = add(k0, w.t), kt4 = add(kt, c(4));
  Value r = add(w.rowBase, w.g), r8 = add(r, c(8));
  SmallVector<Value> a{load(As, kt, r), load(As, kt, r8), load(As, kt4, r), load(As, kt4, r8)};
  SmallVector<Value> aHi(4), aLo(4);
  for (int64_t i = 0; i < 4; ++i) {
    if (math == TileMath::Tf32x3)
      split(a[size_t(i)], aHi[size_t(i)], aLo[size_t(i)]);
    else
      aHi[size_t(i)] = tf32(a[size_t(i)]);
  }
  SmallVector<Value> next;
  for (int64_t j = 0; j < 4; ++j) {
    Value n = add(add(w.colBase, c(8 * j)), w.g);
    Value b0 = load(Ws, kt, n), b1 = load(Ws, kt4, n);
    SmallVector<Value> cAcc(acc.begin() + 4 * j, acc.begin() + 4 * j + 4);
    if (math == TileMath::Tf32x3) {
      Value b0Hi, b0Lo, b1Hi, b1Lo;
      split(b0, b0Hi, b0Lo);
      split(b1, b1Hi, b1Lo);
      // The small terms first, then the large one onto them.
      mma(aLo, ValueRange{b0Hi, b1Hi}, cAcc);
      mma(aHi, ValueRange{b0Lo, b1Lo}, cAcc);
      mma(aHi, ValueRange{b0Hi, b1Hi}, cAcc);
    } else {
      mma(aHi, ValueRange{tf32(b0), tf32(b1)}, cAcc);
    }
    next.append(cAcc.begin(), cAcc.end());
  }
  return next;
}
/// One k16 step of a warp's bf16 tiles: `b` holds each n8 tile's two B
/// registers, `aFragment(r, r + 8)` the four A registers of the m16 tile at
/// rows r and r + 8 (read once, used for every n8 tile); one mma.sync
/// m16n8k16 a (m, n) tile onto its accumulators (see MmaTile).
SmallVector<Value> mmaBf16Tiles(OpBuilder &o, Location l, const MmaTile &w, ArrayRef<Value> b,
                                function_ref<SmallVector<Value>(Value r, Value r8)> aFragment, ValueRange acc) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(o, l, v).getResult(); };
  auto add = [&](Value x, Value y) { return arith::AddIOp::create(o, l, x, y).getResult(); };
  Type result = LLVM::LLVMStructType::getLiteral(o.getContext(), SmallVector<Type>(4, o.getF32Type()));
  SmallVector<Value> next(acc.begin(), acc.end());
  for (int64_t i = 0; i < w.mTiles; ++i) {
    Value r = add(add(w.rowBase, c(16 * i)), w.g);
    SmallVector<Value> a = aFragment(r, add(r, c(8)));
    for (int64_t j = 0; j < w.nTiles; ++j) {
      size_t at = size_t(4 * (i * w.nTiles + j));
      SmallVector<Value> cAcc(next.begin() + long(at), next.begin() + long(at) + 4);
      Value d = NVVM::MmaOp::create(o, l, result, a, ValueRange{b[size_t(2 * j)], b[size_t(2 * j + 1)]}, cAcc,
                                    ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
                                    std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
                                    std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row, NVVM::MMALayout::col})
                    .getResult();
      for (int64_t e = 0; e < 4; ++e)
        next[at + size_t(e)] = LLVM::ExtractValueOp::create(o, l, d, ArrayRef<int64_t>{e}).getResult();
    }
  }
  return next;
}

/// TileMath::Bf16's step: the whole 16-deep slice in one mma.m16n8k16 .bf16
/// per n-tile. The slices are staged as pairs of depths, [8][72] i32 of two
/// bf16 each (depth 2p in the low half): PTX's fragments for this shape are
/// A (g, 2t..2t+1), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..) and B
/// (k 2t..2t+1, n g), (k 2t + 8.., n g), so a lane reads pair rows t and
/// t + 4, and a row of 72 words puts the 32 lanes in 32 banks. C is laid out
/// as for tf32.
SmallVector<Value> mmaStepBf16(OpBuilder &o, Location l, Value As, Value Ws, const MmaTile &w, ValueRange acc) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(o, l, v).getResult(); };
  auto add = [&](Value a, Value b) { return arith::AddIOp::create(o, l, a, b).getResult(); };
  auto load = [&](Value buf, Value p, Value x) { return memref::LoadOp::create(o, l, buf, ValueRange{p, x}).getResult(); };
  Value t4 = add(w.t, c(4));
  // Every B fragment of the warp's columns once, then each m16 tile's A
  // fragment against all of them.
  SmallVector<Value> b;
  for (int64_t j = 0; j < w.nTiles; ++j) {
    Value n = add(add(w.colBase, c(8 * j)), w.g);
    b.push_back(load(Ws, w.t, n));
    b.push_back(load(Ws, t4, n));
  }
  return mmaBf16Tiles(o, l, w, b, [&](Value r, Value r8) {
    return SmallVector<Value>{load(As, w.t, r), load(As, w.t, r8), load(As, t4, r), load(As, t4, r8)};
  }, acc);
}

/// Two f32 values rounded to bf16 (to nearest even) in one i32, `lo` in the
/// low half: an mma operand register.
Value packBf16x2(OpBuilder &o, Location l, Value lo, Value hi) {
  Type i32 = o.getI32Type();
  auto bits = [&](Value x) {
    Value h = arith::TruncFOp::create(o, l, o.getBF16Type(), x);
    return arith::ExtUIOp::create(o, l, i32, arith::BitcastOp::create(o, l, o.getI16Type(), h)).getResult();
  };
  Value sixteen = arith::ConstantIntOp::create(o, l, i32, 16);
  return arith::OrIOp::create(o, l, bits(lo), arith::ShLIOp::create(o, l, bits(hi), sixteen)).getResult();
}
/// The cp.async ring (TiledGemm::stagedA / stagedW): kStages slices of
/// kStageDepth depths; a staged row is padded by 8 elements, so that the
/// fragments' reads of 8 rows fall in distinct banks (a row of 40 f32 is 8
/// banks from the next: the 16 lanes of a half-warp's 8-byte reads cover
/// the 32 banks once; of 40 bf16, 20 banks: the 32 lanes' 4-byte reads, too).
constexpr int64_t kStageDepth = 32, kStages = 3, kStageRow = kStageDepth + 8, kCopyBytes = 16;

int64_t elementBytes(Type t) { return t.getIntOrFloatBitWidth() / 8; }

MemRefType ringType(MLIRContext *ctx, int64_t rows, Type element) {
  return MemRefType::get({kStages, rows, kStageRow}, element, MemRefLayoutAttrInterface{},
                         gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
}

int64_t ringBytes(int64_t rows, Type element) { return kStages * rows * kStageRow * elementBytes(element); }

/// A stage's bytes of a row of packed codes (TiledGemm::stagedCodesW): 32
/// depths, E4M3 one a byte, E2M1 two. The codes' ring has no padding: the
/// decode's 8-byte (E4M3) or 4-byte (E2M1) reads of consecutive threads
/// walk consecutive bytes of consecutive rows, a half-warp's (a warp's)
/// reads covering the 32 banks once.
int64_t codeStageBytes(bool fp8) { return fp8 ? kStageDepth : kStageDepth / 2; }
MemRefType codesRingType(MLIRContext *ctx, int64_t rows, bool fp8) {
  return MemRefType::get({kStages, rows, codeStageBytes(fp8)}, IntegerType::get(ctx, 8), MemRefLayoutAttrInterface{},
                         gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
}
int64_t codesRingBytes(int64_t rows, bool fp8) { return kStages * rows * codeStageBytes(fp8); }
/// The stage the codes decode into: one slot of a bf16 ring, which the mma
/// fragments read as a declared bf16 weight's. One is enough: a stage is
/// decoded after the barrier that follows every warp's products of the
/// stage before.
MemRefType decodedStageType(MLIRContext *ctx, int64_t rows) {
  return MemRefType::get({1, rows, kStageRow}, BFloat16Type::get(ctx), MemRefLayoutAttrInterface{},
                         gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
}
int64_t decodedStageBytes(int64_t rows) { return rows * kStageRow * 2; }

/// Depths d and d + 1 of a staged row as one mma operand register: two
/// bf16, d in the low half (an f32 row rounded to nearest even as it is
/// read, as packBf16x2 rounds).
Value stagedPair(OpBuilder &o, Location l, Value ring, Value stage, Value row, Value d) {
  Type element = llvm::cast<MemRefType>(ring.getType()).getElementType();
  Value v = vector::LoadOp::create(o, l, VectorType::get({2}, element), ring, ValueRange{stage, row, d},
                                   /*nontemporal=*/false, llvm::MaybeAlign(2 * elementBytes(element)));
  if (!element.isBF16())
    v = arith::TruncFOp::create(o, l, VectorType::get({2}, o.getBF16Type()), v);
  Value word = vector::BitCastOp::create(o, l, VectorType::get({1}, o.getI32Type()), v);
  return vector::ExtractOp::create(o, l, word, ArrayRef<int64_t>{0}).getResult();
}

/// mmaStepBf16 over the cp.async ring: one k16 step at depth `k16` of stage
/// `stage`, the fragments (PTX's for m16n8k16 .bf16, see mmaStepBf16) read
/// from the rows as stored: A (g, 2t..), (g + 8, 2t..), (g, 2t + 8..),
/// (g + 8, 2t + 8..); B (n g, k 2t..), (n g, k 2t + 8..).
SmallVector<Value> mmaStepStaged(OpBuilder &o, Location l, Value ringA, Value stageA, Value ringW, Value stageW,
                                 int64_t k16, const MmaTile &w, ValueRange acc) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(o, l, v).getResult(); };
  auto add = [&](Value a, Value b) { return arith::AddIOp::create(o, l, a, b).getResult(); };
  Value d0 = add(arith::MulIOp::create(o, l, w.t, c(2)), c(k16)), d8 = add(d0, c(8));
  SmallVector<Value> b;
  for (int64_t j = 0; j < w.nTiles; ++j) {
    Value n = add(add(w.colBase, c(8 * j)), w.g);
    b.push_back(stagedPair(o, l, ringW, stageW, n, d0));
    b.push_back(stagedPair(o, l, ringW, stageW, n, d8));
  }
  return mmaBf16Tiles(o, l, w, b, [&](Value r, Value r8) {
    return SmallVector<Value>{stagedPair(o, l, ringA, stageA, r, d0), stagedPair(o, l, ringA, stageA, r8, d0),
                              stagedPair(o, l, ringA, stageA, r, d8), stagedPair(o, l, ringA, stageA, r8, d8)};
  }, acc);
}
} // namespace

bool bf16CopyApplies(TileMath math, Value a) {
  return math == TileMath::Bf16 && llvm::cast<MemRefType>(a.getType()).getElementType().isF32();
}

Value bf16CopyOf(OpBuilder &b, Location loc, Value buffer) {
  auto type = llvm::cast<MemRefType>(buffer.getType());
  assert(type.getElementType().isF32() && type.getLayout().isIdentity() && "an f32 buffer of rows");
  SmallVector<Value> sizes, extents, zeros, ones;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0), one = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = 0; i < type.getRank(); ++i) {
    Value extent = memref::DimOp::create(b, loc, buffer, i);
    if (type.isDynamicDim(i))
      sizes.push_back(extent);
    extents.push_back(extent);
    zeros.push_back(zero);
    ones.push_back(one);
  }
  Value copy = memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), b.getBF16Type()), sizes);
  scf::ParallelOp::create(b, loc, zeros, extents, ones, [&](OpBuilder &o, Location l, ValueRange ivs) {
    Value v = memref::LoadOp::create(o, l, buffer, ivs);
    memref::StoreOp::create(o, l, arith::TruncFOp::create(o, l, o.getBF16Type(), v), copy, ivs);
  });
  return copy;
}

bool codesStageable(Value codes) {
  auto type = llvm::dyn_cast<MemRefType>(codes.getType());
  if (!type || !type.getLayout().isIdentity() || type.getRank() == 0 || !type.getElementType().isInteger(8))
    return false;
  int64_t bytes = type.getShape().back();
  return !ShapedType::isDynamic(bytes) && bytes % kCopyBytes == 0;
}

bool asyncStageable(Value buffer) {
  auto type = llvm::dyn_cast<MemRefType>(buffer.getType());
  if (!type || !type.getLayout().isIdentity() || type.getRank() == 0 ||
      !(type.getElementType().isF32() || type.getElementType().isBF16()))
    return false;
  int64_t depth = type.getShape().back();
  return !ShapedType::isDynamic(depth) && depth % 8 == 0;
}

GemmTile gemmTile(TileMath math, Value N) {
  if (math == TileMath::Tf32 || math == TileMath::Tf32x3)
    return {64, 64};
  // Narrow products keep 64 x 64: at 2,048 rows a 128-wide tile of wkv's
  // 512 columns would leave half the GPU without a block.
  std::optional<int64_t> n = staticExtent(N);
  if (n && *n < 2048)
    return {64, 64};
  return {128, 128};
}

void buildTiledGemm(OpBuilder &b, Location loc, const TiledGemm &g) {
  MLIRContext *ctx = b.getContext();
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value one = idx(1);
  const bool tensorCores = g.math != TileMath::F32;
  // bf16 operands are staged as pairs of depths in one i32 (mmaStepBf16).
  const bool pairs = g.math == TileMath::Bf16;
  // bf16 operands whose rows are stored contiguously: copied by cp.async
  // into a ring of stages (TiledGemm::stagedA).
  // A packed weight's codes (stagedCodesW) take the pipeline in place of
  // stagedW's rows.
  const bool codesW = bool(g.stagedCodesW.codes);
  assert(!(codesW && g.stagedW.buffer) && "a weight is staged as rows or as codes, not both");
  const bool pipelined = pairs && g.stagedA.buffer && (g.stagedW.buffer || codesW);
  const bool fp8Codes = g.stagedCodesW.fp8;
  const int64_t tileRows = g.tile.rows, tileCols = g.tile.cols;
  const bool split = g.depthParts > 1;
  assert((!split || (pipelined && g.partDepth % kStageDepth == 0 && g.storePart)) &&
         "a split depth is staged by cp.async, in whole stages");
  assert((!tensorCores || (tileRows == 64 && tileCols == 64) || (pairs && tileRows == 128 && tileCols == 128)) &&
         "the mma warps cover a 64 x 64 tile, or with bf16 a 128 x 128 one");
  assert(tileRows % kSide == 0 && tileCols % kSide == 0 && "4-wide groups of a 16 x 16 thread grid");
  // A staged row is padded: on the SIMT cores by 4 floats, so that the
  // staging's 16 depths of a row fall in distinct banks and the compute's
  // 16-byte vector reads stay aligned; on the tensor cores by 8 (see
  // mmaStep).
  const int64_t padA = tileRows + (tensorCores ? 8 : 4), padW = tileCols + (tensorCores ? 8 : 4);
  auto sharedType = [&](int64_t row) {
    return MemRefType::get({pairs ? kDepth / 2 : kDepth, row}, pairs ? Type(b.getI32Type()) : Type(b.getF32Type()),
                           MemRefLayoutAttrInterface{}, gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  };
  Type elementA, elementW;
  Value dynamicShared;
  if (pipelined) {
    elementA = llvm::cast<MemRefType>(g.stagedA.buffer.getType()).getElementType();
    int64_t bytesW;
    if (codesW) {
      bytesW = codesRingBytes(tileCols, fp8Codes) + decodedStageBytes(tileCols);
    } else {
      elementW = llvm::cast<MemRefType>(g.stagedW.buffer.getType()).getElementType();
      bytesW = ringBytes(tileCols, elementW);
    }
    dynamicShared = arith::ConstantIntOp::create(b, loc, b.getI32Type(), ringBytes(tileRows, elementA) + bytesW);
  }
  auto launch = gpu::LaunchOp::create(
      b, loc, g.gridX, g.gridY, g.gridZ ? g.gridZ : one, idx(kThreads), one, one, dynamicShared, nullptr,
      ValueRange{}, pipelined ? TypeRange{} : TypeRange{sharedType(padA), sharedType(padW)});
  Block &entry = launch.getBody().front();
  OpBuilder k = OpBuilder::atBlockEnd(&entry);
  if (g.prologue)
    g.prologue(k, loc, launch.getBlockIds().z);
  Value N = g.N, K = g.K;
  auto lessThan = [&](OpBuilder &o, Value x, Value bound) {
    return arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ult, x, bound).getResult();
  };
  // With a split depth, block y's part and the depths it adds.
  Value blockY = launch.getBlockIds().y, part, depthBegin, depthEnd = K;
  if (split) {
    Value parts = arith::ConstantIndexOp::create(k, loc, g.depthParts);
    part = arith::RemUIOp::create(k, loc, blockY, parts);
    blockY = arith::DivUIOp::create(k, loc, blockY, parts);
    depthBegin = arith::MulIOp::create(k, loc, part, arith::ConstantIndexOp::create(k, loc, g.partDepth));
    depthEnd = arith::MinUIOp::create(
        k, loc, K, arith::AddIOp::create(k, loc, depthBegin, arith::ConstantIndexOp::create(k, loc, g.partDepth)));
  }
  Value valid, row0, rowEnd;
  std::tie(valid, row0, rowEnd) = g.rows(k, loc, blockY);
  // A block with work has a row: the staging clamps its rows to rowEnd - 1.
  // The whole block takes the branch or not: the barriers inside stay
  // uniform.
  Value hasRows = lessThan(k, row0, rowEnd);
  valid = valid ? arith::AndIOp::create(k, loc, valid, hasRows).getResult() : hasRows;
  k = scf::IfOp::create(k, loc, TypeRange{}, valid, /*withElse=*/false).getThenBodyBuilder();
  auto c = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
  Value As, Ws;
  if (!pipelined) {
    As = launch.getWorkgroupAttributions()[0];
    Ws = launch.getWorkgroupAttributions()[1];
  }
  Value tid = launch.getThreadIds().x;
  Value col0 = arith::MulIOp::create(k, loc, launch.getBlockIds().x, c(k, tileCols));
  Value ty = arith::DivUIOp::create(k, loc, tid, c(k, kSide));
  Value tx = arith::RemUIOp::create(k, loc, tid, c(k, kSide));
  Value zero = arith::ConstantFloatOp::create(k, loc, k.getF32Type(), APFloat(0.0f));
  Value lastRow = arith::SubIOp::create(k, loc, rowEnd, c(k, 1));
  Value lastCol = arith::SubIOp::create(k, loc, N, c(k, 1));

  // A slice: A's rows [row0, +tileRows) and W's rows [col0, +tileCols) at
  // depths [k0, +16), consecutive threads on consecutive depths. Thread
  // `tid` stages element tid + 256 i of each; the same rows every slice.
  // Staged as bf16 pairs, thread `tid` takes both depths of pair
  // tid + 256 (i / 2) (row p / 8, depths 2 (p mod 8) and the next), so that
  // it packs them itself. Out-of-range elements are read at a clamped,
  // valid position (no branch around the load) and replaced by 0, as the
  // products past the edges must be.
  const int64_t perThreadA = tileRows * kDepth / kThreads, perThreadW = tileCols * kDepth / kThreads;
  auto stagedAt = [&](OpBuilder &o, int64_t i) {
    if (pairs) {
      Value p = arith::AddIOp::create(o, loc, tid, c(o, (i / 2) * kThreads));
      Value pairInRow = arith::RemUIOp::create(o, loc, p, c(o, kDepth / 2));
      return std::make_pair(arith::DivUIOp::create(o, loc, p, c(o, kDepth / 2)).getResult(),
                            arith::AddIOp::create(o, loc, arith::MulIOp::create(o, loc, pairInRow, c(o, 2)),
                                                  c(o, i % 2))
                                .getResult());
    }
    Value e = arith::AddIOp::create(o, loc, tid, c(o, i * kThreads));
    return std::make_pair(arith::DivUIOp::create(o, loc, e, c(o, kDepth)).getResult(),
                          arith::RemUIOp::create(o, loc, e, c(o, kDepth)).getResult());
  };
  auto loadClamped = [&](OpBuilder &o, const std::function<Value(OpBuilder &, Location, Value, Value)> &load,
                         Value i, Value last, Value d, Value lastD) {
    Value in = arith::AndIOp::create(o, loc, arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ule, i, last),
                                     arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ule, d, lastD));
    Value at = arith::MinUIOp::create(o, loc, i, last), atD = arith::MinUIOp::create(o, loc, d, lastD);
    Value v = lowering::widenToF32(o, loc, load(o, loc, at, atD));
    return arith::SelectOp::create(o, loc, in, v, zero).getResult();
  };
  // The slice at k0 into registers, or zeros when k0 >= K (a uniform
  // branch: the loads of the slice after the last are never issued).
  auto loadSlice = [&](OpBuilder &o, Value k0) {
    SmallVector<Type> types(size_t(perThreadA + perThreadW), o.getF32Type());
    auto branch = scf::IfOp::create(o, loc, types, lessThan(o, k0, K), /*withElse=*/true);
    OpBuilder t = branch.getThenBodyBuilder();
    Value lastD = arith::SubIOp::create(t, loc, K, c(t, 1));
    SmallVector<Value> values;
    for (int64_t i = 0; i < perThreadA; ++i) {
      auto [r, dd] = stagedAt(t, i);
      values.push_back(loadClamped(t, g.loadA, arith::AddIOp::create(t, loc, row0, r), lastRow,
                                   arith::AddIOp::create(t, loc, k0, dd), lastD));
    }
    for (int64_t i = 0; i < perThreadW; ++i) {
      auto [r, dd] = stagedAt(t, i);
      values.push_back(loadClamped(t, g.loadW, arith::AddIOp::create(t, loc, col0, r), lastCol,
                                   arith::AddIOp::create(t, loc, k0, dd), lastD));
    }
    scf::YieldOp::create(t, loc, values);
    OpBuilder e = branch.getElseBodyBuilder();
    scf::YieldOp::create(e, loc, SmallVector<Value>(types.size(), zero));
    return SmallVector<Value>(branch.getResults());
  };
  auto storeSlice = [&](OpBuilder &o, ValueRange values) {
    if (pairs) {
      // Element i and i + 1 are one pair's depths (stagedAt): packed here,
      // after the loop's products, so that the loads stay in flight.
      auto storePairs = [&](Value buffer, int64_t count, int64_t first) {
        for (int64_t i = 0; i < count; i += 2) {
          auto [r, dd] = stagedAt(o, i);
          Value pair = arith::DivUIOp::create(o, loc, dd, c(o, 2));
          memref::StoreOp::create(o, loc, packBf16x2(o, loc, values[size_t(first + i)], values[size_t(first + i + 1)]),
                                  buffer, ValueRange{pair, r});
        }
      };
      storePairs(As, perThreadA, 0);
      storePairs(Ws, perThreadW, perThreadA);
      return;
    }
    for (int64_t i = 0; i < perThreadA; ++i) {
      auto [r, dd] = stagedAt(o, i);
      memref::StoreOp::create(o, loc, values[size_t(i)], As, ValueRange{dd, r});
    }
    for (int64_t i = 0; i < perThreadW; ++i) {
      auto [r, dd] = stagedAt(o, i);
      memref::StoreOp::create(o, loc, values[size_t(perThreadA + i)], Ws, ValueRange{dd, r});
    }
  };

  // The tensor cores' lanes (see mmaStep).
  MmaTile warpTile;
  if (tensorCores) {
    Value warp = arith::DivUIOp::create(k, loc, tid, c(k, 32)), lane = arith::RemUIOp::create(k, loc, tid, c(k, 32));
    warpTile.g = arith::DivUIOp::create(k, loc, lane, c(k, 4));
    warpTile.t = arith::RemUIOp::create(k, loc, lane, c(k, 4));
    // 4 x 2 warps of 16 x 32 on a 64 x 64 tile, 2 x 4 of 64 x 32 on a
    // 128 x 128 one.
    const int64_t warpsDown = tileRows == 128 ? 2 : 4;
    warpTile.mTiles = tileRows / warpsDown / 16;
    warpTile.rowBase = arith::MulIOp::create(k, loc, arith::RemUIOp::create(k, loc, warp, c(k, warpsDown)),
                                             c(k, 16 * warpTile.mTiles));
    warpTile.colBase = arith::MulIOp::create(k, loc, arith::DivUIOp::create(k, loc, warp, c(k, warpsDown)), c(k, 32));
  }
  // On the SIMT cores thread (ty, tx) computes rows 64 h + 4 ty + i and
  // columns 64 h' + 4 tx + j of the tile: each 4-run one 16-byte shared
  // load, a warp's 16 tx reading 64 consecutive floats of W.
  const int64_t groupsA = tileRows / 64, groupsW = tileCols / 64;
  // On the tensor cores "rows" are a lane's (m, n) tiles and "columns" its
  // 4 values of each (see MmaTile).
  const int64_t rowsPerThread = tensorCores ? warpTile.mTiles * warpTile.nTiles : 4 * groupsA;
  const int64_t colsPerThread = tensorCores ? 4 : 4 * groupsW;
  auto threadRow = [&](OpBuilder &o, int64_t i) {
    return arith::AddIOp::create(o, loc, arith::MulIOp::create(o, loc, ty, c(o, 4)), c(o, 64 * (i / 4) + i % 4))
        .getResult();
  };
  auto threadCol = [&](OpBuilder &o, int64_t j) {
    return arith::AddIOp::create(o, loc, arith::MulIOp::create(o, loc, tx, c(o, 4)), c(o, 64 * (j / 4) + j % 4))
        .getResult();
  };
  VectorType four = VectorType::get({4}, k.getF32Type());
  auto loadFour = [&](OpBuilder &o, Value buffer, int64_t dd, Value at, SmallVector<Value> &into) {
    Value v = vector::LoadOp::create(o, loc, four, buffer, ValueRange{c(o, dd), at}, /*nontemporal=*/false,
                                     llvm::MaybeAlign(16));
    for (int64_t i = 0; i < 4; ++i)
      into.push_back(vector::ExtractOp::create(o, loc, v, ArrayRef<int64_t>{i}));
  };

  // Each output's sum stored through g.store, and the kernel's end.
  auto finish = [&](ArrayRef<Value> sums) {
    for (int64_t i = 0; i < rowsPerThread; ++i)
      for (int64_t j = 0; j < colsPerThread; ++j) {
        Value r, col;
        if (tensorCores) {
          // Value j of the lane's tile i (see mmaStep): rows g, g + 8 of its
          // m16 tile; columns 2t, 2t + 1 of its n8 tile.
          int64_t tile = i % warpTile.nTiles, element = j;
          r = arith::AddIOp::create(k, loc, arith::AddIOp::create(k, loc, warpTile.rowBase, warpTile.g),
                                    c(k, 16 * (i / warpTile.nTiles) + (element >= 2 ? 8 : 0)));
          col = arith::AddIOp::create(k, loc, warpTile.colBase,
                                      arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, warpTile.t, c(k, 2)),
                                                            c(k, 8 * tile + element % 2)));
        } else {
          r = threadRow(k, i);
          col = threadCol(k, j);
        }
        r = arith::AddIOp::create(k, loc, row0, r);
        col = arith::AddIOp::create(k, loc, col0, col);
        Value in = arith::AndIOp::create(k, loc, lessThan(k, r, rowEnd), lessThan(k, col, N));
        auto store = scf::IfOp::create(k, loc, TypeRange{}, in, /*withElse=*/false);
        OpBuilder t = store.getThenBodyBuilder();
        Value sum = sums[size_t(i * colsPerThread + j)];
        if (split)
          g.storePart(t, loc, part, r, col, sum);
        else
          g.store(t, loc, r, col, sum);
      }
    OpBuilder end = OpBuilder::atBlockEnd(&entry);
    gpu::TerminatorOp::create(end, loc);
  };
  // The cp.async pipeline (TiledGemm::stagedA): stage s holds depths
  // [32 s, +32) of the tile's rows of A and of W in ring slot s mod 3. A
  // thread copies the same 16-byte chunks of every stage: chunk
  // tid + 256 i of a stage's row-major chunks, consecutive threads along a
  // row (coalesced); a chunk past the rows, the columns or K is zero-filled
  // (cp.async's source size 0, read from a clamped, valid address), as the
  // products past the edges must be. Stage s's copies are commit group s;
  // before stage s is multiplied each thread waits until at most one
  // group, s + 1, is pending, and a barrier makes every thread's copies
  // visible and every thread done with stage s - 1's slot, which the copies
  // of stage s + 2 then overwrite.
  auto asyncStagedSums = [&](OpBuilder &o, SmallVector<Value> sums) {
    Value shared = gpu::DynamicSharedMemoryOp::create(
        o, loc, MemRefType::get({ShapedType::kDynamic}, o.getI8Type(), MemRefLayoutAttrInterface{},
                                gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup)));
    Value ringA = memref::ViewOp::create(o, loc, ringType(ctx, tileRows, elementA), shared, c(o, 0), ValueRange{});
    Value ringW, decodedW;
    if (codesW) {
      ringW = memref::ViewOp::create(o, loc, codesRingType(ctx, tileCols, fp8Codes), shared,
                                     c(o, ringBytes(tileRows, elementA)), ValueRange{});
      decodedW = memref::ViewOp::create(o, loc, decodedStageType(ctx, tileCols), shared,
                                        c(o, ringBytes(tileRows, elementA) + codesRingBytes(tileCols, fp8Codes)),
                                        ValueRange{});
    } else {
      ringW = memref::ViewOp::create(o, loc, ringType(ctx, tileCols, elementW), shared,
                                     c(o, ringBytes(tileRows, elementA)), ValueRange{});
    }
    // A thread's chunks: their place in the slot, where their rows are,
    // whether the rows are in range.
    struct Chunk {
      Value ring, row, depth;        // in the slot, in elements
      Value buffer;
      SmallVector<Value> prefix;
      Value inRange;
      int64_t elements;
      int64_t depthsPerElement;      // E2M1 codes: 2
      Value active;                  // null: every thread has the chunk
    };
    SmallVector<Chunk> chunks;
    // `perRow` chunks of `elements` a row of a stage.
    auto addChunks = [&](Value buffer, const std::function<SmallVector<Value>(OpBuilder &, Location, Value)> &prefix,
                         Value ring, int64_t elements, int64_t perRow, int64_t depthsPerElement, int64_t rows,
                         Value first, Value last) {
      // Fewer chunks than threads (a 64-column tile's codes): the first
      // threads copy one each.
      const int64_t total = rows * perRow;
      assert((total < kThreads || total % kThreads == 0) && "whole chunks a thread");
      for (int64_t i = 0; i < std::max<int64_t>(1, total / kThreads); ++i) {
        Value e = arith::AddIOp::create(o, loc, tid, c(o, i * kThreads));
        Chunk chunk;
        if (total < kThreads)
          chunk.active = lessThan(o, tid, c(o, total));
        chunk.ring = ring;
        chunk.row = arith::DivUIOp::create(o, loc, e, c(o, perRow));
        chunk.depth = arith::MulIOp::create(o, loc, arith::RemUIOp::create(o, loc, e, c(o, perRow)), c(o, elements));
        Value at = arith::AddIOp::create(o, loc, first, chunk.row);
        chunk.inRange = arith::CmpIOp::create(o, loc, arith::CmpIPredicate::ule, at, last);
        chunk.buffer = buffer;
        chunk.prefix = prefix(o, loc, arith::MinUIOp::create(o, loc, at, last));
        chunk.elements = elements;
        chunk.depthsPerElement = depthsPerElement;
        chunks.push_back(std::move(chunk));
      }
    };
    auto addRows = [&](const StagedRows &staged, Value ring, Type element, int64_t rows, Value first, Value last) {
      const int64_t elements = kCopyBytes / elementBytes(element);
      addChunks(staged.buffer, staged.prefix, ring, elements, kStageDepth / elements, 1, rows, first, last);
    };
    addRows(g.stagedA, ringA, elementA, tileRows, row0, lastRow);
    if (codesW)
      addChunks(g.stagedCodesW.codes, g.stagedCodesW.prefix, ringW, kCopyBytes, codeStageBytes(fp8Codes) / kCopyBytes,
                fp8Codes ? 1 : 2, tileCols, col0, lastCol);
    else
      addRows(g.stagedW, ringW, elementW, tileCols, col0, lastCol);
    // Stage s holds depths [first + 32 s, +32) (first: the part's, or 0),
    // none at or past `end` (the part's, or K).
    Value first = split ? depthBegin : c(o, 0);
    Value stages = ceilDiv(o, loc, split ? arith::SubIOp::create(o, loc, depthEnd, depthBegin).getResult() : K,
                           kStageDepth);
    // Stage `s`'s copies into slot `slot`, when s < stages (a uniform
    // branch), and their commit group (empty past the last stage, so that
    // group s is always stage s).
    auto copyStage = [&](OpBuilder &p, Value s, Value slot) {
      auto issue = scf::IfOp::create(p, loc, TypeRange{}, lessThan(p, s, stages), /*withElse=*/false);
      OpBuilder q = issue.getThenBodyBuilder();
      Value k0 = arith::AddIOp::create(q, loc, first, arith::MulIOp::create(q, loc, s, c(q, kStageDepth)));
      for (const Chunk &chunk : chunks) {
        // The chunk's first depth (a chunk lies wholly within the depths or
        // past them: K is a multiple of its depths) and its element there.
        Value d = arith::AddIOp::create(q, loc, k0,
                                        chunk.depthsPerElement == 1
                                            ? chunk.depth
                                            : arith::MulIOp::create(q, loc, chunk.depth, c(q, chunk.depthsPerElement)));
        Value in = arith::AndIOp::create(q, loc, chunk.inRange, lessThan(q, d, depthEnd));
        Value sourceElements = arith::SelectOp::create(q, loc, in, c(q, chunk.elements), c(q, 0));
        SmallVector<Value> from = chunk.prefix;
        Value element = chunk.depthsPerElement == 1 ? d : arith::DivUIOp::create(q, loc, d, c(q, chunk.depthsPerElement));
        from.push_back(arith::SelectOp::create(q, loc, in, element, c(q, 0)));
        OpBuilder copy = q;
        if (chunk.active)
          copy = scf::IfOp::create(q, loc, TypeRange{}, chunk.active, /*withElse=*/false).getThenBodyBuilder();
        nvgpu::DeviceAsyncCopyOp::create(copy, loc, chunk.ring, ValueRange{slot, chunk.row, chunk.depth}, chunk.buffer,
                                         from, copy.getIndexAttr(chunk.elements), sourceElements, copy.getUnitAttr());
      }
      NVVM::CpAsyncCommitGroupOp::create(p, loc);
    };
    for (int64_t s = 0; s + 1 < kStages; ++s)
      copyStage(o, c(o, s), c(o, s));
    // Packed codes: a thread decodes tileCols / 64 runs of 8 depths a stage,
    // run u = tid + 256 i at row u / 4, depths 8 (u mod 4) of the stage
    // (consecutive threads along a row), under its row's scale.
    struct DecodeRun {
      Value row, depth, column;  // column: the row's, clamped to the last
    };
    SmallVector<DecodeRun> decodeRuns;
    constexpr int64_t kRun = 8, kRunsPerRow = kStageDepth / kRun;
    if (codesW)
      for (int64_t i = 0; i < tileCols * kRunsPerRow / kThreads; ++i) {
        Value u = arith::AddIOp::create(o, loc, tid, c(o, i * kThreads));
        DecodeRun run;
        run.row = arith::DivUIOp::create(o, loc, u, c(o, kRunsPerRow));
        run.depth = arith::MulIOp::create(o, loc, arith::RemUIOp::create(o, loc, u, c(o, kRunsPerRow)), c(o, kRun));
        run.column = arith::MinUIOp::create(o, loc, arith::AddIOp::create(o, loc, col0, run.row), lastCol);
        decodeRuns.push_back(run);
      }
    auto loop = scf::ForOp::create(
        o, loc, c(o, 0), stages, c(o, 1), sums, [&](OpBuilder &p, Location l, Value s, ValueRange carried) {
          // The stage's scales are read from global memory before the wait,
          // so that their latency overlaps it.
          SmallVector<Value> scales;
          for (const DecodeRun &run : decodeRuns)
            scales.push_back(g.stagedCodesW.scale(
                p, l, run.column, arith::AddIOp::create(p, l, first, arith::MulIOp::create(p, l, s, c(p, kStageDepth)))));
          NVVM::CpAsyncWaitGroupOp::create(p, l, kStages - 2);
          gpu::BarrierOp::create(p, l);
          Value ahead = arith::AddIOp::create(p, l, s, c(p, kStages - 1));
          copyStage(p, ahead, arith::RemUIOp::create(p, l, ahead, c(p, kStages)));
          Value slot = arith::RemUIOp::create(p, l, s, c(p, kStages));
          Value slotW = slot;
          if (codesW) {
            // The stage's codes to bf16 (exact: E4M3 or E2M1 times a power
            // of two), each run one load of its codes and one 16-byte store;
            // a barrier before any warp reads them.
            const int64_t runBytes = fp8Codes ? kRun : kRun / 2;
            for (auto [run, scale] : llvm::zip(decodeRuns, scales)) {
              Value byte = fp8Codes ? run.depth : arith::DivUIOp::create(p, l, run.depth, c(p, 2)).getResult();
              Value word = vector::LoadOp::create(p, l, VectorType::get({runBytes}, p.getI8Type()), ringW,
                                                  ValueRange{slot, run.row, byte}, /*nontemporal=*/false,
                                                  llvm::MaybeAlign(runBytes));
              PackedRun decoded = decodePackedWord(p, l, word, scale, fp8Codes);
              SmallVector<Value> weights;
              // E2M1's unit (2^14) multiplies each value rather than the
              // scale: a scale from 2^114 times 2^14 would overflow f32,
              // where each product stays exact.
              for (Value v : decoded.values) {
                if (decoded.unit != 1.0)
                  v = arith::MulFOp::create(p, l, v,
                                            arith::ConstantFloatOp::create(p, l, p.getF32Type(), APFloat(float(decoded.unit))));
                weights.push_back(arith::MulFOp::create(p, l, v, decoded.scale));
              }
              Value f32s = vector::FromElementsOp::create(p, l, VectorType::get({kRun}, p.getF32Type()), weights);
              Value bf16s = arith::TruncFOp::create(p, l, VectorType::get({kRun}, p.getBF16Type()), f32s);
              vector::StoreOp::create(p, l, bf16s, decodedW, ValueRange{c(p, 0), run.row, run.depth},
                                      /*nontemporal=*/false, llvm::MaybeAlign(16));
            }
            gpu::BarrierOp::create(p, l);
            slotW = c(p, 0);
          }
          SmallVector<Value> next(carried.begin(), carried.end());
          for (int64_t k16 = 0; k16 < kStageDepth; k16 += 16)
            next = mmaStepStaged(p, l, ringA, slot, codesW ? decodedW : ringW, slotW, k16, warpTile, next);
          scf::YieldOp::create(p, l, next);
        });
    // No copy is left pending into shared memory when the block ends.
    NVVM::CpAsyncWaitGroupOp::create(o, loc, 0);
    return SmallVector<Value>(loop.getResults());
  };
  const size_t accumulators = size_t(rowsPerThread * colsPerThread);
  SmallVector<Value> init(accumulators, zero);
  if (pipelined)
    return finish(asyncStagedSums(k, init));
  SmallVector<Value> first = loadSlice(k, c(k, 0));
  init.append(first.begin(), first.end());
  // Each slice: its staged values (loaded the iteration before) to shared
  // memory, the next slice's loads issued, then the products of the 16
  // depths while those loads are in flight. Each output adds its products
  // in the order of d, whatever the tile.
  auto slices = scf::ForOp::create(
      k, loc, c(k, 0), K, c(k, kDepth), init, [&](OpBuilder &o, Location l, Value k0, ValueRange carried) {
        storeSlice(o, carried.drop_front(accumulators));
        gpu::BarrierOp::create(o, l);
        SmallVector<Value> next = loadSlice(o, arith::AddIOp::create(o, l, k0, c(o, kDepth)));
        SmallVector<Value> sums(carried.begin(), carried.begin() + accumulators);
        if (pairs) {
          sums = mmaStepBf16(o, l, As, Ws, warpTile, sums);
        } else if (tensorCores) {
          for (int64_t k8 = 0; k8 < kDepth; k8 += 8)
            sums = mmaStep(o, l, g.math, As, Ws, c(o, k8), warpTile, sums);
        } else {
          SmallVector<Value> rowAt, colAt;
          for (int64_t h = 0; h < groupsA; ++h)
            rowAt.push_back(threadRow(o, 4 * h));
          for (int64_t h = 0; h < groupsW; ++h)
            colAt.push_back(threadCol(o, 4 * h));
          for (int64_t dd = 0; dd < kDepth; ++dd) {
            SmallVector<Value> av, wv;
            for (Value at : rowAt)
              loadFour(o, As, dd, at, av);
            for (Value at : colAt)
              loadFour(o, Ws, dd, at, wv);
            for (int64_t i = 0; i < rowsPerThread; ++i)
              for (int64_t j = 0; j < colsPerThread; ++j) {
                Value &sum = sums[size_t(i * colsPerThread + j)];
                sum = arith::AddFOp::create(o, l, sum, arith::MulFOp::create(o, l, av[size_t(i)], wv[size_t(j)]));
              }
          }
        }
        gpu::BarrierOp::create(o, l);
        sums.append(next.begin(), next.end());
        scf::YieldOp::create(o, l, sums);
      });
  finish(SmallVector<Value>(slices.getResults().take_front(accumulators)));
}

Value warpAllReduce(OpBuilder &b, Location loc, Value v, function_ref<Value(OpBuilder &, Value, Value)> combine) {
  constexpr int32_t kWarp = 32;
  for (int32_t offset = kWarp / 2; offset > 0; offset /= 2)
    v = combine(b, v, gpu::ShuffleOp::create(b, loc, v, offset, kWarp, gpu::ShuffleMode::XOR).getShuffleResult());
  return v;
}

int64_t warpGemvSplit(Value N, Value K, Value gridZ) {
  std::optional<int64_t> n = staticExtent(N), k = staticExtent(K);
  std::optional<int64_t> z = gridZ ? staticExtent(gridZ) : std::optional<int64_t>(1);
  if (!n || !k || !z)
    return 1;
  // Double while the warps stay within one wave of the GPU (some 8,192:
  // 132 SMs x 64) and each lane keeps 8 or more depths. A second, partial
  // wave cost more than the split saved: on the H200, wo_b (5,120 outputs of
  // 8,192) split in two ran at 1.8 TB/s against 2.9 unsplit
  // (bench/results/gpu-v41-real-size.md).
  int64_t split = 1;
  while (split < 8 && *n * *z * split * 2 <= 8192 && *k >= 32 * 8 * 2 * split)
    split *= 2;
  return split;
}

Value pairableWeight(Value W) {
  auto type = llvm::dyn_cast<MemRefType>(W.getType());
  if (!type || !type.getLayout().isIdentity() || !type.getElementType().isIntOrFloat() ||
      type.getElementType().getIntOrFloatBitWidth() != 16 || type.getRank() == 0)
    return Value();
  int64_t row = type.getShape().back();
  return ShapedType::isDynamic(row) || row % 2 ? Value() : W;
}

PackedRun decodePackedWord(OpBuilder &b, Location loc, Value word, Value scale, bool fp8) {
  // A 32-bit pattern (the sign masks set bit 31).
  auto i32 = [&](uint32_t bits) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(int32_t(bits))).getResult();
  };
  int64_t bytes = llvm::cast<VectorType>(word.getType()).getNumElements();
  assert(bytes % 4 == 0 && "whole 32-bit words of codes");
  auto pairType = VectorType::get({2}, b.getF16Type());
  PackedRun run;
  run.scale = scale;
  auto append = [&](Value pair) {
    for (int64_t e = 0; e < 2; ++e)
      run.values.push_back(
          arith::ExtFOp::create(b, loc, b.getF32Type(), vector::ExtractOp::create(b, loc, pair, e).getResult()));
  };
  if (fp8) {
    for (int64_t j = 0; j < bytes; j += 2) {
      Value codes = vector::ShuffleOp::create(b, loc, word, word, ArrayRef<int64_t>{j, j + 1});
      append(NVVM::ConvertF8x2ToF16x2Op::create(b, loc, pairType, codes, /*relu=*/false,
                                                b.getType<Float8E4M3FNType>()));
    }
    return run;
  }
  run.unit = 16384.0;
  // A 32-bit word's nibble n (depth n) and n + 4 are one f16x2: nibble n's
  // e1 e0 m to bits 11-9, its sign to 15, and nibble n + 4 (16 bits up) the
  // same 16 bits up, so both move by one shift of the word each: four
  // shifts and masks for eight codes, not a byte's own.
  Value words = vector::BitCastOp::create(b, loc, VectorType::get({bytes / 4}, b.getI32Type()), word);
  auto moved = [&](Value x, uint32_t mask, int64_t shift) -> Value {
    Value masked = arith::AndIOp::create(b, loc, x, i32(mask));
    if (shift > 0)
      return arith::ShLIOp::create(b, loc, masked, i32(shift));
    if (shift < 0)
      return arith::ShRUIOp::create(b, loc, masked, i32(-shift));
    return masked;
  };
  run.values.resize(2 * bytes);
  for (int64_t w = 0; w < bytes / 4; ++w) {
    Value x = vector::ExtractOp::create(b, loc, words, w);
    for (int64_t n = 0; n < 4; ++n) {
      uint32_t magnitude = (0x7u << (4 * n)) | (0x7u << (4 * n + 16)), sign = (0x8u << (4 * n)) | (0x8u << (4 * n + 16));
      Value bits = arith::OrIOp::create(b, loc, moved(x, magnitude, 9 - 4 * n), moved(x, sign, 12 - 4 * n));
      Value pair = vector::BitCastOp::create(
          b, loc, pairType, vector::BroadcastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), bits));
      for (int64_t e = 0; e < 2; ++e)
        run.values[8 * w + n + 4 * e] = arith::ExtFOp::create(b, loc, b.getF32Type(),
                                                             vector::ExtractOp::create(b, loc, pair, e).getResult());
    }
  }
  return run;
}

bool activationsReadable(Value activations) {
  auto type = llvm::dyn_cast<MemRefType>(activations.getType());
  if (!type || !type.getElementType().isF32() || type.getRank() < 1)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || ShapedType::isDynamic(offset) || offset % 4)
    return false;
  if (strides.back() != 1)
    return false;
  for (int64_t stride : ArrayRef(strides).drop_back())
    if (ShapedType::isDynamic(stride) || stride % 4)
      return false;
  return true;
}

int64_t warpGemvUnroll(Type element) {
  int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  return std::max<int64_t>(4, 16 / bytes);
}

void buildWarpGemv(OpBuilder &b, Location loc, const WarpGemv &g) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  constexpr int64_t kWarp = 32, kWarps = kThreads / kWarp;
  int64_t split = g.split, outputsPerBlock = kWarps / split;
  assert(split >= 1 && kWarps % split == 0 && "a power of two up to 8 warps per output");
  Value one = idx(1), N = g.N, K = g.K;
  Value blocks = arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, N, idx(outputsPerBlock - 1)),
                                        idx(outputsPerBlock));
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  SmallVector<Type> shared;
  if (split > 1)
    shared.push_back(MemRefType::get({kWarps}, b.getF32Type(), MemRefLayoutAttrInterface{}, workgroup));
  // One grid dimension, the rows fastest: block x is row x mod M of the
  // outputs chunk x / M. The GPU starts blocks in order, so the M rows that
  // read one chunk of the weight run together and all but the first find it
  // in L2 (a batched decode's 8-64 rows, the routed experts' rows of one
  // expert); with the columns fastest, a row's blocks swept the whole weight
  // before the next row started, and the weight was read from HBM again.
  Value gridX = arith::MulIOp::create(b, loc, blocks, g.M);
  auto launch = gpu::LaunchOp::create(b, loc, gridX, one, g.gridZ ? g.gridZ : one, idx(kThreads), one, one, nullptr,
                                      nullptr, ValueRange{}, shared);
  OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
  if (g.prologue)
    g.prologue(k, loc, launch.getBlockIds().z);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(k, loc, v).getResult(); };
  Value tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(k, loc, tid, c(kWarp));
  Value warp = arith::DivUIOp::create(k, loc, tid, c(kWarp));
  Value m = arith::RemUIOp::create(k, loc, launch.getBlockIds().x, g.M);
  Value chunk = arith::DivUIOp::create(k, loc, launch.getBlockIds().x, g.M);
  // Output o's `split` warps are consecutive; part p of them takes the
  // depths 32 p + lane + 32 split i.
  Value o = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, chunk, c(outputsPerBlock)),
                                  arith::DivUIOp::create(k, loc, warp, c(split)));
  Value part = arith::RemUIOp::create(k, loc, warp, c(split));
  Value inN = arith::CmpIOp::create(k, loc, arith::CmpIPredicate::ult, o, N);
  auto inRange = scf::IfOp::create(k, loc, split > 1 ? TypeRange{k.getF32Type()} : TypeRange{}, inN, split > 1);
  OpBuilder t = inRange.getThenBodyBuilder();
  // The lane's depths are first, first + stride, ...: kUnroll of them an
  // iteration, their loads issued together (a warp's loads of one f32
  // weight row are then kUnroll x 128 B in flight, not 128 B: decode's
  // products are bound by the weights' bytes), added in the same order as
  // one at a time. The lane's last count mod kUnroll depths follow one at a
  // time. With `width` 2 the same over pairs of depths, a pair one 32-bit
  // load of the weight.
  const int64_t kUnroll = g.unroll;
  assert(kUnroll >= 1 && "at least one depth an iteration");
  int64_t stride = kWarp * split;
  // vectorA: A's values of a unit read 16 bytes a load (packed weights
  // whose activations' rows are aligned: the unit's first depth is a
  // multiple of its width, a multiple of 4).
  auto laneSum = [&](OpBuilder &t, int64_t width, bool vectorA = false) -> Value {
    auto ci = [&](int64_t v) { return arith::ConstantIndexOp::create(t, loc, v).getResult(); };
    Value zero = arith::ConstantFloatOp::create(t, loc, t.getF32Type(), APFloat(0.0f));
    int64_t unroll = std::max<int64_t>(1, kUnroll / width);
    Value units = width == 1 ? K : arith::DivUIOp::create(t, loc, K, ci(width)).getResult();
    // The weight's stored elements at depths d .. d + width - 1 (d a
    // multiple of width), in order; packed, their run (values and scale).
    auto loadRun = [&](OpBuilder &p, Location l, Value d) -> PackedRun {
      if (width == 1)
        return {{g.loadW(p, l, m, o, d)}, Value()};
      if (g.packed.codes)
        return g.packed.load(p, l, m, o, d);
      Type element = llvm::cast<MemRefType>(g.pairedWeight.getType()).getElementType();
      int64_t bytes = width * element.getIntOrFloatBitWidth() / 8;
      Value run = vector::LoadOp::create(p, l, VectorType::get({width}, element), g.pairedWeight,
                                         g.weightIndices(p, l, m, o, d), /*nontemporal=*/false,
                                         llvm::MaybeAlign(bytes));
      PackedRun out;
      for (int64_t e = 0; e < width; ++e)
        out.values.push_back(vector::ExtractOp::create(p, l, run, e));
      return out;
    };
    // Unit q's loads (depths width q .. width q + width - 1): A's values to
    // `as`, the weight's run to `ws`.
    auto unitLoads = [&](OpBuilder &p, Location l, Value q, SmallVector<Value> &as, SmallVector<PackedRun> &ws) {
      Value d = width == 1 ? q : arith::MulIOp::create(p, l, q, arith::ConstantIndexOp::create(p, l, width)).getResult();
      auto depth = [&](int64_t e) {
        return e ? arith::AddIOp::create(p, l, d, arith::ConstantIndexOp::create(p, l, e)).getResult() : d;
      };
      if (vectorA) {
        for (int64_t e = 0; e < width; e += 4) {
          Value four = vector::LoadOp::create(p, l, VectorType::get({4}, p.getF32Type()), g.packed.activations,
                                              g.packed.activationIndices(p, l, m, depth(e)), /*nontemporal=*/false,
                                              llvm::MaybeAlign(16));
          for (int64_t i = 0; i < 4; ++i)
            as.push_back(vector::ExtractOp::create(p, l, four, i));
        }
      } else {
        for (int64_t e = 0; e < width; ++e)
          as.push_back(g.loadA(p, l, m, depth(e)));
      }
      ws.push_back(loadRun(p, l, d));
    };
    // acc plus each a times its w (widened), in order; a packed run's
    // products are added first, their sum scaled (unit, then scale) and
    // added to acc.
    auto addProducts = [&](OpBuilder &p, Location l, Value acc, ArrayRef<Value> as, ArrayRef<PackedRun> ws) {
      size_t next = 0;
      for (const PackedRun &run : ws) {
        ArrayRef<Value> a = as.slice(next, run.values.size());
        next += run.values.size();
        if (!run.scale) {
          for (auto [x, w] : llvm::zip_equal(a, run.values))
            acc = arith::AddFOp::create(p, l, acc, arith::MulFOp::create(p, l, x, lowering::widenToF32(p, l, w)));
          continue;
        }
        Value sum = arith::MulFOp::create(p, l, a[0], run.values[0]);
        for (size_t i = 1; i < a.size(); ++i)
          sum = arith::AddFOp::create(p, l, sum, arith::MulFOp::create(p, l, a[i], run.values[i]));
        if (run.unit != 1.0)
          sum = arith::MulFOp::create(p, l, sum, arith::ConstantFloatOp::create(p, l, p.getF32Type(),
                                                                                APFloat(float(run.unit))));
        acc = arith::AddFOp::create(p, l, acc, arith::MulFOp::create(p, l, sum, run.scale));
      }
      assert(next == as.size() && "a value of A for each of the weight's");
      return acc;
    };
    Value first = arith::AddIOp::create(t, loc, lane, arith::MulIOp::create(t, loc, part, ci(kWarp)));
    Value has = arith::CmpIOp::create(t, loc, arith::CmpIPredicate::ugt, units, first);
    Value left = arith::SelectOp::create(t, loc, has, arith::SubIOp::create(t, loc, units, first), ci(0));
    Value count = arith::DivUIOp::create(t, loc, arith::AddIOp::create(t, loc, left, ci(stride - 1)), ci(stride));
    Value unrolledEnd = arith::AddIOp::create(
        t, loc, first,
        arith::MulIOp::create(t, loc, arith::DivUIOp::create(t, loc, count, ci(unroll)), ci(unroll * stride)));
    auto groups = scf::ForOp::create(
        t, loc, first, unrolledEnd, ci(unroll * stride), ValueRange{zero},
        [&](OpBuilder &p, Location l, Value q0, ValueRange acc) {
          SmallVector<Value> as;
          SmallVector<PackedRun> ws;
          for (int64_t u = 0; u < unroll; ++u)
            unitLoads(p, l, u ? arith::AddIOp::create(p, l, q0, arith::ConstantIndexOp::create(p, l, u * stride)).getResult() : q0,
                      as, ws);
          scf::YieldOp::create(p, l, addProducts(p, l, acc[0], as, ws));
        });
    auto tail = scf::ForOp::create(t, loc, unrolledEnd, units, ci(stride), groups.getResults(),
                                   [&](OpBuilder &p, Location l, Value q, ValueRange acc) {
                                     SmallVector<Value> as;
                                     SmallVector<PackedRun> ws;
                                     unitLoads(p, l, q, as, ws);
                                     scf::YieldOp::create(p, l, addProducts(p, l, acc[0], as, ws));
                                   });
    return tail.getResult(0);
  };
  // Several depths a load where the buffers' bases are aligned to it (every
  // buffer the runtime allocates is; the caller makes sure each row's bytes
  // are a multiple of a load's; the check costs one branch a warp), else a
  // depth a load.
  auto alignedTo = [&](Value buffer, int64_t bytes) -> Value {
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(t, loc, buffer);
    return arith::CmpIOp::create(t, loc, arith::CmpIPredicate::eq,
                                 arith::RemUIOp::create(t, loc, base, arith::ConstantIndexOp::create(t, loc, bytes)),
                                 arith::ConstantIndexOp::create(t, loc, 0));
  };
  auto wideWhen = [&](Value aligned, int64_t width, bool vectorA) {
    auto choose = scf::IfOp::create(t, loc, TypeRange{t.getF32Type()}, aligned, /*withElse=*/true);
    OpBuilder wide = choose.getThenBodyBuilder(), singles = choose.getElseBodyBuilder();
    scf::YieldOp::create(wide, loc, laneSum(wide, width, vectorA));
    scf::YieldOp::create(singles, loc, laneSum(singles, 1));
    return choose.getResult(0);
  };
  Value laneTotal;
  if (g.packed.codes) {
    // Words of codes; where the activations are read 16 bytes a load, their
    // base too (their layout's offset and strides are, activationsReadable).
    Value aligned = alignedTo(g.packed.codes, g.packed.bytes);
    if (g.packed.activations)
      aligned = arith::AndIOp::create(t, loc, aligned, alignedTo(g.packed.activations, 16));
    laneTotal = wideWhen(aligned, g.packed.depths, bool(g.packed.activations));
  } else if (g.pairedWeight) {
    // Pairs of 16-bit elements, a 32-bit load.
    laneTotal = wideWhen(alignedTo(g.pairedWeight, 4), 2, /*vectorA=*/false);
  } else {
    laneTotal = laneSum(t, 1);
  }
  Value sum = warpAllReduce(t, loc, laneTotal, [&](OpBuilder &o, Value x, Value y) {
    return arith::AddFOp::create(o, loc, x, y).getResult();
  });
  if (split == 1) {
    Value lane0 = arith::CmpIOp::create(t, loc, arith::CmpIPredicate::eq, lane, arith::ConstantIndexOp::create(t, loc, 0));
    auto write = scf::IfOp::create(t, loc, TypeRange{}, lane0, false);
    OpBuilder w = write.getThenBodyBuilder();
    g.store(w, loc, m, o, sum);
    gpu::TerminatorOp::create(k, loc);
    return;
  }
  scf::YieldOp::create(t, loc, sum);
  OpBuilder outside = inRange.getElseBodyBuilder();
  scf::YieldOp::create(outside, loc, arith::ConstantFloatOp::create(outside, loc, outside.getF32Type(), APFloat(0.0f)).getResult());
  // The parts' sums meet in shared memory; the output's first warp adds them
  // in part order.
  Value partials = launch.getWorkgroupAttributions()[0];
  Value laneZero = arith::CmpIOp::create(k, loc, arith::CmpIPredicate::eq, lane, c(0));
  auto keep = scf::IfOp::create(k, loc, TypeRange{}, laneZero, false);
  {
    OpBuilder w = keep.getThenBodyBuilder();
    memref::StoreOp::create(w, loc, inRange.getResult(0), partials, ValueRange{warp});
  }
  gpu::BarrierOp::create(k, loc);
  Value leader = arith::AndIOp::create(
      k, loc, arith::AndIOp::create(k, loc, laneZero, arith::CmpIOp::create(k, loc, arith::CmpIPredicate::eq, part, c(0))),
      inN);
  auto write = scf::IfOp::create(k, loc, TypeRange{}, leader, false);
  {
    OpBuilder w = write.getThenBodyBuilder();
    Value total = memref::LoadOp::create(w, loc, partials, ValueRange{warp});
    for (int64_t q = 1; q < split; ++q)
      total = arith::AddFOp::create(
          w, loc, total,
          memref::LoadOp::create(w, loc, partials,
                                 ValueRange{arith::AddIOp::create(w, loc, warp, arith::ConstantIndexOp::create(w, loc, q))}));
    g.store(w, loc, m, o, total);
  }
  gpu::TerminatorOp::create(k, loc);
}

std::optional<std::pair<int64_t, int64_t>> depthSplit(Value N, Value K, Value gridZ) {
  std::optional<int64_t> n = staticExtent(N), depth = staticExtent(K), z = gridZ ? staticExtent(gridZ) : std::optional<int64_t>(1);
  if (!n || !depth || !z || *n <= 0 || *depth <= 0 || *z <= 0)
    return std::nullopt;
  const int64_t tiles = (*n + 63) / 64 * *z;
  int64_t parts = std::min((kSplitTargetBlocks + tiles - 1) / tiles, std::max<int64_t>(1, *depth / kMinPartDepth));
  // Whole stages a part, and no empty part.
  int64_t partDepth = ((*depth + parts - 1) / parts + kStageDepth - 1) / kStageDepth * kStageDepth;
  parts = (*depth + partDepth - 1) / partDepth;
  if (parts < 2)
    return std::nullopt;
  return std::make_pair(parts, partDepth);
}

namespace {
/// The tiled kernel of `p` on `tile`s, gridX blocks across (its column
/// tiles) and gridY down (its row tiles, times the parts of a split depth).
TiledGemm tiledGemmOf(const Product &p, GemmTile tile, Value gridX, Value gridY) {
  TiledGemm g;
  g.gridX = gridX;
  g.gridY = gridY;
  g.gridZ = p.gridZ;
  g.N = p.N;
  g.K = p.K;
  g.prologue = p.prologue;
  g.tile = tile;
  g.rows = tileRowsUpTo(p.M, tile.rows);
  g.loadA = p.loadA;
  g.loadW = p.loadW;
  g.store = p.store;
  g.math = p.math;
  g.stagedA = p.stagedA;
  g.stagedW = p.stagedW;
  g.stagedCodesW = p.stagedCodesW;
  return g;
}

/// The split-depth product (ProductChoice::splitMinRows): 64 x 64 bf16
/// tiles, block y the part y mod parts of row tile y div parts, each part's
/// sums to a scratch buffer [parts][gridZ][M][N]; then a thread per output
/// adds them in the order of the parts (one order for any launch) and stores
/// the sum through p.store.
void buildSplitProduct(OpBuilder &b, Location loc, const Product &p, std::pair<int64_t, int64_t> split) {
  auto c = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
  auto [parts, partDepth] = split;
  Value one = c(b, 1), Z = p.gridZ ? p.gridZ : one;
  const GemmTile tile{64, 64};
  Value gridX = ceilDiv(b, loc, p.N, tile.cols);
  TiledGemm g = tiledGemmOf(p, tile, gridX, arith::MulIOp::create(b, loc, ceilDiv(b, loc, p.M, tile.rows), c(b, parts)));
  g.depthParts = parts;
  g.partDepth = partDepth;
  Value outputs = arith::MulIOp::create(b, loc, p.M, p.N);
  Value zOutputs = arith::MulIOp::create(b, loc, Z, outputs);
  Value partials = memref::AllocOp::create(b, loc, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
                                           ValueRange{arith::MulIOp::create(b, loc, zOutputs, c(b, parts))});
  // Output (z, r, col) of part `part`: partials[part Z M N + z M N + r N + col].
  auto at = [=](OpBuilder &o, Location l, Value part, Value z, Value r, Value col) {
    Value inZ = arith::AddIOp::create(o, l, arith::MulIOp::create(o, l, r, p.N), col);
    Value zPart = arith::AddIOp::create(o, l, arith::MulIOp::create(o, l, part, Z), z);
    return arith::AddIOp::create(o, l, arith::MulIOp::create(o, l, zPart, outputs), inZ).getResult();
  };
  auto blockZ = std::make_shared<Value>();
  g.prologue = [prologue = p.prologue, blockZ](OpBuilder &o, Location l, Value z) {
    *blockZ = z;
    if (prologue)
      prologue(o, l, z);
  };
  g.storePart = [=](OpBuilder &o, Location l, Value part, Value r, Value col, Value sum) {
    memref::StoreOp::create(o, l, sum, partials, ValueRange{at(o, l, part, *blockZ, r, col)});
  };
  buildTiledGemm(b, loc, g);
  // The sums: output i = r N + col of product blockIdx.z.
  const int64_t threads = 256;
  auto launch = gpu::LaunchOp::create(b, loc, ceilDiv(b, loc, outputs, threads), one, Z, c(b, threads), one, one);
  OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
  Value z = launch.getBlockIds().z;
  if (p.prologue)
    p.prologue(k, loc, z);
  Value i = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, launch.getBlockIds().x, c(k, threads)),
                                  launch.getThreadIds().x);
  auto in = scf::IfOp::create(k, loc, TypeRange{},
                              arith::CmpIOp::create(k, loc, arith::CmpIPredicate::ult, i, outputs), false);
  OpBuilder t = in.getThenBodyBuilder();
  Value r = arith::DivUIOp::create(t, loc, i, p.N), col = arith::RemUIOp::create(t, loc, i, p.N);
  Value sum;
  for (int64_t part = 0; part < parts; ++part) {
    Value v = memref::LoadOp::create(t, loc, partials, ValueRange{at(t, loc, c(t, part), z, r, col)});
    sum = sum ? arith::AddFOp::create(t, loc, sum, v).getResult() : v;
  }
  p.store(t, loc, r, col, sum);
  gpu::TerminatorOp::create(k, loc);
  memref::DeallocOp::create(b, loc, partials);
}
} // namespace

scf::IfOp buildProductKernels(OpBuilder &b, Location loc, const Product &p, const ProductChoice &choice) {
  // The grids first: the branches use them.
  GemmTile tile = gemmTile(p.math, p.N);
  Value gridX = ceilDiv(b, loc, p.N, tile.cols), gridY = ceilDiv(b, loc, p.M, tile.rows);
  auto atLeast = [&](Value v, int64_t bound) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, v, arith::ConstantIndexOp::create(b, loc, bound))
        .getResult();
  };
  Value tiled = atLeast(p.M, choice.minRows);
  if (choice.minBlocks > 1) {
    // Few tiles (below half a wave): a tile's time does not shrink with its
    // rows, and the warp kernel's, whose weight reads past the first row
    // come from L2, grows with them; from kWarpRowsAtMost rows the tiles are
    // taken anyway.
    Value blocks = arith::MulIOp::create(b, loc, gridX, gridY);
    if (p.gridZ)
      blocks = arith::MulIOp::create(b, loc, blocks, p.gridZ);
    Value enough = arith::OrIOp::create(b, loc, atLeast(blocks, choice.minBlocks), atLeast(p.M, kWarpRowsAtMost));
    tiled = arith::AndIOp::create(b, loc, tiled, enough);
  }
  std::optional<std::pair<int64_t, int64_t>> split;
  Value splitRows;
  const bool staged = p.stagedA.buffer && (p.stagedW.buffer || p.stagedCodesW.codes);
  if (choice.warpBelow && choice.splitMinRows > 0 && p.math == TileMath::Bf16 && staged)
    split = depthSplit(p.N, p.K, p.gridZ);
  if (split)
    // Fewer rows than a full tile, but enough that the warp kernel's
    // re-reads of the weight (one a row, from L2) cost more than tiles
    // whose mma rows are partly padding.
    splitRows = arith::AndIOp::create(b, loc, atLeast(p.M, choice.splitMinRows),
                                      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, p.M,
                                                            arith::ConstantIndexOp::create(b, loc, kWarpRowsAtMost)));
  // A tile branch's product: with bf16CopyOfA, A staged from the bf16 copy
  // made there, freed after the branch's kernels.
  auto tilesOf = [&](OpBuilder &o, function_ref<void(const Product &)> build) {
    if (!p.bf16CopyOfA || !staged || !bf16CopyApplies(p.math, p.stagedA.buffer))
      return build(p);
    Product q = p;
    Value copy = bf16CopyOf(o, loc, p.stagedA.buffer);
    q.stagedA.buffer = copy;
    build(q);
    memref::DeallocOp::create(o, loc, copy);
  };
  auto kernels = scf::IfOp::create(b, loc, TypeRange{}, tiled, /*withElse=*/true);
  OpBuilder t = kernels.getThenBodyBuilder();
  tilesOf(t, [&](const Product &q) { buildTiledGemm(t, loc, tiledGemmOf(q, tile, gridX, gridY)); });
  if (!choice.warpBelow)
    return kernels;
  OpBuilder e = OpBuilder::atBlockBegin(kernels.elseBlock());
  if (split) {
    auto splitChoice = scf::IfOp::create(e, loc, TypeRange{}, splitRows, /*withElse=*/true);
    OpBuilder s = splitChoice.getThenBodyBuilder();
    tilesOf(s, [&](const Product &q) { buildSplitProduct(s, loc, q, *split); });
    e = OpBuilder::atBlockBegin(splitChoice.elseBlock());
  }
  WarpGemv w;
  w.M = p.M;
  w.N = p.N;
  w.K = p.K;
  w.gridZ = p.gridZ;
  w.prologue = p.prologue;
  w.loadA = p.loadA;
  w.loadW = [loadW = p.loadW](OpBuilder &o, Location l, Value, Value col, Value d) { return loadW(o, l, col, d); };
  w.store = p.store;
  w.split = warpGemvSplit(p.N, p.K, p.gridZ);
  w.unroll = p.warpUnroll;
  w.pairedWeight = p.pairedWeight;
  w.packed = p.packed;
  if (p.weightIndices)
    w.weightIndices = [indices = p.weightIndices](OpBuilder &o, Location l, Value, Value col, Value d) {
      return indices(o, l, col, d);
    };
  buildWarpGemv(e, loc, w);
  return kernels;
}

SmallVector<Value> loopExtents(OpBuilder &b, Location loc, linalg::GenericOp g) {
  SmallVector<Value> extents;
  for (const Range &r : llvm::cast<linalg::LinalgOp>(g.getOperation()).createLoopRanges(b, loc))
    extents.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
  return extents;
}

void mapInputsAt(OpBuilder &b, Location loc, linalg::GenericOp g, ArrayRef<Value> at, IRMapping &m,
                 OpOperand *skip) {
  Block &body = g.getRegion().front();
  for (OpOperand *input : g.getDpsInputOperands()) {
    BlockArgument arg = body.getArgument(input->getOperandNumber());
    if (input == skip || arg.use_empty())
      continue;
    if (!llvm::isa<MemRefType>(input->get().getType())) {
      m.map(arg, input->get());
      continue;
    }
    SmallVector<Value> coords;
    for (AffineExpr e : g.getMatchingIndexingMap(input).getResults())
      coords.push_back(affine::AffineApplyOp::create(b, loc, AffineMap::get(unsigned(at.size()), 0, e), at));
    m.map(arg, memref::LoadOp::create(b, loc, input->get(), coords));
  }
}

void cloneAt(OpBuilder &b, ArrayRef<Operation *> ops, ArrayRef<Value> at, IRMapping &m) {
  for (Operation *op : ops) {
    if (auto index = llvm::dyn_cast<linalg::IndexOp>(op))
      m.map(index.getResult(), at[index.getDim()]);
    else
      b.clone(*op, m);
  }
}

} // namespace mlir::dsf
