//===- GraphBuilder.h - a validated config to dsf IR -----------------------===//
#ifndef DSF_MODELS_IMPORT_GRAPHBUILDER_H
#define DSF_MODELS_IMPORT_GRAPHBUILDER_H

#include "dialect/DsfDialect.h"
#include "models/import/ModelConfig.h"

#include "mlir/IR/Builders.h"

namespace dsf {

/// Builds one dsf.model (weights + @forward) for `config` at the builder's
/// insertion point. The config must have passed validateModelConfig.
mlir::dsf::ModelOp buildModel(mlir::OpBuilder &builder, mlir::Location loc,
                              const ModelConfig &config);

} // namespace dsf

#endif // DSF_MODELS_IMPORT_GRAPHBUILDER_H
