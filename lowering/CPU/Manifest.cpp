//===- Manifest.cpp - what an artifact says about its model ----------------===//
#include "lowering/CPU/Manifest.h"
#include "lowering/Passes.h"   // kPackedScaleSuffix

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::dsf;

namespace {
std::string dtypeOf(Type element) {
  if (element.isInteger(1))
    return "i1";
  if (element.isInteger(32))
    return "i32";
  if (element.isInteger(8))   // packed cache rows (codes and scale bytes)
    return "u8";
  if (element.isBF16())
    return "bf16";
  return "f32";
}

std::string printed(Attribute a) {
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return s;
}
} // namespace

ModelFacts mlir::dsf::collectModelFacts(ModelOp model) {
  ModelFacts facts;
  facts.model = model.getSymName().str();
  facts.family = model.getFamily().str();
  facts.vocabSize = model.getVocabSize();
  for (auto w : model.getBody().front().getOps<WeightDeclOp>()) {
    ::dsf::rt::WeightSpec spec;
    spec.name = w.getSymName().str();
    spec.dtype = dtypeOf(w.getTensorType().getElementType());
    spec.shape.assign(w.getTensorType().getShape().begin(), w.getTensorType().getShape().end());
    if (auto names = w->getAttrOfType<StringAttr>("expert_names"))
      spec.expertNames = names.str();
    facts.weights[spec.name] = spec;
  }
  // One plan entry per distinct (what, ratio, width, format, plan).
  std::map<std::tuple<std::string, int64_t, int64_t, std::string, std::string>, ::dsf::rt::CachePlanEntry> plan;
  auto add = [&](std::string what, int64_t ratio, int64_t width, Attribute format, CachePlanAttr p) {
    std::string f = printed(format), key = p ? printed(p) : "";
    auto &e = plan[{what, ratio, width, f, key}];
    e.what = what;
    e.ratio = ratio;
    e.width = width;
    e.format = f;
    if (p) {
      e.live = stringifyTier(p.getLive()).str();
      e.idle = stringifyTier(p.getIdle()).str();
      e.ttlSeconds = p.getTtl();
    } else {
      e.live = "device";
      e.idle = "dropped";
    }
    ++e.layers;
  };
  // Each entry point writes the same caches: count the layers of one.
  func::FuncOp first;
  for (auto f : model.getBody().front().getOps<func::FuncOp>())
    if (!first || f.getSymName() == "prefill")
      first = f;
  if (!first)
    return facts;
  first.walk([&](Operation *op) {
    auto p = op->getAttrOfType<CachePlanAttr>("plan");
    if (auto w = llvm::dyn_cast<WindowWriteOp>(op)) {
      auto t = llvm::cast<WindowType>(w.getType());
      add("window", 0, t.getWidth(), t.getFormat(), p);
    } else if (auto c = llvm::dyn_cast<CacheWriteOp>(op)) {
      auto t = llvm::cast<CacheType>(c.getType());
      add(stringifyCacheKind(t.getKind()).str(), t.getRatio(), t.getWidth(), t.getFormat(), p);
    }
  });
  for (auto &[key, e] : plan)
    facts.cachePlan.push_back(e);
  // A carry's compressor ratio, by the slot name dsf-thread-state gives it
  // ("<compressor>.carry", after its wkv weight): how many of a sequence's
  // last rows it holds (a batched step keeps them in a ring).
  llvm::StringMap<int64_t> carryRatio;
  first.walk([&](CompressOp k) {
    if (!k.getCarryOut())
      return;
    StringRef wkv = k.getWkv();
    std::string name;
    if (wkv.consume_back(".wkv.weight"))
      name = wkv.str() + ".carry";
    else if (auto layer = k->getParentOfType<LayerOp>())
      name = "layers." + std::to_string(layer.getIndex()) + ".compressor.carry";
    carryRatio[name] = k.getRatio();
  });
  // The state slots: the names dsf-thread-state gave, the types the prefill
  // entry point returns them as.
  if (auto names = first->getAttrOfType<ArrayAttr>("dsf.state")) {
    FunctionType type = first.getFunctionType();
    for (auto [i, n] : llvm::enumerate(names)) {
      ::dsf::rt::StateSlot slot;
      slot.name = llvm::cast<StringAttr>(n).str();
      Type t = type.getResult(1 + i);
      QuantAttr format;
      if (auto w = llvm::dyn_cast<WindowType>(t)) {
        slot.kind = "window";
        slot.width = w.getWidth();
        slot.windowSize = w.getSize();
        format = w.getFormat();
      } else if (auto c = llvm::dyn_cast<CacheType>(t)) {
        slot.kind = stringifyCacheKind(c.getKind()).str();
        slot.width = c.getWidth();
        slot.ratio = c.getRatio();
        format = c.getFormat();
      } else {
        slot.kind = "carry";
        slot.width = llvm::cast<RankedTensorType>(t).getShape().back();
        slot.ratio = carryRatio.lookup(slot.name);
      }
      if (format) {
        slot.element = stringifyScalarFormat(format.getElement()).str();
        slot.scale = stringifyScaleFormat(format.getScale()).str();
        slot.block = format.getBlockCols();
        slot.bf16Tail = format.getBf16Tail();
      }
      facts.state.push_back(slot);
    }
  }
  return facts;
}

LogicalResult mlir::dsf::describeEntryPoints(ModuleOp module, const ModelFacts &facts,
                                             std::vector<::dsf::rt::EntryPoint> &entries, std::string &error) {
  static const char *inputNames[] = {"token_ids", "positions", "image_mask"};
  for (auto func : module.getOps<func::FuncOp>()) {
    auto bound = func->getAttrOfType<ArrayAttr>("dsf.weights");
    if (!bound)
      continue;
    ::dsf::rt::EntryPoint e;
    e.name = func.getSymName().str();
    e.symbol = "dsf_entry_" + e.name;
    FunctionType type = func.getFunctionType();
    // (token inputs..., state..., weights...) -> (logits, state...); a
    // batched entry point (dsf.batched) takes its state as slots and its
    // page tables after them, and updates the slots in place (the lowering
    // drops them from its results: dsf-state-in-place):
    // (token inputs..., slots..., page tables..., weights...) -> logits.
    bool batched = func->hasAttr("dsf.batched");
    SmallVector<std::string> state;
    if (auto names = func->getAttrOfType<ArrayAttr>("dsf.state"))
      for (Attribute n : names)
        state.push_back((batched ? "slots:" : "state:") + llvm::cast<StringAttr>(n).str());
    SmallVector<std::string> tables;
    if (auto ratios = func->getAttrOfType<ArrayAttr>("dsf.page_tables"))
      for (Attribute r : ratios)
        tables.push_back("pages:" + std::to_string(llvm::cast<IntegerAttr>(r).getInt()));
    unsigned numResults = type.getNumResults();
    unsigned stateInputs = func->hasAttr("dsf.prefill") ? 0 : state.size();
    unsigned fixedInputs = bound.size() + stateInputs + tables.size();
    if (type.getNumInputs() < fixedInputs || type.getNumInputs() - fixedInputs > 3 || numResults != 1 + state.size() ||
        (batched && tables.empty() != llvm::none_of(state, [](const std::string &n) {
           return llvm::StringRef(n).ends_with(".kv") || llvm::StringRef(n).ends_with(".index_keys");
         }))) {
      error = "entry point '" + e.name + "' has an unexpected signature";
      return failure();
    }
    unsigned numInputs = type.getNumInputs() - fixedInputs;
    auto spec = [](std::string name, Type t) {
      auto tensor = llvm::cast<RankedTensorType>(t);
      ::dsf::rt::TensorSpec s{std::move(name), dtypeOf(tensor.getElementType()), {}};
      for (int64_t d : tensor.getShape())
        s.shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      return s;
    };
    for (unsigned i = 0; i < numInputs; ++i)
      e.inputs.push_back(spec(inputNames[i], type.getInput(i)));
    for (unsigned i = 0; i < stateInputs; ++i)
      e.inputs.push_back(spec(state[i], type.getInput(numInputs + i)));
    for (unsigned i = 0; i < tables.size(); ++i)
      e.inputs.push_back(spec(tables[i], type.getInput(numInputs + stateInputs + i)));
    e.outputs.push_back(spec("logits", type.getResult(0)));
    if (!batched)
      for (unsigned i = 0; i < state.size(); ++i)
        e.outputs.push_back(spec(state[i], type.getResult(1 + i)));
    for (auto [i, a] : llvm::enumerate(bound)) {
      auto name = llvm::cast<FlatSymbolRefAttr>(a).getValue();
      auto boundType = llvm::cast<RankedTensorType>(type.getInput(numInputs + stateInputs + tables.size() + i));
      Type element = boundType.getElementType();
      // A weight bound packed (weight-storage=released): NAME its codes
      // (E2M1 two a byte, or E4M3 one a byte: the declared shape),
      // NAME.scale its UE8M0 bytes, each in the shape it is bound in (the
      // checkpoint's bytes).
      bool packed = element.isInteger(8);
      StringRef declared = name;
      if (packed && name.ends_with(kPackedScaleSuffix))
        declared = name.drop_back(kPackedScaleSuffix.size());
      auto it = facts.weights.find(declared);
      if (it == facts.weights.end()) {
        error = "entry point '" + e.name + "' binds undeclared weight '" + name.str() + "'";
        return failure();
      }
      e.weights.push_back(it->second);
      // The element the lowering bound it in (dsf-to-linalg's weight-storage),
      // which is what the runtime must hand over.
      if (!element.isF32() && !element.isBF16() && !element.isInteger(32) && !packed) {
        error = "entry point '" + e.name + "' binds weight '" + name.str() + "' as " + printed(TypeAttr::get(element)) +
                ", which the runtime cannot hand over (f32, bf16, i32, or i8 codes and scales)";
        return failure();
      }
      ::dsf::rt::WeightSpec &spec = e.weights.back();
      if (packed) {
        spec.name = name.str();
        spec.dtype = declared != name                                                     ? "ue8m0"
                     : boundType.getShape() == llvm::ArrayRef<int64_t>(it->second.shape) ? "e4m3"
                                                                                         : "e2m1x2";
        spec.shape.assign(boundType.getShape().begin(), boundType.getShape().end());
      } else {
        spec.dtype = dtypeOf(element);
      }
    }
    entries.push_back(std::move(e));
  }
  if (entries.empty()) {
    error = "no entry points after dsf-to-linalg";
    return failure();
  }
  return success();
}
