//===- PlaceBuffers.cpp - dsf-place-buffers ----------------------------------===//
//
// The contract between the CUDA host code and the runtime: buffers live in
// device memory and the host code only passes their addresses around, so
// the runtime can queue every kernel on one stream without waiting between
// them. This pass makes it true and checks it. It follows every buffer of
// the host code (allocations, globals, call results, function arguments)
// through views and calls to what is done with it: read or written by the
// host, used by a kernel, returned. Host scratch goes to the stack; every
// violation is an error at the op that commits it.
//
//===----------------------------------------------------------------------===//
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_PLACEBUFFERS
#include "lowering/Passes.h.inc"

namespace {
enum Access : unsigned { kNone = 0, kHostRead = 1, kHostWrite = 2, kDevice = 4, kEscapes = 8 };

/// What happens to one buffer, and where it first happens (for diagnostics).
struct Fate {
  unsigned access = kNone;
  Operation *hostAccess = nullptr;   // the first host read or write
  Operation *deviceUse = nullptr;    // the first kernel launch that takes it
  Operation *escape = nullptr;       // the first return
  SmallVector<memref::DeallocOp> deallocs;
  Operation *unknown = nullptr;      // a use this pass cannot follow

  void add(unsigned bits, Operation *at) {
    if ((bits & (kHostRead | kHostWrite)) && !hostAccess)
      hostAccess = at;
    if ((bits & kDevice) && !deviceUse)
      deviceUse = at;
    if ((bits & kEscapes) && !escape)
      escape = at;
    access |= bits;
  }
};

/// Per function, what happens to each argument (the same walk, summarized).
using Summaries = DenseMap<Operation *, SmallVector<unsigned>>;

void follow(Value buffer, const Summaries &summaries, ModuleOp module, Fate &fate, DenseSet<Value> &seen) {
  if (!seen.insert(buffer).second)
    return;
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (isa<memref::LoadOp>(user)) {
      fate.add(kHostRead, user);
    } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
      fate.add(use.get() == store.getMemRef() ? kHostWrite : kEscapes, user);
    } else if (isa<gpu::LaunchFuncOp>(user)) {
      fate.add(kDevice, user);
    } else if (auto call = dyn_cast<func::CallOp>(user)) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      auto it = callee ? summaries.find(callee) : summaries.end();
      if (it == summaries.end() || use.getOperandNumber() >= it->second.size()) {
        // An external function: nothing is known of what it does.
        fate.add(kHostRead | kHostWrite, user);
        continue;
      }
      fate.add(it->second[use.getOperandNumber()], user);
    } else if (isa<func::ReturnOp>(user)) {
      fate.add(kEscapes, user);
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      fate.deallocs.push_back(dealloc);
    } else if (isa<memref::DimOp, memref::ExtractAlignedPointerAsIndexOp>(user)) {
      // Metadata and addresses only.
    } else if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(user)) {
      follow(meta.getBaseBuffer(), summaries, module, fate, seen);
    } else if (auto view = dyn_cast<ViewLikeOpInterface>(user); view && view.getViewSource() == use.get()) {
      for (Value result : user->getResults())
        if (isa<BaseMemRefType>(result.getType()))
          follow(result, summaries, module, fate, seen);
    } else if (auto cast = dyn_cast<memref::CastOp>(user)) {
      follow(cast.getResult(), summaries, module, fate, seen);
    } else if (auto effects = dyn_cast<MemoryEffectOpInterface>(user)) {
      if (effects.getEffectOnValue<MemoryEffects::Read>(use.get()))
        fate.add(kHostRead, user);
      if (effects.getEffectOnValue<MemoryEffects::Write>(use.get()))
        fate.add(kHostWrite, user);
      if (llvm::any_of(user->getResults(), [](Value r) { return isa<BaseMemRefType>(r.getType()); }) &&
          !fate.unknown)
        fate.unknown = user;
    } else if (!fate.unknown) {
      fate.unknown = user;
    }
  }
}

/// What happens to `buffer` and every view of it.
Fate fateOf(Value buffer, const Summaries &summaries, ModuleOp module) {
  Fate fate;
  DenseSet<Value> seen;
  follow(buffer, summaries, module, fate, seen);
  return fate;
}

struct PlaceBuffersPass : impl::PlaceBuffersBase<PlaceBuffersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        funcs.push_back(f);

    // What each function does with its arguments, to a fixed point (the
    // access bits only grow).
    Summaries summaries;
    for (func::FuncOp f : funcs)
      summaries[f] = SmallVector<unsigned>(f.getNumArguments(), kNone);
    for (bool changed = true; changed;) {
      changed = false;
      for (func::FuncOp f : funcs)
        for (BlockArgument arg : f.getArguments()) {
          Fate fate = fateOf(arg, summaries, module);
          unsigned &known = summaries[f][arg.getArgNumber()];
          if ((known | fate.access) != known) {
            known |= fate.access;
            changed = true;
          }
        }
    }

    bool ok = true;
    auto fail = [&](Operation *at, const Twine &message) {
      at->emitError(message);
      ok = false;
    };
    auto checkFollowable = [&](const Fate &fate) {
      if (fate.unknown)
        fail(fate.unknown, "dsf-place-buffers: cannot follow a buffer through this op");
    };

    for (func::FuncOp f : funcs) {
      // An entry point's arguments come from the runtime: token inputs in
      // host-visible memory, state and weights in device memory.
      auto state = f->getAttrOfType<ArrayAttr>("dsf.state");
      auto weights = f->getAttrOfType<ArrayAttr>("dsf.weights");
      if (weights) {
        // (token inputs..., state..., weights...), as in the manifest: a
        // prefill returns state but takes none.
        int64_t stateInputs = state && !f->hasAttr("dsf.prefill") ? int64_t(state.size()) : 0;
        int64_t tokenInputs = int64_t(f.getNumArguments()) - int64_t(weights.size()) - stateInputs;
        // A batched step is replayed as a CUDA graph with new token inputs:
        // its host code must not read any of them (their values would be
        // those of the step it was captured from).
        bool batched = f->hasAttr("dsf.batched");
        if (batched)
          tokenInputs = 0;
        for (BlockArgument arg : f.getArguments()) {
          Fate fate = fateOf(arg, summaries, module);
          checkFollowable(fate);
          if (fate.access & kHostWrite)
            fail(fate.hostAccess, "dsf-place-buffers: the host code writes argument " + Twine(arg.getArgNumber()) +
                                      " of entry point '" + f.getSymName() + "', which the runtime owns");
          else if ((fate.access & kHostRead) && batched)
            fail(fate.hostAccess, "dsf-place-buffers: the host code reads argument " + Twine(arg.getArgNumber()) +
                                      " of batched entry point '" + f.getSymName() +
                                      "', whose launches are replayed with other inputs (a CUDA graph)");
          else if ((fate.access & kHostRead) && int64_t(arg.getArgNumber()) >= tokenInputs)
            fail(fate.hostAccess, "dsf-place-buffers: the host code reads argument " + Twine(arg.getArgNumber()) +
                                      " of entry point '" + f.getSymName() +
                                      "', a state or weight buffer in device memory");
        }
      }

      SmallVector<std::pair<memref::AllocOp, SmallVector<memref::DeallocOp>>> scratch;
      f.walk([&](Operation *op) {
        for (Value result : op->getResults()) {
          if (!isa<BaseMemRefType>(result.getType()))
            continue;
          bool root = isa<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp, func::CallOp>(op);
          if (!root)
            continue;
          Fate fate = fateOf(result, summaries, module);
          checkFollowable(fate);
          bool host = fate.access & (kHostRead | kHostWrite);
          bool device = fate.access & kDevice;
          if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
            if (host && device)
              fail(fate.hostAccess, "dsf-place-buffers: the host code touches a buffer that kernels use "
                                    "(device memory)");
            else if (host && (fate.access & kEscapes))
              fail(fate.escape, "dsf-place-buffers: host scratch leaves the function that allocates it");
            else if (host && !alloc.getType().hasStaticShape())
              fail(alloc, "dsf-place-buffers: host scratch of dynamic size");
            else if (host)
              scratch.push_back({alloc, fate.deallocs});
          } else if (isa<memref::AllocaOp, memref::GetGlobalOp>(op)) {
            if (device)
              fail(fate.deviceUse, "dsf-place-buffers: a kernel is given host memory (a stack buffer or a "
                                   "host global)");
          } else if (host) {
            fail(fate.hostAccess, "dsf-place-buffers: the host code touches a buffer returned by a call "
                                  "(device memory)");
          }
        }
      });
      if (!ok)
        continue;
      // Host scratch: the stack, freed with its frame.
      for (auto &[alloc, deallocs] : scratch) {
        for (memref::DeallocOp dealloc : deallocs)
          dealloc.erase();
        OpBuilder b(alloc);
        auto stack = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType(), alloc.getDynamicSizes(),
                                              alloc.getSymbolOperands(), alloc.getAlignmentAttr());
        alloc.replaceAllUsesWith(stack.getResult());
        alloc.erase();
      }
    }
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
