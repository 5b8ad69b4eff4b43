//===- GpuGridDependencyControl.cpp - dsf-gpu-grid-dependency-control -----===//
//
// A decode step is thousands of small kernels in a row (2,473 in a 40-layer
// V4.1-shaped step), each waiting for the one before it. Replayed as a CUDA
// graph a launch still costs its scheduling and the ramp of its first
// blocks, about 1.3 us (BENCHMARKS.md), paid while the GPU idles between
// kernels. sm_90's programmatic dependent launch lets the next kernel be
// scheduled while the last blocks of the one before it run, provided the
// next kernel itself waits (griddepcontrol.wait) before touching memory the
// one before it writes or reads.
//
// So every kernel begins with that wait, before any of its own code: the
// ordering the stream gave is kept whatever the kernel reads or writes (its
// body is never inspected), and a chain stays two kernels deep (each signals
// launch_dependents only after its wait returns, so the kernel after it is
// scheduled no earlier than the one before it has completed). Launched
// without the attribute (an old driver, DSF_CUDA_PROGRAMMATIC_LAUNCH=0) the
// wait returns at once. The module's marker global is the promise the
// runtime reads (cuModuleGetGlobal): only kernels of a marked module are
// launched with programmatic stream serialization, never another module's
// (the runtime's own codec kernels do not wait).
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "dsf/artifact.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUGRIDDEPENDENCYCONTROL
#include "lowering/Passes.h.inc"

namespace {
struct GpuGridDependencyControlPass : impl::GpuGridDependencyControlBase<GpuGridDependencyControlPass> {
  using GpuGridDependencyControlBase::GpuGridDependencyControlBase;
  void runOnOperation() override {
    for (auto kernels : getOperation().getOps<gpu::GPUModuleOp>()) {
      bool any = false;
      for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
        if (!kernel.isKernel() || kernel.isExternal())
          continue;
        OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
        Location loc = kernel.getLoc();
        // The wait as asm that clobbers memory, not nvvm.griddepcontrol
        // wait: LLVM declares that intrinsic to touch no memory, so nothing
        // would stop it from hoisting a load (an invariant ld.global.nc of a
        // buffer the grid before writes) above the wait.
        LLVM::InlineAsmOp::create(b, loc, TypeRange{}, ValueRange{}, "griddepcontrol.wait;", "~{memory}",
                                  /*has_side_effects=*/true, /*is_align_stack=*/false,
                                  LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
        if (launchDependentsAtEntry)
          NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::launch_dependents);
        any = true;
      }
      if (!any)
        continue;
      if (Operation *existing = SymbolTable::lookupSymbolIn(kernels, ::dsf::rt::kGridDependencyMarker)) {
        existing->emitOpError("defines @") << ::dsf::rt::kGridDependencyMarker << " in gpu.module @" << kernels.getName()
                                           << ": dsf-gpu-grid-dependency-control marks a module's kernels with "
                                              "that symbol, so no other may be named so";
        return signalPassFailure();
      }
      // An i32 in global memory (address space 1), external so that it
      // survives into the PTX as a .visible .global the runtime can find.
      OpBuilder b = OpBuilder::atBlockBegin(kernels.getBody());
      auto i32 = b.getI32Type();
      LLVM::GlobalOp::create(b, kernels.getLoc(), i32, /*isConstant=*/true, LLVM::Linkage::External,
                             ::dsf::rt::kGridDependencyMarker, b.getI32IntegerAttr(1), /*alignment=*/4, /*addrSpace=*/1);
    }
  }
};
} // namespace
} // namespace mlir::dsf
