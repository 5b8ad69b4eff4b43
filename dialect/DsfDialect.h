//===- DsfDialect.h - the dsf dialect ------------------------------------===//
#ifndef DSF_DIALECT_DSFDIALECT_H
#define DSF_DIALECT_DSFDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/DsfDialect.h.inc"
#include "dialect/DsfEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/DsfAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "dialect/DsfTypes.h.inc"

namespace mlir::dsf {

/// A dimension of an expected weight shape that any size satisfies.
constexpr int64_t kAnyDim = -1;
/// Dimensions numbered kDimVar0, kDimVar0 - 1, ... are variables: every use of
/// the same variable within one op must see the same size (e.g. the number of
/// experts in a gate's weight and its bias).
constexpr int64_t kDimVar0 = -2;

/// One weight an op reads (see WeightUserOpInterface).
struct WeightUse {
  FlatSymbolRefAttr symbol;
  llvm::StringRef role;              // e.g. "wkv", for diagnostics
  llvm::SmallVector<int64_t> shape;  // expected shape, kAnyDim / variables allowed
  /// Rows of dimension 0 one token touches; -1 means the whole tensor
  /// (an embedding touches 1 row, routed experts top_k of E).
  int64_t rowsTouchedPerToken = -1;
};

} // namespace mlir::dsf

#include "dialect/DsfInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/DsfOps.h.inc"

#endif // DSF_DIALECT_DSFDIALECT_H
