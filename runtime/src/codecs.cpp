//===- codecs.cpp - the cache and weight formats, bit-exact ----------------===//
#include "dsf/codecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace dsf::rt {
namespace {
constexpr float kE2M1Grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
constexpr float kE2M1Mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5};

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// The exponent E4M3 represents |a| with: floor(log2 a), subnormals at -6.
int e4m3Exponent(float a) {
  int exp;
  std::frexp(a, &exp); // a = m * 2^exp, m in [0.5, 1)
  return std::max(exp - 1, -6);
}
} // namespace

bool parseRowFormat(const std::string &name, RowFormat &out) {
  if (name == "fp8") out = RowFormat::FP8;
  else if (name == "mxfp4") out = RowFormat::MXFP4;
  else if (name == "nvfp4") out = RowFormat::NVFP4;
  else return false;
  return true;
}

const char *rowFormatName(RowFormat f) {
  switch (f) {
  case RowFormat::FP8: return "fp8";
  case RowFormat::MXFP4: return "mxfp4";
  case RowFormat::NVFP4: return "nvfp4";
  }
  return "?";
}

int64_t blockOf(RowFormat f) { return f == RowFormat::NVFP4 ? 16 : 32; }
int64_t codeBytes(RowFormat f, int64_t cols) { return f == RowFormat::FP8 ? cols : cols / 2; }

float roundE4M3(float x) {
  float a = std::fabs(x);
  if (a == 0)
    return x;
  float quantum = std::ldexp(1.0f, e4m3Exponent(a) - 3); // 3 mantissa bits
  return std::copysign(std::nearbyint(a / quantum) * quantum, x); // ties to even
}

uint8_t encodeE4M3(float value) {
  float a = std::fabs(value);
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (a == 0)
    return sign;
  int e = e4m3Exponent(a);
  int mant = int(std::nearbyint(a / std::ldexp(1.0f, e - 3)));
  if (mant == 16) { // rounded into the next binade
    ++e;
    mant = 8;
  }
  int field = mant >= 8 ? e + 7 : 0;
  int bits = mant >= 8 ? mant - 8 : mant;
  return sign | uint8_t(field << 3) | uint8_t(bits);
}

float decodeE4M3(uint8_t code) {
  int field = (code >> 3) & 0xF, mant = code & 7;
  float sign = (code & 0x80) ? -1.0f : 1.0f;
  if (field == 15 && mant == 7)
    return std::nanf("");
  if (field == 0)
    return sign * std::ldexp(float(mant), -9);
  return sign * std::ldexp(float(8 + mant), field - 10);
}

uint8_t ue8m0Scale(float amax, float maximum, float floor) {
  float t = std::max(amax, floor) * (1.0f / maximum);
  uint32_t b = bitsOf(t);
  uint32_t exponent = ((b >> 23) & 0xFF) + ((b & 0x7FFFFF) != 0);
  return uint8_t(std::min<uint32_t>(exponent, 254));
}

float decodeUE8M0(uint8_t byte) { return std::ldexp(1.0f, int(byte) - 127); }

uint8_t encodeE2M1(float x) {
  float a = std::min(std::fabs(x), 6.0f);
  int idx = 0;
  while (idx < 7 && kE2M1Mid[idx] < a)
    ++idx;
  if (idx < 7 && a == kE2M1Mid[idx] && (idx & 1))
    ++idx; // a tie goes to the even grid index
  return uint8_t(idx) | (std::signbit(x) ? 8 : 0);
}

float decodeE2M1(uint8_t nibble) {
  float v = kE2M1Grid[nibble & 7];
  return (nibble & 8) ? -v : v;
}

uint16_t encodeBF16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu))
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7FFFu + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

void quantizeRows(const float *x, int64_t rows, int64_t cols, RowFormat f, uint8_t *codes,
                  uint8_t *scales) {
  const int64_t block = blockOf(f), blocks = cols / block;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x + r * cols;
    uint8_t *code = codes + r * codeBytes(f, cols);
    for (int64_t b = 0; b < blocks; ++b) {
      const float *v = row + b * block;
      float amax = 0;
      for (int64_t i = 0; i < block; ++i)
        amax = std::max(amax, std::fabs(v[i]));
      float scale;
      uint8_t scaleByte;
      if (f == RowFormat::NVFP4) {
        scale = roundE4M3(std::min(std::max(amax, 6.0f * std::ldexp(1.0f, -9)) / 6.0f, 448.0f));
        scaleByte = encodeE4M3(scale);
      } else {
        bool fp8 = f == RowFormat::FP8;
        scaleByte = ue8m0Scale(amax, fp8 ? 448.0f : 6.0f, fp8 ? 1e-4f : 6.0f * std::ldexp(1.0f, -126));
        scale = decodeUE8M0(scaleByte);
      }
      scales[r * blocks + b] = scaleByte;
      for (int64_t i = 0; i < block; ++i) {
        float s = v[i] / scale;
        int64_t c = b * block + i;
        if (f == RowFormat::FP8) {
          code[c] = encodeE4M3(roundE4M3(std::clamp(s, -448.0f, 448.0f)));
        } else {
          uint8_t nibble = encodeE2M1(std::clamp(s, -6.0f, 6.0f));
          if (c % 2 == 0)
            code[c / 2] = nibble;
          else
            code[c / 2] |= uint8_t(nibble << 4);
        }
      }
    }
  }
}

namespace {
/// Every code's value, decoded once by the functions above: restoring a
/// cache decodes millions of codes, and a table lookup is what they cost.
struct DecodeTables {
  float e4m3[256], ue8m0[256], e2m1[16];
  DecodeTables() {
    for (int i = 0; i < 256; ++i) {
      e4m3[i] = decodeE4M3(uint8_t(i));
      ue8m0[i] = decodeUE8M0(uint8_t(i));
    }
    for (int i = 0; i < 16; ++i)
      e2m1[i] = decodeE2M1(uint8_t(i));
  }
};
const DecodeTables &decodeTables() {
  static const DecodeTables tables;
  return tables;
}
} // namespace

void dequantizeRows(const uint8_t *codes, const uint8_t *scales, int64_t rows, int64_t cols,
                    RowFormat f, float *out) {
  const DecodeTables &t = decodeTables();
  const int64_t block = blockOf(f), blocks = cols / block;
  const float *scaleTable = f == RowFormat::NVFP4 ? t.e4m3 : t.ue8m0;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *code = codes + r * codeBytes(f, cols);
    float *row = out + r * cols;
    for (int64_t b = 0; b < blocks; ++b) {
      const float scale = scaleTable[scales[r * blocks + b]];
      const int64_t c0 = b * block;
      if (f == RowFormat::FP8) {
        for (int64_t c = c0; c < c0 + block; ++c)
          row[c] = t.e4m3[code[c]] * scale;
      } else {
        for (int64_t c = c0; c < c0 + block; ++c)
          row[c] = t.e2m1[(code[c / 2] >> (4 * (c % 2))) & 0xF] * scale;
      }
    }
    // Callers pass whole blocks; a partial last one reads its scale as the
    // per-element loop always did.
    for (int64_t c = blocks * block; c < cols; ++c) {
      const float scale = scaleTable[scales[r * blocks + c / block]];
      row[c] = (f == RowFormat::FP8 ? t.e4m3[code[c]] : t.e2m1[(code[c / 2] >> (4 * (c % 2))) & 0xF]) * scale;
    }
  }
}

void quantizeFp8Blocks(const float *x, int64_t rows, int64_t cols, int64_t br, int64_t bc,
                       uint8_t *codes, uint8_t *scales) {
  const int64_t nbc = (cols + bc - 1) / bc;
  for (int64_t r0 = 0; r0 < rows; r0 += br)
    for (int64_t c0 = 0; c0 < cols; c0 += bc) {
      int64_t r1 = std::min(rows, r0 + br), c1 = std::min(cols, c0 + bc);
      float amax = 0;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          amax = std::max(amax, std::fabs(x[r * cols + c]));
      uint8_t byte = ue8m0Scale(amax, 448.0f, 1e-4f);
      float scale = decodeUE8M0(byte);
      scales[(r0 / br) * nbc + c0 / bc] = byte;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          codes[r * cols + c] =
              encodeE4M3(roundE4M3(std::clamp(x[r * cols + c] / scale, -448.0f, 448.0f)));
    }
}

void dequantizeFp8Blocks(const uint8_t *codes, const uint8_t *scales, int64_t rows, int64_t cols,
                         int64_t br, int64_t bc, float *out) {
  // Through the decode tables, a scale per block of the row: real-size
  // checkpoints hold billions of these codes.
  const DecodeTables &t = decodeTables();
  const int64_t nbc = (cols + bc - 1) / bc;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *code = codes + r * cols, *scale = scales + (r / br) * nbc;
    float *row = out + r * cols;
    for (int64_t b = 0; b < nbc; ++b) {
      const float s = t.ue8m0[scale[b]];
      for (int64_t c = b * bc, end = std::min(cols, c + bc); c < end; ++c)
        row[c] = t.e4m3[code[c]] * s;
    }
  }
}

int64_t packRowsExactly(const float *x, int64_t rows, int64_t width, RowFormat f, int64_t rowBytes, uint8_t *out) {
  int64_t codes = codeBytes(f, width);
  std::vector<float> back(static_cast<size_t>(width));
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t *row = out + r * rowBytes;
    quantizeRows(x + r * width, 1, width, f, row, row + codes);
    dequantizeRows(row, row + codes, 1, width, f, back.data());
    if (std::memcmp(back.data(), x + r * width, size_t(width) * sizeof(float)) != 0)
      return r;
  }
  return -1;
}

void unpackPackedRows(const uint8_t *in, int64_t rows, int64_t width, RowFormat f, int64_t rowBytes, float *out) {
  int64_t codes = codeBytes(f, width);
  for (int64_t r = 0; r < rows; ++r)
    dequantizeRows(in + r * rowBytes, in + r * rowBytes + codes, 1, width, f, out + r * width);
}

} // namespace dsf::rt
