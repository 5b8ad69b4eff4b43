// RUN: dsf-opt %s --dsf-align-workgroup-buffers | FileCheck %s

// Each workgroup buffer of a kernel gets the largest alignment its vector
// accesses claim (16 for the staged tile read as vector<4xf32>); a buffer
// with scalar accesses only keeps its element's; a larger alignment already
// there stays.
// CHECK-LABEL: gpu.func @tile
// CHECK-SAME: workgroup(%[[A:.*]] : memref<16x68xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[B:.*]] : memref<16x68xf32, #gpu.address_space<workgroup>>, %[[C:.*]] : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
gpu.module @kernels {
  gpu.func @tile(%x: memref<4xf32>) workgroup(%a : memref<16x68xf32, #gpu.address_space<workgroup>>, %b : memref<16x68xf32, #gpu.address_space<workgroup>>, %c : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64}) kernel {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %v = vector.load %a[%c0, %c4] {alignment = 16 : i64} : memref<16x68xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    %w = vector.load %a[%c0, %c0] {alignment = 8 : i64} : memref<16x68xf32, #gpu.address_space<workgroup>>, vector<2xf32>
    %s = memref.load %b[%c0, %c0] : memref<16x68xf32, #gpu.address_space<workgroup>>
    vector.store %v, %c[%c4] {alignment = 16 : i64} : memref<8xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    vector.store %v, %x[%c0] : memref<4xf32>, vector<4xf32>
    memref.store %s, %x[%c0] : memref<4xf32>
    gpu.return
  }
}
