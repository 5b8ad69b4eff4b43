// RUN: dsf-opt %s --dsf-copies-to-linalg | FileCheck %s

// A host copy becomes a linalg.copy (later a kernel); a copy inside a
// kernel module stays as it is.
// CHECK-LABEL: func.func @host
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%arg0 : memref<?x8xf32, strided<[8, 1], offset: ?>>) outs(%arg1 : memref<?x8xf32>)
// CHECK: gpu.module @kernels
// CHECK: memref.copy
module attributes {gpu.container_module} {
  func.func @host(%src: memref<?x8xf32, strided<[8, 1], offset: ?>>, %dst: memref<?x8xf32>) {
    memref.copy %src, %dst : memref<?x8xf32, strided<[8, 1], offset: ?>> to memref<?x8xf32>
    return
  }
  gpu.module @kernels {
    func.func @device(%a: memref<4xf32>, %b: memref<4xf32>) {
      memref.copy %a, %b : memref<4xf32> to memref<4xf32>
      return
    }
  }
}
