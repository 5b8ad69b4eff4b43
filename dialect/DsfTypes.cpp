//===- DsfTypes.cpp - dsf types --------------------------------------------===//
#include "dialect/DsfDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dsf;

#define GET_TYPEDEF_CLASSES
#include "dialect/DsfTypes.cpp.inc"

void DsfDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/DsfTypes.cpp.inc"
      >();
}

LogicalResult CacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                CacheKind, int64_t ratio, int64_t width,
                                QuantAttr format) {
  if (ratio < 1)
    return emitError() << "cache ratio must be at least 1, got " << ratio;
  if (width < 1)
    return emitError() << "cache width must be positive, got " << width;
  return format.verifyRowWidth(width, emitError);
}

LogicalResult WindowType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t size, int64_t width, QuantAttr format) {
  if (size < 1)
    return emitError() << "window size must be positive, got " << size;
  if (width < 1)
    return emitError() << "window width must be positive, got " << width;
  return format.verifyRowWidth(width, emitError);
}

LogicalResult TopkType::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t k, int64_t ratio) {
  if (k < 1)
    return emitError() << "top-k must be positive, got " << k;
  if (ratio < 1)
    return emitError() << "selection ratio must be at least 1, got " << ratio;
  return success();
}

LogicalResult PoolType::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t blocks, int64_t blockSize, int64_t ratio) {
  if (blocks < 1 || blockSize < 1)
    return emitError() << "pool blocks and block_size must be positive, got "
                       << blocks << " x " << blockSize;
  if (ratio < 1)
    return emitError() << "pool ratio must be at least 1, got " << ratio;
  return success();
}

LogicalResult QTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> shape, QuantAttr format) {
  if (shape.empty())
    return emitError() << "a packed tensor needs at least one dimension";
  if (!format.isQuantized())
    return emitError() << "a packed tensor needs a quantized format";
  if (ShapedType::isDynamic(shape.back()))
    return emitError() << "the last (blocked) dimension must be static";
  return format.verifyRowWidth(shape.back(), emitError);
}

// !dsf.qtensor<?x512, #dsf.quant<...>>
Type QTensorType::parse(AsmParser &parser) {
  auto loc = parser.getCurrentLocation();
  SmallVector<int64_t> shape;
  Attribute format;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/true, /*withTrailingX=*/false) ||
      parser.parseComma() || parser.parseAttribute(format) || parser.parseGreater())
    return {};
  auto quant = llvm::dyn_cast<QuantAttr>(format);
  if (!quant) {
    parser.emitError(loc) << "expected a #dsf.quant format";
    return {};
  }
  return parser.getChecked<QTensorType>(loc, parser.getContext(), shape, quant);
}

void QTensorType::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleave(
      getShape(), printer,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          printer << "?";
        else
          printer << d;
      },
      "x");
  printer << ", " << getFormat() << ">";
}
