//===- batch.cpp - sequences decoded together, a token each a step --------===//
#include "dsf/batch.h"
#include "cuda_backend.h"
#include "dsf/codecs.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace dsf::rt {

namespace {
/// Table columns are rounded up to a multiple of this: a step's shapes (and
/// its CUDA graph) then change once every this many pages of the longest
/// sequence, not with every page.
constexpr int64_t kColumnStep = 8;
/// Step shapes kept (their inputs and, on a GPU, their graphs with the
/// buffers their kernels were captured with), the least recently used
/// going first: a batch whose sequences come and go meets many shapes.
constexpr size_t kPlansKept = 8;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

struct Batch::Impl {
  const HostModel *model = nullptr;
  const EntryPoint *entry = nullptr;
  bool cuda = false;
  int64_t capacity = 0, maxTokens = 0;

  /// One state slot's storage: a ring of `rows` rows per sequence, or (a
  /// cache) `count` pages of `rows` entries; a row is `width` f32 values or,
  /// in packed pages (u8 slots), the slot's format's packed row: its codes,
  /// then a scale byte a block (FP4 pages hold 72 bytes an entry of 128
  /// channels where f32 would hold 512).
  struct Storage {
    const StateSlot *slot = nullptr;
    bool paged = false, packed = false;
    RowFormat format = RowFormat::FP8;   // packed: the rows' format
    int64_t rows = 0, width = 0, rowBytes = 0, count = 0;
    uint8_t *data = nullptr;
    size_t bytes() const { return size_t(count * rows * rowBytes); }
    uint8_t *at(int64_t i) const { return data + i * rows * rowBytes; }   // sequence i's ring, or page i
  };
  std::vector<Storage> storage;   // the entry's "slots:" inputs, in order
  /// The pages of one cache ratio: `entries` a page, page 0 the zero page.
  struct Pages {
    int64_t entries = 0, count = 0;
    std::vector<int32_t> free;
  };
  std::map<int64_t, Pages> pages;   // by ratio
  struct Held {
    int64_t length = 0;
    bool approximate = false;
    std::map<int64_t, std::vector<int32_t>> pages;   // by ratio: the pages of its entries, in order
  };
  std::vector<Held> held;   // slot i's sequence

  /// A step's token inputs and page tables for one shape (sequences, each
  /// table's columns): on a GPU staged in pinned host memory and copied to
  /// device buffers, so that a graph captured with them replays with new
  /// values.
  struct Plan {
    bool cuda = false;
    int64_t sequences = 0;
    std::vector<int64_t> columns;   // by ratio, in `pages` order
    std::vector<void *> staged, device;   // ids, positions, image mask, then each table
    std::vector<size_t> bytes;
    std::shared_ptr<cuda::Graph> graph;
    std::vector<int64_t> graphResults;   // the logits' descriptor the graph writes
    uint64_t lastUse = 0;
    ~Plan() {
      graph.reset();   // waits for its replays
      for (size_t k = 0; k < staged.size(); ++k) {
        if (cuda) {
          cuda::hostMappedFree(staged[k]);
          cuda::deviceFree(device[k]);
        } else {
          std::free(staged[k]);
        }
      }
    }
  };
  std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans;
  uint64_t useClock = 0;
  bool graphs = false;
  Stats stats;

  ~Impl() {
    plans.clear();   // graphs first: their kernels read the slots
    for (Storage &s : storage)
      release(s.data);
  }

  void *allocate(size_t bytes) { return cuda ? cuda::deviceAlloc(bytes) : std::calloc(1, std::max<size_t>(bytes, 1)); }
  void release(void *p) {
    if (cuda)
      cuda::deviceFree(p);
    else
      std::free(p);
  }
  /// Copies into batch memory from a state tensor's rows (host values, or
  /// device rows on a GPU).
  void copyIn(void *to, const void *from, bool fromHost, size_t bytes) {
    if (!cuda)
      std::memcpy(to, from, bytes);
    else if (fromHost)
      cuda::copyToDevice(to, from, bytes);
    else
      cuda::copyOnDevice(to, from, bytes);
  }
  void copyWithin(void *to, const void *from, size_t bytes) { copyIn(to, from, /*fromHost=*/false, bytes); }
  /// Copies out of batch memory to the host.
  void copyOut(void *to, const void *from, size_t bytes) {
    if (cuda)
      cuda::copyToHost(to, from, bytes);
    else
      std::memcpy(to, from, bytes);
  }

  /// How many of a sequence's last rows a ring slot's state holds in
  /// @decode's form at length `length`: a window its last W - 1, a carry
  /// its open group's (and, for an overlap compressor's ring of 2 x ratio,
  /// the complete group before).
  static int64_t keptRows(const Storage &s, int64_t length) {
    if (s.slot->kind == "window")
      return std::min(length, s.slot->windowSize - 1);
    int64_t ratio = s.slot->ratio, open = length % ratio;
    return s.rows == 2 * ratio ? (length >= ratio ? ratio : 0) + open : open;
  }

  /// A cache slot's pages holding a sequence's first `rows` entries (`owned`,
  /// its pages in order, `s.rows` entries a page): visit(first entry, the
  /// page's bytes, its entries used).
  template <typename Visit>
  static void forPages(const Storage &s, const std::vector<int32_t> &owned, int64_t rows, Visit visit) {
    for (int64_t k = 0; k * s.rows < rows; ++k)
      visit(k * s.rows, s.at(owned[size_t(k)]), std::min(s.rows, rows - k * s.rows));
  }

  /// Ring rows [0, n) <-> rows of positions length - n .. length - 1: at most
  /// two runs.
  template <typename Copy>
  static void forRuns(int64_t ringRows, int64_t length, int64_t n, Copy copy) {
    int64_t start = (length - n) % ringRows, first = std::min(n, ringRows - start);
    copy(start, 0, first);
    if (n > first)
      copy(0, first, n - first);
  }

  bool takePages(int64_t ratio, Held &h, int64_t entries, std::string &error) {
    Pages &p = pages.at(ratio);
    std::vector<int32_t> &owned = h.pages[ratio];
    for (int64_t need = ceilDiv(entries, p.entries); int64_t(owned.size()) < need;) {
      if (p.free.empty()) {
        error = "the batch's cache pages of ratio " + std::to_string(ratio) + " are used up (" +
                std::to_string(p.count - 1) + " pages of " + std::to_string(p.entries) + " entries)";
        return false;
      }
      owned.push_back(p.free.back());
      p.free.pop_back();
    }
    return true;
  }
  void givePages(Held &h) {
    for (auto &[ratio, owned] : h.pages)
      pages.at(ratio).free.insert(pages.at(ratio).free.end(), owned.begin(), owned.end());
    h.pages.clear();
  }

  Plan *plan(std::string &error);
};

Batch::Batch() : impl_(std::make_unique<Impl>()) {}
Batch::~Batch() = default;

std::unique_ptr<Batch> Batch::create(const HostModel &model, int64_t slots, int64_t maxTokens, std::string &error) {
  const Manifest &m = model.manifest();
  const EntryPoint *entry = m.entry("batch_decode");
  if (!entry) {
    error = "the artifact has no @batch_decode (compiled with --no-batch-decode?)";
    return nullptr;
  }
  if (slots < 1 || maxTokens < 1 || maxTokens > m.maxPositions) {
    error = "a batch needs at least one slot and 1 .. " + std::to_string(m.maxPositions) +
            " tokens a sequence, not " + std::to_string(slots) + " x " + std::to_string(maxTokens);
    return nullptr;
  }
  auto batch = std::unique_ptr<Batch>(new Batch());
  Impl &b = *batch->impl_;
  b.model = &model;
  b.entry = entry;
  b.cuda = model.onDevice();
  b.capacity = slots;
  b.maxTokens = maxTokens;
  // The pages of each ratio: a page per E entries of each sequence's
  // longest, and the zero page.
  for (const TensorSpec &in : entry->inputs)
    if (in.name.rfind("slots:", 0) == 0) {
      const StateSlot *slot = m.slot(in.name.substr(6));
      Impl::Storage s;
      s.slot = slot;
      s.paged = slot->kind == "kv" || slot->kind == "index_keys";
      s.rows = in.shape[1];
      s.width = in.shape[2];
      s.rowBytes = s.width * int64_t(sizeof(float));
      if (in.dtype == "u8") {   // packed pages (their rows checked against the format by the manifest's reader)
        s.packed = rowFormatOf(*slot, s.format);
        s.width = slot->width;
        s.rowBytes = in.shape[2];
      }
      if (s.width != slot->width || (slot->kind == "window" && s.rows != slot->windowSize) ||
          (slot->kind == "carry" && (slot->ratio < 1 || (s.rows != slot->ratio && s.rows != 2 * slot->ratio)))) {
        error = "@batch_decode's " + in.name + " " + shapeString(in.shape) + " does not fit state '" + slot->name + "'";
        return nullptr;
      }
      if (s.paged) {
        Impl::Pages &p = b.pages[slot->ratio];
        if (p.entries && p.entries != s.rows) {
          error = "@batch_decode's caches of ratio " + std::to_string(slot->ratio) + " have pages of " +
                  std::to_string(p.entries) + " and " + std::to_string(s.rows) + " entries";
          return nullptr;
        }
        p.entries = s.rows;
        p.count = 1 + slots * ceilDiv(maxTokens / slot->ratio, p.entries);
      }
      b.storage.push_back(s);
    }
  for (auto &[ratio, p] : b.pages)
    for (int32_t i = int32_t(p.count) - 1; i >= 1; --i)
      p.free.push_back(i);
  for (Impl::Storage &s : b.storage) {
    s.count = s.paged ? b.pages[s.slot->ratio].count : slots;
    s.data = static_cast<uint8_t *>(b.allocate(s.bytes()));
    if (b.cuda)
      cuda::zeroDevice(s.data, s.bytes());
    b.stats.stateBytes += int64_t(s.bytes());
    if (s.paged)
      b.stats.pageBytes += int64_t(s.bytes());
  }
  if (b.cuda && !cuda::synchronize(error)) {
    error = "allocating the batch's state (" + std::to_string(b.stats.stateBytes) + " bytes) on " +
            cuda::deviceName() + ": " + error;
    return nullptr;
  }
  b.graphs = b.cuda && cuda::graphsAvailable();
  return batch;
}

int64_t Batch::size() const { return int64_t(impl_->held.size()); }
int64_t Batch::capacity() const { return impl_->capacity; }
int64_t Batch::length(int64_t slot) const { return impl_->held.at(size_t(slot)).length; }
const Batch::Stats &Batch::stats() const { return impl_->stats; }

bool Batch::admit(Sequence &sequence, std::string &error) {
  Impl &b = *impl_;
  if (size() >= b.capacity) {
    error = "the batch is full (" + std::to_string(b.capacity) + " sequences)";
    return false;
  }
  int64_t length = sequence.length;
  if (length < 1 || length >= b.maxTokens) {
    error = "a sequence of " + std::to_string(length) + " tokens does not fit a batch of sequences up to " +
            std::to_string(b.maxTokens) + " tokens (it needs room for one more)";
    return false;
  }
  if (!b.model->placeState(sequence, error))
    return false;
  Impl::Held h;
  h.length = length;
  h.approximate = sequence.approximate;
  int64_t slot = size();
  // Check everything before writing anything.
  for (const Impl::Storage &s : b.storage) {
    auto it = sequence.state.find(s.slot->name);
    if (it == sequence.state.end()) {
      error = "the sequence lacks state '" + s.slot->name + "' (a sequence of another artifact?)";
      return false;
    }
    const StateTensor &t = it->second;
    int64_t want = s.paged ? length / s.slot->ratio : Impl::keptRows(s, length);
    if (t.width != s.width || t.rows != want || (!t.device && !t.onHost())) {
      error = "state '" + s.slot->name + "' holds " + std::to_string(t.rows) + " rows of " + std::to_string(t.width) +
              "; a sequence of " + std::to_string(length) + " tokens keeps " + std::to_string(want) + " of " +
              std::to_string(s.width);
      return false;
    }
  }
  // Rows for packed pages are packed exactly, or the sequence is not
  // admitted: on the device into its pages (dsf_pack_state_rows), or, for
  // rows on the host (or a runtime built without nvcc), on the host first.
  auto packedOnDevice = [&](const StateTensor &t) { return b.cuda && t.device && cuda::haveDeviceCodecs(); };
  std::map<const Impl::Storage *, std::vector<uint8_t>> packedRows;
  for (const Impl::Storage &s : b.storage) {
    if (!s.packed || packedOnDevice(sequence.state.at(s.slot->name)))
      continue;
    const StateTensor &t = sequence.state.at(s.slot->name);
    std::vector<float> downloaded;
    const float *values = t.values.data();
    if (t.device) {
      downloaded.resize(size_t(t.rows * t.width));
      b.copyOut(downloaded.data(), t.device->data, downloaded.size() * sizeof(float));
      if (!cuda::synchronize(error)) {
        error = "copying state '" + s.slot->name + "' from " + cuda::deviceName() + " to pack it: " + error;
        return false;
      }
      values = downloaded.data();
    }
    std::vector<uint8_t> &out = packedRows[&s];
    out.resize(size_t(t.rows * s.rowBytes));
    int64_t bad = packRowsExactly(values, t.rows, s.width, s.format, s.rowBytes, out.data());
    if (bad >= 0) {
      error = "state '" + s.slot->name + "' row " + std::to_string(bad) + " is not exactly in its format " +
              rowFormatName(s.format) + " (its packed page would change it; a state of another artifact?)";
      return false;
    }
  }
  for (auto &[ratio, p] : b.pages)
    if (!b.takePages(ratio, h, length / ratio, error)) {
      b.givePages(h);
      return false;
    }
  // The device's rows packed into their pages: one launch for every slot.
  std::vector<cuda::PackSegment> segments;
  std::vector<const Impl::Storage *> segmentSlot;
  for (const Impl::Storage &s : b.storage) {
    const StateTensor &t = sequence.state.at(s.slot->name);
    if (!s.packed || !packedOnDevice(t))
      continue;
    Impl::forPages(s, h.pages.at(s.slot->ratio), t.rows, [&](int64_t first, uint8_t *page, int64_t n) {
      cuda::PackSegment segment;
      segment.in = t.device->data + first * s.width;
      segment.out = page;
      segment.rows = n;
      segment.cols = s.width;
      segment.format = cuda::kernelFormat(s.format);
      segment.rowBytes = int32_t(s.rowBytes);
      segments.push_back(segment);
      segmentSlot.push_back(&s);
    });
  }
  int64_t bad = -1;
  if (!cuda::packRows(segments, bad, error) || bad >= 0) {
    error = bad >= 0 ? "state '" + segmentSlot[size_t(bad)]->slot->name + "' holds a row that is not exactly in its format " +
                           rowFormatName(segmentSlot[size_t(bad)]->format) +
                           " (its packed page would change it; a state of another artifact?)"
                     : "packing the sequence's state on " + cuda::deviceName() + ": " + error;
    b.givePages(h);
    return false;
  }
  for (const Impl::Storage &s : b.storage) {
    const StateTensor &t = sequence.state.at(s.slot->name);
    if (s.packed && packedOnDevice(t))
      continue;   // packed into its pages above
    bool fromHost = !t.device || s.packed;
    const uint8_t *rows = s.packed ? packedRows.at(&s).data()
                                   : reinterpret_cast<const uint8_t *>(!t.device ? t.values.data() : t.device->data);
    if (s.paged) {
      Impl::forPages(s, h.pages.at(s.slot->ratio), t.rows, [&](int64_t first, uint8_t *page, int64_t n) {
        b.copyIn(page, rows + first * s.rowBytes, fromHost, size_t(n * s.rowBytes));
      });
    } else {
      uint8_t *ring = s.at(slot);
      Impl::forRuns(s.rows, length, t.rows, [&](int64_t ringRow, int64_t row, int64_t n) {
        b.copyIn(ring + ringRow * s.rowBytes, rows + row * s.rowBytes, fromHost, size_t(n * s.rowBytes));
      });
    }
  }
  if (b.cuda && !cuda::synchronize(error)) {
    error = "copying the sequence's state into the batch on " + cuda::deviceName() + ": " + error;
    b.givePages(h);
    return false;
  }
  b.held.push_back(std::move(h));
  return true;
}

bool Batch::release(int64_t slot, Sequence &out, std::string &error) {
  Impl &b = *impl_;
  if (slot < 0 || slot >= size()) {
    error = "slot " + std::to_string(slot) + " holds no sequence (the batch holds " + std::to_string(size()) + ")";
    return false;
  }
  Impl::Held &h = b.held[size_t(slot)];
  Sequence s;
  s.length = h.length;
  s.approximate = h.approximate;
  for (const Impl::Storage &st : b.storage) {
    StateTensor t;
    t.width = st.width;
    t.rows = st.paged ? h.length / st.slot->ratio : Impl::keptRows(st, h.length);
    float *rows;
    std::shared_ptr<void> owner;
    if (b.cuda) {
      rows = static_cast<float *>(cuda::deviceAlloc(std::max<size_t>(1, size_t(t.rows * t.width) * sizeof(float))));
      owner = std::shared_ptr<void>(rows, cuda::deviceFree);
    } else {
      t.values.resize(size_t(t.rows * t.width));
      rows = t.values.data();
    }
    const std::vector<int32_t> *owned = st.paged ? &h.pages.at(st.slot->ratio) : nullptr;
    if (st.packed && b.cuda && cuda::haveDeviceCodecs()) {   // decoded on the device, page by page
      std::vector<cuda::DecodeSegment> segments;
      Impl::forPages(st, *owned, t.rows, [&](int64_t first, uint8_t *page, int64_t n) {
        cuda::DecodeSegment segment;
        segment.codes = page;
        segment.scales = page + codeBytes(st.format, st.width);
        segment.out = rows + first * st.width;
        segment.rows = n;
        segment.cols = st.width;
        segment.format = cuda::kernelFormat(st.format);
        segment.rowStride = int32_t(st.rowBytes);
        segments.push_back(segment);
      });
      if (!cuda::decodeRows(segments, error)) {
        error = "decoding state '" + st.slot->name + "' out of the batch on " + cuda::deviceName() + ": " + error;
        return false;
      }
    } else if (st.packed) {   // the pages' bytes to the host, decoded, back to where the rows go
      std::vector<uint8_t> bytes(size_t(t.rows * st.rowBytes));
      Impl::forPages(st, *owned, t.rows, [&](int64_t first, uint8_t *page, int64_t n) {
        b.copyOut(bytes.data() + first * st.rowBytes, page, size_t(n * st.rowBytes));
      });
      if (b.cuda && !cuda::synchronize(error)) {
        error = "copying state '" + st.slot->name + "' out of the batch on " + cuda::deviceName() + ": " + error;
        return false;
      }
      std::vector<float> decoded(b.cuda ? size_t(t.rows * t.width) : 0);
      float *to = b.cuda ? decoded.data() : rows;
      unpackPackedRows(bytes.data(), t.rows, st.width, st.format, st.rowBytes, to);
      if (b.cuda)
        cuda::copyToDevice(rows, decoded.data(), decoded.size() * sizeof(float));
      if (b.cuda && !cuda::synchronize(error)) {
        error = "copying state '" + st.slot->name + "' to " + cuda::deviceName() + ": " + error;
        return false;
      }
    } else if (st.paged) {
      Impl::forPages(st, *owned, t.rows, [&](int64_t first, uint8_t *page, int64_t n) {
        b.copyWithin(rows + first * st.width, page, size_t(n * st.rowBytes));
      });
    } else {
      const uint8_t *ring = st.at(slot);
      Impl::forRuns(st.rows, h.length, t.rows, [&](int64_t ringRow, int64_t row, int64_t n) {
        b.copyWithin(rows + row * st.width, ring + ringRow * st.rowBytes, size_t(n * st.rowBytes));
      });
    }
    if (b.cuda) {
      auto device = std::make_shared<DeviceRows>();
      device->allocation = owner;
      device->data = rows;
      t.device = std::move(device);
    }
    s.state[st.slot->name] = std::move(t);
  }
  // The last sequence moves into the freed slot: its rings (its pages stay
  // where they are, its table row goes with it).
  int64_t last = size() - 1;
  if (slot != last)
    for (const Impl::Storage &st : b.storage)
      if (!st.paged)
        b.copyWithin(st.at(slot), st.at(last), size_t(st.rows * st.rowBytes));
  if (b.cuda && !cuda::synchronize(error)) {
    error = "copying a sequence's state out of the batch on " + cuda::deviceName() + ": " + error;
    return false;
  }
  b.givePages(h);
  if (slot != last)
    b.held[size_t(slot)] = std::move(b.held.back());
  b.held.pop_back();
  out = std::move(s);
  return true;
}

Batch::Impl::Plan *Batch::Impl::plan(std::string &error) {
  std::vector<int64_t> key{int64_t(held.size())};
  for (auto &[ratio, p] : pages) {
    int64_t most = 1;
    for (const Held &h : held)
      most = std::max(most, int64_t(h.pages.at(ratio).size()));
    key.push_back(ceilDiv(most, kColumnStep) * kColumnStep);
  }
  ++useClock;
  if (auto it = plans.find(key); it != plans.end()) {
    it->second->lastUse = useClock;
    return it->second.get();
  }
  if (plans.size() >= kPlansKept) {
    auto oldest = std::min_element(plans.begin(), plans.end(),
                                   [](const auto &a, const auto &b) { return a.second->lastUse < b.second->lastUse; });
    plans.erase(oldest);
  }
  std::unique_ptr<Plan> &slot = plans[key];
  auto p = std::make_unique<Plan>();
  p->cuda = cuda;
  p->lastUse = useClock;
  p->sequences = key[0];
  p->columns.assign(key.begin() + 1, key.end());
  p->bytes = {size_t(p->sequences) * 4, size_t(p->sequences) * 4, size_t(p->sequences)};
  for (int64_t c : p->columns)
    p->bytes.push_back(size_t(p->sequences * c) * 4);
  for (size_t bytes : p->bytes) {
    void *staged = cuda ? cuda::hostMappedAlloc(bytes) : std::calloc(1, std::max<size_t>(bytes, 1));
    if (!staged) {
      error = "cannot allocate a step's inputs (" + std::to_string(bytes) + " bytes of pinned host memory)";
      return nullptr;
    }
    std::memset(staged, 0, bytes);
    p->staged.push_back(staged);
    p->device.push_back(cuda ? cuda::deviceAlloc(bytes) : staged);
  }
  slot = std::move(p);
  return slot.get();
}

bool Batch::step(const std::vector<int32_t> &ids, std::vector<float> &logits, std::string &error) {
  Impl &b = *impl_;
  const Manifest &m = b.model->manifest();
  int64_t n = size();
  if (n == 0 || int64_t(ids.size()) != n) {
    error = "a step takes one token for each of the batch's " + std::to_string(n) + " sequences, not " +
            std::to_string(ids.size());
    return false;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (ids[size_t(i)] < 0 || ids[size_t(i)] >= m.vocabSize) {
      error = "token id " + std::to_string(ids[size_t(i)]) + " (slot " + std::to_string(i) +
              ") is outside the vocabulary [0, " + std::to_string(m.vocabSize) + ")";
      return false;
    }
    if (b.held[size_t(i)].length + 1 > b.maxTokens) {
      error = "slot " + std::to_string(i) + "'s sequence would pass the batch's " + std::to_string(b.maxTokens) +
              " tokens a sequence";
      return false;
    }
  }
  // Pages for the entry each sequence may complete now.
  for (Impl::Held &h : b.held)
    for (auto &[ratio, p] : b.pages)
      if (!b.takePages(ratio, h, (h.length + 1) / ratio, error))
        return false;
  Impl::Plan *plan = b.plan(error);
  if (!plan)
    return false;
  auto *tokenIds = static_cast<int32_t *>(plan->staged[0]);
  auto *positions = static_cast<int32_t *>(plan->staged[1]);
  for (int64_t i = 0; i < n; ++i) {
    tokenIds[i] = ids[size_t(i)];
    positions[i] = int32_t(b.held[size_t(i)].length);
  }
  size_t t = 3;
  for (auto &[ratio, p] : b.pages) {
    int64_t columns = plan->columns[t - 3];
    auto *table = static_cast<int32_t *>(plan->staged[t]);
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<int32_t> &owned = b.held[size_t(i)].pages.at(ratio);
      for (int64_t c = 0; c < columns; ++c)
        table[i * columns + c] = c < int64_t(owned.size()) ? owned[size_t(c)] : 0;   // 0: the zero page
    }
    ++t;
  }
  // The entry's inputs, in its order.
  std::vector<HostModel::Buffer> inputs;
  size_t storageAt = 0, tableAt = 3;
  for (const TensorSpec &in : b.entry->inputs) {
    if (in.name == "token_ids")
      inputs.push_back({plan->device[0], {n}});
    else if (in.name == "positions")
      inputs.push_back({plan->device[1], {n}});
    else if (in.name == "image_mask")
      inputs.push_back({plan->device[2], {n}});
    else if (in.name.rfind("slots:", 0) == 0) {
      const Impl::Storage &s = b.storage[storageAt++];
      inputs.push_back({s.data, {s.paged ? s.count : n, s.rows, s.packed ? s.rowBytes : s.width}});
    } else if (in.name.rfind("pages:", 0) == 0) {
      inputs.push_back({plan->device[tableAt], {n, plan->columns[tableAt - 3]}});
      ++tableAt;
    } else {
      error = "@batch_decode takes input '" + in.name + "', which this runtime cannot supply";
      return false;
    }
  }
  auto stage = [&] {
    if (b.cuda)
      for (size_t k = 0; k < plan->staged.size(); ++k)
        cuda::copyToDevice(plan->device[k], plan->staged[k], plan->bytes[k]);
  };
  std::vector<int64_t> results;
  bool replay = false;
  // A graph keeps the launches it captured: the choice is made per shape.
  cuda::ProgrammaticLaunchScope programmatic(b.cuda, n);
  if (b.cuda && b.graphs && !plan->graph) {
    // Capture: the copies of the inputs and every launch, not run.
    std::string why;
    if (cuda::beginCapture(why)) {
      stage();
      bool called = b.model->invoke("batch_decode", inputs, 2, results, error);
      std::shared_ptr<cuda::Graph> graph = cuda::endCapture(why);
      if (!called)
        return false;
      if (graph && cuda::takeError(why)) {
        plan->graph = graph;
        plan->graphResults = results;
        ++b.stats.graphCaptures;
      } else {
        std::fprintf(stderr, "dsf-run: warning: %s; the batch's steps run without CUDA graphs\n", why.c_str());
        b.graphs = false;
      }
    } else {
      b.graphs = false;
    }
  }
  if (plan->graph) {
    stage();
    if (!cuda::launchGraph(*plan->graph, error))
      return false;
    results = plan->graphResults;
    replay = true;
  } else {
    stage();
    if (!b.model->invoke("batch_decode", inputs, 2, results, error))
      return false;
  }
  // The logits [n, vocab].
  const int64_t *d = results.data();
  auto *allocated = reinterpret_cast<void *>(intptr_t(d[0]));
  const auto *aligned = reinterpret_cast<const float *>(intptr_t(d[1]));
  int64_t offset = d[2], rows = d[3], cols = d[4], rowStride = d[5], colStride = d[6];
  bool ok = true;
  if (rows != n || cols != m.vocabSize) {
    error = "@batch_decode returned logits of shape [" + std::to_string(rows) + ", " + std::to_string(cols) +
            "], expected [" + std::to_string(n) + ", " + std::to_string(m.vocabSize) + "]";
    ok = false;
  }
  std::vector<float> host;
  const float *view = aligned;
  int64_t span = rows && cols ? offset + (rows - 1) * rowStride + (cols - 1) * colStride + 1 : 0;
  // Row-major logits (what the entry returns) go straight into the caller's
  // buffer, which a loop of steps reuses: no 33 MB scratch to fault in and
  // repack a step at batch 64 of a 129,280-token vocabulary.
  const bool contiguous = offset == 0 && colStride == 1 && rowStride == cols;
  if (ok)
    logits.resize(size_t(n * m.vocabSize));
  if (b.cuda) {
    if (ok && contiguous) {
      cuda::copyToHost(logits.data(), aligned, logits.size() * sizeof(float));
    } else if (ok) {
      host.resize(size_t(span));
      cuda::copyToHost(host.data(), aligned, size_t(span) * sizeof(float));
      view = host.data();
    }
    std::string deviceError;
    if (!cuda::synchronize(deviceError)) {
      error = "@batch_decode on " + cuda::deviceName() + ": " + deviceError;
      ok = false;
    }
    if (!replay) {
      cuda::deviceFree(allocated);
      cuda::trimPool();
    }
  }
  if (ok && !(b.cuda && contiguous)) {
    if (contiguous)
      std::memcpy(logits.data(), view, logits.size() * sizeof(float));
    else
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          logits[size_t(r * cols + c)] = view[offset + r * rowStride + c * colStride];
  }
  if (!b.cuda)
    std::free(allocated);
  if (!ok)
    return false;
  for (Impl::Held &h : b.held)
    ++h.length;
  ++b.stats.steps;
  if (replay)
    ++b.stats.graphReplays;
  return true;
}

} // namespace dsf::rt
