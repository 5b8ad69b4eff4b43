//===- AlignWorkgroupBuffers.cpp - dsf-align-workgroup-buffers -------------===//
//
// A vector load or store's `alignment` is a promise the NVPTX backend
// relies on: ld.shared.v4.f32 needs a 16-byte aligned address. The tiled
// kernel keeps that promise within its shared tiles (rows of a multiple of
// 4 floats, 4-float runs), but gpu-kernel-outlining turns workgroup buffers
// into globals aligned to their element only (`.shared .align 4`), so the
// base address was aligned by the linker's luck. This pass gives each
// workgroup buffer of an outlined kernel the largest alignment any vector
// access of it claims (`llvm.align`, which convert-gpu-to-nvvm puts on the
// global), and rejects a claimed alignment it cannot make true: one on a
// view of the buffer, whose offset the base's alignment does not cover.
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_ALIGNWORKGROUPBUFFERS
#include "lowering/Passes.h.inc"

namespace {
/// The alignment a vector access claims, or 0 for another op.
uint64_t claimedAlignment(Operation *op) {
  std::optional<uint64_t> alignment;
  if (auto load = dyn_cast<vector::LoadOp>(op))
    alignment = load.getAlignment();
  else if (auto store = dyn_cast<vector::StoreOp>(op))
    alignment = store.getAlignment();
  return alignment.value_or(0);
}

struct AlignWorkgroupBuffersPass : impl::AlignWorkgroupBuffersBase<AlignWorkgroupBuffersPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    WalkResult result = getOperation().walk([&](gpu::GPUFuncOp kernel) {
      for (auto [index, buffer] : llvm::enumerate(kernel.getWorkgroupAttributions())) {
        uint64_t alignment = 0;
        for (Operation *user : buffer.getUsers()) {
          if (isa<ViewLikeOpInterface>(user)) {
            for (Operation *viewUser : user->getResult(0).getUsers())
              if (claimedAlignment(viewUser)) {
                viewUser->emitOpError("claims an alignment on a view of workgroup buffer ")
                    << index << " of kernel @" << kernel.getName()
                    << ": aligning the buffer does not align the view";
                return WalkResult::interrupt();
              }
            continue;
          }
          alignment = std::max(alignment, claimedAlignment(user));
        }
        if (!alignment)
          continue;
        if (auto existing = llvm::dyn_cast_or_null<IntegerAttr>(
                kernel.getWorkgroupAttributionAttr(index, LLVM::LLVMDialect::getAlignAttrName())))
          alignment = std::max(alignment, uint64_t(existing.getInt()));
        kernel.setWorkgroupAttributionAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                                           b.getI64IntegerAttr(int64_t(alignment)));
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
