// RUN: dsf-opt %s --dsf-sink-globals-into-kernels --gpu-kernel-outlining | FileCheck %s

// A constant table the host code reads from a global is cloned into the
// launch, and outlining copies the global into the kernel's module.
// CHECK: gpu.launch_func @table_kernel::@table_kernel {{.*}} args(%arg0 : memref<4xf32>)
// CHECK: gpu.module @table_kernel
// CHECK: gpu.func @table_kernel(%arg0: memref<4xf32>)
// CHECK: memref.get_global @freqs
// CHECK: memref.global "private" constant @freqs : memref<4xf32> = dense<[1.000000e+00, 5.000000e-01, 2.500000e-01, 1.250000e-01]>
module {
  memref.global "private" constant @freqs : memref<4xf32> = dense<[1.0, 0.5, 0.25, 0.125]>
  func.func @table(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %t = memref.get_global @freqs : memref<4xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
      %v = memref.load %t[%tx] : memref<4xf32>
      memref.store %v, %out[%tx] : memref<4xf32>
      gpu.terminator
    }
    return
  }
}
