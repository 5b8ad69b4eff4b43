//===- Pipelines.cpp - the default dsf pipeline ----------------------------===//
#include "passes/Pipelines.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::dsf::buildDefaultPipeline(OpPassManager &pm, const PipelineOptions &o) {
  // Formats first: the scheduler prices Full layers in the final formats, and
  // what it demotes takes its quantizers with it.
  QuantizeKVOptions quant;
  quant.off = !o.kvQuant;
  pm.addPass(createQuantizeKV(quant));
  ScheduleCsa2Options schedule;
  schedule.schedule = o.schedule;
  schedule.kvBudget = o.kvBudget;
  schedule.maxIndexSources = o.maxIndexSources;
  pm.addPass(createScheduleCsa2(schedule));
  HierarchicalIndexerOptions pool;
  pool.blocks = o.poolBlocks;
  pool.blockSize = o.poolBlockSize;
  pm.addPass(createHierarchicalIndexer(pool));
  pm.addPass(createPlanCache());
  if (o.fuseMhc)
    pm.addPass(createFuseMhc());
  HoistDecoderKVOptions hoist;
  hoist.prefill = o.prefill;
  pm.addPass(createHoistDecoderKV(hoist));
}

void mlir::dsf::registerDefaultPipeline() {
  PassPipelineRegistration<>("dsf-default-pipeline",
                             "The passes dsf-compile runs after import, with their defaults",
                             [](OpPassManager &pm) { buildDefaultPipeline(pm, {}); });
}
