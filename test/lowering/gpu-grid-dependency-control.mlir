// RUN: dsf-opt %s --dsf-gpu-grid-dependency-control | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-grid-dependency-control --convert-gpu-to-nvvm | FileCheck %s --check-prefix=NVVM

// Each kernel of each module waits for the grids before it, then lets the
// next launch, before any of its own code; a device function (not launched)
// is left alone; a module with kernels gets the marker the runtime reads, a
// module without any does not.
// CHECK-LABEL: gpu.module @layer_kernel {
// CHECK-NEXT: llvm.mlir.global external constant @dsf_grid_dependency_control(1 : i32) {addr_space = 1 : i32, alignment = 4 : i64} : i32
// CHECK: gpu.func @layer__add_0(
// CHECK-NEXT: llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"  : () -> ()
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: arith.constant 0 : index
// CHECK: gpu.func @layer__scale_0(
// CHECK-NEXT: llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"  : () -> ()
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: memref.load
// CHECK: gpu.func @helper(
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.module @no_kernels {
// CHECK-NOT: dsf_grid_dependency_control
// CHECK: gpu.func @only_helper(

// The marker survives the NVVM lowering as a global the PTX keeps, and the
// wait still comes before the kernel's first memory access.
// NVVM-LABEL: gpu.module @layer_kernel {
// NVVM: llvm.mlir.global external constant @dsf_grid_dependency_control(1 : i32)
// NVVM: llvm.func @layer__add_0(
// NVVM-NOT: llvm.load
// NVVM: llvm.inline_asm has_side_effects "griddepcontrol.wait;", "~{memory}"
// NVVM-NEXT: nvvm.griddepcontrol launch_dependents
// NVVM: llvm.load
module attributes {gpu.container_module} {
  gpu.module @layer_kernel {
    gpu.func @layer__add_0(%x: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %x[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @layer__scale_0(%x: memref<4xf32>, %i: index) kernel {
      %v = memref.load %x[%i] : memref<4xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %x[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @helper(%x: memref<4xf32>) {
      gpu.return
    }
  }
  gpu.module @no_kernels {
    gpu.func @only_helper(%x: memref<4xf32>) {
      gpu.return
    }
  }
}
