// RUN: dsf-opt %s --dsf-gpu-grid-dependency-control -split-input-file -verify-diagnostics

// The marker's name taken by another symbol of a module with kernels: the
// runtime would read it as the promise that every kernel waits.
module attributes {gpu.container_module} {
  gpu.module @layer_kernel {
    // expected-error @+1 {{'llvm.mlir.global' op defines @dsf_grid_dependency_control in gpu.module @layer_kernel: dsf-gpu-grid-dependency-control marks a module's kernels with that symbol, so no other may be named so}}
    llvm.mlir.global external constant @dsf_grid_dependency_control(7 : i32) {addr_space = 1 : i32} : i32
    gpu.func @layer__add_0(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
}
