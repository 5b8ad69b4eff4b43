//===- QuantizeKV.cpp - dsf-quantize-kv ------------------------------------===//
#include "passes/LayerUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_QUANTIZEKV
#include "passes/Passes.h.inc"

namespace {

enum class Cache { Window, Kv, IndexKeys, IndexQueries };

const char *cacheOption(Cache c) {
  switch (c) {
  case Cache::Window: return "window";
  case Cache::Kv: return "kv";
  case Cache::IndexKeys: return "index-keys";
  case Cache::IndexQueries: return "index-queries";
  }
  return "";
}

/// What each family ships with (MODEL.md "KV formats").
std::string releasedFormat(bool v41, Cache c) {
  switch (c) {
  case Cache::Window: return v41 ? "fp8" : "fp8-bf16rope";
  case Cache::Kv: return v41 ? "nvfp4" : "fp8-bf16rope";
  case Cache::IndexKeys: return "mxfp4";
  case Cache::IndexQueries: return v41 ? "mxfp4" : "f32";
  }
  return "f32";
}

struct QuantizeKVPass : impl::QuantizeKVBase<QuantizeKVPass> {
  using Base::Base;

  /// The format `name` gives rows produced from `base` (whose rope width a
  /// bf16-rope format needs), or failure with a diagnostic on `at`.
  FailureOr<QuantAttr> resolve(StringRef name, Value base, Operation *at, Cache which) {
    MLIRContext *ctx = &getContext();
    if (name == "f32") return QuantAttr::getPlain(ctx, ScalarFormat::f32);
    if (name == "bf16") return QuantAttr::getPlain(ctx, ScalarFormat::bf16);
    if (name == "fp8") return QuantAttr::get1D(ctx, ScalarFormat::e4m3, ScaleFormat::ue8m0, 32);
    if (name == "nvfp4") return QuantAttr::get1D(ctx, ScalarFormat::e2m1, ScaleFormat::e4m3, 16);
    if (name == "mxfp4") return QuantAttr::get1D(ctx, ScalarFormat::e2m1, ScaleFormat::ue8m0, 32);
    if (name == "fp8-bf16rope") {
      auto rope = base.getDefiningOp<RopeOp>();
      if (!rope)
        return at->emitOpError() << cacheOption(which)
                                 << "=fp8-bf16rope keeps the rope channels in bf16, but these rows "
                                    "do not come from a dsf.rope";
      return QuantAttr::get(ctx, ScalarFormat::e4m3, ScaleFormat::ue8m0, 1, 64,
                            rope.getRope().getDims(), 8);
    }
    return at->emitOpError() << "unknown " << cacheOption(which) << " format '" << name
                             << "' (expected f32, bf16, fp8, fp8-bf16rope, nvfp4 or mxfp4)";
  }

  std::string choice(bool v41, Cache c) {
    if (off)
      return "f32";
    const std::string &opt = c == Cache::Window     ? window
                             : c == Cache::Kv        ? kv
                             : c == Cache::IndexKeys ? indexKeys
                                                     : indexQueries;
    return opt == "released" ? releasedFormat(v41, c) : opt;
  }

  /// Stores the rows of `write` (operand 0) in `format`, through a fresh
  /// quantizer when it is a quantized format; returns the stored value.
  FailureOr<Value> store(Operation *write, QuantAttr format) {
    Value rows = write->getOperand(0);
    Value base = rows;
    if (auto q = rows.getDefiningOp<QuantizeOp>())
      base = q.getInput();
    auto shape = llvm::cast<RankedTensorType>(base.getType()).getShape();
    if (!format.isQuantized())
      return base;
    if (failed(format.verifyRowWidth(shape.back(), [&] { return write->emitOpError(); })))
      return failure();
    OpBuilder b(write);
    return Value(QuantizeOp::create(b, write->getLoc(),
                                    QTensorType::get(&getContext(), shape, format), base));
  }

  LogicalResult quantize(ModelOp model) {
    bool v41 = model.isV41();
    SmallVector<Operation *> writes;
    model.walk([&](Operation *op) {
      if (llvm::isa<WindowWriteOp, CacheWriteOp>(op))
        writes.push_back(op);
    });
    for (Operation *op : writes) {
      Value base = op->getOperand(0);
      if (auto q = base.getDefiningOp<QuantizeOp>())
        base = q.getInput();
      Cache which = Cache::Window;
      if (auto w = llvm::dyn_cast<CacheWriteOp>(op))
        which = llvm::cast<CacheType>(w.getCache().getType()).getKind() == CacheKind::kv
                    ? Cache::Kv
                    : Cache::IndexKeys;
      FailureOr<QuantAttr> format = resolve(choice(v41, which), base, op, which);
      if (failed(format))
        return failure();
      FailureOr<Value> stored = store(op, *format);
      if (failed(stored))
        return failure();
      op->setOperand(0, *stored);
      Value result = op->getResult(0);
      Type retyped;
      if (auto w = llvm::dyn_cast<WindowType>(result.getType()))
        retyped = WindowType::get(&getContext(), w.getSize(), w.getWidth(), *format);
      else {
        auto c = llvm::cast<CacheType>(result.getType());
        retyped = CacheType::get(&getContext(), c.getKind(), c.getRatio(), c.getWidth(), *format);
      }
      retypeAcrossLayers(result, retyped);
    }
    // Index queries: a quantize/dequantize pair after their rope.
    SmallVector<IndexTopkOp> indexers;
    model.walk([&](IndexTopkOp op) { indexers.push_back(op); });
    for (IndexTopkOp op : indexers) {
      Value base = op.getQueries();
      if (auto dq = base.getDefiningOp<DequantizeOp>())
        if (auto q = dq.getInput().getDefiningOp<QuantizeOp>())
          base = q.getInput();
      FailureOr<QuantAttr> format =
          resolve(choice(v41, Cache::IndexQueries), base, op, Cache::IndexQueries);
      if (failed(format))
        return failure();
      Value queries = base;
      if (format->isQuantized()) {
        auto shape = llvm::cast<RankedTensorType>(base.getType()).getShape();
        if (failed(format->verifyRowWidth(shape.back(), [&] { return op->emitOpError(); })))
          return failure();
        OpBuilder b(op);
        Value packed = QuantizeOp::create(b, op.getLoc(),
                                          QTensorType::get(&getContext(), shape, *format), base);
        queries = DequantizeOp::create(b, op.getLoc(), base.getType(), packed);
      }
      op.getQueriesMutable().assign(queries);
    }
    SmallVector<Block *> blocks;
    model.walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      eraseDeadOps(*block);
    return success();
  }

  void runOnOperation() override {
    if (failed(forEachModel(getOperation(), [&](ModelOp model) { return quantize(model); })))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::dsf
