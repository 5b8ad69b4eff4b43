//===- Passes.h - dsf passes -----------------------------------------------===//
#ifndef DSF_PASSES_PASSES_H
#define DSF_PASSES_PASSES_H

#include "dialect/DsfDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dsf {
#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"
} // namespace mlir::dsf

#endif // DSF_PASSES_PASSES_H
