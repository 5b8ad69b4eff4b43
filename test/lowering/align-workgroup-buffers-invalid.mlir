// RUN: dsf-opt %s --dsf-align-workgroup-buffers -split-input-file -verify-diagnostics

// An alignment claimed on a view of a workgroup buffer: the buffer's base
// alignment says nothing about the view's offset.
gpu.module @kernels {
  gpu.func @view(%x: memref<4xf32>) workgroup(%a : memref<16x68xf32, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %row = memref.subview %a[1, 1] [1, 8] [1, 1] : memref<16x68xf32, #gpu.address_space<workgroup>> to memref<8xf32, strided<[1], offset: 69>, #gpu.address_space<workgroup>>
    // expected-error @+1 {{'vector.load' op claims an alignment on a view of workgroup buffer 0 of kernel @view: aligning the buffer does not align the view}}
    %v = vector.load %row[%c0] {alignment = 16 : i64} : memref<8xf32, strided<[1], offset: 69>, #gpu.address_space<workgroup>>, vector<4xf32>
    vector.store %v, %x[%c0] : memref<4xf32>, vector<4xf32>
    gpu.return
  }
}
