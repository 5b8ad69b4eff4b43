//===- Manifest.h - what an artifact says about its model ------------------===//
#ifndef DSF_LOWERING_CPU_MANIFEST_H
#define DSF_LOWERING_CPU_MANIFEST_H

#include "dialect/DsfDialect.h"
#include "dsf/artifact.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::dsf {

/// The facts about a dsf.model the artifact's manifest carries that lowering
/// erases: each weight's checkpoint shape, dtype and per-expert names, and
/// the cache plan. Take it before dsf-to-linalg.
struct ModelFacts {
  std::string model, family;
  int64_t vocabSize = 0;
  llvm::StringMap<::dsf::rt::WeightSpec> weights;
  std::vector<::dsf::rt::CachePlanEntry> cachePlan;
  std::vector<::dsf::rt::StateSlot> state;   // after dsf-thread-state
};
ModelFacts collectModelFacts(ModelOp model);

/// The entry points of a module after dsf-to-linalg: each func.func with a
/// dsf.weights attribute, its inputs (named token_ids, positions,
/// image_mask as the importer orders them), its one output and its weights.
LogicalResult describeEntryPoints(ModuleOp module, const ModelFacts &facts,
                                  std::vector<::dsf::rt::EntryPoint> &entries, std::string &error);

} // namespace mlir::dsf

#endif // DSF_LOWERING_CPU_MANIFEST_H
