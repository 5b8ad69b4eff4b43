//===- ScheduleReport.cpp - the layer schedule, as text and as a picture ---===//
//
// Everything drawn is read from the IR: layer attributes, which layer writes
// which cache, which layers read it (through layer operands), the selection
// and pool dataflow, the formats in the cache types and the tiers in plans.
//
//===----------------------------------------------------------------------===//
#include "passes/ScheduleReport.h"
#include "passes/Reports.h"

#include "llvm/Support/Format.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mlir::dsf;

namespace {

struct LayerInfo {
  int64_t index = 0, ratio = 0;
  AttentionKind kind = AttentionKind::sliding;
  std::optional<Csa2Mode> mode;
  bool decoder = false;
  bool makesPool = false, inPool = false;
  int64_t selectionFrom = -1; // layer whose selection it attends over
  int64_t cacheFrom = -1;     // layer whose compressed KV it attends over
};

struct CacheInfo {
  int64_t layer;
  CacheType type;
  std::string plan;
};

/// The layer whose body defines `v` (through layer operands and yields).
int64_t producerOf(Value v) {
  while (true) {
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      auto layer = llvm::dyn_cast<LayerOp>(arg.getOwner()->getParentOp());
      if (!layer)
        return -1;
      v = layer.getInputs()[arg.getArgNumber()];
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (auto layer = llvm::dyn_cast_or_null<LayerOp>(def)) {
      auto yield = llvm::cast<YieldOp>(layer.getBodyBlock().getTerminator());
      v = yield.getValues()[llvm::cast<OpResult>(v).getResultNumber()];
      continue;
    }
    if (!def)
      return -1;
    if (auto layer = def->getParentOfType<LayerOp>())
      return layer.getIndex();
    return -1;
  }
}

std::string formatName(QuantAttr q) {
  if (!q.isQuantized())
    return q.getElement() == ScalarFormat::f32 ? "f32" : "bf16";
  if (q.getElement() == ScalarFormat::e2m1)
    return q.getScale() == ScaleFormat::e4m3 ? "NVFP4" : "MXFP4";
  return q.getBf16Tail() ? "FP8+bf16 rope" : "FP8";
}

std::string modeLetter(const LayerInfo &l) {
  switch (l.kind) {
  case AttentionKind::sliding: return "S";
  case AttentionKind::csa: return "C";
  case AttentionKind::hca: return "H";
  case AttentionKind::csa2:
    return *l.mode == Csa2Mode::full ? "F" : *l.mode == Csa2Mode::reindex ? "X" : "R";
  }
  return "?";
}

std::string modeName(const LayerInfo &l) {
  switch (l.kind) {
  case AttentionKind::sliding: return "sliding";
  case AttentionKind::csa: return "CSA";
  case AttentionKind::hca: return "HCA";
  case AttentionKind::csa2: return stringifyCsa2Mode(*l.mode).str();
  }
  return "?";
}

void collect(ModelOp model, std::vector<LayerInfo> &layers, std::vector<CacheInfo> &caches) {
  func::FuncOp forward = reportFunction(model);
  if (!forward)
    return;
  int64_t decoderStart = model.getDecoderStart() ? (int64_t)*model.getDecoderStart() : -1;
  for (LayerOp layer : forward.getBody().getOps<LayerOp>()) {
    LayerInfo l;
    l.index = layer.getIndex();
    l.ratio = layer.getRatio();
    l.kind = layer.getAttention();
    l.mode = layer.getMode();
    l.decoder = decoderStart >= 0 && l.index >= decoderStart;
    for (Operation &op : layer.getBodyBlock()) {
      if (auto w = llvm::dyn_cast<CacheWriteOp>(op)) {
        caches.push_back({l.index, llvm::cast<CacheType>(w.getCache().getType()),
                          planString(op.getAttrOfType<CachePlanAttr>("plan"))});
      }
      if (auto idx = llvm::dyn_cast<IndexTopkOp>(op)) {
        l.makesPool = bool(idx.getCandidatePool());
        l.inPool = bool(idx.getWithin());
      }
      if (auto attn = llvm::dyn_cast<AttentionOp>(op)) {
        if (attn.getCache())
          l.cacheFrom = producerOf(attn.getCache());
        if (attn.getSelection())
          l.selectionFrom = producerOf(attn.getSelection());
      }
    }
    layers.push_back(l);
  }
}

std::string escape(StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

const char *fillFor(const LayerInfo &l) {
  switch (l.kind) {
  case AttentionKind::sliding: return "#d9d9d9";
  case AttentionKind::csa: return "#2e7d32";
  case AttentionKind::hca: return "#7b1fa2";
  case AttentionKind::csa2:
    return *l.mode == Csa2Mode::full ? "#1f4e9c" : *l.mode == Csa2Mode::reindex ? "#e07b00" : "#9ec5f0";
  }
  return "#ffffff";
}
} // namespace

void mlir::dsf::printScheduleText(ModelOp model, llvm::raw_ostream &os) {
  std::vector<LayerInfo> layers;
  std::vector<CacheInfo> caches;
  collect(model, layers, caches);
  os << "== schedule: @" << model.getSymName() << " ==\n";
  if (auto s = model.getSchedule())
    os << "schedule: " << *s << "\n";
  for (const LayerInfo &l : layers) {
    os << llvm::format("  layer %-3lld %-8s %-8s ratio %-3lld", (long long)l.index,
                       l.kind == AttentionKind::csa2 || l.kind == AttentionKind::sliding
                           ? (model.getDecoderStart() ? (l.decoder ? "decoder" : "encoder") : "")
                           : "",
                       modeName(l).c_str(), (long long)l.ratio);
    std::string what;
    for (const CacheInfo &c : caches)
      if (c.layer == l.index)
        what += " writes " + stringifyCacheKind(c.type.getKind()).str() + " (" +
                formatName(c.type.getFormat()) + ")";
    if (l.cacheFrom >= 0 && l.cacheFrom != l.index)
      what += " reads the kv of layer " + std::to_string(l.cacheFrom);
    if (l.selectionFrom >= 0 && l.selectionFrom != l.index)
      what += ", the top-k of layer " + std::to_string(l.selectionFrom);
    if (l.makesPool)
      what += ", makes the candidate pool";
    if (l.inPool)
      what += ", scores inside the candidate pool";
    os << what << "\n";
  }
}

void mlir::dsf::printScheduleSvg(ModelOp model, llvm::raw_ostream &os) {
  std::vector<LayerInfo> layers;
  std::vector<CacheInfo> caches;
  collect(model, layers, caches);
  KvReport kv = computeKvReport(model);

  const int cell = 30, boxW = 26, boxH = 44, left = 90, top = 92;
  int n = layers.size();
  int width = std::max(left + n * cell + 40, 980);
  int rowsY = top + boxH + 24;                 // sharing brackets start here
  std::map<int64_t, int> rowOf;                // producer layer -> bracket row
  int row = 0;
  for (const LayerInfo &l : layers)
    if (l.kind == AttentionKind::csa2 && *l.mode == Csa2Mode::full)
      rowOf[l.index] = row++ % 2;
  // Table rows: shared caches one by one; caches only their own layer reads
  // (V4) grouped by kind, ratio, width and format.
  struct TableRow { std::string layers; const CacheRow *row; int64_t count; std::string plan; };
  std::vector<TableRow> table;
  for (const CacheRow &c : kv.caches) {
    std::string plan;
    for (const CacheInfo &ci : caches)
      if (ci.layer == c.layer && ci.type.getKind() == c.kind)
        plan = ci.plan;
    bool own = c.readers.size() == 1 && c.readers[0] == c.layer;
    TableRow *same = nullptr;
    for (TableRow &t : table)
      if (own && t.count > 0 && t.row->kind == c.kind && t.row->ratio == c.ratio &&
          t.row->width == c.width && t.row->format == c.format && t.plan == plan)
        same = &t;
    if (same) {
      same->count += 1;
      continue;
    }
    table.push_back({std::to_string(c.layer), &c, own ? 1 : 0, plan});
  }
  int tableY = rowsY + 2 * 34 + 70;
  int height = tableY + 36 + 18 * table.size() + 50;
  auto x = [&](int64_t i) { return left + int(i) * cell; };

  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"20\" y=\"26\" font-size=\"17\" font-weight=\"bold\">@" << escape(model.getSymName())
     << "  (" << escape(model.getFamily()) << ", " << n << " layers)</text>\n";
  os << "<text x=\"20\" y=\"46\" font-size=\"12\">schedule: "
     << escape(kv.schedule.empty() ? std::string("(V4 layer kinds)") : kv.schedule)
     << "</text>\n";
  os << "<text x=\"20\" y=\"64\" font-size=\"12\">global KV " << formatBytes(kv.globalBytesPerToken)
     << " B/token from " << kv.kvSources.size() << " KV-source and " << kv.indexSources.size()
     << " index-source layers; windows " << withThousands(kv.windowBytesPerSequence)
     << " B per sequence</text>\n";

  // Encoder / decoder bands.
  if (auto d = model.getDecoderStart()) {
    int64_t split = *d;
    os << "<rect x=\"" << x(0) - 4 << "\" y=\"" << top - 18 << "\" width=\"" << split * cell
       << "\" height=\"" << boxH + 22 << "\" fill=\"#f3f7fc\" stroke=\"#b8c7dc\"/>\n";
    os << "<text x=\"" << x(0) << "\" y=\"" << top - 6 << "\" fill=\"#345\">encoder (ratio 2)</text>\n";
    if (split < n) {
      os << "<rect x=\"" << x(split) - 4 << "\" y=\"" << top - 18 << "\" width=\""
         << (n - split) * cell << "\" height=\"" << boxH + 22
         << "\" fill=\"#fcf6ef\" stroke=\"#dcc6b0\"/>\n";
      os << "<text x=\"" << x(split) << "\" y=\"" << top - 6
         << "\" fill=\"#543\">decoder (ratio 1)</text>\n";
    }
  }
  os << "<text x=\"20\" y=\"" << top + 18 << "\" font-weight=\"bold\">layer</text>\n";
  os << "<text x=\"20\" y=\"" << top + 36 << "\">mode</text>\n";

  for (const LayerInfo &l : layers) {
    bool dark = l.kind != AttentionKind::sliding &&
                !(l.kind == AttentionKind::csa2 && *l.mode == Csa2Mode::reuse);
    const char *ink = dark ? "white" : "#123";
    os << "<rect x=\"" << x(l.index) << "\" y=\"" << top << "\" width=\"" << boxW << "\" height=\""
       << boxH << "\" rx=\"3\" fill=\"" << fillFor(l) << "\" stroke=\""
       << (l.makesPool ? "#d40000" : "#345") << "\" stroke-width=\"" << (l.makesPool ? 3 : 1)
       << "\"/>\n";
    os << "<text x=\"" << x(l.index) + boxW / 2 << "\" y=\"" << top + 16
       << "\" text-anchor=\"middle\" fill=\"" << ink << "\">" << l.index << "</text>\n";
    os << "<text x=\"" << x(l.index) + boxW / 2 << "\" y=\"" << top + 31
       << "\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"" << ink << "\">" << modeLetter(l)
       << "</text>\n";
    if (l.ratio)
      os << "<text x=\"" << x(l.index) + boxW / 2 << "\" y=\"" << top + 41
         << "\" text-anchor=\"middle\" font-size=\"8\" fill=\"" << ink << "\">r" << l.ratio
         << "</text>\n";
    if (l.inPool)
      os << "<circle cx=\"" << x(l.index) + boxW / 2 << "\" cy=\"" << top - 4
         << "\" r=\"4\" fill=\"#d40000\"/>\n";
  }

  // Sharing groups: one bracket per Full layer over the layers that read its
  // compressed KV; ticks mark index sources, dots the layers reusing a top-k.
  os << "<text x=\"20\" y=\"" << rowsY + 14 << "\">shares</text>\n";
  if (rowOf.empty())
    os << "<text x=\"" << left << "\" y=\"" << rowsY + 14
       << "\" fill=\"#555\">nothing: every compressed layer computes and reads its own cache</text>\n";
  for (auto &[producer, r] : rowOf) {
    int64_t last = producer;
    for (const LayerInfo &l : layers)
      if (l.cacheFrom == producer)
        last = std::max(last, l.index);
    int y = rowsY + r * 34;
    const LayerInfo &p = layers[producer];
    os << "<line x1=\"" << x(producer) + 4 << "\" y1=\"" << y + 8 << "\" x2=\""
       << x(last) + boxW - 4 << "\" y2=\"" << y + 8 << "\" stroke=\"" << fillFor(p)
       << "\" stroke-width=\"4\" stroke-linecap=\"round\"/>\n";
    for (const LayerInfo &l : layers) {
      if (l.cacheFrom != producer)
        continue;
      bool source = l.index == producer || (l.kind == AttentionKind::csa2 && *l.mode == Csa2Mode::reindex);
      if (source)
        os << "<rect x=\"" << x(l.index) + boxW / 2 - 4 << "\" y=\"" << y + 2
           << "\" width=\"8\" height=\"12\" fill=\"" << fillFor(l) << "\" stroke=\"#345\"/>\n";
      else
        os << "<circle cx=\"" << x(l.index) + boxW / 2 << "\" cy=\"" << y + 8
           << "\" r=\"3\" fill=\"white\" stroke=\"#345\"/>\n";
    }
    std::string label;
    for (const CacheInfo &c : caches)
      if (c.layer == producer)
        label += (label.empty() ? "" : " + ") + formatName(c.type.getFormat()) + " " +
                 (c.type.getKind() == CacheKind::kv ? "kv" : "keys");
    os << "<text x=\"" << x(producer) + 4 << "\" y=\"" << y + 26 << "\" font-size=\"9\" fill=\"#234\">"
       << escape(label) << "</text>\n";
  }

  // Legend.
  int ly = rowsY + 2 * 34 + 22;
  struct Key { const char *fill, *text; };
  std::vector<Key> keys;
  if (model.isV41())
    keys = {{"#d9d9d9", "S sliding only"}, {"#1f4e9c", "F Full: compressor, index keys, own top-k"},
            {"#e07b00", "X Reindex: own query, shared keys"}, {"#9ec5f0", "R Reuse: shared KV and top-k"}};
  else
    keys = {{"#d9d9d9", "S sliding only"}, {"#2e7d32", "C CSA (overlapping, indexer)"},
            {"#7b1fa2", "H HCA (dense over entries)"}};
  int kx = 20;
  for (const Key &k : keys) {
    os << "<rect x=\"" << kx << "\" y=\"" << ly - 10 << "\" width=\"12\" height=\"12\" fill=\""
       << k.fill << "\" stroke=\"#345\"/><text x=\"" << kx + 16 << "\" y=\"" << ly << "\">"
       << escape(k.text) << "</text>\n";
    kx += 16 + 7 * std::string(k.text).size() + 18;
  }
  if (model.isV41())
    os << "<circle cx=\"" << kx + 5 << "\" cy=\"" << ly - 4
       << "\" r=\"4\" fill=\"#d40000\"/><text x=\"" << kx + 14 << "\" y=\"" << ly
       << "\">scores inside the candidate pool (red frame: its source)</text>\n";
  os << "<text x=\"20\" y=\"" << ly + 18
     << "\" font-size=\"10\" fill=\"#555\">bars: layers reading one Full layer's compressed KV; "
        "squares: index sources (own top-k); circles: layers reusing the top-k of the square before them</text>\n";

  // The caches.
  os << "<text x=\"20\" y=\"" << tableY << "\" font-weight=\"bold\">global caches</text>\n";
  const int cols[] = {20, 90, 180, 240, 300, 400, 480, 560, 700};
  const char *heads[] = {"layer", "kind", "ratio", "width", "format", "B/entry", "B/token",
                         "read by", "tier (live / idle ttl)"};
  for (int c = 0; c < 9; ++c)
    os << "<text x=\"" << cols[c] << "\" y=\"" << tableY + 18 << "\" fill=\"#555\">" << heads[c]
       << "</text>\n";
  int y = tableY + 36;
  for (const TableRow &t : table) {
    const CacheRow &c = *t.row;
    std::string readers = rangesString(c.readers);
    std::string layerCell = t.count > 1 ? std::to_string(t.count) + " layers" : t.layers;
    std::string bytesCell = formatBytes(c.bytesPerToken) + (t.count > 1 ? " each" : "");
    std::string cells[] = {layerCell, stringifyCacheKind(c.kind).str(), std::to_string(c.ratio),
                           std::to_string(c.width), formatName(c.format),
                           std::to_string(c.entryBytes), bytesCell,
                           t.count > 1 ? std::string("its own layer") : readers,
                           t.plan.empty() ? "-" : t.plan};
    for (int k = 0; k < 9; ++k)
      os << "<text x=\"" << cols[k] << "\" y=\"" << y << "\">" << escape(cells[k]) << "</text>\n";
    y += 18;
  }
  os << "<text x=\"20\" y=\"" << y + 6 << "\" font-weight=\"bold\">total " << formatBytes(kv.globalBytesPerToken)
     << " B/token</text>\n";
  // The windows: every layer's own ring.
  std::string windowPlan;
  int64_t windowRow = 0, windowSize = 0;
  std::string windowFormat;
  reportFunction(model).walk([&](WindowWriteOp w) {
    auto t = llvm::cast<WindowType>(w.getWindow().getType());
    windowRow = t.getFormat().getRowBytes(t.getWidth());
    windowSize = t.getSize();
    windowFormat = formatName(t.getFormat());
    windowPlan = planString(w->getAttrOfType<CachePlanAttr>("plan"));
  });
  os << "<text x=\"20\" y=\"" << y + 26 << "\">windows: " << kv.windows << " layers x "
     << windowSize << " rows x " << windowRow << " B (" << escape(windowFormat) << ") = "
     << withThousands(kv.windowBytesPerSequence) << " B per sequence"
     << (windowPlan.empty() ? "" : "; " + windowPlan) << "</text>\n";
  os << "</svg>\n";
}
