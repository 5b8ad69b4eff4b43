// RUN: dsf-opt %s --dsf-name-constants | FileCheck %s

// Bufferization named two tables of one type in the order it visited the
// functions (here the second use got the plain name): they are renamed in
// the order of their first use, every reference with them, and moved to the
// module's start in that order; a table of another type is named after its
// own type; an unused one comes last; a global that is not a private
// constant (public, or mutable) keeps its name and place.
// CHECK-LABEL: module
// CHECK-NEXT: memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT: memref.global "private" constant @__constant_4xi32 : memref<4xi32> = dense<[1, 2, 3, 4]>
// CHECK-NEXT: memref.global "private" constant @__constant_2xf32_0 : memref<2xf32> = dense<[3.000000e+00, 4.000000e+00]>
// CHECK-NEXT: memref.global "private" constant @__constant_2xf32_1 : memref<2xf32> = dense<[5.000000e+00, 6.000000e+00]>
// CHECK-NEXT: memref.global @__constant_8xf32 : memref<8xf32> = uninitialized
// CHECK-NEXT: memref.global "private" @__constant_3xf32 : memref<3xf32> = uninitialized
// CHECK-LABEL: func.func @first
// CHECK-NEXT: memref.get_global @__constant_2xf32 : memref<2xf32>
// CHECK-NEXT: memref.get_global @__constant_4xi32 : memref<4xi32>
// CHECK-LABEL: func.func @second
// CHECK-NEXT: memref.get_global @__constant_2xf32_0 : memref<2xf32>
// CHECK-NEXT: memref.get_global @__constant_2xf32 : memref<2xf32>
// CHECK-NEXT: memref.get_global @__constant_8xf32 : memref<8xf32>
module {
  memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<[3.0, 4.0]>
  memref.global @__constant_8xf32 : memref<8xf32> = uninitialized
  memref.global "private" constant @__constant_2xf32_1 : memref<2xf32> = dense<[5.0, 6.0]>
  memref.global "private" constant @__constant_2xf32_0 : memref<2xf32> = dense<[1.0, 2.0]>
  memref.global "private" @__constant_3xf32 : memref<3xf32> = uninitialized
  memref.global "private" constant @__constant_4xi32_0 : memref<4xi32> = dense<[1, 2, 3, 4]>
  func.func @first() -> (memref<2xf32>, memref<4xi32>) {
    %a = memref.get_global @__constant_2xf32_0 : memref<2xf32>
    %b = memref.get_global @__constant_4xi32_0 : memref<4xi32>
    return %a, %b : memref<2xf32>, memref<4xi32>
  }
  func.func @second() -> (memref<2xf32>, memref<2xf32>, memref<8xf32>) {
    %a = memref.get_global @__constant_2xf32 : memref<2xf32>
    %b = memref.get_global @__constant_2xf32_0 : memref<2xf32>
    %c = memref.get_global @__constant_8xf32 : memref<8xf32>
    return %a, %b, %c : memref<2xf32>, memref<2xf32>, memref<8xf32>
  }
}
