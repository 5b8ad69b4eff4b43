//===- RegisterAll.h - what dsf tools register -----------------------------===//
//
// The one place that lists the dialects and passes dsf's tools know, so that
// dsf-opt and dsf-compile accept the same IR. Only what dsf uses is
// registered: including mlir/InitAll*.h would multiply compile times.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_TOOLS_REGISTERALL_H
#define DSF_TOOLS_REGISTERALL_H

#include "dialect/DsfDialect.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace dsf {
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::dsf::DsfDialect, mlir::func::FuncDialect>();
}
inline void registerAllPasses() {
  mlir::dsf::registerDsfPasses();
  mlir::dsf::registerDefaultPipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}
} // namespace dsf

#endif // DSF_TOOLS_REGISTERALL_H
