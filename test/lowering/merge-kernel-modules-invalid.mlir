// RUN: dsf-opt %s --dsf-merge-kernel-modules --split-input-file -verify-diagnostics

// Two kernel modules of one function defining one symbol differently.
module attributes {gpu.container_module} {
  func.func @layer0(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @a::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<4xf32>)
    gpu.launch_func @b::@k2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<4xf32>)
    return
  }
  gpu.module @a {
    memref.global "private" constant @t : memref<1xf32> = dense<1.0>
    gpu.func @k(%arg0: memref<4xf32>) kernel { gpu.return }
  }
  // expected-error @below {{dsf-merge-kernel-modules: symbol @t is defined differently by two kernel modules of one function}}
  gpu.module @b {
    memref.global "private" constant @t : memref<1xf32> = dense<2.0>
    gpu.func @k2(%arg0: memref<4xf32>) kernel { gpu.return }
  }
}

// -----

// Kernel modules of one function for different targets cannot be merged.
module attributes {gpu.container_module} {
  func.func @layer0(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @a::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<4xf32>)
    gpu.launch_func @b::@k2 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<4xf32>)
    return
  }
  gpu.module @a [#nvvm.target<chip = "sm_90a">] {
    gpu.func @k(%arg0: memref<4xf32>) kernel { gpu.return }
  }
  // expected-error @below {{dsf-merge-kernel-modules: kernel modules of one function with different targets}}
  gpu.module @b [#nvvm.target<chip = "sm_80">] {
    gpu.func @k2(%arg0: memref<4xf32>) kernel { gpu.return }
  }
}
