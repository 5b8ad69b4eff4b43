// RUN: dsf-opt %s --dsf-place-buffers --split-input-file -verify-diagnostics

// The host code reads a buffer a kernel writes.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%out: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @f() -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %out = memref.alloc() : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<4xf32>)
    // expected-error @below {{the host code touches a buffer that kernels use}}
    %v = memref.load %out[%c0] : memref<4xf32>
    return %v : f32
  }
}

// -----

// The host code writes an entry point's argument.
module attributes {gpu.container_module} {
  func.func @prefill(%ids: memref<?xi32>, %w: memref<8xf32>) attributes {dsf.prefill = "full", dsf.weights = [@w]} {
    %c0 = arith.constant 0 : index
    %z = arith.constant 0 : i32
    // expected-error @below {{the host code writes argument 0 of entry point 'prefill'}}
    memref.store %z, %ids[%c0] : memref<?xi32>
    return
  }
}

// -----

// The host code reads a weight (device memory), through a view and a call.
module attributes {gpu.container_module} {
  func.func private @peek(%w: memref<?xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %v = memref.load %w[%c0] : memref<?xf32>
    return %v : f32
  }
  func.func @prefill(%ids: memref<?xi32>, %w: memref<8xf32>) -> f32 attributes {dsf.prefill = "full", dsf.weights = [@w]} {
    %cast = memref.cast %w : memref<8xf32> to memref<?xf32>
    // expected-error @below {{the host code reads argument 1 of entry point 'prefill', a state or weight buffer}}
    %v = call @peek(%cast) : (memref<?xf32>) -> f32
    return %v : f32
  }
}

// -----

// A decode's state input is not a token input either.
module attributes {gpu.container_module} {
  func.func @decode(%ids: memref<?xi32>, %kv: memref<?x4xf32>, %w: memref<8xf32>) -> f32
      attributes {dsf.state = ["layers.0.kv"], dsf.weights = [@w]} {
    %c0 = arith.constant 0 : index
    // expected-error @below {{the host code reads argument 1 of entry point 'decode'}}
    %v = memref.load %kv[%c0, %c0] : memref<?x4xf32>
    return %v : f32
  }
}

// -----

// Host scratch must not leave its function (it lives on the stack).
module attributes {gpu.container_module} {
  func.func @f() -> memref<2xindex> {
    %c0 = arith.constant 0 : index
    %p = memref.alloc() : memref<2xindex>
    memref.store %c0, %p[%c0] : memref<2xindex>
    // expected-error @below {{host scratch leaves the function that allocates it}}
    return %p : memref<2xindex>
  }
}

// -----

// Host scratch of dynamic size cannot go to the stack.
module attributes {gpu.container_module} {
  func.func @f(%n: index) {
    %c0 = arith.constant 0 : index
    // expected-error @below {{host scratch of dynamic size}}
    %p = memref.alloc(%n) : memref<?xindex>
    memref.store %c0, %p[%c0] : memref<?xindex>
    memref.dealloc %p : memref<?xindex>
    return
  }
}

// -----

// A kernel cannot read a host global.
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<1.0>
  gpu.module @k {
    gpu.func @k(%t: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @f() {
    %c1 = arith.constant 1 : index
    %t = memref.get_global @table : memref<4xf32>
    // expected-error @below {{a kernel is given host memory}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%t : memref<4xf32>)
    return
  }
}

// -----

// A buffer a call returns is device memory.
module attributes {gpu.container_module} {
  func.func private @make() -> memref<4xf32>
  func.func @f() -> f32 {
    %c0 = arith.constant 0 : index
    %b = call @make() : () -> memref<4xf32>
    // expected-error @below {{the host code touches a buffer returned by a call}}
    %v = memref.load %b[%c0] : memref<4xf32>
    return %v : f32
  }
}

// -----

// A buffer that flows through an op the pass does not know.
module attributes {gpu.container_module} {
  func.func @f(%c: i1) {
    %a = memref.alloc() : memref<4xf32>
    %b = memref.alloc() : memref<4xf32>
    // expected-error @below {{cannot follow a buffer through this op}}
    %s = arith.select %c, %a, %b : memref<4xf32>
    return
  }
}

// -----

// A batched step reads its token positions on the host: its launches are
// replayed as a CUDA graph with the next step's inputs, so it must not.
module attributes {gpu.container_module} {
  func.func @batch_decode(%ids: memref<?xi32>, %pos: memref<?xi32>, %ring: memref<?x4x8xf32>, %w: memref<8xf32>) -> index
      attributes {dsf.batched, dsf.state = ["layers.0.window"], dsf.page_tables = [], dsf.weights = [@w]} {
    %c0 = arith.constant 0 : index
    // expected-error @below {{the host code reads argument 1 of batched entry point 'batch_decode', whose launches are replayed with other inputs (a CUDA graph)}}
    %p = memref.load %pos[%c0] : memref<?xi32>
    %i = arith.index_cast %p : i32 to index
    return %i : index
  }
}
