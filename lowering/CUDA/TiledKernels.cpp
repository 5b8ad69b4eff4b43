//===- TiledKernels.cpp - the kernel builders shared by CUDA passes -------===//
//
// The classic shared-memory tiled SIMT GEMM (64 x 64 tiles of C, 16-deep
// slices of the reduction, 4 x 4 outputs a thread) and a warp-per-output
// product for few rows, built directly as gpu.launch ops so that the rest of
// the CUDA pipeline (outlining, NVVM, ptxas) treats them like any other
// kernel; and the helpers that rewrite a generic's body into a kernel.
// The tiled kernel also runs on the tensor cores (mma.sync m16n8k8 tf32,
// TileMath): the same staging, a warp per 16 x 32 of the tile.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dsf {
namespace {
constexpr int64_t kDepth = 16, kThreads = 256, kPerThread = 4;

/// The buffer a view is of (through subviews, casts, reshapes).
Value viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}
} // namespace

linalg::FillOp fillBefore(linalg::GenericOp g, Value buffer) {
  // An input that is (a view of) the buffer would read the fill's values.
  for (Value input : g.getDpsInputs())
    if (viewRoot(input) == viewRoot(buffer))
      return {};
  for (Operation *op = g->getPrevNode(); op; op = op->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      return fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == buffer ? fill : linalg::FillOp();
    if (isMemoryEffectFree(op))
      continue;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects || op->getNumRegions())
      return {};
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    if (!llvm::all_of(list, [](const MemoryEffects::EffectInstance &e) {
          return isa<MemoryEffects::Allocate>(e.getEffect());
        }))
      return {};
  }
  return {};
}

Value ceilDiv(OpBuilder &b, Location loc, Value x, int64_t by) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  return arith::DivUIOp::create(b, loc, arith::AddIOp::create(b, loc, x, idx(by - 1)), idx(by)).getResult();
}

TileRows tileRowsUpTo(Value M) {
  return [M](OpBuilder &o, Location l, Value blockY) {
    Value row0 = arith::MulIOp::create(o, l, blockY, arith::ConstantIndexOp::create(o, l, kTile));
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
  return std::nullopt;
}

FailureOr<TileMath> tileMathOption(Operation *op, llvm::StringRef pass, llvm::StringRef value) {
  if (std::optional<TileMath> math = parseTileMath(value))
    return *math;
  return op->emitError() << pass << ": unknown math '" << value << "' (f32, tf32 or 3xtf32)";
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
} // namespace

void buildTiledGemm(OpBuilder &b, Location loc, const TiledGemm &g) {
  MLIRContext *ctx = b.getContext();
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value one = idx(1);
  const bool tensorCores = g.math != TileMath::F32;
  const int64_t stagedRow = tensorCores ? kTile + 8 : kTile;
  auto shared = MemRefType::get({kDepth, stagedRow}, b.getF32Type(), MemRefLayoutAttrInterface{},
                                gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  auto launch = gpu::LaunchOp::create(b, loc, g.gridX, g.gridY, g.gridZ ? g.gridZ : one, idx(kThreads), one, one,
                                      nullptr, nullptr, ValueRange{}, TypeRange{shared, shared});
  Block &entry = launch.getBody().front();
  OpBuilder k = OpBuilder::atBlockEnd(&entry);
  if (g.prologue)
    g.prologue(k, loc, launch.getBlockIds().z);
  Value N = g.N, K = g.K;
  Value valid, row0, rowEnd;
  std::tie(valid, row0, rowEnd) = g.rows(k, loc, launch.getBlockIds().y);
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
    scf::YieldOp::create(t, loc, lowering::widenToF32(t, loc, load(t, loc, i, col)));
    OpBuilder e = branch.getElseBodyBuilder();
    scf::YieldOp::create(e, loc, zero);
    return branch.getResult(0);
  };

  // The tensor cores' lanes (see mmaStep).
  MmaTile warpTile;
  if (tensorCores) {
    Value warp = arith::DivUIOp::create(k, loc, tid, c(32)), lane = arith::RemUIOp::create(k, loc, tid, c(32));
    warpTile.g = arith::DivUIOp::create(k, loc, lane, c(4));
    warpTile.t = arith::RemUIOp::create(k, loc, lane, c(4));
    warpTile.rowBase = arith::MulIOp::create(k, loc, arith::RemUIOp::create(k, loc, warp, c(4)), c(16));
    warpTile.colBase = arith::MulIOp::create(k, loc, arith::DivUIOp::create(k, loc, warp, c(4)), c(32));
  }
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
        if (tensorCores) {
          SmallVector<Value> sums(acc.begin(), acc.end());
          for (int64_t k8 = 0; k8 < kDepth; k8 += 8)
            sums = mmaStep(o, l, g.math, As, Ws, arith::ConstantIndexOp::create(o, l, k8), warpTile, sums);
          gpu::BarrierOp::create(o, l);
          scf::YieldOp::create(o, l, sums);
          return;
        }
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
      Value r, col;
      if (tensorCores) {
        // Accumulator i of n-tile j (see mmaStep): rows g, g + 8; columns 2t, 2t + 1.
        int64_t tile = i, element = j;
        r = arith::AddIOp::create(k, loc, arith::AddIOp::create(k, loc, warpTile.rowBase, warpTile.g),
                                  c(element >= 2 ? 8 : 0));
        col = arith::AddIOp::create(k, loc, warpTile.colBase,
                                    arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, warpTile.t, c(2)),
                                                          c(8 * tile + element % 2)));
      } else {
        r = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, ty, c(kPerThread)), c(i));
        col = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, tx, c(kPerThread)), c(j));
      }
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

Value warpAllReduce(OpBuilder &b, Location loc, Value v, function_ref<Value(OpBuilder &, Value, Value)> combine) {
  constexpr int32_t kWarp = 32;
  for (int32_t offset = kWarp / 2; offset > 0; offset /= 2)
    v = combine(b, v, gpu::ShuffleOp::create(b, loc, v, offset, kWarp, gpu::ShuffleMode::XOR).getShuffleResult());
  return v;
}

/// A constant, or the static size memref.dim reads.
static std::optional<int64_t> staticExtent(Value v) {
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
  auto launch = gpu::LaunchOp::create(b, loc, blocks, g.M, g.gridZ ? g.gridZ : one, idx(kThreads), one, one, nullptr,
                                      nullptr, ValueRange{}, shared);
  OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
  if (g.prologue)
    g.prologue(k, loc, launch.getBlockIds().z);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(k, loc, v).getResult(); };
  Value tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(k, loc, tid, c(kWarp));
  Value warp = arith::DivUIOp::create(k, loc, tid, c(kWarp));
  // Output o's `split` warps are consecutive; part p of them takes the
  // depths 32 p + lane + 32 split i.
  Value o = arith::AddIOp::create(k, loc, arith::MulIOp::create(k, loc, launch.getBlockIds().x, c(outputsPerBlock)),
                                  arith::DivUIOp::create(k, loc, warp, c(split)));
  Value part = arith::RemUIOp::create(k, loc, warp, c(split));
  Value m = launch.getBlockIds().y;
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
  auto laneSum = [&](OpBuilder &t, int64_t width) -> Value {
    auto ci = [&](int64_t v) { return arith::ConstantIndexOp::create(t, loc, v).getResult(); };
    Value zero = arith::ConstantFloatOp::create(t, loc, t.getF32Type(), APFloat(0.0f));
    int64_t unroll = std::max<int64_t>(1, kUnroll / width);
    Value units = width == 1 ? K : arith::DivUIOp::create(t, loc, K, ci(width)).getResult();
    // The weight's stored elements at depths d .. d + width - 1 (d a
    // multiple of width), in order.
    auto loadRun = [&](OpBuilder &p, Location l, Value d) -> SmallVector<Value> {
      if (width == 1)
        return {g.loadW(p, l, m, o, d)};
      Type element = llvm::cast<MemRefType>(g.pairedWeight.getType()).getElementType();
      int64_t bytes = width * element.getIntOrFloatBitWidth() / 8;
      Value run = vector::LoadOp::create(p, l, VectorType::get({width}, element), g.pairedWeight,
                                         g.weightIndices(p, l, m, o, d), /*nontemporal=*/false,
                                         llvm::MaybeAlign(bytes));
      SmallVector<Value> out;
      for (int64_t e = 0; e < width; ++e)
        out.push_back(vector::ExtractOp::create(p, l, run, e));
      return out;
    };
    // Unit q's loads (depths width q .. width q + width - 1): A's values to
    // `as`, the weight's stored elements to `ws`.
    auto unitLoads = [&](OpBuilder &p, Location l, Value q, SmallVector<Value> &as, SmallVector<Value> &ws) {
      Value d = width == 1 ? q : arith::MulIOp::create(p, l, q, arith::ConstantIndexOp::create(p, l, width)).getResult();
      for (int64_t e = 0; e < width; ++e)
        as.push_back(g.loadA(p, l, m, e ? arith::AddIOp::create(p, l, d, arith::ConstantIndexOp::create(p, l, e)).getResult() : d));
      llvm::append_range(ws, loadRun(p, l, d));
    };
    // acc plus each a times its w (widened), in order.
    auto addProducts = [&](OpBuilder &p, Location l, Value acc, ArrayRef<Value> as, ArrayRef<Value> ws) {
      for (auto [a, w] : llvm::zip_equal(as, ws))
        acc = arith::AddFOp::create(p, l, acc, arith::MulFOp::create(p, l, a, lowering::widenToF32(p, l, w)));
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
          SmallVector<Value> as, ws;
          for (int64_t u = 0; u < unroll; ++u)
            unitLoads(p, l, u ? arith::AddIOp::create(p, l, q0, arith::ConstantIndexOp::create(p, l, u * stride)).getResult() : q0,
                      as, ws);
          scf::YieldOp::create(p, l, addProducts(p, l, acc[0], as, ws));
        });
    auto tail = scf::ForOp::create(t, loc, unrolledEnd, units, ci(stride), groups.getResults(),
                                   [&](OpBuilder &p, Location l, Value q, ValueRange acc) {
                                     SmallVector<Value> as, ws;
                                     unitLoads(p, l, q, as, ws);
                                     scf::YieldOp::create(p, l, addProducts(p, l, acc[0], as, ws));
                                   });
    return tail.getResult(0);
  };
  Value laneTotal;
  if (g.pairedWeight) {
    // Pairs when the weight's base is 4-byte aligned (every buffer the
    // runtime allocates is; the check costs one branch a warp).
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(t, loc, g.pairedWeight);
    Value aligned = arith::CmpIOp::create(
        t, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(t, loc, base, arith::ConstantIndexOp::create(t, loc, 4)),
        arith::ConstantIndexOp::create(t, loc, 0));
    auto choose = scf::IfOp::create(t, loc, TypeRange{t.getF32Type()}, aligned, /*withElse=*/true);
    OpBuilder pairs = choose.getThenBodyBuilder(), singles = choose.getElseBodyBuilder();
    scf::YieldOp::create(pairs, loc, laneSum(pairs, 2));
    scf::YieldOp::create(singles, loc, laneSum(singles, 1));
    laneTotal = choose.getResult(0);
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

scf::IfOp buildProductKernels(OpBuilder &b, Location loc, const Product &p, int64_t minRows, bool warpBelow) {
  // The grids first: the branches use them.
  Value gridX = ceilDiv(b, loc, p.N, kTile), gridY = ceilDiv(b, loc, p.M, kTile);
  Value tiled = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, p.M,
                                      arith::ConstantIndexOp::create(b, loc, minRows));
  auto choice = scf::IfOp::create(b, loc, TypeRange{}, tiled, /*withElse=*/true);
  OpBuilder t = choice.getThenBodyBuilder();
  TiledGemm g;
  g.gridX = gridX;
  g.gridY = gridY;
  g.gridZ = p.gridZ;
  g.N = p.N;
  g.K = p.K;
  g.prologue = p.prologue;
  g.rows = tileRowsUpTo(p.M);
  g.loadA = p.loadA;
  g.loadW = p.loadW;
  g.store = p.store;
  g.math = p.math;
  buildTiledGemm(t, loc, g);
  if (!warpBelow)
    return choice;
  OpBuilder e = OpBuilder::atBlockBegin(choice.elseBlock());
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
  if (p.weightIndices)
    w.weightIndices = [indices = p.weightIndices](OpBuilder &o, Location l, Value, Value col, Value d) {
      return indices(o, l, col, d);
    };
  buildWarpGemv(e, loc, w);
  return choice;
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
