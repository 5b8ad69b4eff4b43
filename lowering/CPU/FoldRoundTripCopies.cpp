//===- FoldRoundTripCopies.cpp - dsf-fold-round-trip-copies ---------------===//
//
// RoPE updates the even and the odd channels of a buffer in place, one
// generic with two outputs: two strided views of one buffer
// (DsfToLinalg.cpp). One-shot bufferization cannot tell that the first
// insert_slice's destination is overwritten where the second inserts, so
// it stages the odd view through a fresh buffer:
//
//   %t = memref.alloc          memref.copy %odd, %t
//   linalg.generic ... outs(%even, %t)
//   memref.copy %t, %odd
//
// On the GPU that is three kernels where one does (9 of a V4.1 decode
// layer's kernels were RoPE's). When every op between the two copies
// touches %t only element by element (identity indexing maps) and nothing
// that may alias %odd, the ops can update %odd itself: each element of %t
// holds %odd's value when it is read and goes back to the same element of
// %odd, so the copies and %t go. "May alias" is decided from where each
// buffer comes from: two buffers of different allocations, or of an
// allocation and an argument, are apart; two strided views of one buffer
// are apart when they differ in one dimension's offset by less than that
// dimension's stride (the even and odd channels); anything else is
// assumed to alias, and the copies stay.
//
//===----------------------------------------------------------------------===//
#include "lowering/CPU/BufferAliasing.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_FOLDROUNDTRIPCOPIES
#include "lowering/Passes.h.inc"

namespace {
/// Whether `op` (between the copies) may work on `target` in place of
/// `staged`: a linalg op that reads and writes `staged` only through
/// identity maps, every other buffer it or its body touches apart from
/// `target`; a copy between buffers apart from `target`; or an op that
/// touches no memory.
bool suitsInPlace(Operation *op, Value staged, Value target) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return copy.getSource() != staged && copy.getTarget() != staged && apart(copy.getSource(), target) &&
           apart(copy.getTarget(), target);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      if (operand.get() == staged) {
        if (!linalgOp.getMatchingIndexingMap(&operand).isIdentity())
          return false;
      } else if (!apart(operand.get(), target) &&
                 !(linalgOp.isDpsInput(&operand) && isConstantTable(rootOf(operand.get())))) {
        return false;
      }
    }
    // The body: loads of other buffers (tables) only, apart from the target.
    std::optional<SmallVector<Value>> loads = bodyLoads(op);
    return loads && llvm::all_of(*loads, [&](Value table) {
             return table != staged && (isConstantTable(rootOf(table)) || apart(table, target));
           });
  }
  return isMemoryEffectFree(op) && llvm::none_of(op->getOperands(), [&](Value v) { return v == staged; });
}

/// `first` copies `target` into a fresh buffer that a later copy puts back:
/// when the ops between may update `target` itself, fold the two and
/// return the copy back (erased).
Operation *foldRoundTrip(memref::CopyOp first) {
  Value target = first.getSource(), staged = first.getTarget();
  auto alloc = staged.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != first->getBlock() || !alloc.getType().getLayout().isIdentity())
    return nullptr;
  memref::CopyOp second;
  for (Operation *op = first->getNextNode(); op; op = op->getNextNode()) {
    if (auto copy = dyn_cast<memref::CopyOp>(op); copy && copy.getSource() == staged) {
      second = copy;
      break;
    }
    if (!suitsInPlace(op, staged, target))
      return nullptr;
  }
  if (!second || !sameView(second.getTarget(), target))
    return nullptr;
  // Nothing but these may use the staged buffer (no later reader, no
  // dealloc: the pass runs before the deallocations are placed).
  for (Operation *user : staged.getUsers())
    if (user->getBlock() != first->getBlock() || user->isBeforeInBlock(first) || second->isBeforeInBlock(user))
      return nullptr;
  // The ops between see `target` in the staged buffer's place: its type
  // (a strided layout) replaces the staged one's in the linalg ops, whose
  // bodies do not depend on the layout.
  for (OpOperand &use : llvm::make_early_inc_range(staged.getUses()))
    if (use.getOwner() != first && use.getOwner() != second)
      use.set(target);
  Operation *back = second;
  second.erase();
  first.erase();
  if (alloc->use_empty())
    alloc.erase();
  return back;
}

struct FoldRoundTripCopiesPass : impl::FoldRoundTripCopiesBase<FoldRoundTripCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    // A fold erases a later copy of the list (the one back): skip it.
    llvm::SmallPtrSet<Operation *, 16> erased;
    for (memref::CopyOp copy : copies) {
      if (erased.count(copy.getOperation()))
        continue;
      if (Operation *back = foldRoundTrip(copy))
        erased.insert(back);
    }
  }
};
} // namespace
} // namespace mlir::dsf
