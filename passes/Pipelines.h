//===- Pipelines.h - the default dsf pipeline ------------------------------===//
#ifndef DSF_PASSES_PIPELINES_H
#define DSF_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::dsf {

/// What dsf-compile's flags set in the default pipeline.
struct PipelineOptions {
  bool kvQuant = true;
  std::string schedule;        // dsf-schedule-csa2 schedule=
  double kvBudget = 0;         // dsf-schedule-csa2 kv-budget=
  int64_t maxIndexSources = 0; // dsf-schedule-csa2 max-index-sources=
  int64_t poolBlocks = 0;      // dsf-hierarchical-indexer blocks= (-1: none)
  int64_t poolBlockSize = 0;   // dsf-hierarchical-indexer block-size=
  bool fuseMhc = true;         // dsf-fuse-mhc
  std::string prefill = "full"; // dsf-hoist-decoder-kv prefill=
};

/// dsf-quantize-kv, dsf-schedule-csa2, dsf-hierarchical-indexer, dsf-plan-cache,
/// dsf-fuse-mhc, dsf-hoist-decoder-kv.
void buildDefaultPipeline(OpPassManager &pm, const PipelineOptions &options);

/// Registers the default pipeline as `dsf-default-pipeline` (dsf-opt).
void registerDefaultPipeline();

} // namespace mlir::dsf

#endif // DSF_PASSES_PIPELINES_H
