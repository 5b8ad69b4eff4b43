//===- TiledKernels.h - the GEMM kernels that CUDA passes build -----------===//
//
// The kernel builders shared by the CUDA passes (dsf-gpu-tiled-matmul,
// dsf-gpu-grouped-experts, dsf-gpu-batched-contraction): what a kernel
// reads and writes comes as callbacks that build IR inside it, so one tiling
// serves a plain C += A W^T, an expert's rows gathered through a permutation
// and a token's gathered cache rows. Also the helpers that evaluate a
// generic's body inside a kernel (dsf-gpu-block-reduce,
// dsf-gpu-batched-contraction).
//
//===----------------------------------------------------------------------===//
#ifndef DSF_LOWERING_CUDA_TILEDKERNELS_H
#define DSF_LOWERING_CUDA_TILEDKERNELS_H

#include "lowering/ScalarMath.h"   // widenToF32, isWidenableFloat: a weight stored narrower

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <functional>
#include <optional>
#include <tuple>

namespace mlir::dsf {

/// ceil(x / by) of an index value.
Value ceilDiv(OpBuilder &b, Location loc, Value x, int64_t by);

/// At a block's start, from blockIdx.y: whether the block has work (a null
/// Value: always), its first row and the end of its rows (a block whose
/// first row is not before the end has none either).
using TileRows = std::function<std::tuple<Value, Value, Value>(OpBuilder &, Location, Value blockY)>;
/// Block y's rows are [tileRows y, M): every row once, no expert grouping.
TileRows tileRowsUpTo(Value M, int64_t tileRows);

/// How the tiled kernel multiplies: f32 FMAs on the SIMT cores (each
/// output's products added in the order of d), or the tensor cores'
/// mma.sync m16n8k8 on tf32 operands (f32 accumulation): `Tf32` rounds each
/// operand to tf32 (10 mantissa bits; a relative error around 1e-3 on long
/// sums), `Tf32x3` splits each into a tf32 high and a tf32 low part and adds
/// the three products that matter (hi*hi + hi*lo + lo*hi), about f32's
/// accuracy at a third of the tensor-core rate. `Bf16` rounds each operand
/// to bf16 as it is staged (8 mantissa bits: exact for a weight declared
/// bf16, a relative error around 4e-3 on an activation) and multiplies with
/// mma.sync m16n8k16 (f32 accumulation): twice the depth a tensor-core
/// instruction of tf32 and half its shared-memory bytes.
enum class TileMath { F32, Tf32, Tf32x3, Bf16 };
/// Whether `op` is device code already (in a kernel module or a launch's
/// body): the CUDA passes rewrite only the host's generics.
bool insideKernel(Operation *op);

/// For the passes that rebuild a dsf-to-linalg helper's body as kernels
/// (dsf-gpu-fuse-mhc, -select-topk, -route-experts, -fuse-sinkhorn): erases
/// every op of `body`, its terminator included; the arguments stay the
/// callers'.
void clearBody(Block &body);
/// Whether `type` is an identity-layout memref of `shape` (kDynamic where
/// dynamic) and `element`: a bufferized helper argument or result.
bool isIdentityBuffer(Type type, ArrayRef<int64_t> shape, Type element);

/// The buffer a view is of (through subviews, casts, reshapes).
Value viewRoot(Value v);

/// Whether `op` touches no memory but to allocate: free of memory effects,
/// or without regions and with allocations as its only effects. A kernel
/// built in place of a generic may absorb the fill before it or the generic
/// after it across such ops alone: each still finds every buffer as before.
bool onlyAllocates(Operation *op);

/// The linalg.fill of `buffer` when it is the last op before `g` with a
/// memory effect other than an allocation (so that `g` finds `buffer` as
/// the fill left it) and no input of `g` is (a view of) `buffer`; else
/// null. A kernel that writes each of `g`'s outputs once, combined with
/// the fill's value, can then write its result alone when that value is the
/// combination's identity, and the fill (a kernel of its own) can go.
linalg::FillOp fillBefore(linalg::GenericOp g, Value buffer);

/// The elementwise generic that a kernel built in place of `producer`,
/// which writes `output`, can compute as it goes; else null. It is the
/// next op after `producer` with a memory effect other than an allocation
/// (the kernel then moves down to it and changes nothing between), on
/// buffers, all parallel, of one output with an identity map that is
/// neither (a view of) `output` nor of `producer`'s inputs (the kernel's
/// other threads may still read those), its body not reading its own
/// output; and it reads `output`, exactly that value, only through the map
/// (d0 .. dn-1) -> (d0 .. d(leading-1)): each of its points reads the one
/// element of `output` at its first `leading` indices, which the kernel
/// computes that point after writing (a block-reduced norm's row sum, a
/// product's element).
linalg::GenericOp elementwiseConsumer(linalg::GenericOp producer, Value output, unsigned leading);

/// Point `at` of `consumer` (an elementwiseConsumer) inside a kernel: its
/// inputs loaded at `at`, but the one reading `output` taken as `value`
/// when that is given (the kernel's own register), its body cloned, the
/// result stored at `at`.
void computeConsumerAt(OpBuilder &b, Location loc, linalg::GenericOp consumer, ArrayRef<Value> at, Value output,
                       Value value);

/// `v` combined over the 32 lanes of a warp, every lane getting the result:
/// xor shuffles at offsets 16, 8, 4, 2, 1, each step combine(mine, theirs).
/// The same tree for every call, so an order-dependent combination (a float
/// sum) is still one order for any launch shape.
Value warpAllReduce(OpBuilder &b, Location loc, Value v, function_ref<Value(OpBuilder &, Value, Value)> combine);

/// "f32", "tf32", "3xtf32", "bf16".
std::optional<TileMath> parseTileMath(llvm::StringRef name);
/// A pass's `math` option, or an error on `op` naming the pass and the value.
FailureOr<TileMath> tileMathOption(Operation *op, llvm::StringRef pass, llvm::StringRef value);

/// The rows and columns of C a block of the tiled kernel computes.
struct GemmTile {
  int64_t rows, cols;
};
/// For N columns: on the SIMT cores 128 x 128 (8 x 8 outputs a thread: 16
/// shared-memory floats read per 64 products), or 64 x 64 below 2,048 static
/// columns, where wider tiles would leave SMs idle; with bf16 operands the
/// same (a warp per 64 x 32 of a 128 x 128 tile: 16 mma.sync a slice for
/// 12 fragment words of shared memory); with tf32 ones 64 x 64.
GemmTile gemmTile(TileMath math, Value N);

/// An operand whose rows the tiled kernel may copy by cp.async (see
/// TiledGemm::stagedA): its buffer (a host value, asyncStageable) and, at
/// the kernel's start, for a row (of A) or a column (of W) known to be in
/// range, the indices before the depth: depth d of the row is at
/// buffer[prefix..., d].
struct StagedRows {
  Value buffer;
  std::function<SmallVector<Value>(OpBuilder &, Location, Value row)> prefix;
};
/// Whether `buffer`'s rows can be copied into the tiled kernel 16 bytes at a
/// time by cp.async: an identity-layout memref of f32 or bf16 whose last
/// (depth) dimension is static and a multiple of 8, so that every 8th depth
/// of every row is 16-byte aligned once the buffer's base is. Its base is
/// then an allocation's (an identity layout has no offset; dsf's lowering
/// makes no memref.view), and the runtime's device blocks are 256-byte
/// aligned.
bool asyncStageable(Value buffer);

/// A weight bound packed (weight-storage=released) whose rows of codes the
/// tiled kernel may copy by cp.async: `codes` an identity-layout i8 buffer
/// (codesStageable), depth d of column `col` in byte
/// codes[prefix(col)..., d / (fp8 ? 1 : 2)] (E2M1: two depths a byte, low
/// nibble first); `scale(col, d0)` the f32 scale of column col's depths
/// [d0, d0 + 32), which lie in one block of scales (the caller makes sure:
/// d0 is a multiple of 32, and so are the scales' blocks along the depth).
/// The pipeline copies a stage's codes as they are stored (a quarter or an
/// eighth of bf16's bytes), then each block decodes them once, eight depths
/// a thread (decodePackedWord), into a bf16 stage that the mma fragments
/// read as they read a bf16 weight: every weight is exact in bf16 (E4M3 or
/// E2M1 times a power of two), so the sums are a declared bf16 weight's,
/// bit for bit.
struct StagedCodes {
  Value codes;
  std::function<SmallVector<Value>(OpBuilder &, Location, Value col)> prefix;
  bool fp8 = true;
  std::function<Value(OpBuilder &, Location, Value col, Value d0)> scale;
};
/// Whether `codes` can be staged as StagedCodes: an identity-layout i8
/// memref whose last dimension (the bytes of a row) is static and a
/// multiple of 16, so that every 16-byte copy of a row is aligned once the
/// base is and lies wholly within or past the row's depths.
bool codesStageable(Value codes);

/// Whether tiles of `math` staging `a` by cp.async stage it from a bf16
/// copy (bf16CopyOf) when asked: bf16 math over an f32 A.
bool bf16CopyApplies(TileMath math, Value a);

/// A bf16 copy of the f32 buffer `buffer` (an identity layout), each element
/// rounded to nearest even by a kernel of a thread an element; for the
/// caller to stage in place of `buffer` (the same prefix) and deallocate
/// once the tiles that read it are queued. The bf16 tiles round every A
/// element they read the same way (stagedPair): the products stay the same
/// bit for bit, and each of a product's column tiles then reads half the
/// bytes of A and stages them in half the shared memory.
Value bf16CopyOf(OpBuilder &b, Location loc, Value buffer);

/// C[r, col] <- sum over d < K of A[r, d] * W[col, d], as tiles of C (blocks
/// of 256 threads, 16-deep slices staged in shared memory, each slice's
/// global loads issued while the one before is multiplied; on the SIMT cores
/// each output's products added in the order of d, whatever the tile; on
/// the tensor cores a warp per 16 x 32 of a 64 x 64 tile, or per 64 x 32
/// of a 128 x 128 one).
struct TiledGemm {
  Value gridX, gridY;  // host values: blocks along the columns and the rows
  Value gridZ;         // host value: independent products (null: one)
  /// At the kernel's start, with blockIdx.z (a batch index, for the
  /// callbacks to capture); may be empty.
  std::function<void(OpBuilder &, Location, Value blockZ)> prologue;
  Value N, K;          // host values: columns, reduction depth
  GemmTile tile{64, 64};   // gemmTile: the grids above count these
  TileRows rows;
  std::function<Value(OpBuilder &, Location, Value r, Value d)> loadA;    // r < row end, d < K
  /// col < N, d < K: the element as stored (f32 or narrower; extended
  /// before it is staged).
  std::function<Value(OpBuilder &, Location, Value col, Value d)> loadW;
  std::function<void(OpBuilder &, Location, Value r, Value col, Value sum)> store;
  TileMath math = TileMath::F32;
  /// With bf16 math and both buffers set (asyncStageable, of K depths:
  /// loadA and loadW must read the same elements), the slices are not staged through registers: each thread
  /// issues cp.async copies of 16 bytes straight into a ring of three
  /// 32-deep stages in dynamic shared memory, two stages in flight while one
  /// is multiplied, one barrier a stage; the mma fragments are read from
  /// the rows as stored (f32 rounded to bf16 as it is read). The same mma
  /// sequence as the register-staged kernel: the same sums, bit for bit.
  StagedRows stagedA, stagedW;
  /// In place of stagedW, a weight's packed codes (see StagedCodes): the
  /// same pipeline, the codes decoded in shared memory once a stage.
  StagedCodes stagedCodesW;
  /// Split depth (staged rows only): block y computes part y mod depthParts
  /// of the depth of the tile at y div depthParts (gridY counts both),
  /// depths [part partDepth, min(K, (part + 1) partDepth)), partDepth a
  /// multiple of the 32-deep stage; each output's partial sum goes to
  /// storePart instead of store. A product of few rows and few tiles then
  /// fills the GPU (buildProductKernels adds the parts).
  int64_t depthParts = 1, partDepth = 0;
  std::function<void(OpBuilder &, Location, Value part, Value r, Value col, Value sum)> storePart;
};
void buildTiledGemm(OpBuilder &b, Location loc, const TiledGemm &g);

/// A load of packed codes, decoded: `values` the codes' f32 values in
/// units of `unit` (exact), all in one block of `scale` (f32): weight i is
/// values[i] x unit x scale. The warp kernel adds a run's products first
/// and scales their sum once (two multiplies a load, not one a code).
struct PackedRun {
  SmallVector<Value> values;
  Value scale;
  double unit = 1.0;
};

/// A weight bound packed (dsf-to-linalg's weight-storage=released) that a
/// warp kernel's lane reads `depths` depths at a time, one load of `bytes`
/// bytes of codes: `codes` its buffer of codes (the kernel checks its base's
/// alignment to `bytes`, and reads one depth a load through loadW when it
/// fails), and `load(r, col, d)` the run of depths d .. d + depths - 1 (d a
/// multiple of `depths`, the run within one block of scales) decoded from
/// that load (decodePackedWord). MXFP4: 8 depths a 32-bit load; FP8: 8 a
/// 64-bit one.
/// Null codes: not packed.
struct PackedWords {
  Value codes;
  int64_t depths = 0;
  int64_t bytes = 4;   // a load's bytes of codes: the base's alignment the kernel checks
  std::function<PackedRun(OpBuilder &, Location, Value r, Value col, Value d)> load;
  /// The f32 activations' buffer, when activationsReadable: a lane reads a
  /// load's activations 16 bytes at a time (A[r, d .. d + 3] at
  /// activationIndices(r, d)), where their base is 16-byte aligned. Null:
  /// loadA, a depth a load.
  Value activations;
  std::function<SmallVector<Value>(OpBuilder &, Location, Value r, Value d)> activationIndices;
};
/// Whether a buffer of activations can be read 16 bytes a load wherever its
/// base is 16-byte aligned: f32, depth innermost and contiguous, its offset
/// and every other stride a multiple of 4 elements (known at compile time).
bool activationsReadable(Value activations);
/// The run of a load of codes (`word` a vector<Nxi8>, N a multiple of 4)
/// under `scale` (f32). E4M3: one a byte, two an instruction by the
/// hardware's conversion to f16x2 (cvt.rn.f16x2.e4m3x2, sm_89+: exact, every
/// E4M3 value is an f16); unit 1. E2M1: two a byte (low nibble first), a
/// byte's two moved by bit operations into an f16x2's exponent and mantissa
/// (E2M1's exponent bits the low two of f16's, its mantissa bit f16's top
/// one; sign to sign): every E2M1 value v is then the f16 v x 2^-14 exactly,
/// 0.5 the subnormal 2^-15; unit 2^14. Hopper has no FP4 conversion.
PackedRun decodePackedWord(OpBuilder &b, Location loc, Value word, Value scale, bool fp8);

/// Few rows: `split` warps per output (r < M, col < N), their lanes 32 apart
/// along d (part p of the split from 32 p, 32 split apart), `unroll` depths
/// an iteration with their loads issued together (then the lane's last ones
/// singly; the same order of sums), partial sums added with xor shuffles;
/// lane 0 stores, or with a split writes its part to shared memory and the
/// output's first warp adds the parts in order and stores.
struct WarpGemv {
  Value M, N, K;  // host values
  Value gridZ;    // host value: independent products (null: one)
  std::function<void(OpBuilder &, Location, Value blockZ)> prologue;
  std::function<Value(OpBuilder &, Location, Value r, Value d)> loadA;
  /// The element as stored (f32 or narrower): extended to f32 only after
  /// every load of an iteration is issued, so that none waits for another.
  std::function<Value(OpBuilder &, Location, Value r, Value col, Value d)> loadW;
  std::function<void(OpBuilder &, Location, Value r, Value col, Value sum)> store;
  int64_t split = 1;  // 1, 2, 4 or 8 warps per output
  int64_t unroll = 4; // depths a lane loads together (warpGemvUnroll)
  /// A weight whose depths a lane may read two at a time, one 32-bit load
  /// each (pairableWeight), with its indices at (r, col, d); null: one depth
  /// a load. Lane l then takes the depth pairs l, l + 32, ... (the same
  /// bytes in flight: unroll / 2 pairs an iteration). The kernel checks the
  /// base's 4-byte alignment and reads one depth a load when it fails.
  Value pairedWeight;
  std::function<SmallVector<Value>(OpBuilder &, Location, Value r, Value col, Value d)> weightIndices;
  /// A weight bound packed: lane l reads the words of depths w l, w (l +
  /// 32), ... (w = packed.depths), unroll / w words an iteration.
  PackedWords packed;
};
/// `W` when a warp kernel can read two of its elements with one 32-bit
/// load: 16-bit elements, rows contiguous and of an even static length
/// (an identity layout, so that every even depth of a row is 4-byte aligned
/// once the base is); else null. On the H200 the same kernel by hand reads
/// bf16 weights at 3.5-4.4 TB/s in pairs against 3.1-3.8 one at a time
/// (bench/results/gpu-gemv-variants.md).
Value pairableWeight(Value W);
/// Depths a lane of the warp kernel loads together for a weight of
/// `element`: 4 for f32, more for narrower elements, so that a warp keeps
/// the same bytes of the weight in flight (bf16: 8).
int64_t warpGemvUnroll(Type element);
/// The split for a product of N outputs of depth K, batched gridZ times (null:
/// once), when all are static (constants or static memref.dim; else 1):
/// doubled up to 8 while the warps stay within one wave of the GPU (some
/// 8,192) and each lane keeps 8 or more depths. The decode projections with
/// few outputs (wq_a's 1,280, wkv's 512, a gate's experts) otherwise leave
/// most of the GPU idle while a warp walks a whole row.
int64_t warpGemvSplit(Value N, Value K, Value gridZ);
void buildWarpGemv(OpBuilder &b, Location loc, const WarpGemv &g);

/// A product whose W does not depend on the row: rows r < M, columns
/// col < N, depth K, optionally batched on blockIdx.z.
struct Product {
  Value M, N, K, gridZ;  // host values (gridZ null: one)
  std::function<void(OpBuilder &, Location, Value blockZ)> prologue;
  std::function<Value(OpBuilder &, Location, Value r, Value d)> loadA;
  std::function<Value(OpBuilder &, Location, Value col, Value d)> loadW;   // as stored (see WarpGemv)
  std::function<void(OpBuilder &, Location, Value r, Value col, Value sum)> store;
  TileMath math = TileMath::F32;   // of the tiled kernel
  StagedRows stagedA, stagedW;     // of the tiled kernel (see TiledGemm)
  StagedCodes stagedCodesW;        // of the tiled kernel, in place of stagedW
  /// With bf16 math and an f32 stagedA: the tiled and split-depth kernels
  /// stage A from a bf16 copy (bf16CopyOf) made in their branch.
  bool bf16CopyOfA = false;
  int64_t warpUnroll = 4;          // of the warp kernel (warpGemvUnroll)
  /// Of the warp kernel (see WarpGemv): W when pairableWeight, and its
  /// indices at (col, d).
  Value pairedWeight;
  std::function<SmallVector<Value>(OpBuilder &, Location, Value col, Value d)> weightIndices;
  /// Of the warp kernel: a weight bound packed (see WarpGemv; its load's r
  /// is the row, which a product's W does not depend on).
  PackedWords packed;
};
/// Rows from which a product takes the tiled kernel however few its blocks:
/// a full tile of rows. By the H200's batch of 64 (bench/results/
/// gpu-batch-kernels.md), the warp kernel's time grows with the rows (wo_b:
/// 4.2 ms at 64 rows, its reads at 6.4 TB/s from L2) while a single wave of
/// tiles takes the same time from 1 to 128 rows (7.9 ms): they meet near
/// 128.
constexpr int64_t kWarpRowsAtMost = 128;
/// Blocks a split-depth product aims for: two waves of the H200's 132 SMs
/// (a 64 x 64 bf16 tile's block takes 256 threads and some 37 KB of shared
/// memory: two or more fit an SM).
constexpr int64_t kSplitTargetBlocks = 264;
/// The shallowest part of a split depth: 8 of the cp.async ring's 32-deep
/// stages, so that a block's pipeline still fills before it drains.
constexpr int64_t kMinPartDepth = 256;
/// How a product of N columns, depth K, batched gridZ times, splits its
/// depth on 64 x 64 tiles: {parts, part depth}, the parts as few as give
/// kSplitTargetBlocks blocks with one row of tiles and no part shallower
/// than kMinPartDepth; nullopt when that is one part (enough tiles, or a
/// shallow depth) or N, K (or gridZ) are dynamic.
std::optional<std::pair<int64_t, int64_t>> depthSplit(Value N, Value K, Value gridZ);

/// Which kernels buildProductKernels may choose.
struct ProductChoice {
  int64_t minRows = 16;   // rows from which the tiled kernel runs
  int64_t minBlocks = 0;  // below kWarpRowsAtMost rows, tiles it needs (<= 1: any)
  /// Rows from which a product that the tiled kernel does not take (too few
  /// tiles, or rows below minRows) and that has fewer than kWarpRowsAtMost
  /// runs as 64 x 64 bf16 tiles with its depth split (depthSplit), the parts
  /// added in order by a second kernel; 0: never. Only with bf16 math and
  /// both operands staged (Product::stagedA), N and K static.
  int64_t splitMinRows = 0;
  /// Below those, a warp per output; false: the else branch is left empty
  /// for the caller.
  bool warpBelow = true;
};
/// An scf.if on M >= minRows and, when minBlocks > 1, the tiled kernel
/// having minBlocks blocks or more (or M >= kWarpRowsAtMost): the tiled
/// kernel; else (see ProductChoice) the split-depth tiles or a warp per
/// output.
scf::IfOp buildProductKernels(OpBuilder &b, Location loc, const Product &p, const ProductChoice &choice);

/// The extents of a generic's loops, as index values.
SmallVector<Value> loopExtents(OpBuilder &b, Location loc, linalg::GenericOp g);
/// Maps each used body argument of g's inputs (but `skip`) to its value at
/// iteration point `at`: loaded through the input's indexing map, or the
/// scalar itself.
void mapInputsAt(OpBuilder &b, Location loc, linalg::GenericOp g, ArrayRef<Value> at, IRMapping &m,
                 OpOperand *skip = nullptr);
/// Clones `ops` of a generic's body in order, linalg.index d becoming at[d].
void cloneAt(OpBuilder &b, ArrayRef<Operation *> ops, ArrayRef<Value> at, IRMapping &m);

} // namespace mlir::dsf

#endif // DSF_LOWERING_CUDA_TILEDKERNELS_H
