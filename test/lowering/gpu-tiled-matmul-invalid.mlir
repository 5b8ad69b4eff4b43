// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="math=fp16" -verify-diagnostics
// RUN: not dsf-opt %s --dsf-gpu-grouped-experts="math=fp8" 2>&1 | FileCheck --check-prefix=EXPERTS %s
// RUN: not dsf-opt %s --dsf-gpu-batched-contraction="math=int8" 2>&1 | FileCheck --check-prefix=CONTRACTION %s
// RUN: not dsf-opt %s --dsf-gpu-tiled-matmul="min-blocks=-2" 2>&1 | FileCheck --check-prefix=BLOCKS %s
// RUN: not dsf-opt %s --dsf-gpu-tiled-matmul="split-min-rows=-5" 2>&1 | FileCheck --check-prefix=SPLIT %s
// RUN: not dsf-opt %s --dsf-gpu-grouped-experts="min-rows-per-expert=-1" 2>&1 | FileCheck --check-prefix=SPREAD %s
// RUN: not dsf-opt %s --dsf-gpu-grouped-experts="wide-min-rows-per-expert=-7" 2>&1 | FileCheck --check-prefix=WIDE %s
// RUN: not dsf-opt %s --dsf-gpu-sink-attention="mma-min-tokens=-1" 2>&1 | FileCheck --check-prefix=MMAMIN %s
// RUN: not dsf-opt %s --dsf-gpu-sink-attention="mma-min-batch=-3" 2>&1 | FileCheck --check-prefix=MMABATCH %s
// RUN: not dsf-opt %s --dsf-gpu-sink-attention="split-below-blocks=-132" 2>&1 | FileCheck --check-prefix=SPLITBLOCKS %s

// The tiled kernels' arithmetic is f32, tf32, 3xtf32 or bf16; anything else is an
// error naming the pass and the value.
// expected-error @below {{dsf-gpu-tiled-matmul: unknown math 'fp16' (f32, tf32, 3xtf32 or bf16)}}
module {
}
// EXPERTS: error: dsf-gpu-grouped-experts: unknown math 'fp8' (f32, tf32, 3xtf32 or bf16)
// CONTRACTION: error: dsf-gpu-batched-contraction: unknown math 'int8' (f32, tf32, 3xtf32 or bf16)
// The thresholds are counts: a negative one is an error naming the pass and
// the value (unsigned comparisons would silently never take the tiles).
// BLOCKS: error: dsf-gpu-tiled-matmul: min-blocks must be a count of tiles >= 0, not -2
// SPLIT: error: dsf-gpu-tiled-matmul: split-min-rows must be a count of rows >= 0, not -5
// SPREAD: error: dsf-gpu-grouped-experts: min-rows-per-expert must be a count of rows >= 0, not -1
// WIDE: error: dsf-gpu-grouped-experts: wide-min-rows-per-expert must be a count of rows >= 0, not -7
// The tensor-core attention's threshold is a count of tokens (0: never); a
// negative one is an error naming the pass and the value.
// MMAMIN: error: dsf-gpu-sink-attention: mma-min-tokens must be a count of tokens >= 0 (0: never), not -1
// MMABATCH: error: dsf-gpu-sink-attention: mma-min-batch must be a count of sequences >= 0 (0: never), not -3
// SPLITBLOCKS: error: dsf-gpu-sink-attention: split-below-blocks must be a count of blocks >= 0 (0: never), not -132
