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

    Every dsf op is lowered (see lowering/README.md); an op in a form the
    lowering does not handle fails to legalize with a diagnostic naming it.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

def SinkGlobalsIntoKernels : Pass<"dsf-sink-globals-into-kernels", "::mlir::ModuleOp"> {
  let summary = "Let kernels read constant tables from their own module, not the host's";
  let description = [{
    A `memref.get_global` of the host code (a constant table, such as RoPE's
    frequencies) used inside a `gpu.launch` is cloned into the launch body,
    so that gpu-kernel-outlining copies the global into the kernel's
    gpu.module: the device reads its own copy instead of host memory it
    cannot reach.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::gpu::GPUDialect"];
}

#endif // DSF_LOWERING_PASSES_TD
