//===- PrintReport.cpp - dsf-print-report ----------------------------------===//
#include "passes/Passes.h"
#include "passes/Reports.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_PRINTREPORT
#include "passes/Passes.h.inc"
} // namespace mlir::dsf

namespace mlir::dsf {
namespace {
struct PrintReportPass : impl::PrintReportBase<PrintReportPass> {
  using Base::Base;
  void runOnOperation() override {
    bool kv = reports.empty(), params = reports.empty();
    for (const std::string &r : reports) {
      if (r == "kv")
        kv = true;
      else if (r == "params")
        params = true;
      else {
        getOperation().emitError() << "unknown report '" << r << "' (expected kv or params)";
        return signalPassFailure();
      }
    }
    getOperation().walk([&](ModelOp model) {
      if (kv)
        printKvReport(computeKvReport(model), llvm::outs());
      if (params)
        printParamReport(computeParamReport(model), llvm::outs());
    });
    markAllAnalysesPreserved();
  }
};
} // namespace
} // namespace mlir::dsf
