//===- Passes.td - dsf passes ------------------------------*- tablegen -*-===//
#ifndef DSF_PASSES_TD
#define DSF_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintReport : Pass<"dsf-print-report", "::mlir::ModuleOp"> {
  let summary = "Print the KV-cache and parameter reports of every dsf.model";
  let description = [{
    Computes the reports from the IR alone: global KV bytes per token from the
    `!dsf.cache` values and their formats, window bytes per sequence from the
    `!dsf.window` values, KV- and index-source layers from the layer bodies,
    parameters from the `dsf.weight` declarations and the ops that read them.
    Prints them to stdout; the IR is unchanged.
  }];
  let options = [
    ListOption<"reports", "report", "std::string",
               "Reports to print: kv, params (default: both)">
  ];
}

#endif // DSF_PASSES_TD
