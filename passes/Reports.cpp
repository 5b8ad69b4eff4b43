//===- Reports.cpp - KV-cache and parameter reports ------------------------===//
#include "passes/Reports.h"
#include "passes/LayerUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <set>

using namespace mlir;
using namespace mlir::dsf;

std::string mlir::dsf::withThousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string mlir::dsf::humanCount(double v) {
  const char *units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (std::fabs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(u ? "%.2f %s" : "%.0f%s", v, units[u]);
  return s;
}

/// Exact when integral, otherwise up to 4 decimals with trailing zeros
/// dropped; thousands separated either way ("3,514.25").
std::string mlir::dsf::formatBytes(double v) {
  double whole = std::floor(v);
  std::string s = withThousands((int64_t)whole);
  if (whole == v)
    return s;
  std::string fraction;
  llvm::raw_string_ostream os(fraction);
  os << llvm::format("%.4f", v - whole); // "0.2500"
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  return s + fraction.substr(1);
}

namespace {
/// The layer whose region holds `op`, or null at function level.
LayerOp enclosingLayer(Operation *op) { return op->getParentOfType<LayerOp>(); }

/// Follows a value out of its layer (through dsf.yield) and into every layer
/// that takes it as an input, collecting the layers that read it.
void collectReaders(Value v, std::set<int64_t> &readers) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto yield = llvm::dyn_cast<YieldOp>(user)) {
      auto layer = llvm::cast<LayerOp>(yield->getParentOp());
      collectReaders(layer.getOutputs()[use.getOperandNumber()], readers);
    } else if (auto layer = llvm::dyn_cast<LayerOp>(user)) {
      collectReaders(layer.getBodyBlock().getArgument(use.getOperandNumber()), readers);
    } else if (LayerOp owner = enclosingLayer(user)) {
      readers.insert(owner.getIndex());
    }
  }
}
} // namespace

func::FuncOp mlir::dsf::reportFunction(ModelOp model) {
  func::FuncOp first;
  for (auto f : model.getBody().front().getOps<func::FuncOp>()) {
    if (f.getSymName() == "decode" || f.getSymName() == "forward")
      return f;
    if (!first)
      first = f;
  }
  return first;
}

KvReport mlir::dsf::computeKvReport(ModelOp model) {
  KvReport r;
  r.model = model.getSymName().str();
  if (auto schedule = model.getSchedule())
    r.schedule = schedule->str();
  if (auto source = model->getAttrOfType<StringAttr>("schedule_source"))
    r.scheduleSource = source.str();
  std::set<int64_t> kvSources, indexSources;
  func::FuncOp func = reportFunction(model);
  if (!func)
    return r;
  func.walk([&](Operation *op) {
    if (auto w = llvm::dyn_cast<CacheWriteOp>(op)) {
      auto t = llvm::cast<CacheType>(w.getCache().getType());
      CacheRow row;
      LayerOp layer = enclosingLayer(op);
      row.layer = layer ? layer.getIndex() : -1;
      row.kind = t.getKind();
      row.ratio = t.getRatio();
      row.width = t.getWidth();
      row.format = t.getFormat();
      row.entryBytes = t.getEntryBytes();
      row.bytesPerToken = double(row.entryBytes) / double(row.ratio);
      std::set<int64_t> readers;
      collectReaders(w.getCache(), readers);
      row.readers.assign(readers.begin(), readers.end());
      r.globalBytesPerToken += row.bytesPerToken;
      if (t.getKind() == CacheKind::kv && layer)
        kvSources.insert(layer.getIndex());
      r.caches.push_back(row);
    } else if (auto w = llvm::dyn_cast<WindowWriteOp>(op)) {
      auto t = llvm::cast<WindowType>(w.getWindow().getType());
      r.windows += 1;
      r.windowBytesPerSequence += t.getSize() * t.getFormat().getRowBytes(t.getWidth());
    } else if (auto idx = llvm::dyn_cast<IndexTopkOp>(op)) {
      if (LayerOp layer = enclosingLayer(op))
        indexSources.insert(layer.getIndex());
    }
  });
  r.kvSources.assign(kvSources.begin(), kvSources.end());
  r.indexSources.assign(indexSources.begin(), indexSources.end());
  return r;
}

static std::string listString(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

std::string mlir::dsf::planString(CachePlanAttr plan) {
  if (!plan)
    return "";
  return (stringifyTier(plan.getLive()) + " / " + stringifyTier(plan.getIdle()) + " " +
          std::to_string(plan.getTtl()) + " s")
      .str();
}

std::string mlir::dsf::rangesString(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(v[i]);
    if (j > i) s += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}

void mlir::dsf::printKvReport(const KvReport &r, llvm::raw_ostream &os) {
  os << "== KV report: @" << r.model << " ==\n";
  if (!r.schedule.empty())
    os << "schedule: " << r.schedule
       << (r.scheduleSource.empty() ? "" : "  (" + r.scheduleSource + ")") << "\n";
  os << "global caches (bytes per token = entry bytes / ratio):\n";
  for (const CacheRow &c : r.caches) {
    std::string fmt;
    llvm::raw_string_ostream fs(fmt);
    fs << c.format;
    os << llvm::format("  layer %-3lld %-10s ratio %-3lld width %-4lld %4lld B/entry  %10s B/token  read by %s  %s\n",
                       (long long)c.layer, stringifyCacheKind(c.kind).data(), (long long)c.ratio,
                       (long long)c.width, (long long)c.entryBytes,
                       formatBytes(c.bytesPerToken).c_str(), rangesString(c.readers).c_str(),
                       fmt.c_str());
  }
  os << "global KV per token: " << formatBytes(r.globalBytesPerToken) << " bytes\n";
  os << "sliding window per sequence: " << withThousands(r.windowBytesPerSequence) << " bytes ("
     << r.windows << " windows)\n";
  os << "KV-source layers: " << r.kvSources.size() << " [" << listString(r.kvSources) << "]\n";
  os << "index-source layers: " << r.indexSources.size() << " [" << listString(r.indexSources)
     << "]\n";
  for (int64_t ctx : {4096, 65536, 1048576})
    os << "  global KV at " << withThousands(ctx) << " tokens: "
       << formatBytes(r.globalBytesPerToken * ctx) << " bytes + window "
       << withThousands(r.windowBytesPerSequence) << "\n";
}

void mlir::dsf::printKvComparison(const std::vector<KvReport> &reports, llvm::raw_ostream &os) {
  if (reports.size() < 2)
    return;
  const KvReport &base = reports.front();
  os << "== KV comparison (relative to @" << base.model << ") ==\n";
  for (const KvReport &r : reports)
    os << llvm::format("  @%-28s %10s B/token  x%.3f\n", r.model.c_str(),
                       formatBytes(r.globalBytesPerToken).c_str(),
                       r.globalBytesPerToken / base.globalBytesPerToken);
}

ParamReport mlir::dsf::computeParamReport(ModelOp model) {
  ParamReport r;
  r.model = model.getSymName().str();
  llvm::StringMap<WeightDeclOp> weights;
  for (auto w : model.getBody().front().getOps<WeightDeclOp>()) {
    weights[w.getSymName()] = w;
    r.total += w.getTensorType().getNumElements();
    r.storedBytes += w.getStoredBytes();
  }
  std::set<std::string> routed;
  model.walk([&](MoeExpertsOp op) {
    SmallVector<WeightUse> uses;
    op.getWeightUses(uses);
    for (auto &u : uses)
      routed.insert(u.symbol.getValue().str());
  });
  for (auto &name : routed)
    if (auto it = weights.find(name); it != weights.end())
      r.routedTotal += it->second.getTensorType().getNumElements();

  for (auto func : model.getBody().front().getOps<func::FuncOp>()) {
    // A weight read by several ops is counted once, at the largest share any
    // of them touches.
    llvm::StringMap<double> touched;
    func.walk([&](WeightUserOpInterface user) {
      SmallVector<WeightUse> uses;
      user.getWeightUses(uses);
      for (const WeightUse &u : uses) {
        auto it = weights.find(u.symbol.getValue());
        if (it == weights.end())
          continue;
        RankedTensorType t = it->second.getTensorType();
        double elements = t.getNumElements();
        double share = u.rowsTouchedPerToken < 0
                           ? elements
                           : elements / t.getDimSize(0) *
                                 std::min<int64_t>(u.rowsTouchedPerToken, t.getDimSize(0));
        double &slot = touched[u.symbol.getValue()];
        slot = std::max(slot, share);
      }
    });
    ParamReport::Entry e{func.getSymName().str(), 0, 0};
    for (auto &kv : touched) {
      e.activePerToken += kv.second;
      if (routed.count(kv.first().str()))
        e.routedActivePerToken += kv.second;
    }
    r.perFunction.push_back(e);
  }
  return r;
}

void mlir::dsf::printParamReport(const ParamReport &r, llvm::raw_ostream &os) {
  os << "== parameter report: @" << r.model << " ==\n";
  os << "parameters: " << withThousands(r.total) << " (" << humanCount(r.total)
     << "), stored in " << withThousands(r.storedBytes) << " bytes\n";
  os << "  routed experts: " << withThousands(r.routedTotal) << " (" << humanCount(r.routedTotal)
     << "), dense: " << withThousands(r.total - r.routedTotal) << " ("
     << humanCount(r.total - r.routedTotal) << ")\n";
  for (const auto &e : r.perFunction) {
    bool both = e.function == "forward";
    auto line = [&](StringRef what) {
      os << "active per " << what << " token (@" << e.function << "): "
         << withThousands((int64_t)std::llround(e.activePerToken)) << " ("
         << humanCount(e.activePerToken) << "; routed "
         << humanCount(e.routedActivePerToken) << ")\n";
    };
    if (both || e.function == "prefill")
      line("prefill");
    if (both || e.function == "decode")
      line("decode");
  }
}

TierReport mlir::dsf::computeTierReport(ModelOp model) {
  TierReport r;
  r.model = model.getSymName().str();
  r.planned = true;
  func::FuncOp func = reportFunction(model);
  if (!func)
    return r;
  func.walk([&](Operation *op) {
    if (!llvm::isa<CacheWriteOp, WindowWriteOp>(op))
      return;
    auto plan = op->getAttrOfType<CachePlanAttr>("plan");
    if (!plan) {
      r.planned = false;
      return;
    }
    if (auto w = llvm::dyn_cast<CacheWriteOp>(op)) {
      auto t = llvm::cast<CacheType>(w.getCache().getType());
      double perToken = double(t.getEntryBytes()) / t.getRatio();
      if (plan.getLive() == Tier::device)
        r.deviceBytesPerToken += perToken;
      if (plan.getIdle() == Tier::ssd) {
        r.ssdBytesPerToken += perToken;
        r.globalTtl = plan.getTtl();
      }
    } else {
      auto t = llvm::cast<WindowType>(llvm::cast<WindowWriteOp>(op).getWindow().getType());
      int64_t bytes = t.getSize() * t.getFormat().getRowBytes(t.getWidth());
      if (plan.getLive() == Tier::device)
        r.deviceWindowBytes += bytes;
      if (plan.getIdle() == Tier::host) {
        r.hostWindowBytes += bytes;
        r.windowTtl = plan.getTtl();
      }
    }
  });
  return r;
}

void mlir::dsf::printTierReport(const TierReport &r, llvm::raw_ostream &os) {
  os << "== tier report: @" << r.model << " ==\n";
  if (!r.planned) {
    os << "no cache plans (run dsf-plan-cache)\n";
    return;
  }
  os << "device (live sequence): " << formatBytes(r.deviceBytesPerToken)
     << " bytes per token of global KV + " << withThousands(r.deviceWindowBytes)
     << " bytes of windows per sequence\n";
  os << "host DRAM pool (idle sequence, ttl " << r.windowTtl
     << " s): " << withThousands(r.hostWindowBytes) << " bytes of windows per sequence\n";
  os << "SSD prefix cache (ttl " << r.globalTtl << " s): " << formatBytes(r.ssdBytesPerToken)
     << " bytes per token; windows are never persisted (rebuilt by replay)\n";
  for (int64_t ctx : {4096, 65536, 1048576})
    os << "  persisted at " << withThousands(ctx) << " tokens: "
       << formatBytes(r.ssdBytesPerToken * ctx) << " bytes\n";
}

void mlir::dsf::printTierComparison(const std::vector<TierReport> &reports,
                                    llvm::raw_ostream &os) {
  if (reports.size() < 2 || reports.front().ssdBytesPerToken == 0)
    return;
  const TierReport &base = reports.front();
  os << "== persistent footprint (relative to @" << base.model << ") ==\n";
  for (const TierReport &r : reports)
    os << llvm::format("  @%-28s %10s B/token on SSD  x%.3f\n", r.model.c_str(),
                       formatBytes(r.ssdBytesPerToken).c_str(),
                       r.ssdBytesPerToken / base.ssdBytesPerToken);
}

IndexerReport mlir::dsf::computeIndexerReport(ModelOp model, ArrayRef<int64_t> contexts) {
  IndexerReport r;
  r.model = model.getSymName().str();
  SmallVector<IndexTopkOp> indexers;
  if (func::FuncOp func = reportFunction(model))
    func.walk([&](IndexTopkOp op) { indexers.push_back(op); });
  for (IndexTopkOp op : indexers)
    if (Value pool = op.getWithin())
      r.poolCapacity = llvm::cast<PoolType>(pool.getType()).getCapacity();
  for (int64_t ctx : contexts) {
    IndexerReport::Point p{ctx, 0, 0, 0, 0};
    for (IndexTopkOp op : indexers) {
      auto keys = llvm::cast<CacheType>(op.getKeys().getType());
      auto q = llvm::cast<RankedTensorType>(op.getQueries().getType());
      int64_t heads = q.getDimSize(1), dim = q.getDimSize(2);
      double visible = double(ctx) / keys.getRatio();
      // Per scored entry: its key row read, heads x dim MACs, ReLU and the
      // weighted sum over heads.
      double rowBytes = keys.getEntryBytes();
      double flopsPerEntry = 2.0 * heads * dim + 3.0 * heads;
      double scored = visible;
      if (Value pool = op.getWithin())
        scored = std::min<double>(visible, llvm::cast<PoolType>(pool.getType()).getCapacity());
      p.bytes += scored * rowBytes;
      p.flops += scored * flopsPerEntry;
      if (op.getCandidatePool()) // block maxima over the scores: one compare per entry
        p.flops += visible;
      p.flatBytes += visible * rowBytes;
      p.flatFlops += visible * flopsPerEntry;
    }
    r.points.push_back(p);
  }
  return r;
}

void mlir::dsf::printIndexerReport(const IndexerReport &r, llvm::raw_ostream &os) {
  os << "== indexer report: @" << r.model << " (per query token, all index sources) ==\n";
  if (r.poolCapacity)
    os << "candidate pool: " << withThousands(r.poolCapacity) << " entries\n";
  else
    os << "no candidate pool: every index source scores all visible entries\n";
  for (const auto &p : r.points)
    os << llvm::format("  context %9s: %s bytes, %s FLOP;  without a pool: %s bytes, %s FLOP "
                       "(x%.2f bytes)\n",
                       withThousands(p.context).c_str(), humanCount(p.bytes).c_str(),
                       humanCount(p.flops).c_str(), humanCount(p.flatBytes).c_str(),
                       humanCount(p.flatFlops).c_str(), p.flatBytes / p.bytes);
}

namespace {
/// Bytes per token of a token-major tensor value (0 for anything else).
double bytesPerToken(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() < 1 || !t.isDynamicDim(0))
    return 0;
  double elements = 1;
  for (int64_t d : t.getShape().drop_front())
    elements *= d;
  return elements * t.getElementTypeBitWidth() / 8.0;
}

double trafficOf(Operation *op) {
  double bytes = 0;
  for (Value v : op->getOperands())
    bytes += bytesPerToken(v);
  for (Value v : op->getResults())
    bytes += bytesPerToken(v);
  return bytes;
}
} // namespace

MhcReport mlir::dsf::computeMhcReport(ModelOp model) {
  MhcReport r;
  r.model = model.getSymName().str();
  func::FuncOp func = reportFunction(model);
  if (!func)
    return r;
  func.walk([&](Operation *op) {
    if (llvm::isa<HcExpandOp, HcCoeffsOp, HcCollapseOp, HcUpdateOp, HcHeadOp>(op)) {
      double t = trafficOf(op);
      r.bytesPerToken += t;
      r.unfusedBytesPerToken += t;
      r.sites += llvm::isa<HcUpdateOp>(op);
    } else if (auto fused = llvm::dyn_cast<HcFusedUpdateOp>(op)) {
      double t = trafficOf(op);
      double rereads = (fused.getCollapsed() ? 2 : 1) * bytesPerToken(fused.getUpdated());
      r.bytesPerToken += t;
      r.unfusedBytesPerToken += t + rereads;
      r.sites += 1;
      r.fusedSites += 1;
    }
  });
  return r;
}

void mlir::dsf::printMhcReport(const MhcReport &r, llvm::raw_ostream &os) {
  os << "== mHC report: @" << r.model << " ==\n";
  os << "sites: " << r.sites << " residual updates, " << r.fusedSites << " fused\n";
  os << "activation bytes read + written per token by mHC ops: "
     << withThousands((int64_t)std::llround(r.bytesPerToken)) << " (unfused: "
     << withThousands((int64_t)std::llround(r.unfusedBytesPerToken)) << llvm::format(", x%.3f)\n",
                      r.bytesPerToken / std::max(1.0, r.unfusedBytesPerToken));
}

//===----------------------------------------------------------------------===//
// Prefill FLOPs
//===----------------------------------------------------------------------===//

namespace {
/// sum_{q=1}^{n} min(cap, floor(q / r)) in closed form.
double sumMinFloor(double n, double cap, double r) {
  auto prefix = [&](double m) { // sum_{q=0}^{m} floor(q / r)
    if (m < 0)
      return 0.0;
    double t = std::floor(m / r), rest = m - t * r;
    return r * t * (t - 1) / 2 + t * (rest + 1);
  };
  double knee = cap * r - 1; // floor(q/r) < cap for q <= knee
  if (n <= knee)
    return prefix(n);
  return prefix(knee) + cap * (n - knee);
}

struct LayerCost {
  double kvDense = 0, restDense = 0; // per token
  // Per query: keys attended and entries scored, as (cap, ratio, scale) terms
  // summed over positions.
  struct Term { double cap, ratio, flopsPerUnit; };
  std::vector<Term> terms;
  double contextFlops(double from, double to) const { // positions [from, to)
    double total = 0;
    for (const Term &t : terms)
      total += t.flopsPerUnit * (sumMinFloor(to, t.cap, t.ratio) - sumMinFloor(from, t.cap, t.ratio));
    return total;
  }
};

int64_t featureElements(Value v) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  int64_t n = 1;
  for (int64_t d : t.getShape().drop_front())
    n *= d;
  return n;
}
} // namespace

FlopsReport mlir::dsf::computeFlopsReport(ModelOp model, ArrayRef<int64_t> tokens) {
  FlopsReport r;
  r.model = model.getSymName().str();
  func::FuncOp func = reportFunction(model);
  if (!func)
    return r;
  llvm::StringMap<WeightDeclOp> weights;
  for (auto w : model.getBody().front().getOps<WeightDeclOp>())
    weights[w.getSymName()] = w;
  auto dim = [&](FlatSymbolRefAttr sym, unsigned i) -> double {
    auto it = weights.find(sym.getValue());
    return it == weights.end() ? 0 : it->second.getTensorType().getDimSize(i);
  };
  const double inf = 1e18;

  SmallVector<LayerOp> layers = layersOf(func);
  LayerOp split = model.isV41() ? decoderSplitLayer(layers) : LayerOp();
  std::vector<LayerCost> costs;
  for (LayerOp layer : layers) {
    LayerCost cost;
    llvm::SetVector<Operation *> kvOps;
    if (layer == split)
      kvOps = kvProducingOps(layer);
    for (Operation &op : layer.getBodyBlock()) {
      double f = 0;
      if (auto l = llvm::dyn_cast<LinearOp>(op))
        f = 2.0 * featureElements(l.getInput()) * featureElements(l.getResult());
      else if (auto g = llvm::dyn_cast<GroupedLinearOp>(op))
        f = 2.0 * featureElements(g.getInput()) / g.getGroups() * featureElements(g.getResult());
      else if (auto c = llvm::dyn_cast<CompressOp>(op))
        f = 2.0 * dim(c.getWkvAttr(), 0) * dim(c.getWkvAttr(), 1) * (c.getWgateAttr() ? 2 : 1);
      else if (auto gate = llvm::dyn_cast<MoeGateOp>(op))
        f = 2.0 * dim(gate.getWeightAttr(), 0) * dim(gate.getWeightAttr(), 1);
      else if (auto e = llvm::dyn_cast<MoeExpertsOp>(op))
        f = 6.0 * featureElements(e.getExperts()) * dim(e.getW1Attr(), 1) * dim(e.getW1Attr(), 2);
      else if (auto ffn = llvm::dyn_cast<FfnOp>(op))
        f = 6.0 * dim(ffn.getW1Attr(), 0) * dim(ffn.getW1Attr(), 1);
      else if (auto h = llvm::dyn_cast<HcCoeffsOp>(op))
        f = 2.0 * dim(h.getFnAttr(), 0) * dim(h.getFnAttr(), 1);
      else if (auto h = llvm::dyn_cast<HcFusedUpdateOp>(op))
        f = 2.0 * dim(h.getFnAttr(), 0) * dim(h.getFnAttr(), 1);
      else if (auto a = llvm::dyn_cast<AttentionOp>(op)) {
        auto q = llvm::cast<RankedTensorType>(a.getQueries().getType());
        double perKey = 4.0 * q.getDimSize(1) * q.getDimSize(2); // QK and AV
        auto w = llvm::cast<WindowType>(a.getWindow().getType());
        cost.terms.push_back({double(w.getSize()), 1, perKey});
        if (Value c = a.getCache()) {
          double ratio = llvm::cast<CacheType>(c.getType()).getRatio();
          double cap = a.getSelection() ? llvm::cast<TopkType>(a.getSelection().getType()).getK() : inf;
          cost.terms.push_back({cap, ratio, perKey});
        }
      } else if (auto idx = llvm::dyn_cast<IndexTopkOp>(op)) {
        auto q = llvm::cast<RankedTensorType>(idx.getQueries().getType());
        double perEntry = 2.0 * q.getDimSize(1) * q.getDimSize(2) + 3.0 * q.getDimSize(1);
        double ratio = llvm::cast<CacheType>(idx.getKeys().getType()).getRatio();
        double cap = idx.getWithin() ? llvm::cast<PoolType>(idx.getWithin().getType()).getCapacity() : inf;
        cost.terms.push_back({cap, ratio, perEntry});
        if (idx.getCandidatePool())
          cost.terms.push_back({inf, ratio, 1.0}); // block maxima
      }
      (kvOps.contains(&op) ? cost.kvDense : cost.restDense) += f;
    }
    costs.push_back(cost);
  }
  // Outside the layers: the head (and embedding, a lookup).
  double headDense = 0;
  for (Operation &op : func.getBody().front())
    if (auto l = llvm::dyn_cast<LinearOp>(op))
      headDense += 2.0 * featureElements(l.getInput()) * featureElements(l.getResult());

  int64_t splitAt = -1;
  if (split) {
    splitAt = llvm::find(layers, split) - layers.begin();
    r.splitLayer = split.getIndex();
    r.window = llvm::cast<WindowType>(findInLayer<WindowWriteOp>(split).getWindow().getType()).getSize();
    r.exactTail = r.window + (int64_t(layers.size()) - splitAt - 1) * (r.window - 1);
  }
  for (int64_t n : tokens) {
    double N = n;
    auto prefillFlops = [&](double tail) {
      double total = 0;
      for (auto [i, c] : llvm::enumerate(costs)) {
        bool before = splitAt < 0 || (int64_t)i < splitAt;
        if (before) {
          total += (c.kvDense + c.restDense) * N + c.contextFlops(0, N);
          continue;
        }
        double t = std::min(N, tail);
        if ((int64_t)i == splitAt)
          total += c.kvDense * N;
        else
          total += c.kvDense * t;
        total += c.restDense * t + c.contextFlops(N - t, N);
      }
      return (total + headDense * std::min(N, tail)) / N;
    };
    FlopsReport::Point p{n, prefillFlops(N), 0, 0};
    if (splitAt >= 0) {
      p.exactTail = prefillFlops(r.exactTail);
      p.boundedReplay = prefillFlops(r.window);
    }
    r.points.push_back(p);
  }
  return r;
}

void mlir::dsf::printFlopsReport(const FlopsReport &r, llvm::raw_ostream &os) {
  os << "== prefill FLOPs per token: @" << r.model << " ==\n";
  if (r.splitLayer < 0) {
    os << "no decoder to split (full prefill only)\n";
    for (const auto &p : r.points)
      os << llvm::format("  N %9s: %s FLOP\n", withThousands(p.tokens).c_str(),
                         humanCount(p.full).c_str());
  } else {
    os << "split at layer " << r.splitLayer << " (its compressor, index keys and window over every "
       << "token); exact tail " << withThousands(r.exactTail) << " tokens, bounded replay "
       << r.window << "\n";
    for (const auto &p : r.points)
      os << llvm::format("  N %9s: full %s FLOP, exact-tail %s (x%.3f), bounded-replay %s (x%.3f)\n",
                         withThousands(p.tokens).c_str(), humanCount(p.full).c_str(),
                         humanCount(p.exactTail).c_str(), p.exactTail / p.full,
                         humanCount(p.boundedReplay).c_str(), p.boundedReplay / p.full);
  }
  os << "(matrix products, attention and indexer scoring; norms, rope, softmax and quantizers not "
        "counted)\n";
}
