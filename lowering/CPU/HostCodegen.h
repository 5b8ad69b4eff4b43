//===- HostCodegen.h - LLVM dialect -> a host shared object ----------------===//
#ifndef DSF_LOWERING_CPU_HOSTCODEGEN_H
#define DSF_LOWERING_CPU_HOSTCODEGEN_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::dsf {

struct HostCodegenOptions {
  /// LLVM's CPU name; the default runs on any x86-64 with SSE4.2 (x86-64-v2).
  std::string cpu = "x86-64-v2";
  unsigned optLevel = 2;
  /// The linker; empty: ld.lld-22, then ld.lld, from PATH.
  std::string linker;
};

/// Translates a module in the LLVM dialect (after dsf-lower-cpu, entry points
/// with llvm.emit_c_interface) to LLVM IR, adds `void dsf_entry_<name>(void
/// **args)` for each of `entries` (args[0]: the result's memref descriptor,
/// then one per argument), optimizes, emits an object and links it into an
/// ELF shared object, returned in `soBytes`.
LogicalResult buildHostLibrary(ModuleOp module, const std::vector<std::string> &entries,
                               const HostCodegenOptions &options, std::string &soBytes, std::string &error);

} // namespace mlir::dsf

#endif // DSF_LOWERING_CPU_HOSTCODEGEN_H
