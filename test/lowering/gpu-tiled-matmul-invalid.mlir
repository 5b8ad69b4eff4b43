// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="math=fp16" -verify-diagnostics
// RUN: not dsf-opt %s --dsf-gpu-grouped-experts="math=bf16" 2>&1 | FileCheck --check-prefix=EXPERTS %s
// RUN: not dsf-opt %s --dsf-gpu-batched-contraction="math=int8" 2>&1 | FileCheck --check-prefix=CONTRACTION %s

// The tiled kernels' arithmetic is f32, tf32 or 3xtf32; anything else is an
// error naming the pass and the value.
// expected-error @below {{dsf-gpu-tiled-matmul: unknown math 'fp16' (f32, tf32 or 3xtf32)}}
module {
}
// EXPERTS: error: dsf-gpu-grouped-experts: unknown math 'bf16' (f32, tf32 or 3xtf32)
// CONTRACTION: error: dsf-gpu-batched-contraction: unknown math 'int8' (f32, tf32 or 3xtf32)
