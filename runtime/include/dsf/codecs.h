//===- codecs.h - the cache and weight formats, bit-exact ------------------===//
//
// The rounding rules of MODEL.md, in fp32 arithmetic, as the trained model's
// ports implement them:
//   FP8    E4M3 elements, one UE8M0 scale per 32 (amax floor 1e-4, max 448)
//   MXFP4  E2M1 elements, one UE8M0 scale per 32 (amax floor 6 * 2^-126, max 6)
//   NVFP4  E2M1 elements, one E4M3 scale per 16 (scale = E4M3(max(amax, 6 * 2^-9) / 6),
//          saturating at 448: our choice where MODEL.md is silent)
// UE8M0 scales are the next power of two of t = amax * fp32(1/max), read from
// t's bits; elements round to nearest, ties to even (E2M1: to the even grid
// index). Two E2M1 codes share a byte, the even element in the low nibble.
// Checkpoint weights use FP8 with UE8M0 scales over 2-D blocks (128x128 for
// V4, 32x32 for V4.1), partial edge blocks included.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_CODECS_H
#define DSF_RUNTIME_CODECS_H

#include <cstdint>
#include <string>

namespace dsf::rt {

enum class RowFormat { FP8, MXFP4, NVFP4 };

/// "fp8", "mxfp4", "nvfp4".
bool parseRowFormat(const std::string &name, RowFormat &out);
const char *rowFormatName(RowFormat f);
int64_t blockOf(RowFormat f);
/// Code bytes of a row of `cols` elements (FP4: two a byte).
int64_t codeBytes(RowFormat f, int64_t cols);
/// A packed row of `cols` elements: its codes, then a scale byte a block
/// (a batch's packed cache pages, dsf-to-linalg's PackedRow).
inline int64_t packedRowBytes(RowFormat f, int64_t cols) { return codeBytes(f, cols) + cols / blockOf(f); }

float roundE4M3(float x);         // RNE to an E4M3 value; |x| must be <= 448
uint8_t encodeE4M3(float value);  // `value` an E4M3 value (e.g. from roundE4M3)
float decodeE4M3(uint8_t code);
uint8_t ue8m0Scale(float amax, float maximum, float floor);
float decodeUE8M0(uint8_t byte);
uint8_t encodeE2M1(float x);      // RNE, |x| <= 6: sign bit 3, grid index bits 0-2
float decodeE2M1(uint8_t nibble);
/// f32 to bf16 bits, round to nearest even (a NaN stays a quiet NaN): how a
/// weight the artifact binds as bf16 is stored. Exact for bf16, FP8 and FP4
/// checkpoints' values (their significands fit in bf16's 8 bits).
uint16_t encodeBF16(float x);

/// Quantizes `rows` rows of `cols` (a multiple of the block) elements.
void quantizeRows(const float *x, int64_t rows, int64_t cols, RowFormat f, uint8_t *codes,
                  uint8_t *scales);
void dequantizeRows(const uint8_t *codes, const uint8_t *scales, int64_t rows, int64_t cols,
                    RowFormat f, float *out);

/// Packs `rows` rows of `cols` values, already exact in `f` (a cache's
/// decoded rows), into packed rows of `rowBytes` (the codes, then the
/// scales: a batch's packed pages), each checked to decode back bit for bit;
/// the first row that does not, or -1.
int64_t packRowsExactly(const float *x, int64_t rows, int64_t cols, RowFormat f, int64_t rowBytes, uint8_t *out);
/// The values of `rows` packed rows of `rowBytes`.
void unpackPackedRows(const uint8_t *in, int64_t rows, int64_t cols, RowFormat f, int64_t rowBytes, float *out);

/// FP8 with one UE8M0 scale per `br` x `bc` block of a rows x cols matrix;
/// `scales` holds ceil(rows/br) x ceil(cols/bc) bytes.
void quantizeFp8Blocks(const float *x, int64_t rows, int64_t cols, int64_t br, int64_t bc,
                       uint8_t *codes, uint8_t *scales);
void dequantizeFp8Blocks(const uint8_t *codes, const uint8_t *scales, int64_t rows, int64_t cols,
                         int64_t br, int64_t bc, float *out);

} // namespace dsf::rt

#endif // DSF_RUNTIME_CODECS_H
