//===- kv_tiers.cpp - where a sequence's state waits between requests -------===//
#include "dsf/kv_tiers.h"
#include "dsf/codecs.h"
#include "file_io.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// Header-only: the runtime carries no xxhash library dependency.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace dsf::rt {

uint64_t recordChecksum(const void *data, size_t n) { return XXH3_64bits(data, n); }

uint64_t checksum64(const void *data, size_t n, uint64_t seed) {
  auto *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < n; ++i)
    seed = (seed ^ p[i]) * 0x100000001b3ull;
  return seed;
}

namespace {
constexpr char kRecordMagic[8] = {'D', 'S', 'F', 'K', 'V', 'B', 'L', 'K'};
// Version 2: the header's flags (version 1 records may hold approximate
// blocks unflagged, so they are not read). Version 3: XXH3-64 checksums
// (recordChecksum) instead of FNV-1a.
constexpr uint32_t kRecordVersion = 3;
constexpr uint32_t kRecordApproximate = 1;   // computed after an approximate window rebuild
constexpr size_t kRecordHeader = 72;   // 64 bytes of fields + their checksum
constexpr const char *kRecordSuffix = ".kvb";

enum Encoding : uint8_t { F32 = 0, FP8 = 1, MXFP4 = 2, NVFP4 = 3 };

void put(std::string &s, const void *p, size_t n) { s.append(static_cast<const char *>(p), n); }
template <typename T> void putValue(std::string &s, T v) { put(s, &v, sizeof v); }
template <typename T> bool getValue(const std::string &s, size_t &at, T &v) {
  if (at + sizeof v > s.size())
    return false;
  std::memcpy(&v, s.data() + at, sizeof v);
  at += sizeof v;
  return true;
}


std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

int64_t nowSeconds() { return int64_t(std::time(nullptr)); }

} // namespace

uint64_t modelHash(const Artifact &artifact, const WeightSource &weights) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (SectionKind kind : {SectionKind::Manifest, SectionKind::HostKernels})
    if (const std::string *s = artifact.section(kind))
      h = checksum64(s->data(), s->size(), h);
  for (const auto &[name, t] : weights.tensors()) {
    h = checksum64(name.data(), name.size(), h);
    h = checksum64(&t->dtype, sizeof t->dtype, h);
    h = checksum64(t->shape.data(), t->shape.size() * sizeof(int64_t), h);
    size_t sample = std::min<size_t>(4096, t->bytes);
    h = checksum64(t->data, sample, h);
    h = checksum64(t->data + (t->bytes - sample) / 2, sample, h);
    h = checksum64(t->data + t->bytes - sample, sample, h);
  }
  return h;
}

std::string packState(const StateSlot &slot, const StateTensor &t) {
  std::string out;
  RowFormat f;
  std::string codes, scales;
  bool packed = false;
  if (rowFormatOf(slot, f) && t.width == slot.width && t.rows > 0) {
    codes.resize(size_t(t.rows * codeBytes(f, t.width)));
    scales.resize(size_t(t.rows * (t.width / blockOf(f))));
    quantizeRows(t.values.data(), t.rows, t.width, f, reinterpret_cast<uint8_t *>(codes.data()),
                 reinterpret_cast<uint8_t *>(scales.data()));
    // Lossless or not at all: the values must come back bit for bit.
    std::vector<float> back(t.values.size());
    dequantizeRows(reinterpret_cast<const uint8_t *>(codes.data()), reinterpret_cast<const uint8_t *>(scales.data()),
                   t.rows, t.width, f, back.data());
    packed = std::memcmp(back.data(), t.values.data(), back.size() * sizeof(float)) == 0;
  }
  Encoding e = !packed ? F32 : f == RowFormat::FP8 ? FP8 : f == RowFormat::MXFP4 ? MXFP4 : NVFP4;
  putValue<uint8_t>(out, e);
  putValue<int64_t>(out, t.rows);
  putValue<int64_t>(out, t.width);
  if (packed) {
    put(out, codes.data(), codes.size());
    put(out, scales.data(), scales.size());
  } else {
    put(out, t.values.data(), t.values.size() * sizeof(float));
  }
  return out;
}

namespace {
/// Checks the tensor at `at` in `bytes` (header, format, size) and says
/// where its codes and scales are, leaving `at` after it.
bool scanState(const StateSlot &slot, const std::string &bytes, size_t &at, int64_t &rows, int64_t &width,
               PackedRows::Segment &segment, std::string &error) {
  uint8_t e;
  if (!getValue(bytes, at, e) || !getValue(bytes, at, rows) || !getValue(bytes, at, width) || e > NVFP4 ||
      rows < 0 || width != slot.width || rows > (int64_t(1) << 32)) {
    error = "state '" + slot.name + "': bad tensor header";
    return false;
  }
  segment = PackedRows::Segment();
  segment.rows = rows;
  segment.codes = at;
  if (e == F32) {
    segment.f32 = true;
    size_t n = size_t(rows * width) * sizeof(float);
    if (at + n > bytes.size()) {
      error = "state '" + slot.name + "': truncated";
      return false;
    }
    at += n;
    return true;
  }
  RowFormat f = e == FP8 ? RowFormat::FP8 : e == MXFP4 ? RowFormat::MXFP4 : RowFormat::NVFP4;
  RowFormat expected;
  if (!rowFormatOf(slot, expected) || expected != f) {
    error = "state '" + slot.name + "': stored in another format than the model's";
    return false;
  }
  size_t codes = size_t(rows * codeBytes(f, width)), scales = size_t(rows * (width / blockOf(f)));
  if (at + codes + scales > bytes.size()) {
    error = "state '" + slot.name + "': truncated";
    return false;
  }
  segment.format = f;
  segment.scales = at + codes;
  at += codes + scales;
  return true;
}
} // namespace

bool unpackState(const StateSlot &slot, const std::shared_ptr<const std::string> &packed, size_t &at,
                 StateTensor &t, std::string &error) {
  PackedRows::Segment segment;
  if (!scanState(slot, *packed, at, t.rows, t.width, segment, error))
    return false;
  // Decoded where the next call needs it (HostModel::placeState): on the
  // device for a CUDA artifact.
  t.values.clear();
  t.device.reset();
  auto rows = std::make_shared<PackedRows>();
  rows->bytes = packed;
  if (t.rows > 0)
    rows->segments.push_back(segment);
  t.packed = std::move(rows);
  return true;
}

//===----------------------------------------------------------------------===//
// PrefixStore
//===----------------------------------------------------------------------===//

std::unique_ptr<PrefixStore> PrefixStore::open(const Options &options, const Manifest &manifest, uint64_t modelHash,
                                               std::string &error) {
  if (options.blockTokens < 1) {
    error = "the prefix cache's block must hold at least one token";
    return nullptr;
  }
  // A block must end every compressed group it starts, so that its records
  // hold whole entries and the carries at its end are the only open rows.
  for (const StateSlot &s : manifest.state)
    if ((s.kind == "kv" || s.kind == "index_keys") && s.ratio > 1 && options.blockTokens % s.ratio) {
      error = "the prefix cache's block (" + std::to_string(options.blockTokens) +
              " tokens) is not a multiple of the ratio " + std::to_string(s.ratio) + " of state '" + s.name + "'";
      return nullptr;
    }
  if (::mkdir(options.dir.c_str(), 0755) != 0 && errno != EEXIST) {
    error = options.dir + ": cannot create the prefix cache directory: " + std::strerror(errno);
    return nullptr;
  }
  DIR *d = ::opendir(options.dir.c_str());
  if (!d) {
    error = options.dir + ": cannot read the prefix cache directory: " + std::strerror(errno);
    return nullptr;
  }
  auto store = std::unique_ptr<PrefixStore>(new PrefixStore());
  store->options_ = options;
  store->manifest_ = &manifest;
  store->modelHash_ = modelHash;
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name, path = options.dir + "/" + name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    // A temporary file of a process that is gone (killed while writing).
    size_t tmp = name.find(".tmp.");
    if (tmp != std::string::npos) {
      long pid = std::strtol(name.c_str() + tmp + 5, nullptr, 10);
      if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
        ::unlink(path.c_str());
      continue;
    }
    if (name.size() > 4 && name.compare(name.size() - 4, 4, kRecordSuffix) == 0)
      store->index_[name] = {int64_t(st.st_size), int64_t(st.st_mtime)};
  }
  ::closedir(d);
  return store;
}

std::string PrefixStore::recordName(uint64_t hash, bool approximate) const {
  return hex(hash) + (approximate ? ".approx" : "") + kRecordSuffix;
}

void PrefixStore::extendChain(const std::vector<int32_t> &ids, std::vector<uint64_t> &chain, int64_t blocks) const {
  while (int64_t(chain.size()) < blocks) {
    uint64_t parent = chain.empty() ? modelHash_ : chain.back();
    chain.push_back(checksum64(ids.data() + int64_t(chain.size()) * options_.blockTokens,
                               size_t(options_.blockTokens) * 4, parent ^ 0x9e3779b97f4a7c15ull));
  }
}

int64_t PrefixStore::bytes() const {
  int64_t total = 0;
  for (const auto &[name, e] : index_)
    total += e.bytes;
  return total;
}

int64_t PrefixStore::restore(const std::vector<int32_t> &ids, std::vector<uint64_t> &hashes, int64_t maxTokens,
                             bool allowApproximate, Sequence &sequence, int64_t &bytes,
                             std::vector<std::string> &warnings) {
  int64_t B = options_.blockTokens, blocks = std::min<int64_t>(maxTokens, int64_t(ids.size())) / B;
  extendChain(ids, hashes, blocks);
  // Every record is read straight into one buffer, which the sequence's
  // state then refers to (decoded where the next call runs:
  // HostModel::placeState), so that a CUDA artifact takes the whole prefix
  // in one bulk copy.
  std::string all;
  std::map<std::string, StateTensor> state;
  std::map<std::string, PackedRows> rows;
  for (const StateSlot &s : manifest_->state)
    state[s.name] = StateTensor{0, s.width, {}, nullptr, nullptr};
  int64_t found = 0;
  bool approximate = false;
  std::vector<std::string> used;
  // What a block's record adds to a slot: its rows there, in `all`.
  struct Delta {
    const StateSlot *slot;
    int64_t rows;
    PackedRows::Segment segment;
  };
  // Block k's record, exact or approximate, appended to `all`: its deltas,
  // or why not (and `all` as it was).
  enum class Read { Missing, Rejected, Ok };
  auto readBlock = [&](int64_t k, bool approx, std::vector<Delta> &deltas) {
    std::string name = recordName(hashes[size_t(k)], approx), path = options_.dir + "/" + name;
    const size_t base = all.size();
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return Read::Missing;
    auto reject = [&](const std::string &why) {
      warnings.push_back(path + ": " + why + "; not used (recomputed)");
      ::unlink(path.c_str());
      index_.erase(name);
      all.resize(base);
      return Read::Rejected;
    };
    if (options_.ttlSeconds > 0 && nowSeconds() - int64_t(st.st_mtime) > options_.ttlSeconds) {
      ::unlink(path.c_str());   // expired: a miss, not a fault
      index_.erase(name);
      return Read::Missing;
    }
    std::string error;
    if (!appendWholeFile(path, all, error)) {
      warnings.push_back(error);
      return Read::Missing;
    }
    const char *record = all.data() + base;
    const size_t size = all.size() - base;
    // Header: magic, version, flags, model, chain hashes, block, sizes,
    // checksums.
    uint32_t version = 0, flags = 0, blockIndex = 0, blockTokens = 0;
    uint64_t model = 0, hash = 0, parent = 0, payloadBytes = 0, payloadSum = 0, headerSum = 0;
    size_t at = base + 8;
    if (size < kRecordHeader || std::memcmp(record, kRecordMagic, 8) != 0)
      return reject("not a prefix-cache record (bad magic or truncated header)");
    getValue(all, at, version);
    getValue(all, at, flags);
    getValue(all, at, model);
    getValue(all, at, hash);
    getValue(all, at, parent);
    getValue(all, at, blockIndex);
    getValue(all, at, blockTokens);
    getValue(all, at, payloadBytes);
    getValue(all, at, payloadSum);
    getValue(all, at, headerSum);
    // The version first: an older record's checksums are of another kind.
    if (version != kRecordVersion)
      return reject("record format version " + std::to_string(version) + ", this runtime reads " +
                    std::to_string(kRecordVersion));
    if (headerSum != recordChecksum(record, 64))
      return reject("header checksum mismatch (corrupted)");
    if (flags != (approx ? kRecordApproximate : 0u))
      return reject(std::string("flagged ") + (flags & kRecordApproximate ? "approximate" : "exact") +
                    " under the name of an " + (approx ? "approximate" : "exact") + " record");
    if (model != modelHash_ || hash != hashes[size_t(k)] || parent != (k ? hashes[size_t(k - 1)] : modelHash_) ||
        blockIndex != uint32_t(k + 1) || blockTokens != uint32_t(B))
      return reject("a record of another model or prefix");
    if (size != kRecordHeader + payloadBytes)
      return reject("truncated (" + std::to_string(size) + " bytes, expected " +
                    std::to_string(kRecordHeader + payloadBytes) + ")");
    if (payloadSum != recordChecksum(record + kRecordHeader, payloadBytes))
      return reject("payload checksum mismatch (corrupted)");
    if (std::memcmp(record + kRecordHeader, ids.data() + k * B, size_t(B) * 4) != 0)
      return reject("holds other tokens (a hash collision)");
    at = base + kRecordHeader + size_t(B) * 4;
    uint32_t count = 0;
    getValue(all, at, count);
    bool ok = count == manifest_->state.size();
    std::string why = ok ? "" : "holds another set of state slots";
    for (uint32_t i = 0; ok && i < count; ++i) {
      const StateSlot &slot = manifest_->state[i];
      if (slot.kind == "window")
        continue;
      Delta d{&slot, 0, {}};
      int64_t width = 0;
      ok = scanState(slot, all, at, d.rows, width, d.segment, why);
      deltas.push_back(d);
    }
    if (!ok)
      return reject(why);
    used.push_back(path);
    return Read::Ok;
  };
  for (int64_t k = 0; k < blocks; ++k) {
    std::vector<Delta> deltas;
    Read read = readBlock(k, false, deltas);
    bool approx = false;
    if (read != Read::Ok && allowApproximate) {
      deltas.clear();
      approx = true;
      read = readBlock(k, true, deltas);
    }
    if (read != Read::Ok)
      break;
    approximate |= approx;
    for (Delta &d : deltas) {
      StateTensor &acc = state[d.slot->name];
      PackedRows &accRows = rows[d.slot->name];
      if (d.slot->kind == "carry") {   // a carry is the block's last, not a sum
        acc.rows = 0;
        accRows.segments.clear();
      }
      d.segment.firstRow = acc.rows;
      if (d.rows > 0)
        accRows.segments.push_back(d.segment);
      acc.rows += d.rows;
    }
    found = k + 1;
  }
  bytes += int64_t(all.size());
  if (found == 0)
    return 0;
  // The caches of a prefix of P tokens hold P div ratio entries each.
  for (const StateSlot &s : manifest_->state)
    if ((s.kind == "kv" || s.kind == "index_keys") && state[s.name].rows != found * B / s.ratio) {
      warnings.push_back(options_.dir + ": records of cache '" + s.name + "' do not add up; not used");
      return 0;
    }
  // Recently used: LRU order survives restarts through the files' mtimes.
  for (const std::string &path : used) {
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
    std::string name = path.substr(path.rfind('/') + 1);
    if (index_.count(name))
      index_[name].lastUse = nowSeconds();
  }
  auto shared = std::make_shared<const std::string>(std::move(all));
  for (auto &[slotName, t] : state) {
    PackedRows &r = rows[slotName];
    r.bytes = shared;
    t.packed = std::make_shared<const PackedRows>(std::move(r));
  }
  sequence.state = std::move(state);
  sequence.length = found * B;
  sequence.approximate = approximate;
  return found * B;
}

int64_t PrefixStore::persist(const std::vector<int32_t> &ids, std::vector<uint64_t> &hashes, const Sequence &sequence,
                             std::vector<std::string> &warnings) {
  int64_t B = options_.blockTokens, end = sequence.length;
  if (!writable_ || end % B || end == 0 || int64_t(ids.size()) < end)
    return 0;
  int64_t k = end / B;
  extendChain(ids, hashes, k);
  std::string name = recordName(hashes[size_t(k - 1)], sequence.approximate), path = options_.dir + "/" + name;
  std::string exactPath = options_.dir + "/" + recordName(hashes[size_t(k - 1)], false);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 || ::stat(exactPath.c_str(), &st) == 0)
    return 0;   // there already (a bad one is removed when read, then rewritten)
  std::string payload;
  put(payload, ids.data() + (k - 1) * B, size_t(B) * 4);
  putValue<uint32_t>(payload, uint32_t(manifest_->state.size()));
  for (const StateSlot &slot : manifest_->state) {
    if (slot.kind == "window")
      continue;
    auto it = sequence.state.find(slot.name);
    if (it == sequence.state.end())
      return 0;
    const StateTensor &t = it->second;
    if (slot.kind == "carry") {
      payload += packState(slot, t);
      continue;
    }
    // What this block added: entries [(k-1)B / r, kB / r).
    int64_t from = (k - 1) * B / slot.ratio, to = k * B / slot.ratio;
    if (t.rows != to) {
      warnings.push_back("state '" + slot.name + "' has " + std::to_string(t.rows) + " entries at " +
                         std::to_string(end) + " tokens, expected " + std::to_string(to) + "; not persisted");
      return 0;
    }
    StateTensor part{to - from, t.width, {}, nullptr, nullptr};
    part.values.assign(t.values.begin() + from * t.width, t.values.begin() + to * t.width);
    payload += packState(slot, part);
  }
  std::string header(kRecordMagic, 8);
  putValue<uint32_t>(header, kRecordVersion);
  putValue<uint32_t>(header, sequence.approximate ? kRecordApproximate : 0u);
  putValue<uint64_t>(header, modelHash_);
  putValue<uint64_t>(header, hashes[size_t(k - 1)]);
  putValue<uint64_t>(header, k > 1 ? hashes[size_t(k - 2)] : modelHash_);
  putValue<uint32_t>(header, uint32_t(k));
  putValue<uint32_t>(header, uint32_t(B));
  putValue<uint64_t>(header, uint64_t(payload.size()));
  putValue<uint64_t>(header, recordChecksum(payload.data(), payload.size()));
  putValue<uint64_t>(header, recordChecksum(header.data(), 64));
  std::string error;
  // Fault injection for the tests of what readers see (test/runtime/tiers.test):
  // DSF_FAULT_FULL_DISK fails every record write as a full disk does;
  // DSF_FAULT_KILL_WRITING=N kills the process (SIGKILL) halfway through
  // writing its N-th record, where writeFileAtomically would be.
  static int records = 0;
  ++records;
  bool full = std::getenv("DSF_FAULT_FULL_DISK") != nullptr;
  if (const char *kill = std::getenv("DSF_FAULT_KILL_WRITING"); kill && std::atoi(kill) == records) {
    std::string temp = path + ".tmp." + std::to_string(::getpid());
    if (FILE *f = std::fopen(temp.c_str(), "wb")) {
      std::fwrite(header.data(), 1, header.size(), f);
      std::fwrite(payload.data(), 1, payload.size() / 2, f);
      std::fflush(f);
    }
    std::raise(SIGKILL);
  }
  if (full)
    error = path + ": cannot write: " + std::strerror(ENOSPC);
  if (full || !writeFileAtomically(path, {{header.data(), header.size()}, {payload.data(), payload.size()}}, error)) {
    warnings.push_back(error + "; the prefix cache stops persisting (results are unaffected)");
    writable_ = false;
    return 0;
  }
  int64_t written = int64_t(header.size() + payload.size());
  index_[name] = {written, nowSeconds()};
  if (!sequence.approximate) {
    // An exact record supersedes an approximate one of the same block.
    std::string approxName = recordName(hashes[size_t(k - 1)], true);
    if (::unlink((options_.dir + "/" + approxName).c_str()) == 0)
      index_.erase(approxName);
  }
  evict(warnings);
  return written;
}

void PrefixStore::evict(std::vector<std::string> &warnings) {
  if (options_.maxBytes <= 0)
    return;
  int64_t total = bytes();
  while (total > options_.maxBytes && !index_.empty()) {
    auto oldest = std::min_element(index_.begin(), index_.end(), [](const auto &a, const auto &b) {
      return a.second.lastUse < b.second.lastUse;
    });
    ::unlink((options_.dir + "/" + oldest->first).c_str());
    total -= oldest->second.bytes;
    index_.erase(oldest);
  }
  (void)warnings;
}

//===----------------------------------------------------------------------===//
// HostPool
//===----------------------------------------------------------------------===//

std::string packSession(const Manifest &manifest, const std::vector<int32_t> &ids, const Sequence &sequence) {
  std::string packed;
  putValue<int64_t>(packed, sequence.length);
  putValue<uint32_t>(packed, sequence.approximate ? 1u : 0u);
  putValue<uint64_t>(packed, ids.size());
  put(packed, ids.data(), ids.size() * sizeof(int32_t));
  // Every slot, packed (the bulk copy a device would make).
  for (const StateSlot &slot : manifest.state) {
    auto it = sequence.state.find(slot.name);
    StateTensor empty{0, slot.width, {}, nullptr, nullptr};
    packed += packState(slot, it == sequence.state.end() ? empty : it->second);
  }
  return packed;
}

bool unpackSession(const Manifest &manifest, const std::shared_ptr<const std::string> &session,
                   std::vector<int32_t> &ids, Sequence &sequence, std::string &error) {
  const std::string &packed = *session;
  size_t at = 0;
  int64_t length = 0;
  uint64_t count = 0;
  uint32_t flags = 0;
  if (!getValue(packed, at, length) || !getValue(packed, at, flags) || !getValue(packed, at, count) ||
      count > (packed.size() - at) / 4 || length < 0 || uint64_t(length) > count || flags > 1) {
    error = "a malformed session header";
    return false;
  }
  std::vector<int32_t> held(count);
  std::memcpy(held.data(), packed.data() + at, count * 4);
  at += count * 4;
  Sequence s;
  for (const StateSlot &slot : manifest.state) {
    StateTensor t;
    if (!unpackState(slot, session, at, t, error))
      return false;
    s.state[slot.name] = std::move(t);
  }
  if (at != packed.size()) {
    error = "bytes after the last state slot";
    return false;
  }
  s.length = length;
  s.approximate = flags & 1;
  ids = std::move(held);
  sequence = std::move(s);
  return true;
}

namespace {
/// The default host pool: a map in this process.
class InProcessPool : public HostPool {
public:
  InProcessPool(const Manifest &manifest, Options options) : manifest_(&manifest), options_(options) {}

  int64_t put(const std::string &session, const std::vector<int32_t> &ids, const Sequence &sequence,
              std::vector<std::string> &) override {
    Entry e;
    auto *packed = new std::string(packSession(*manifest_, ids, sequence));
    // Page-locked while anything holds it: the pool, or a sequence restored
    // from it whose state has not been decoded yet.
    if (options_.pin && options_.unpin && options_.pin(packed->data(), packed->size()))
      e.packed = std::shared_ptr<const std::string>(packed, [unpin = options_.unpin](const std::string *p) {
        unpin(p->data());
        delete p;
      });
    else
      e.packed = std::shared_ptr<const std::string>(packed);
    auto now = std::chrono::steady_clock::now();
    e.expires = now + std::chrono::seconds(options_.ttlSeconds);
    e.used = now;
    int64_t stored = int64_t(e.packed->size());
    erase(session);
    bytes_ += stored;
    sessions_[session] = std::move(e);
    // Least recently used sessions go first past the bound (never the new one).
    while (bytes_ > options_.maxBytes && sessions_.size() > 1) {
      auto oldest = sessions_.end();
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
        if (it->first != session && (oldest == sessions_.end() || it->second.used < oldest->second.used))
          oldest = it;
      erase(oldest->first);
    }
    return stored;
  }

  bool get(const std::string &session, std::vector<int32_t> &ids, Sequence &sequence, int64_t &bytes,
           std::vector<std::string> &warnings) override {
    auto it = sessions_.find(session);
    if (it == sessions_.end())
      return false;
    auto now = std::chrono::steady_clock::now();
    if (now >= it->second.expires) {
      erase(session);
      return false;
    }
    std::string error;
    if (!unpackSession(*manifest_, it->second.packed, ids, sequence, error)) {
      warnings.push_back("host pool, session '" + session + "': " + error + "; not used (recomputed)");
      erase(session);
      return false;
    }
    it->second.used = now;
    bytes = int64_t(it->second.packed->size());
    return true;
  }

  std::string where() const override { return "in-process"; }

private:
  struct Entry {
    // Shared with the sequences restored from it, which decode from it.
    std::shared_ptr<const std::string> packed;
    std::chrono::steady_clock::time_point expires, used;
  };
  void erase(const std::string &session) {
    auto it = sessions_.find(session);
    if (it == sessions_.end())
      return;
    bytes_ -= int64_t(it->second.packed->size());
    sessions_.erase(it);
  }

  const Manifest *manifest_;
  Options options_;
  std::map<std::string, Entry> sessions_;
  int64_t bytes_ = 0;   // of every session's packed state
};
} // namespace

std::unique_ptr<HostPool> HostPool::inProcess(const Manifest &manifest, Options options) {
  return std::make_unique<InProcessPool>(manifest, options);
}

} // namespace dsf::rt
