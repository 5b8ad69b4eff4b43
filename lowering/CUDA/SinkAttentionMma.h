//===- SinkAttentionMma.h - sink attention on the tensor cores ------------===//
//
// The kernel dsf-gpu-sink-attention builds for a prefill's tokens with
// mma-min-tokens >= 1 (dsf-compile's bf16 builds' default;
// bench/results/gpu-attention-mma.md): a block per (token, group of up to
// 64 heads), the group's
// queries against the token's columns (its window band, then its selected
// cache entries) on mma.sync m16n8k16 bf16, the softmax with the sink taken
// online over chunks of 64 columns (flash attention's rescaling). Every
// head of V4's and V4.1's attention reads the same rows (one KV head), so
// a block that holds all of a token's heads reads each row once where the
// SIMT kernel's block per (token, head) reads it once a head.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_LOWERING_CUDA_SINKATTENTIONMMA_H
#define DSF_LOWERING_CUDA_SINKATTENTIONMMA_H

#include "lowering/ScalarMath.h"

#include "mlir/IR/Builders.h"

namespace mlir::dsf {

/// A sink attention's shape and its bufferized operands (host values).
struct SinkAttentionMma {
  int64_t heads = 0, width = 0, window = 0, k = 0;
  FloatAttr scale;
  /// queries [tokens, heads, width] f32, window [rows, width] f32, with
  /// k > 0 cache [entries, width] f32 and selection [tokens, k] i32 (-1:
  /// none), sink [heads] f32; out [tokens, heads, width] f32 (allocated).
  Value queries, windowRows, cacheRows, selection, sink, out;
  /// Their dimensions, as the helper computed them (entries: with k > 0).
  Value tokens, rows, entries;
  /// A batched step's helper (dsf.slot_attention; `tokens` are its
  /// sequences, one query each): `windowRows` are the rings [tokens W,
  /// width] f32 (sequence t's at rows t W .., position p at row p mod W),
  /// `positions` [tokens] i32 their positions, and with k > 0 `cacheRows`
  /// the pages [pool rows, width] f32 or with `packed` their packed rows
  /// [pool rows, row bytes] i8, `pageTable` [tokens, pages] i32 (entry e of
  /// sequence t: row e mod pageEntries of page table[t, e div pageEntries]).
  bool slots = false;
  Value positions, pageTable;
  int64_t pageEntries = 0;
  std::optional<lowering::PackedCodes> packed;
  /// With > 0, a call whose blocks (tokens x head groups) are fewer splits
  /// its chunks of columns across up to ceil(splitBelowBlocks / blocks)
  /// blocks each (flash-decoding): each part's unnormalized output, maximum
  /// and sum, then a kernel that merges the parts in order. A decode's one
  /// query per sequence is otherwise one block per sequence on a GPU of
  /// 132 SMs. 0: one block per (token, group) always.
  int64_t splitBelowBlocks = 0;
};

/// Whether the tensor-core kernel takes these sizes: widths a multiple of
/// 128 up to 512 (each of the 8 warps multiplies width / 8 output channels,
/// whole x4 ldmatrix tiles; the queries and two chunks of rows in bf16 fit
/// in the 227 KB of shared memory a block may have).
bool sinkAttentionMmaFits(int64_t heads, int64_t width);

/// Builds at `b` (host code) the kernels that compute `a.out`: the window's
/// and the cache's rows rounded to bf16 into one buffer (a kernel; freed
/// after the attention), then the attention kernel. For slots the first
/// kernel gathers each sequence's columns instead (its band's ring rows,
/// its entries' page rows decoded) into [tokens x columns] bf16 rows and
/// their validity. With `splitBelowBlocks` and more than one chunk of
/// columns, the attention kernel's grid has a third dimension, the parts,
/// chosen on the host from the tokens; with more than one part a third
/// kernel merges them.
void buildSinkAttentionMma(OpBuilder &b, Location loc, const SinkAttentionMma &a);

} // namespace mlir::dsf

#endif // DSF_LOWERING_CUDA_SINKATTENTIONMMA_H
