//===- ScheduleCsa2.cpp - dsf-schedule-csa2 --------------------------------===//
#include "passes/LayerUtils.h"
#include "passes/Passes.h"
#include "passes/Schedule.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace mlir::dsf {
#define GEN_PASS_DEF_SCHEDULECSA2
#include "passes/Passes.h.inc"

namespace {
using llvm::formatv;
using ::dsf::formatSchedule;
using ::dsf::parseSchedule;

std::string number(double v) {
  char buffer[32];
  snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

/// Global-KV bytes per token a Full layer of this ratio costs (its compressed
/// KV and index keys, in their current formats).
struct RatioInfo {
  double fullCost = 0;
  std::vector<int64_t> layers; // compressed layers of this ratio, in order
};

/// The schedule heuristic of the pass description.
FailureOr<std::vector<char>> chooseSchedule(ModelOp model, ArrayRef<LayerOp> layers,
                                            const std::map<int64_t, RatioInfo> &ratios,
                                            double budget, int64_t maxIndexSources) {
  std::vector<char> letters(layers.size(), 'S');
  std::map<int64_t, int64_t> fulls;
  double cost = 0;
  for (auto &[ratio, info] : ratios) {
    fulls[ratio] = 1;
    cost += info.fullCost;
  }
  if (cost > budget)
    return model.emitOpError() << "kv-budget " << number(budget)
                               << " B/token is below the smallest legal schedule (one Full layer "
                                  "per ratio): "
                               << number(cost) << " B/token";
  while (true) {
    int64_t best = -1;
    for (auto &[ratio, info] : ratios) {
      if (fulls[ratio] >= (int64_t)info.layers.size() || cost + info.fullCost > budget + 1e-9)
        continue;
      if (best < 0)
        best = ratio;
      const RatioInfo &b = ratios.at(best);
      double perFull = double(info.layers.size()) / fulls[ratio];
      double bestPerFull = double(b.layers.size()) / fulls[best];
      if (info.fullCost < b.fullCost || (info.fullCost == b.fullCost && perFull > bestPerFull))
        best = ratio;
    }
    if (best < 0)
      break;
    fulls[best] += 1;
    cost += ratios.at(best).fullCost;
  }
  // Place: Full layers evenly, the rest Reuse; then Reindex by group size.
  int64_t indexSources = 0;
  std::vector<std::vector<int64_t>> groups; // per ratio, decoder (ratio 1) first
  std::vector<int64_t> order;
  for (auto &[ratio, info] : ratios)
    order.push_back(ratio);
  std::sort(order.begin(), order.end()); // ratio 1 (decoder) before ratio 2
  std::vector<std::vector<int64_t>> groupsInOrder;
  for (int64_t ratio : order) {
    const RatioInfo &info = ratios.at(ratio);
    int64_t n = info.layers.size(), f = fulls[ratio];
    std::vector<int64_t> fullPos;
    for (int64_t k = 0; k < f; ++k)
      fullPos.push_back(k * n / f);
    for (int64_t k = 0; k < n; ++k)
      letters[info.layers[k]] = 'R';
    for (size_t g = 0; g < fullPos.size(); ++g) {
      letters[info.layers[fullPos[g]]] = 'F';
      ++indexSources;
      int64_t end = g + 1 < fullPos.size() ? fullPos[g + 1] : n;
      std::vector<int64_t> group(info.layers.begin() + fullPos[g], info.layers.begin() + end);
      groupsInOrder.push_back(group);
    }
  }
  if (maxIndexSources > 0) {
    if (maxIndexSources < indexSources)
      return model.emitOpError() << "max-index-sources " << maxIndexSources << " is below the "
                                 << indexSources << " Full layers the budget buys";
    // Reindex layers per group, given one at a time to the group whose runs
    // of layers reading one selection are longest. Decoder runs count double:
    // a decoder Reindex layer scores only the candidate pool, so it is cheap.
    std::vector<int64_t> extra(groupsInOrder.size(), 0);
    for (int64_t left = maxIndexSources - indexSources; left > 0; --left) {
      int64_t best = -1;
      double bestRun = 1;
      for (size_t g = 0; g < groupsInOrder.size(); ++g) {
        int64_t size = groupsInOrder[g].size();
        if (extra[g] + 1 >= size)
          continue;
        double weight = LayerOp(layers[groupsInOrder[g].front()]).getRatio() == 1 ? 2.0 : 1.0;
        double run = weight * double(size) / (extra[g] + 1);
        if (run > bestRun + 1e-9) {
          bestRun = run;
          best = g;
        }
      }
      if (best < 0)
        break;
      ++extra[best];
    }
    for (size_t g = 0; g < groupsInOrder.size(); ++g) {
      int64_t size = groupsInOrder[g].size(), x = extra[g];
      for (int64_t k = 1; k <= x; ++k)
        letters[groupsInOrder[g][k * size / (x + 1)]] = 'X';
    }
  }
  return letters;
}

struct ScheduleCsa2Pass : impl::ScheduleCsa2Base<ScheduleCsa2Pass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(forEachModel(getOperation(), [&](ModelOp model) { return scheduleModel(model); })))
      signalPassFailure();
  }

  LogicalResult scheduleModel(ModelOp model) {
    bool userSchedule = !schedule.empty() || kvBudget > 0;
    if (!model.isV41()) {
      if (userSchedule)
        return model.emitOpError()
               << "has no CSA2 layers to schedule (a deepseek_v4 model); change its layer kinds "
                  "at import: dsf-compile --schedule";
      return success();
    }
    for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
      SmallVector<LayerOp> layers = layersOf(func);
      if (!layers.empty() && failed(scheduleLayers(model, layers)))
        return failure();
    }
    eraseUnusedWeights(model);
    return success();
  }

  LogicalResult scheduleLayers(ModelOp model, SmallVector<LayerOp> &layers) {
    // What the IR has: ratios, and what one Full layer of each ratio costs.
    std::map<int64_t, RatioInfo> ratios;
    std::vector<char> current;
    for (LayerOp layer : layers) {
      if (layer.getAttention() == AttentionKind::sliding) {
        current.push_back('S');
        continue;
      }
      Csa2Mode mode = *layer.getMode();
      current.push_back(mode == Csa2Mode::full ? 'F' : mode == Csa2Mode::reindex ? 'X' : 'R');
      RatioInfo &info = ratios[layer.getRatio()];
      info.layers.push_back(layer.getIndex());
      if (mode == Csa2Mode::full && info.fullCost == 0)
        for (auto write : layer.getBodyBlock().getOps<CacheWriteOp>()) {
          auto t = llvm::cast<CacheType>(write.getCache().getType());
          info.fullCost += double(t.getEntryBytes()) / t.getRatio();
        }
    }
    int64_t split = model.getDecoderStart() ? (int64_t)*model.getDecoderStart() : -1;

    // The schedule to apply.
    std::vector<char> target;
    std::string source;
    if (kvBudget > 0) {
      auto chosen = chooseSchedule(model, layers, ratios, kvBudget, maxIndexSources);
      if (failed(chosen))
        return failure();
      target = *chosen;
      source = "chosen for kv-budget " + number(kvBudget) + " B/token" +
               (maxIndexSources > 0
                    ? ", at most " + std::to_string(maxIndexSources) + " index sources"
                    : std::string());
    } else {
      std::string text = !schedule.empty() ? std::string(schedule)
                         : model.getSchedule() ? model.getSchedule()->str()
                                               : std::string();
      if (text.empty())
        return model.emitOpError() << "has no schedule: give the pass one (schedule=...)";
      auto parsed = parseSchedule(text);
      if (!parsed)
        return model.emitOpError() << llvm::toString(parsed.takeError());
      if (parsed->letters.size() != layers.size())
        return model.emitOpError() << "schedule '" << text << "' describes "
                                   << parsed->letters.size() << " layers but the model has "
                                   << layers.size();
      int64_t scheduleSplit = parsed->split >= 0 ? parsed->split : (int64_t)layers.size();
      int64_t modelSplit = split >= 0 ? split : (int64_t)layers.size();
      if (scheduleSplit != modelSplit)
        return model.emitOpError()
               << "schedule '" << text << "' puts the decoder at layer " << scheduleSplit
               << " but the model's decoder starts at layer " << modelSplit
               << " (the split is fixed at import: dsf-compile --schedule)";
      target = parsed->letters;
    }

    // Legal: letters match layer kinds; a Full layer of its ratio first.
    std::map<int64_t, bool> seenFull;
    for (auto [i, layer] : llvm::enumerate(layers)) {
      char want = target[i];
      bool sliding = layer.getAttention() == AttentionKind::sliding;
      if (sliding != (want == 'S'))
        return layer.emitOpError() << formatv(
                   "layer {0} is {1}, but the schedule makes it '{2}'", i,
                   sliding ? "sliding-only" : "compressed", want).str();
      if (want != 'F' && want != 'X' && want != 'R' && want != 'S')
        return layer.emitOpError() << "layer " << i << ": '" << want
                                   << "' is a V4 layer letter; V4.1 takes S, F, X or R";
      if (want == 'F')
        seenFull[layer.getRatio()] = true;
      if ((want == 'X' || want == 'R') && !seenFull[layer.getRatio()])
        return layer.emitOpError() << formatv(
                   "layer {0} ('{1}', ratio {2}) has no Full layer of its ratio before it", i,
                   want, layer.getRatio()).str();
    }
    if (target == current)
      return success(); // already scheduled so
    for (auto [i, layer] : llvm::enumerate(layers))
      if (current[i] == 'X' || current[i] == 'R')
        return layer.emitOpError()
               << "layer " << i << " is already " << stringifyCsa2Mode(*layer.getMode())
               << ": dsf-schedule-csa2 schedules a model whose compressed layers each compute "
                  "their own KV (as imported), once";

    // Apply, in order, keeping each ratio's newest shared values.
    struct Shared { Value kv, keys, selection; };
    llvm::DenseMap<int64_t, Shared> shared;
    for (size_t i = 0; i < layers.size(); ++i) {
      LayerOp layer = layers[i];
      char want = target[i];
      if (want == 'S')
        continue;
      int64_t ratio = layer.getRatio();
      auto attention = findInLayer<AttentionOp>(layer);
      auto indexer = findInLayer<IndexTopkOp>(layer);
      if (want == 'F') {
        // Yield the cache, keys and selection for the layers of its group.
        Value kv = attention.getCache(), keys = indexer.getKeys(), sel = indexer.getSelection();
        layer = rebuildLayer(layer, {}, {kv, keys, sel});
        unsigned n = layer.getNumResults();
        shared[ratio] = {layer.getResult(n - 3), layer.getResult(n - 2), layer.getResult(n - 1)};
      } else if (want == 'X') {
        Shared s = shared.lookup(ratio);
        SmallVector<BlockArgument> args;
        layer = rebuildLayer(layer, {s.kv, s.keys}, {indexer.getSelection()}, &args);
        attention.getCacheMutable().assign(args[0]);
        indexer.getKeysMutable().assign(args[1]);
        layer.setModeAttr(Csa2ModeAttr::get(&getContext(), Csa2Mode::reindex));
        shared[ratio].selection = layer.getResult(layer.getNumResults() - 1);
      } else {
        Shared s = shared.lookup(ratio);
        SmallVector<BlockArgument> args;
        layer = rebuildLayer(layer, {s.kv, s.selection}, {}, &args);
        attention.getCacheMutable().assign(args[0]);
        attention.getSelectionMutable().assign(args[1]);
        layer.setModeAttr(Csa2ModeAttr::get(&getContext(), Csa2Mode::reuse));
      }
      eraseDeadOps(layer.getBodyBlock());
      layers[i] = layer;
    }
    int64_t outSplit = split >= 0 && split < (int64_t)layers.size() ? split : -1;
    model.setScheduleAttr(StringAttr::get(&getContext(), formatSchedule(target, outSplit)));
    if (!source.empty())
      model->setAttr("schedule_source", StringAttr::get(&getContext(), source));
    return success();
  }
};
} // namespace
} // namespace mlir::dsf
