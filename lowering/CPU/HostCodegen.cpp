//===- HostCodegen.cpp - LLVM dialect -> a host shared object --------------===//
//
// LLVM in-process for the object (the TargetMachine of the host triple), and
// ld.lld (installed with the toolchain) for the shared object: linking is the
// one step LLVM's libraries do not offer as an API without lld's own
// libraries, which Debian does not ship as a shared library.
//
//===----------------------------------------------------------------------===//
#include "lowering/CPU/HostCodegen.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include <set>
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace {
/// void dsf_entry_<name>(void **args) { _mlir_ciface_<name>(args[0], args[1], ...); }
bool addPackedEntry(llvm::Module &m, const std::string &name, std::string &error) {
  llvm::Function *ciface = m.getFunction("_mlir_ciface_" + name);
  if (!ciface) {
    error = "entry point '" + name + "' has no C interface (_mlir_ciface_" + name + ")";
    return false;
  }
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto *entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, "dsf_entry_" + name, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<llvm::Value *> args;
  for (unsigned i = 0; i < ciface->arg_size(); ++i) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptr, entry->getArg(0), i);
    args.push_back(b.CreateLoad(ptr, slot));
  }
  b.CreateCall(ciface, args);
  b.CreateRetVoid();
  return true;
}
} // namespace

LogicalResult mlir::dsf::buildHostLibrary(ModuleOp module, const std::vector<std::string> &entries,
                                          const HostCodegenOptions &options, std::string &soBytes,
                                          std::string &error) {
  registerBuiltinDialectTranslation(*module->getContext());
  registerLLVMDialectTranslation(*module->getContext());
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m = translateModuleToLLVMIR(module, llvmContext, "dsf");
  if (!m) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  for (const std::string &name : entries)
    if (!addPackedEntry(*m, name, error))
      return failure();
  // Every other function (one per layer) stays out of line: the optimizer
  // then works on one layer at a time, so compile time grows linearly with
  // the model's depth instead of with the square of one giant function.
  std::set<std::string> entrySymbols;
  for (const std::string &name : entries)
    entrySymbols.insert({name, "_mlir_ciface_" + name, "dsf_entry_" + name});
  for (llvm::Function &f : *m)
    if (!f.isDeclaration() && !entrySymbols.count(f.getName().str()))
      f.addFnAttr(llvm::Attribute::NoInline);

  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string lookupError;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "no LLVM target for " + triple.str() + ": " + lookupError;
    return failure();
  }
  llvm::TargetOptions targetOptions;
  // Constructors (a CUDA artifact loads its kernel modules in them) go to
  // .init_array, which the dynamic loader runs; .ctors needs crt files this
  // link does not have.
  targetOptions.UseInitArray = true;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, options.cpu, "", targetOptions, llvm::Reloc::PIC_, std::nullopt,
      options.optLevel >= 2 ? llvm::CodeGenOptLevel::Default : llvm::CodeGenOptLevel::Less));
  if (!machine) {
    error = "cannot create a target machine for " + triple.str() + " / " + options.cpu;
    return failure();
  }
  m->setTargetTriple(triple);
  m->setDataLayout(machine->createDataLayout());
  if (llvm::verifyModule(*m, &llvm::errs())) {
    error = "the generated LLVM IR does not verify";
    return failure();
  }

  // The standard optimization pipeline, as clang -O2 runs it.
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(machine.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel level = options.optLevel >= 3   ? llvm::OptimizationLevel::O3
                                    : options.optLevel == 2 ? llvm::OptimizationLevel::O2
                                    : options.optLevel == 1 ? llvm::OptimizationLevel::O1
                                                            : llvm::OptimizationLevel::O0;
    llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0 ? pb.buildO0DefaultPipeline(level)
                                                                        : pb.buildPerModuleDefaultPipeline(level);
    mpm.run(*m, mam);
  }

  llvm::SmallString<128> objPath, soPath;
  if (auto ec = llvm::sys::fs::createTemporaryFile("dsf-host", "o", objPath)) {
    error = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(objPath);
    if (!soPath.empty())
      llvm::sys::fs::remove(soPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream obj(objPath, ec);
    if (ec) {
      error = "cannot write " + objPath.str().str() + ": " + ec.message();
      return failure();
    }
    llvm::legacy::PassManager emit;
    if (machine->addPassesToEmitFile(emit, obj, nullptr, llvm::CodeGenFileType::ObjectFile)) {
      error = "the target cannot emit object files";
      return failure();
    }
    emit.run(*m);
  }
  if (auto ec = llvm::sys::fs::createTemporaryFile("dsf-host", "so", soPath)) {
    error = "cannot create a temporary file: " + ec.message();
    return failure();
  }
  std::string linker = options.linker;
  if (linker.empty()) {
    for (const char *candidate : {"ld.lld-22", "ld.lld"})
      if (auto found = llvm::sys::findProgramByName(candidate)) {
        linker = *found;
        break;
      }
    if (linker.empty()) {
      error = "no linker: ld.lld-22 (Debian's lld-22) is not on PATH";
      return failure();
    }
  }
  std::string message;
  llvm::SmallVector<llvm::StringRef> argv{linker, "-shared", "--no-undefined-version", "-o", soPath, objPath};
  int rc = llvm::sys::ExecuteAndWait(linker, argv, std::nullopt, {}, 0, 0, &message);
  if (rc != 0) {
    error = "linking with " + linker + " failed" + (message.empty() ? "" : ": " + message);
    return failure();
  }
  auto so = llvm::MemoryBuffer::getFile(soPath);
  if (!so) {
    error = "cannot read the linked library: " + so.getError().message();
    return failure();
  }
  soBytes = (*so)->getBuffer().str();
  return success();
}
