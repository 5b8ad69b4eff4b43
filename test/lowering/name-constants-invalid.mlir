// RUN: dsf-opt %s --dsf-name-constants -verify-diagnostics

// A table's new name is held by a symbol that is not a bufferized constant
// (a public global): an error naming the pass, the symbol and its op.
module {
  memref.global "private" constant @__constant_2xf32_7 : memref<2xf32> = dense<[1.0, 2.0]>
  // expected-error @below {{dsf-name-constants: symbol '__constant_2xf32' is taken by an op that is not a bufferized constant}}
  memref.global @__constant_2xf32 : memref<2xf32> = uninitialized
  func.func @use() -> memref<2xf32> {
    %a = memref.get_global @__constant_2xf32_7 : memref<2xf32>
    return %a : memref<2xf32>
  }
}
