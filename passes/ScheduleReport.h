//===- ScheduleReport.h - the layer schedule, as text and as a picture -----===//
#ifndef DSF_PASSES_SCHEDULEREPORT_H
#define DSF_PASSES_SCHEDULEREPORT_H

#include "dialect/DsfDialect.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::dsf {

/// One line per layer: kind, mode, ratio, stage, what it produces and reads.
void printScheduleText(ModelOp model, llvm::raw_ostream &os);

/// An SVG drawing of the same: encoder and decoder bands, each layer's mode
/// and ratio, the sharing groups of caches and selections, the candidate pool,
/// and a table of the caches with their formats, sizes and tiers.
void printScheduleSvg(ModelOp model, llvm::raw_ostream &os);

} // namespace mlir::dsf

#endif // DSF_PASSES_SCHEDULEREPORT_H
