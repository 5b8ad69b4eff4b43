// RUN: dsf-opt %s --dsf-place-buffers | FileCheck %s

// Host scratch (here as the lowered deallocations make it: arrays of
// addresses, written by the host and read by a helper) goes to the stack
// and loses its dealloc; a buffer a kernel writes stays a (device)
// allocation; the host may read the entry point's positions (a token
// input) and pass addresses of anything.
// CHECK-LABEL: func.func @prefill
// CHECK: memref.load %arg1
// CHECK: %[[DEV:.*]] = memref.alloc(%{{.*}}) : memref<?x8xf32>
// CHECK: gpu.launch_func @k::@k {{.*}} args(%[[DEV]] : memref<?x8xf32>)
// CHECK: %[[PTRS:.*]] = memref.alloca() : memref<2xindex>
// CHECK: memref.store %{{.*}}, %[[PTRS]]
// CHECK: call @helper(%{{.*}})
// CHECK-NOT: memref.dealloc %[[PTRS]]
// CHECK: return %[[DEV]]
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%out: memref<?x8xf32>) kernel {
      gpu.return
    }
  }
  func.func private @helper(%ptrs: memref<?xindex>) {
    %c0 = arith.constant 0 : index
    %p = memref.load %ptrs[%c0] : memref<?xindex>
    return
  }
  func.func @prefill(%ids: memref<?xi32>, %positions: memref<?xi32>, %w: memref<8xf32>) -> memref<?x8xf32>
      attributes {dsf.prefill = "full", dsf.state = [], dsf.weights = [@w]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %first = memref.load %positions[%c0] : memref<?xi32>
    %n = arith.index_cast %first : i32 to index
    %out = memref.alloc(%n) : memref<?x8xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<?x8xf32>)
    %ptrs = memref.alloc() : memref<2xindex>
    %addr = memref.extract_aligned_pointer_as_index %out : memref<?x8xf32> -> index
    memref.store %addr, %ptrs[%c0] : memref<2xindex>
    %cast = memref.cast %ptrs : memref<2xindex> to memref<?xindex>
    call @helper(%cast) : (memref<?xindex>) -> ()
    memref.dealloc %ptrs : memref<2xindex>
    return %out : memref<?x8xf32>
  }
}
