//===- Reports.h - KV-cache and parameter reports computed from the IR -----===//
//
// Every figure comes from the IR: cache bytes from the formats in the cache
// and window types, sources from the layer bodies, parameters from the weight
// declarations and the ops that read them. Nothing is typed in per model.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_PASSES_REPORTS_H
#define DSF_PASSES_REPORTS_H

#include "dialect/DsfDialect.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::dsf {

struct CacheRow {
  int64_t layer;        // producing layer
  CacheKind kind;
  int64_t ratio, width;
  QuantAttr format;
  int64_t entryBytes;   // bytes of one entry
  double bytesPerToken; // entryBytes / ratio
  std::vector<int64_t> readers; // layers that read it (the producer included)
};

struct KvReport {
  std::string model;
  std::string schedule, scheduleSource; // the model's CSA2 schedule, if any
  std::vector<CacheRow> caches;
  double globalBytesPerToken = 0;
  int64_t windows = 0;              // layers with a window
  int64_t windowBytesPerSequence = 0;
  std::vector<int64_t> kvSources;   // layers producing compressed KV
  std::vector<int64_t> indexSources;// layers computing their own top-k
};

struct ParamReport {
  std::string model;
  int64_t total = 0, storedBytes = 0;
  int64_t routedTotal = 0;
  struct Entry { std::string function; double activePerToken; double routedActivePerToken; };
  std::vector<Entry> perFunction;
};

/// Where the cache bytes live, from the #dsf.cache_plan of every write.
struct TierReport {
  std::string model;
  bool planned = false;          // every cache has a plan
  double deviceBytesPerToken = 0;   // global caches on the device while live
  int64_t deviceWindowBytes = 0;    // windows on the device, per live sequence
  int64_t hostWindowBytes = 0;      // windows in the host pool, per idle sequence
  double ssdBytesPerToken = 0;      // global caches persisted
  int64_t windowTtl = 0, globalTtl = 0;
};

/// Indexer cost per query token at a context length, with the IR's candidate
/// pool and with every index source scoring all visible entries.
struct IndexerReport {
  std::string model;
  int64_t poolCapacity = 0; // 0: no pool in the IR
  struct Point { int64_t context; double bytes, flops, flatBytes, flatFlops; };
  std::vector<Point> points;
};

/// Activation bytes the mHC ops read and write per token, now and as the same
/// math would cost unfused (each fused site saves the re-reads of its updated
/// streams by the coefficient prediction and the collapse).
struct MhcReport {
  std::string model;
  int64_t sites = 0, fusedSites = 0;
  double bytesPerToken = 0, unfusedBytesPerToken = 0;
};

/// Prefill FLOPs per token for each prefill mode at several prompt lengths.
struct FlopsReport {
  std::string model;
  int64_t splitLayer = -1;   // the decoder's first Full layer, -1: no split possible
  int64_t window = 0, exactTail = 0;
  struct Point { int64_t tokens; double full, exactTail, boundedReplay; };
  std::vector<Point> points;
};
FlopsReport computeFlopsReport(ModelOp model, ArrayRef<int64_t> tokens);
void printFlopsReport(const FlopsReport &report, llvm::raw_ostream &os);

/// The function the reports describe: @decode (every layer over every
/// token), else @forward, else the first one.
func::FuncOp reportFunction(ModelOp model);

KvReport computeKvReport(ModelOp model);
MhcReport computeMhcReport(ModelOp model);
void printMhcReport(const MhcReport &report, llvm::raw_ostream &os);
TierReport computeTierReport(ModelOp model);
IndexerReport computeIndexerReport(ModelOp model, ArrayRef<int64_t> contexts);
void printTierReport(const TierReport &report, llvm::raw_ostream &os);
void printIndexerReport(const IndexerReport &report, llvm::raw_ostream &os);
/// Persistent bytes per token of each model relative to the first.
void printTierComparison(const std::vector<TierReport> &reports, llvm::raw_ostream &os);
ParamReport computeParamReport(ModelOp model);
void printKvReport(const KvReport &report, llvm::raw_ostream &os);
void printParamReport(const ParamReport &report, llvm::raw_ostream &os);
/// One line per model: global KV per token relative to the first.
void printKvComparison(const std::vector<KvReport> &reports, llvm::raw_ostream &os);

/// "1,234,567" and "12.3 B"-style helpers shared by the reports.
std::string withThousands(int64_t v);
std::string humanCount(double v);
std::string formatBytes(double v);
/// Layer lists as ranges: "2-7,20,24".
std::string rangesString(const std::vector<int64_t> &layers);
/// "device / ssd 14400 s", or "" without a plan.
std::string planString(CachePlanAttr plan);

} // namespace mlir::dsf

#endif // DSF_PASSES_REPORTS_H
