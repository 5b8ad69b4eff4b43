// RUN: dsf-opt %s --dsf-sink-globals-into-kernels --gpu-kernel-outlining --dsf-name-kernels --dsf-merge-kernel-modules | FileCheck %s

// The kernels of one host function move into its first kernel module; the
// constant table both kernels read is kept once; launches follow; another
// function's kernels get their own module.
// CHECK-LABEL: func.func @layer0(
// CHECK: gpu.launch_func @layer0_kernel::@layer0__op_0
// CHECK: gpu.launch_func @layer0_kernel::@layer0__op_1
// CHECK: gpu.module @layer0_kernel {
// CHECK: gpu.func @layer0__op_0(
// CHECK: gpu.func @layer0__op_1(
// CHECK: memref.global "private" constant @freqs
// CHECK-NOT: memref.global
// CHECK-NOT: gpu.module @layer0_kernel_0
// CHECK-LABEL: func.func @layer1(
// CHECK: gpu.launch_func @layer1_kernel::@layer1__op_0
// CHECK: gpu.module @layer1_kernel {
// CHECK: gpu.func @layer1__op_0(
module {
  memref.global "private" constant @freqs : memref<4xf32> = dense<[1.0, 0.5, 0.25, 0.125]>
  func.func @layer0(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
      %t = memref.get_global @freqs : memref<4xf32>
      %v = memref.load %t[%tx] : memref<4xf32>
      memref.store %v, %out[%tx] : memref<4xf32>
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
      %t = memref.get_global @freqs : memref<4xf32>
      %v = memref.load %t[%tx] : memref<4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %out[%tx] : memref<4xf32>
      gpu.terminator
    }
    return
  }
  func.func @layer1(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %f = arith.constant 2.0 : f32
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
      memref.store %f, %out[%tx] : memref<4xf32>
      gpu.terminator
    }
    return
  }
}
