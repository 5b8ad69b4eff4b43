//===- CodecsTest.cpp - the runtime's number formats ------------------------===//
#include "dsf/codecs.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace dsf::rt;

namespace {
float fromBF16(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}
} // namespace

// A weight bound as bf16 must hold every value a released checkpoint can
// give exactly: FP8 E4M3 codes times UE8M0 scales, FP4 E2M1 codes times
// UE8M0 scales (significands of 4 and 2 bits fit bf16's 8).
TEST(Codecs, BF16HoldsReleasedValuesExactly) {
  for (int scale = 127 - 40; scale <= 127 + 40; scale += 7) {
    for (int code = 0; code < 256; ++code) {
      if ((code & 0x7F) == 0x7F)
        continue;   // E4M3's NaN
      float v = decodeE4M3(uint8_t(code)) * decodeUE8M0(uint8_t(scale));
      EXPECT_EQ(fromBF16(encodeBF16(v)), v) << "e4m3 code " << code << " scale " << scale;
    }
    for (int nibble = 0; nibble < 16; ++nibble) {
      float v = decodeE2M1(uint8_t(nibble)) * decodeUE8M0(uint8_t(scale));
      EXPECT_EQ(fromBF16(encodeBF16(v)), v) << "e2m1 " << nibble << " scale " << scale;
    }
  }
}

// Other values round to the nearest bf16, ties to even; NaN stays NaN,
// infinities and signed zeros stay themselves.
TEST(Codecs, BF16RoundsToNearestEven) {
  EXPECT_EQ(encodeBF16(1.0f), 0x3F80);
  EXPECT_EQ(encodeBF16(1.0f + 0x1p-8f), 0x3F80);              // a tie: to even (down)
  EXPECT_EQ(encodeBF16(1.0f + 0x1p-7f + 0x1p-8f), 0x3F82);    // a tie: to even (up)
  EXPECT_EQ(encodeBF16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);   // above the tie
  EXPECT_EQ(encodeBF16(-2.5f), 0xC020);
  EXPECT_EQ(encodeBF16(-0.0f), 0x8000);
  EXPECT_EQ(encodeBF16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(encodeBF16(std::numeric_limits<float>::max()), 0x7F80);   // rounds up to infinity
  EXPECT_TRUE(std::isnan(fromBF16(encodeBF16(std::numeric_limits<float>::quiet_NaN()))));
  uint32_t signalling = 0x7F800001u;   // a NaN whose payload is all in the dropped half
  float s;
  std::memcpy(&s, &signalling, 4);
  EXPECT_TRUE(std::isnan(fromBF16(encodeBF16(s))));
}

// A batch's packed pages: rows of a cache's decoded values packed as the
// codes then the scale bytes, in rows of rowBytes; unpacked bit for bit.
TEST(Codecs, PackedRowsRoundTripAndRefuseInexactValues) {
  const int64_t rows = 3, cols = 64;
  for (RowFormat f : {RowFormat::FP8, RowFormat::MXFP4, RowFormat::NVFP4}) {
    std::vector<float> x(size_t(rows * cols));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(float(i) * 0.37f) * float(1 + i % 7);
    // The values a cache holds: already rounded to the format.
    std::vector<uint8_t> codes(size_t(rows * codeBytes(f, cols))), scales(size_t(rows * cols / blockOf(f)));
    quantizeRows(x.data(), rows, cols, f, codes.data(), scales.data());
    dequantizeRows(codes.data(), scales.data(), rows, cols, f, x.data());
    int64_t rowBytes = packedRowBytes(f, cols);
    EXPECT_EQ(rowBytes, codeBytes(f, cols) + cols / blockOf(f));
    std::vector<uint8_t> packed(size_t(rows * rowBytes));
    EXPECT_EQ(packRowsExactly(x.data(), rows, cols, f, rowBytes, packed.data()), -1) << rowFormatName(f);
    std::vector<float> back(x.size());
    unpackPackedRows(packed.data(), rows, cols, f, rowBytes, back.data());
    EXPECT_EQ(std::memcmp(back.data(), x.data(), x.size() * sizeof(float)), 0) << rowFormatName(f);
    // A value the format cannot hold (between two codes of its block) is
    // named by its row.
    x[size_t(cols + 5)] = std::nextafter(x[size_t(cols + 5)], 1e9f);
    EXPECT_EQ(packRowsExactly(x.data(), rows, cols, f, rowBytes, packed.data()), 1) << rowFormatName(f);
  }
}
