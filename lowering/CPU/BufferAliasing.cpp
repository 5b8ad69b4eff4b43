//===- BufferAliasing.cpp - which buffers may share elements --------------===//
#include "lowering/CPU/BufferAliasing.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dsf {
Value rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  return v;
}

namespace {
/// An allocation, or the result of a call to a function of this module
/// that returns an allocation of its own there (the attention functions'
/// outputs).
bool isFreshAllocation(Value root, bool throughCalls = true) {
  Operation *def = root.getDefiningOp();
  if (def && isa<memref::AllocOp, memref::AllocaOp>(def))
    return true;
  auto call = dyn_cast_or_null<func::CallOp>(def);
  if (!call || !throughCalls)
    return false;
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
  if (!callee || callee.isExternal())
    return false;
  unsigned index = cast<OpResult>(root).getResultNumber();
  WalkResult returns = callee.walk([&](func::ReturnOp ret) {
    return isFreshAllocation(rootOf(ret.getOperand(index)), /*throughCalls=*/false) ? WalkResult::advance()
                                                                                     : WalkResult::interrupt();
  });
  return !returns.wasInterrupted();
}

} // namespace

bool isConstantTable(Value root) {
  auto get = root.getDefiningOp<memref::GetGlobalOp>();
  if (!get)
    return false;
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(get, get.getNameAttr());
  return global && global.getConstant();
}

namespace {
/// Two strided views of one buffer that can share no element: the same
/// source, sizes and strides, offsets equal but in one dimension, where
/// they differ by less than the stride (an element of one is never one of
/// the other's, dimension by dimension).
bool interleavedViewsApart(memref::SubViewOp a, memref::SubViewOp b) {
  // A dense row-major source: distinct indices are distinct elements.
  if (a.getSource() != b.getSource() || !a.getSourceType().getLayout().isIdentity() ||
      a.getMixedSizes() != b.getMixedSizes())
    return false;
  ArrayRef<int64_t> offsetsA = a.getStaticOffsets(), offsetsB = b.getStaticOffsets();
  ArrayRef<int64_t> stridesA = a.getStaticStrides(), stridesB = b.getStaticStrides();
  if (stridesA != stridesB || !a.getOffsets().empty() || !b.getOffsets().empty() || !a.getStrides().empty())
    return false;
  int differing = 0;
  for (size_t d = 0; d < offsetsA.size(); ++d) {
    if (offsetsA[d] == offsetsB[d])
      continue;
    int64_t delta = offsetsA[d] - offsetsB[d];
    if (++differing > 1 || stridesA[d] <= 1 || delta % stridesA[d] == 0 ||
        (delta < 0 ? -delta : delta) >= stridesA[d])
      return false;
  }
  return differing == 1;
}

/// Where a buffer's memory comes from, as far as apart() may rely on it:
/// an allocation of its own (or a call's that returns one), a function's
/// argument, or anything else (a loop's or a branch's result, a call that
/// may return what it was given: it may be any buffer).
enum class Origin { Fresh, Argument, Unknown };
Origin originOf(Value root) {
  if (isFreshAllocation(root))
    return Origin::Fresh;
  auto argument = dyn_cast<BlockArgument>(root);
  if (argument && argument.getOwner()->isEntryBlock() && isa<func::FuncOp>(argument.getOwner()->getParentOp()))
    return Origin::Argument;
  return Origin::Unknown;
}

} // namespace

bool apart(Value other, Value target) {
  if (other == target)
    return false;
  Value rootOther = rootOf(other), rootTarget = rootOf(target);
  if (rootOther != rootTarget) {
    // Two allocations, or an allocation and an argument (which existed
    // before it); arguments may alias each other, and two results of one
    // call may be views of one allocation there.
    Origin a = originOf(rootOther), b = originOf(rootTarget);
    if (a == Origin::Unknown || b == Origin::Unknown || (a == Origin::Argument && b == Origin::Argument))
      return false;
    Operation *defOther = rootOther.getDefiningOp(), *defTarget = rootTarget.getDefiningOp();
    return !(defOther && defOther == defTarget);
  }
  auto viewOther = other.getDefiningOp<memref::SubViewOp>();
  auto viewTarget = target.getDefiningOp<memref::SubViewOp>();
  return viewOther && viewTarget && interleavedViewsApart(viewOther, viewTarget);
}

bool sameView(Value a, Value b) {
  if (a == b)
    return true;
  Operation *viewA = a.getDefiningOp(), *viewB = b.getDefiningOp();
  return viewA && viewB && isa<memref::SubViewOp>(viewA) &&
         OperationEquivalence::isEquivalentTo(viewA, viewB, OperationEquivalence::IgnoreLocations);
}

std::optional<SmallVector<Value>> bodyLoads(Operation *op) {
  SmallVector<Value> loads;
  WalkResult body = op->walk([&](Operation *inner) {
    if (inner == op)
      return WalkResult::advance();
    if (auto load = dyn_cast<memref::LoadOp>(inner)) {
      loads.push_back(load.getMemRef());
      return WalkResult::advance();
    }
    if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    return isMemoryEffectFree(inner) ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (body.wasInterrupted())
    return std::nullopt;
  return loads;
}
} // namespace mlir::dsf
