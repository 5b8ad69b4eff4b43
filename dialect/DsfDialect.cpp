//===- DsfDialect.cpp - dsf dialect registration ---------------------------===//
#include "dialect/DsfDialect.h"

using namespace mlir;
using namespace mlir::dsf;

#include "dialect/DsfDialect.cpp.inc"
#include "dialect/DsfEnums.cpp.inc"
#include "dialect/DsfInterfaces.cpp.inc"

namespace {
/// Short aliases for the formats and caches that fill every dsf module:
/// #nvfp4, #mxfp4, #fp8_ue8m0_32, !kv_r2, !index_keys_r1, ...
struct DsfOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (auto q = llvm::dyn_cast<QuantAttr>(attr)) {
      bool row = q.getBlockRows() <= 1 && !q.getBf16Tail() && q.getAlign() == 1;
      if (row && q.getElement() == ScalarFormat::e2m1 && q.getScale() == ScaleFormat::e4m3 &&
          q.getBlockCols() == 16)
        os << "nvfp4";
      else if (row && q.getElement() == ScalarFormat::e2m1 &&
               q.getScale() == ScaleFormat::ue8m0 && q.getBlockCols() == 32)
        os << "mxfp4";
      else if (!q.isQuantized())
        os << stringifyScalarFormat(q.getElement());
      else {
        os << stringifyScalarFormat(q.getElement()) << "_" << stringifyScaleFormat(q.getScale())
           << "_";
        if (q.getBlockRows() > 1)
          os << q.getBlockRows() << "x";
        os << q.getBlockCols();
        if (q.getBf16Tail())
          os << "_tail" << q.getBf16Tail();
      }
      return AliasResult::FinalAlias;
    }
    if (auto r = llvm::dyn_cast<RopeAttr>(attr)) {
      os << (r.getYarnFactor() ? "rope_yarn" : "rope");
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }

  AliasResult getAlias(Type type, raw_ostream &os) const override {
    if (auto c = llvm::dyn_cast<CacheType>(type)) {
      os << stringifyCacheKind(c.getKind()) << "_r" << c.getRatio();
      return AliasResult::OverridableAlias;
    }
    if (llvm::isa<WindowType>(type)) {
      os << "window";
      return AliasResult::OverridableAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void DsfDialect::initialize() {
  addInterfaces<DsfOpAsmInterface>();
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "dialect/DsfOps.cpp.inc"
      >();
}
