//===- CudaPipeline.cpp - the CUDA (sm_90a) lowering pipeline ---------------===//
//
// The first CUDA path: the same linalg as the CPU's, bufferized the same
// way, then every linalg.generic becomes one kernel — its parallel loops
// split into blocks of 128 threads, given to the innermost (contiguous)
// dimension first (dsf-tile-parallel-loops), reductions as loops inside a
// thread —
// outlined into gpu.modules, lowered to NVVM and compiled for sm_90a by
// LLVM's NVPTX backend (PTX) and ptxas (the CUDA toolkit's, which also
// checks every kernel). The host code launches them through the mgpu* C
// interface the runtime implements over libcuda, and allocates through
// _mlir_memref_to_llvm_alloc, which the runtime maps to device memory from a
// caching pool; the host code never dereferences those buffers
// (dsf-place-buffers checks it), so launches are queued on one stream with
// no synchronization between them. It is the numbers path on the GPU: fp32,
// one kernel per op; fused bf16 tensor-core kernels come next (issue 5).
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

LogicalResult mlir::dsf::buildCudaPipelineFromLinalg(OpPassManager &pm, const CudaPipelineOptions &options) {
  if (failed(buildBufferization(pm)))
    return failure();
  // The toolkit also gives libdevice (math functions as __nv_*), linked in
  // either way.
  std::string invariant = options.batchInvariant ? "true" : "false";
  std::string binary = std::string(options.emitPtx ? "isa" : "bin") + " toolkit=" + options.toolkit;
  // Copies become kernels like the rest (dsf-copies-to-linalg), projections
  // of 16 rows or more shared-memory tiled kernels (dsf-gpu-tiled-matmul),
  // the routed experts the same kernel over rows grouped by expert
  // (dsf-gpu-grouped-experts), order-free reductions (the top-k's counts, row
  // maxima) a block of threads per output (dsf-gpu-block-reduce),
  // each mHC site one pass over the streams and a thread per token
  // (dsf-gpu-fuse-mhc: the Sinkhorn helpers it no longer calls go with
  // symbol-dce), each top-k selection one kernel, a block per token
  // (dsf-gpu-select-topk), each MoE router one kernel, a block per token
  // (dsf-gpu-route-experts), each sink attention over the band and the
  // selected entries one kernel, a block per (token, head), or from
  // --attention-mma-min-tokens tokens (a prefill's; by default in bf16
  // builds) a tensor-core kernel, a block per (token, group of heads), and
  // so a batched step's from --attention-mma-min-batch sequences, its
  // columns split across blocks when the call has fewer blocks than
  // --attention-split-below-blocks (dsf-gpu-sink-attention), the Sinkhorn rounds of other helpers one kernel
  // (dsf-gpu-fuse-sinkhorn), constants and index computations sunk into each
  // launch before it is outlined (gpu-launch-sink-index-computations:
  // canonicalize hoists them to the host function, and the outlined kernels
  // then took them as parameters — depth offsets, shuffle offsets — which
  // cost registers and address arithmetic: the tiny V4.1's decode warp
  // kernels 40-64 -> 18-31 registers in ptxas), and once the kernels are
  // outlined each workgroup buffer gets the alignment its vector accesses
  // claim (dsf-align-workgroup-buffers: the tiled kernel's 16-byte shared
  // loads), dsf-place-buffers moves the host's own scratch to the stack and
  // proves the host code dereferences no device buffer: the runtime then
  // queues the kernels without synchronizing between them. The tiled
  // kernels' and the attention's cp.async copies (nvgpu) become NVVM inside each gpu.module.
  // Once merged, every kernel begins by waiting for the grid before it
  // (dsf-gpu-grid-dependency-control), so the runtime may launch it while
  // that grid's last blocks run.
  std::string cpAsync = options.tileCpAsync ? "true" : "false";
  std::string bf16Copies = options.tileBf16Copies ? "true" : "false";
  std::string text = "canonicalize,convert-bufferization-to-memref,dsf-copies-to-linalg,dsf-gpu-fuse-mhc,dsf-gpu-select-topk,dsf-gpu-route-experts,dsf-gpu-sink-attention{batch-invariant=" + invariant +
                     " mma-min-tokens=" + std::to_string(options.attentionMmaMinTokens) +
                     " mma-min-batch=" + std::to_string(options.attentionMmaMinBatch) +
                     " split-below-blocks=" + std::to_string(options.attentionSplitBelowBlocks) + "},symbol-dce,dsf-gpu-fuse-sinkhorn,"
                     "dsf-gpu-grouped-experts{batch-invariant=" + invariant + " math=" + options.tileMath + " cp-async=" + cpAsync +
                     " bf16-copies=" + bf16Copies + " min-rows-per-expert=" + std::to_string(options.tileMinRowsPerExpert) +
                     " wide-min-rows-per-expert=" + std::to_string(options.tileWideMinRowsPerExpert) +
                     "},dsf-gpu-tiled-matmul{batch-invariant=" + invariant + " math=" + options.tileMath + " cp-async=" + cpAsync +
                     " bf16-copies=" + bf16Copies + " min-blocks=" + std::to_string(options.tileMinBlocks) +
                     " split-min-rows=" + std::to_string(options.tileSplitMinRows) + "},dsf-gpu-batched-contraction{math=" + options.tileMath + "},dsf-gpu-block-reduce{min-sum-points=" +
                     std::string(options.batchInvariant ? "1024" : "256") + "},"
                     "convert-linalg-to-parallel-loops,"
                     "dsf-tile-parallel-loops{threads=128},"
                     "func.func(gpu-map-parallel-loops{mapping-policy=innermost-first}),convert-parallel-loops-to-gpu,dsf-sink-globals-into-kernels,gpu-launch-sink-index-computations,"
                     "gpu-kernel-outlining,dsf-name-kernels,dsf-align-workgroup-buffers,dsf-place-buffers,dsf-merge-kernel-modules," + std::string(options.programmaticLaunch ? std::string("dsf-gpu-grid-dependency-control{launch-dependents-at-entry=") + (options.launchDependentsAtEntry ? "true" : "false") + "}," : "") + "convert-scf-to-cf,"
                     "expand-strided-metadata,nvvm-attach-target{chip=" + options.chip +
                     " features=+ptx80 O=3},lower-affine,"
                     "gpu.module(convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),"
                     "finalize-memref-to-llvm{use-generic-functions=true},convert-math-to-llvm,"
                     "convert-math-to-libm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
                     "gpu-to-llvm,convert-func-to-llvm,gpu-module-to-binary{format=" + binary +
                     "},canonicalize,cse,reconcile-unrealized-casts";
  return parsePassPipeline(text, pm);
}
