//===- DsfAttrs.cpp - #dsf.quant and #dsf.rope -----------------------------===//
#include "dialect/DsfDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dsf;

#define GET_ATTRDEF_CLASSES
#include "dialect/DsfAttrs.cpp.inc"

void DsfDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/DsfAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// QuantAttr
//===----------------------------------------------------------------------===//

QuantAttr QuantAttr::getPlain(MLIRContext *ctx, ScalarFormat element) {
  return get(ctx, element, ScaleFormat::none, 0, 0, 0, 1);
}

QuantAttr QuantAttr::get1D(MLIRContext *ctx, ScalarFormat element,
                           ScaleFormat scale, int64_t block) {
  return get(ctx, element, scale, 1, block, 0, 1);
}

int64_t QuantAttr::getElementBits() const {
  switch (getElement()) {
  case ScalarFormat::f32: return 32;
  case ScalarFormat::bf16: return 16;
  case ScalarFormat::e4m3: return 8;
  case ScalarFormat::e2m1: return 4;
  }
  llvm_unreachable("unknown scalar format");
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t QuantAttr::getRowBytes(int64_t width) const {
  int64_t quantized = width - getBf16Tail();
  int64_t bytes = ceilDiv(quantized * getElementBits(), 8) + 2 * getBf16Tail();
  if (isQuantized())
    bytes += ceilDiv(quantized, getBlockCols()); // one scale byte per block
  return ceilDiv(bytes, getAlign()) * getAlign();
}

int64_t QuantAttr::getTensorBytes(ArrayRef<int64_t> shape) const {
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  int64_t bytes = ceilDiv(elements * getElementBits(), 8);
  if (!isQuantized() || shape.empty())
    return bytes;
  int64_t cols = shape.back();
  if (getBlockRows() > 1 && shape.size() >= 2) {
    int64_t rows = shape[shape.size() - 2];
    int64_t outer = elements / (rows * cols);
    return bytes + outer * ceilDiv(rows, getBlockRows()) * ceilDiv(cols, getBlockCols());
  }
  return bytes + (elements / cols) * ceilDiv(cols, getBlockCols());
}

LogicalResult QuantAttr::verifyRowWidth(
    int64_t width, function_ref<InFlightDiagnostic()> emitError) const {
  if (getBf16Tail() >= width)
    return emitError() << "bf16_tail " << getBf16Tail()
                       << " leaves no quantized channels in a row of " << width;
  if (!isQuantized())
    return success();
  if (getBlockRows() != 1)
    return emitError() << "a row format needs 1-D blocks, got block = "
                       << getBlockRows() << "x" << getBlockCols();
  int64_t quantized = width - getBf16Tail();
  if (quantized % getBlockCols() != 0)
    return emitError() << "width " << quantized
                       << " is not divisible by the quantization block "
                       << getBlockCols();
  return success();
}

LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ScalarFormat element, ScaleFormat scale,
                                int64_t blockRows, int64_t blockCols,
                                int64_t bf16Tail, int64_t align) {
  bool lowPrecision = element == ScalarFormat::e4m3 || element == ScalarFormat::e2m1;
  if (lowPrecision && scale == ScaleFormat::none)
    return emitError() << "element format " << stringifyScalarFormat(element)
                       << " needs a block scale (scale = e4m3 or ue8m0)";
  if (!lowPrecision && scale != ScaleFormat::none)
    return emitError() << "element format " << stringifyScalarFormat(element)
                       << " takes no block scale";
  if (scale != ScaleFormat::none && (blockCols <= 0 || blockRows <= 0))
    return emitError() << "block sizes must be positive, got " << blockRows
                       << "x" << blockCols;
  if (bf16Tail < 0)
    return emitError() << "bf16_tail must not be negative, got " << bf16Tail;
  if (bf16Tail > 0 && !lowPrecision)
    return emitError() << "bf16_tail only applies to quantized formats";
  if (align < 1)
    return emitError() << "align must be at least 1, got " << align;
  return success();
}

// #dsf.quant<e2m1, scale = e4m3, block = 16, bf16_tail = 64, align = 8>
Attribute QuantAttr::parse(AsmParser &parser, Type) {
  auto loc = parser.getCurrentLocation();
  StringRef elementName;
  if (parser.parseLess() || parser.parseKeyword(&elementName))
    return {};
  std::optional<ScalarFormat> element = symbolizeScalarFormat(elementName);
  if (!element) {
    parser.emitError(loc) << "unknown element format '" << elementName
                          << "' (expected f32, bf16, e4m3 or e2m1)";
    return {};
  }
  ScaleFormat scale = ScaleFormat::none;
  int64_t blockRows = 0, blockCols = 0, tail = 0, align = 1;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    auto keyLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "scale") {
      StringRef name;
      auto nameLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&name))
        return {};
      std::optional<ScaleFormat> s = symbolizeScaleFormat(name);
      if (!s || *s == ScaleFormat::none) {
        parser.emitError(nameLoc) << "unknown scale format '" << name
                                  << "' (expected e4m3 or ue8m0)";
        return {};
      }
      scale = *s;
    } else if (key == "block") {
      SmallVector<int64_t> dims;
      if (parser.parseDimensionList(dims, /*allowDynamic=*/false,
                                    /*withTrailingX=*/false))
        return {};
      if (dims.size() == 1) {
        blockRows = 1;
        blockCols = dims[0];
      } else if (dims.size() == 2) {
        blockRows = dims[0];
        blockCols = dims[1];
      } else {
        parser.emitError(keyLoc) << "block must be C or RxC";
        return {};
      }
    } else if (key == "bf16_tail") {
      if (parser.parseInteger(tail))
        return {};
    } else if (key == "align") {
      if (parser.parseInteger(align))
        return {};
    } else {
      parser.emitError(keyLoc) << "unknown #dsf.quant parameter '" << key
                               << "' (expected scale, block, bf16_tail, align)";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<QuantAttr>(loc, parser.getContext(), *element, scale,
                                      blockRows, blockCols, tail, align);
}

void QuantAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyScalarFormat(getElement());
  if (isQuantized()) {
    printer << ", scale = " << stringifyScaleFormat(getScale()) << ", block = ";
    if (getBlockRows() > 1)
      printer << getBlockRows() << "x";
    printer << getBlockCols();
  }
  if (getBf16Tail())
    printer << ", bf16_tail = " << getBf16Tail();
  if (getAlign() != 1)
    printer << ", align = " << getAlign();
  printer << ">";
}

//===----------------------------------------------------------------------===//
// RopeAttr
//===----------------------------------------------------------------------===//

LogicalResult RopeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               FloatAttr theta, int64_t dims, FloatAttr yarnFactor,
                               std::optional<int64_t> originalMax,
                               FloatAttr betaFast, FloatAttr betaSlow) {
  if (!theta || theta.getValueAsDouble() <= 0)
    return emitError() << "rope theta must be positive";
  if (dims <= 0 || dims % 2)
    return emitError() << "rope dims must be positive and even, got " << dims;
  bool anyYarn = yarnFactor || originalMax || betaFast || betaSlow;
  if (anyYarn && !(yarnFactor && originalMax && betaFast && betaSlow))
    return emitError() << "YaRN needs yarn_factor, original_max, beta_fast and beta_slow";
  if (yarnFactor && yarnFactor.getValueAsDouble() < 1.0)
    return emitError() << "yarn_factor must be at least 1, got "
                       << yarnFactor.getValueAsDouble();
  if (originalMax && *originalMax <= 0)
    return emitError() << "original_max must be positive";
  return success();
}

//===----------------------------------------------------------------------===//
// CachePlanAttr
//===----------------------------------------------------------------------===//

LogicalResult CachePlanAttr::verify(function_ref<InFlightDiagnostic()> emitError, Tier live,
                                    Tier idle, int64_t ttl) {
  if (live != Tier::device && live != Tier::host)
    return emitError() << "a live cache is on the device or in host memory, not "
                       << stringifyTier(live);
  if (ttl < 0)
    return emitError() << "ttl must not be negative, got " << ttl;
  if (idle == Tier::dropped && ttl != 0)
    return emitError() << "a dropped cache has no ttl";
  return success();
}
