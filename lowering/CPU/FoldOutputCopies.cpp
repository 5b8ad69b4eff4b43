//===- FoldOutputCopies.cpp - dsf-fold-output-copies ----------------------===//
//
// A cache or window write appends the rows an op just computed to the rows
// the sequence had: one-shot bufferization computes them into a fresh
// buffer and copies that into the concatenation's view (a quantizer's
// output into the window it is written to):
//
//   %t = memref.alloc          linalg.generic ins(%x) outs(%t)   // the rows
//   %all = memref.alloc        memref.copy %prior, %head          // the old rows
//   %tail = memref.subview %all[%n, 0] ...
//   memref.copy %t, %tail
//
// On the GPU the copy is a kernel of its own (three a compressed V4.1
// layer), on the CPU a pass over the rows. When every op that uses %t
// writes nothing but %t (an elementwise linalg op, or a copy into it) and
// may move down to the copy, those ops write %tail there instead, and the
// copy and %t go. They may move when no op they pass writes a buffer they
// read (BufferAliasing.h decides what may alias) and what they read is
// apart from %tail (they write it while they read). Ops that pass them
// (the copy of the old rows, the allocation, views) keep their order with
// every write to %tail, which happens where the copy did, so every value
// is the same bit for bit.
//
//===----------------------------------------------------------------------===//
#include "lowering/CPU/BufferAliasing.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_FOLDOUTPUTCOPIES
#include "lowering/Passes.h.inc"

namespace {
/// The buffers `writer` (a user of `staged`) reads but constant tables
/// (which nothing writes), or nullopt when it may not write `target` in
/// `staged`'s place: an elementwise linalg op whose only output is
/// `staged`, its body free of memory effects but loads, or a copy into
/// `staged`; nothing it reads may alias `target`.
std::optional<SmallVector<Value>> readsOfWriter(Operation *writer, Value staged, Value target) {
  SmallVector<Value> reads;
  if (auto copy = dyn_cast<memref::CopyOp>(writer)) {
    if (copy.getTarget() != staged || copy.getSource() == staged)
      return std::nullopt;
    reads.push_back(copy.getSource());
  } else if (auto linalgOp = dyn_cast<linalg::LinalgOp>(writer)) {
    // Elementwise: a reduction or a product over `target`'s strided view
    // would change which GPU kernel the op becomes.
    if (!linalgOp.hasPureBufferSemantics() || linalgOp.getNumReductionLoops() != 0 ||
        writer->getNumResults() != 0 || linalgOp.getNumDpsInits() != 1 || linalgOp.getDpsInits()[0] != staged)
      return std::nullopt;
    for (OpOperand *in : linalgOp.getDpsInputOperands())
      if (isa<MemRefType>(in->get().getType())) {
        if (in->get() == staged)
          return std::nullopt;
        reads.push_back(in->get());
      }
    std::optional<SmallVector<Value>> loads = bodyLoads(writer);
    if (!loads || llvm::is_contained(*loads, staged))
      return std::nullopt;
    reads.append(loads->begin(), loads->end());
  } else {
    return std::nullopt;
  }
  llvm::erase_if(reads, [](Value read) { return isConstantTable(rootOf(read)); });
  if (!llvm::all_of(reads, [&](Value read) { return apart(read, target); }))
    return std::nullopt;
  return reads;
}

/// Whether `op`, between the writers, may run before them: it writes (or
/// frees) nothing that may alias what they read. Allocations, views and
/// pure ops always may.
bool writesApartFrom(Operation *op, ArrayRef<Value> reads) {
  if (isMemoryEffectFree(op))
    return true;
  std::optional<SmallVector<MemoryEffects::EffectInstance>> effects = getEffectsRecursively(op);
  if (!effects)
    return false;
  for (const MemoryEffects::EffectInstance &effect : *effects) {
    if (isa<MemoryEffects::Read, MemoryEffects::Allocate>(effect.getEffect()))
      continue;
    Value written = effect.getValue();
    if (!written || !isa<MemRefType>(written.getType()))
      return false;
    for (Value read : reads)
      if (!apart(written, read))
        return false;
  }
  return true;
}

/// `copy` puts a fresh buffer into its target: when the ops that write the
/// buffer may write the target instead (see the file's comment), move them
/// to the copy, retarget them and erase the copy (and the buffer).
bool foldOutputCopy(memref::CopyOp copy) {
  Value staged = copy.getSource(), target = copy.getTarget();
  auto alloc = staged.getDefiningOp<memref::AllocOp>();
  Block *block = copy->getBlock();
  if (!alloc || alloc->getBlock() != block || !alloc.getType().getLayout().isIdentity() ||
      rootOf(target) == staged)
    return false;
  // Every other user writes the buffer, in this block before the copy (the
  // pass runs before the deallocations are placed: nothing reads it later).
  SmallVector<Operation *> writers;
  for (Operation *user : staged.getUsers()) {
    if (user == copy)
      continue;
    if (user->getBlock() != block || !user->isBeforeInBlock(copy))
      return false;
    writers.push_back(user);
  }
  if (writers.empty())
    return false;
  llvm::sort(writers, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  SmallVector<Value> reads;
  for (Operation *writer : writers) {
    std::optional<SmallVector<Value>> own = readsOfWriter(writer, staged, target);
    if (!own)
      return false;
    reads.append(own->begin(), own->end());
  }
  // The ops the writers pass on their way down.
  llvm::SmallPtrSet<Operation *, 8> isWriter(writers.begin(), writers.end());
  for (Operation *op = writers.front()->getNextNode(); op != copy.getOperation(); op = op->getNextNode())
    if (!isWriter.contains(op) && !writesApartFrom(op, reads))
      return false;
  for (Operation *writer : writers) {
    writer->moveBefore(copy);
    writer->replaceUsesOfWith(staged, target);
  }
  copy.erase();
  if (alloc->use_empty())
    alloc.erase();
  return true;
}

struct FoldOutputCopiesPass : impl::FoldOutputCopiesBase<FoldOutputCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    // A fold erases only the copy it looks at.
    for (memref::CopyOp copy : copies)
      foldOutputCopy(copy);
  }
};
} // namespace
} // namespace mlir::dsf
