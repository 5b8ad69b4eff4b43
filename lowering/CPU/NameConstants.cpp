//===- NameConstants.cpp - dsf-name-constants ------------------------------===//
//
// One-shot bufferization turns each tensor constant into a private
// memref.global named after its type (`__constant_32xf32`, then `_0`,
// `_1`, ...) in the order it visits the functions, and MLIR 22 orders them
// through pointer-keyed maps (llvm-project#184722 fixes it after 22): two
// RoPE tables of one type swap names from one run to the next, and the
// artifact's bytes with them. This pass renames those globals in the order
// of their first use in the module, and puts them at its start in that
// order, so that the same model compiles to the same bytes.
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_NAMECONSTANTS
#include "lowering/Passes.h.inc"

namespace {
constexpr llvm::StringLiteral kPrefix = "__constant_";

/// A global that bufferization made for a tensor constant.
bool isBufferizedConstant(memref::GlobalOp global) {
  return global.getConstant() && global.isPrivate() && global.getSymName().starts_with(kPrefix);
}

/// `__constant_` and the type, as bufferization spells it: 32xf32, 4x8xi32.
std::string typeName(memref::GlobalOp global) {
  std::string name;
  llvm::raw_string_ostream os(name);
  os << kPrefix;
  for (int64_t d : global.getType().getShape())
    os << d << "x";
  os << global.getType().getElementType();
  return name;
}

struct NameConstantsPass : impl::NameConstantsBase<NameConstantsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<memref::GlobalOp> constants;
    for (auto global : module.getOps<memref::GlobalOp>())
      if (isBufferizedConstant(global))
        constants[global.getSymName()] = global;
    if (constants.empty())
      return;
    // The order: first uses in a walk of the module (its ops in order, so the
    // same IR gives the same order), then the unused in module order.
    llvm::MapVector<StringRef, memref::GlobalOp> ordered;
    module.walk([&](memref::GetGlobalOp get) {
      auto it = constants.find(get.getName());
      if (it != constants.end())
        ordered.insert({it->getKey(), it->second});
    });
    for (auto global : module.getOps<memref::GlobalOp>())
      if (isBufferizedConstant(global))
        ordered.insert({global.getSymName(), global});
    // New names: the type's, then _0, _1, ... for the next of that type.
    SymbolTable symbols(module);
    llvm::StringMap<unsigned> seen;
    DenseMap<StringAttr, StringAttr> renames;
    SmallVector<std::pair<memref::GlobalOp, StringAttr>> named;
    for (auto &[oldName, global] : ordered) {
      std::string base = typeName(global);
      unsigned n = seen[base]++;
      std::string name = n == 0 ? base : base + "_" + std::to_string(n - 1);
      Operation *holder = symbols.lookup(name);
      if (holder && !(isa<memref::GlobalOp>(holder) && isBufferizedConstant(cast<memref::GlobalOp>(holder)))) {
        holder->emitError() << getArgument() << ": symbol '" << name
                            << "' is taken by an op that is not a bufferized constant";
        return signalPassFailure();
      }
      StringAttr to = StringAttr::get(&getContext(), name);
      renames[global.getSymNameAttr()] = to;
      named.push_back({global, to});
    }
    // Every reference at once (the new names are a permutation of the old
    // ones when types repeat).
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](SymbolRefAttr ref) -> std::optional<std::pair<Attribute, WalkResult>> {
      auto it = renames.find(ref.getRootReference());
      if (it == renames.end())
        return std::nullopt;
      return std::make_pair(SymbolRefAttr::get(it->second, ref.getNestedReferences()), WalkResult::skip());
    });
    module.walk([&](Operation *op) {
      if (!isa<memref::GlobalOp>(op))
        replacer.replaceElementsIn(op, /*replaceAttrs=*/true, /*replaceLocs=*/false, /*replaceTypes=*/false);
    });
    Block *body = module.getBody();
    Operation *after = nullptr;
    for (auto &[global, to] : named) {
      global.setSymNameAttr(to);
      if (after)
        global->moveAfter(after);
      else
        global->moveBefore(body, body->begin());
      after = global;
    }
  }
};
} // namespace
} // namespace mlir::dsf
