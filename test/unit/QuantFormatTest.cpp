//===- QuantFormatTest.cpp - byte sizes of #dsf.quant formats --------------===//
#include "dialect/DsfDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::dsf;

namespace {
class QuantFormatTest : public ::testing::Test {
protected:
  QuantFormatTest() { ctx.loadDialect<DsfDialect>(); }
  QuantAttr parse(StringRef text) {
    return llvm::dyn_cast_or_null<QuantAttr>(parseAttribute(text, &ctx));
  }
  MLIRContext ctx;
};

TEST_F(QuantFormatTest, CacheRowsMatchModelMd) {
  // MODEL.md: NVFP4 512 -> 256 + 32, MXFP4 128 -> 64 + 4, FP8/32 512 -> 512 + 16.
  EXPECT_EQ(parse("#dsf.quant<e2m1, scale = e4m3, block = 16>").getRowBytes(512), 288);
  EXPECT_EQ(parse("#dsf.quant<e2m1, scale = ue8m0, block = 32>").getRowBytes(128), 68);
  EXPECT_EQ(parse("#dsf.quant<e4m3, scale = ue8m0, block = 32>").getRowBytes(512), 528);
  // V4: 448 FP8 + 7 UE8M0 scales + 64 bf16 rope channels, padded to 8: FlashMLA's 584.
  EXPECT_EQ(parse("#dsf.quant<e4m3, scale = ue8m0, block = 64, bf16_tail = 64, align = 8>")
                .getRowBytes(512),
            584);
  EXPECT_EQ(parse("#dsf.quant<f32>").getRowBytes(512), 2048);
  EXPECT_EQ(parse("#dsf.quant<bf16>").getRowBytes(512), 1024);
}

TEST_F(QuantFormatTest, WeightBytesCountOneScalePerBlockIncludingPartialOnes) {
  QuantAttr fp8 = parse("#dsf.quant<e4m3, scale = ue8m0, block = 32x32>");
  ASSERT_TRUE(fp8);
  EXPECT_EQ(fp8.getTensorBytes({1280, 5120}), 1280 * 5120 + 40 * 160);
  EXPECT_EQ(fp8.getTensorBytes({100, 50}), 5000 + 4 * 2);
  EXPECT_EQ(fp8.getTensorBytes({2, 100, 50}), 2 * (5000 + 4 * 2));
  QuantAttr mx = parse("#dsf.quant<e2m1, scale = ue8m0, block = 32>");
  EXPECT_EQ(mx.getTensorBytes({384, 2304, 5120}),
            384LL * 2304 * 5120 / 2 + 384LL * 2304 * 5120 / 32);
}

TEST_F(QuantFormatTest, RowWidthMustSplitIntoBlocks) {
  QuantAttr nv = parse("#dsf.quant<e2m1, scale = e4m3, block = 16>");
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  auto emit = [&]() { return emitError(UnknownLoc::get(&ctx)); };
  EXPECT_TRUE(succeeded(nv.verifyRowWidth(512, emit)));
  EXPECT_TRUE(failed(nv.verifyRowWidth(100, emit)));
  EXPECT_EQ(message, "width 100 is not divisible by the quantization block 16");
}

TEST_F(QuantFormatTest, PrintsWhatItParses) {
  for (StringRef text : {"#dsf.quant<f32>", "#dsf.quant<e2m1, scale = e4m3, block = 16>",
                         "#dsf.quant<e4m3, scale = ue8m0, block = 128x128>",
                         "#dsf.quant<e4m3, scale = ue8m0, block = 64, bf16_tail = 64, align = 8>"}) {
    QuantAttr q = parse(text);
    ASSERT_TRUE(q) << text.str();
    std::string printed;
    llvm::raw_string_ostream os(printed);
    os << Attribute(q);
    EXPECT_EQ(printed, text.str());
  }
}
} // namespace
