//===- NameKernels.cpp - dsf-name-kernels ---------------------------------===//
//
// gpu-kernel-outlining names every kernel after its host function
// (prefill_layer20_kernel), so a profile of a real-size model is a thousand
// rows of the same few names. This pass renames each outlined kernel after
// the dsf op it came from, which dsf-to-linalg records in its location
// (NameLoc "attention", "linear.attn.wq_b"): prefill_layer20__attention_3,
// the ordinal counting that op's kernels in that function.
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_NAMEKERNELS
#include "lowering/Passes.h.inc"

namespace {
/// The first NameLoc in `loc` (fused and call-site locations searched in
/// order), or "".
std::string firstName(Location loc) {
  std::string found;
  loc->walk([&](Location inner) {
    if (auto name = llvm::dyn_cast<NameLoc>(inner)) {
      found = name.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// `text` as a PTX identifier: letters, digits and '_' only.
std::string identifier(StringRef text) {
  std::string out;
  for (char c : text)
    out += llvm::isAlnum(c) ? c : '_';
  return out;
}

struct NameKernelsPass : impl::NameKernelsBase<NameKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable modules(module);
    llvm::StringSet<> renamed;                     // gpu.modules already named
    llvm::StringMap<unsigned> ordinals;            // per host function and op
    module.walk([&](gpu::LaunchFuncOp launch) {
      StringRef moduleName = launch.getKernelModuleName().getValue();
      auto kernelModule = modules.lookup<gpu::GPUModuleOp>(moduleName);
      if (!kernelModule)
        return;
      auto kernel = SymbolTable::lookupSymbolIn(kernelModule, launch.getKernelName());
      auto kernelFunc = llvm::dyn_cast_or_null<gpu::GPUFuncOp>(kernel);
      if (!kernelFunc)
        return;
      if (!renamed.insert(moduleName).second) {
        // A module launched again keeps the name it was given.
        launch.setKernelAttr(SymbolRefAttr::get(kernelModule.getNameAttr(),
                                                {FlatSymbolRefAttr::get(kernelFunc.getNameAttr())}));
        return;
      }
      std::string op = firstName(launch.getLoc());
      if (op.empty())
        kernelFunc.walk([&](Operation *inner) {
          if (op.empty())
            op = firstName(inner->getLoc());
        });
      auto host = launch->getParentOfType<FunctionOpInterface>();
      std::string stem = (host ? host.getName().str() : std::string("kernel")) + "__" +
                         identifier(op.empty() ? "op" : op);
      std::string name = stem + "_" + std::to_string(ordinals[stem]++);
      kernelFunc.setName(name);
      launch.setKernelAttr(
          SymbolRefAttr::get(kernelModule.getNameAttr(), {FlatSymbolRefAttr::get(&getContext(), name)}));
    });
  }
};
} // namespace
} // namespace mlir::dsf
