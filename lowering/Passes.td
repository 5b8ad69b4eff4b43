//===- Passes.td - passes that leave the dsf dialect -------*- tablegen -*-===//
#ifndef DSF_LOWERING_PASSES_TD
#define DSF_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def DsfToLinalg : Pass<"dsf-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower dsf ops to linalg / tensor / arith / math on tensors";
  let description = [{
    Takes every function out of its dsf.model: layer regions are inlined, and
    each weight a function reads becomes a trailing argument (in declaration
    order; recorded in the function's `dsf.weights` attribute for the
    artifact's bindings) or, when it has a `value`, a constant. The dsf ops
    become linalg.generic computations in f32 (RMSNorm, projections, rope with
    YaRN frequencies computed at compile time, mHC streams, embedding rows).

    Lowered so far: embed, rms_norm, linear, rope, add, take_last,
    mhc.expand / collapse / update. Other ops fail to legalize with a
    diagnostic naming them.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

#endif // DSF_LOWERING_PASSES_TD
