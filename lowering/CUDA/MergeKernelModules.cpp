//===- MergeKernelModules.cpp - dsf-merge-kernel-modules ------------------===//
//
// gpu-kernel-outlining puts every kernel in a gpu.module of its own. Each
// module is a ptxas run at compile time and a cuModuleLoadData when the
// artifact is opened: thousands of each for a real-size model. This pass
// moves the kernels of one host function into one module (named after the
// function), keeping one copy of the constant globals they share.
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_MERGEKERNELMODULES
#include "lowering/Passes.h.inc"

namespace {
struct MergeKernelModulesPass : impl::MergeKernelModulesBase<MergeKernelModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable top(module);
    // Host function -> the kernel modules its launches use, in order.
    llvm::MapVector<Operation *, llvm::SetVector<gpu::GPUModuleOp>> byFunction;
    llvm::DenseMap<gpu::GPUModuleOp, unsigned> users;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto kernels = top.lookup<gpu::GPUModuleOp>(launch.getKernelModuleName());
      auto host = launch->getParentOfType<FunctionOpInterface>();
      if (!kernels || !host)
        return;
      if (byFunction[host].insert(kernels))
        ++users[kernels];
    });
    for (auto &[host, modules] : byFunction) {
      // A module launched from several functions stays where it is.
      SmallVector<gpu::GPUModuleOp> own;
      for (gpu::GPUModuleOp m : modules)
        if (users[m] == 1)
          own.push_back(m);
      if (own.size() < 2)
        continue;
      gpu::GPUModuleOp merged = own.front();
      SymbolTable mergedTable(merged);
      llvm::DenseMap<Attribute, Attribute> moduleRenames;  // old module name -> merged
      for (gpu::GPUModuleOp from : llvm::ArrayRef(own).drop_front()) {
        if (from.getTargetsAttr() != merged.getTargetsAttr()) {
          from.emitError("dsf-merge-kernel-modules: kernel modules of one function with different targets");
          return signalPassFailure();
        }
        for (Operation &op : llvm::make_early_inc_range(from.getBody()->without_terminator())) {
          auto symbol = llvm::dyn_cast<SymbolOpInterface>(op);
          Operation *existing = symbol ? mergedTable.lookup(symbol.getNameAttr()) : nullptr;
          if (existing) {
            // The same constant outlined into both modules: one copy.
            auto a = llvm::dyn_cast<memref::GlobalOp>(existing), b = llvm::dyn_cast<memref::GlobalOp>(op);
            if (a && b && a.getType() == b.getType() && a.getInitialValueAttr() == b.getInitialValueAttr() &&
                a.getConstant() && b.getConstant()) {
              op.erase();
              continue;
            }
            from.emitError("dsf-merge-kernel-modules: symbol @") << symbol.getName()
                << " is defined differently by two kernel modules of one function";
            return signalPassFailure();
          }
          op.moveBefore(merged.getBody()->getTerminator());
          if (symbol)
            mergedTable.insert(&op);
        }
        moduleRenames[from.getNameAttr()] = merged.getNameAttr();
      }
      host->walk([&](gpu::LaunchFuncOp launch) {
        auto it = moduleRenames.find(launch.getKernelModuleName());
        if (it == moduleRenames.end())
          return;
        launch.setKernelAttr(SymbolRefAttr::get(llvm::cast<StringAttr>(it->second),
                                                {FlatSymbolRefAttr::get(launch.getKernelName())}));
      });
      for (gpu::GPUModuleOp from : llvm::ArrayRef(own).drop_front())
        from.erase();
    }
  }
};
} // namespace
} // namespace mlir::dsf
