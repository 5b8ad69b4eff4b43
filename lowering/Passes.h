//===- Passes.h - passes that leave the dsf dialect ------------------------===//
#ifndef DSF_LOWERING_PASSES_H
#define DSF_LOWERING_PASSES_H

#include "dialect/DsfDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dsf {
/// The defaults of the CUDA kernel choices that dsf-compile exposes as
/// flags: the passes' options (Passes.td), CudaPipelineOptions and
/// dsf-compile's flags all take them from here.
/// dsf-gpu-tiled-matmul min-blocks (--tile-min-blocks): half the H200's SMs.
constexpr int64_t kDefaultTileMinBlocks = 66;
/// dsf-gpu-tiled-matmul split-min-rows (--tile-split-min-rows).
constexpr int64_t kDefaultTileSplitMinRows = 8;
/// dsf-gpu-grouped-experts min-rows-per-expert (--tile-min-rows-per-expert)
/// for f32-family tiles; bf16 builds take 0 (dsf-compile).
constexpr int64_t kDefaultTileMinRowsPerExpert = 32;
/// dsf-gpu-grouped-experts wide-min-rows-per-expert
/// (--tile-wide-min-rows-per-expert).
constexpr int64_t kDefaultTileWideMinRowsPerExpert = 512;
/// dsf-gpu-sink-attention split-below-blocks as dsf-compile passes it
/// (--attention-split-below-blocks; the pass's own default is 0): a batched
/// step of 1-15 sequences splits its 640 columns (10 parts at 1, 2 at 8).
/// On an H100 (2026-12-06/07, bench/results/gpu-fused-consumers.md) a step
/// of one sequence went x1.07 faster at 5 layers; at 132 (3 parts at batch
/// 64) the parts and their merge cost more than the idle SMs gave.
constexpr int64_t kDefaultAttentionSplitBelowBlocks = 16;

/// dsf-to-linalg's weight-storage=released binds an MXFP4 expert weight
/// NAME [E, out, in] as the checkpoint holds it: NAME, i8 [E, out, in / 2]
/// (two E2M1 codes a byte, low nibble first), and NAME.scale, i8
/// [E, out, in / 32] (a UE8M0 byte a block of 32 along the depth). The
/// manifest names both; the runtime hands the bytes over as they are.
/// An FP8 weight (E4M3 with UE8M0 2-D block scales) that only projections
/// (dsf.linear, dsf.ffn; dsf.grouped_linear when each group's rows are
/// whole blocks) read is bound the same way: NAME, i8 [out, in], and
/// NAME.scale, i8 [ceil(out / rows), ceil(in / cols)]; the product's
/// generic carries kPackedFp8Attr = [rows, cols].
constexpr int64_t kMxfp4Block = 32;
constexpr llvm::StringLiteral kPackedScaleSuffix = ".scale";
constexpr llvm::StringLiteral kPackedFp8Attr = "dsf.packed_fp8";

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

/// One-shot bufferization across function boundaries (identity layouts)
/// and ownership-based deallocation: what every target starts with after
/// dsf-to-linalg.
LogicalResult buildBufferization(OpPassManager &pm);

/// dsf-to-linalg, bufferization with deallocation, loops, LLVM: the host
/// (CPU) pipeline, registered as `dsf-lower-cpu`.
LogicalResult buildCpuPipeline(OpPassManager &pm);
/// The same without its first pass (dsf-to-linalg), for drivers that read
/// the linalg-level module (its entry points' dsf.weights) in between.
LogicalResult buildCpuPipelineFromLinalg(OpPassManager &pm);
void registerCpuPipeline();

struct CudaPipelineOptions {
  std::string chip = "sm_90a";
  std::string toolkit = "/usr/local/cuda";   // ptxas for the cubins
  bool emitPtx = false;                      // stop at PTX (--emit=ptx)
  bool batchInvariant = false;               // one summation order whatever the rows (--batch-invariant)
  std::string tileMath = "f32";              // the tiled kernels' arithmetic (--tile-math): f32, tf32, 3xtf32, bf16
  int64_t tileMinBlocks = kDefaultTileMinBlocks;              // dsf-gpu-tiled-matmul min-blocks
  int64_t tileMinRowsPerExpert = kDefaultTileMinRowsPerExpert; // dsf-gpu-grouped-experts min-rows-per-expert
  int64_t tileWideMinRowsPerExpert = kDefaultTileWideMinRowsPerExpert; // ... wide-min-rows-per-expert
  int64_t tileSplitMinRows = kDefaultTileSplitMinRows;        // dsf-gpu-tiled-matmul split-min-rows
  bool tileCpAsync = true;                   // bf16 tiles staged by cp.async (--no-cp-async: through registers)
  bool tileBf16Copies = false;               // cp.async tiles stage an f32 A from a bf16 copy (--bf16-copies)
  bool programmaticLaunch = true;            // kernels wait at entry, launched early (dsf-gpu-grid-dependency-control)
  bool launchDependentsAtEntry = true;       // ... and let the next one be scheduled right after the wait
  int64_t attentionMmaMinTokens = 0;         // dsf-gpu-sink-attention mma-min-tokens (0: never)
  int64_t attentionMmaMinBatch = 0;          // dsf-gpu-sink-attention mma-min-batch (0: never)
  int64_t attentionSplitBelowBlocks = kDefaultAttentionSplitBelowBlocks; // ... split-below-blocks (0: never)
};
/// After dsf-to-linalg: bufferization, one kernel per linalg op (tiled
/// parallel loops on blocks x threads), NVVM, cubins for `chip` through
/// ptxas (or PTX), host code launching them through the mgpu* interface.
LogicalResult buildCudaPipelineFromLinalg(OpPassManager &pm, const CudaPipelineOptions &options);
} // namespace mlir::dsf

#endif // DSF_LOWERING_PASSES_H
