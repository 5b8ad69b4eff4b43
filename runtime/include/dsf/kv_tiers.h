//===- kv_tiers.h - where a sequence's state waits between requests ---------===//
//
// Two tiers below the live sequence (MODEL.md, "Tiered cache"):
//
//  * PrefixStore: the global KV (compressed caches, index keys, compressors'
//    carries) of token prefixes, persisted in a directory (an SSD) for hours.
//    One record per block of B tokens, named by a chained hash of the blocks
//    (seeded with the model's hash), holding what that block added to each
//    cache, so any prefix at block granularity is found by hashing it. Each
//    record is written atomically (temporary file, fsync, rename), checksummed
//    and tagged with the model hash and the record format version; a record
//    that fails any check is skipped (and removed), never used. A byte bound
//    evicts least recently used records; a TTL expires them; the directory is
//    the index, so a restart (or another process) sees the same cache.
//  * HostPool: whole states of idle sessions (windows included) in host
//    memory, one packed buffer per session (one bulk copy each way), with a
//    TTL and a byte bound. In-process.
//
// States are stored in the formats their values are exact in (the window in
// FP8, the compressed KV in NVFP4, the index keys in MXFP4, as the manifest's
// state slots say), checked lossless when packed, else kept as f32.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_KV_TIERS_H
#define DSF_RUNTIME_KV_TIERS_H

#include "dsf/artifact.h"
#include "dsf/host_model.h"
#include "dsf/weights.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

/// The model's identity for cached state: the artifact's manifest and
/// kernels, and the checkpoint (every tensor's name, dtype, shape and a
/// sample of its bytes: the first, middle and last 4 KiB).
uint64_t modelHash(const Artifact &artifact, const WeightSource &weights);

/// A state tensor in its slot's storage format (lossless), and back.
std::string packState(const StateSlot &slot, const StateTensor &t);
bool unpackState(const StateSlot &slot, const std::string &bytes, size_t &at, StateTensor &t, std::string &error);

class PrefixStore {
public:
  struct Options {
    std::string dir;
    int64_t blockTokens = 64;
    int64_t maxBytes = 0;         // 0: unbounded
    int64_t ttlSeconds = 4 * 3600;
  };
  /// Opens (creating) the directory, removes stale temporary files, and
  /// reads the records there into the LRU index.
  static std::unique_ptr<PrefixStore> open(const Options &options, const Manifest &manifest, uint64_t modelHash,
                                           std::string &error);

  int64_t blockTokens() const { return options_.blockTokens; }

  /// The longest prefix of `ids` of at most `maxTokens` tokens, in whole
  /// blocks, whose records are all present and valid: its caches and carries
  /// go into `sequence` (length = the prefix, windows empty). Returns the
  /// prefix length (0: nothing). `bytes` counts what was read; `warnings`
  /// says what was skipped and why.
  /// `chain` holds the chained hashes of ids' first blocks (see extendChain);
  /// it is extended as far as the lookup needs.
  int64_t restore(const std::vector<int32_t> &ids, std::vector<uint64_t> &chain, int64_t maxTokens,
                  Sequence &sequence, int64_t &bytes, std::vector<std::string> &warnings);

  /// Persists the block that ends at sequence.length (a multiple of the
  /// block size), `ids` being the sequence's tokens. Skipped when present.
  /// Returns the bytes written; a failure (a full disk) is a warning, and
  /// persisting stops for this store.
  int64_t persist(const std::vector<int32_t> &ids, std::vector<uint64_t> &chain, const Sequence &sequence,
                  std::vector<std::string> &warnings);

  /// Extends `chain` (the hashes of ids' first chain.size() blocks, each
  /// over its parent's) to `blocks` hashes, hashing only the new blocks: a
  /// request keeps one chain as its tokens grow, so persisting block k costs
  /// one block's hashing, not k.
  void extendChain(const std::vector<int32_t> &ids, std::vector<uint64_t> &chain, int64_t blocks) const;

  /// Bytes of records in the index.
  int64_t bytes() const;

private:
  PrefixStore() = default;
  std::string recordPath(uint64_t hash) const;
  void evict(std::vector<std::string> &warnings);

  Options options_;
  const Manifest *manifest_ = nullptr;
  uint64_t modelHash_ = 0;
  bool writable_ = true;
  struct Indexed {
    int64_t bytes;
    int64_t lastUse;   // seconds since the epoch (the file's mtime)
  };
  std::map<std::string, Indexed> index_;   // file name -> size, last use
};

class HostPool {
public:
  struct Options {
    int64_t ttlSeconds = 300;
    int64_t maxBytes = int64_t(1) << 32;
  };
  explicit HostPool(const Manifest &manifest, Options options) : manifest_(&manifest), options_(options) {}

  /// Keeps a session's whole state (its tokens and sequence), packed in one
  /// buffer; evicts the least recently used sessions past the byte bound.
  /// Returns the bytes stored.
  int64_t put(const std::string &session, const std::vector<int32_t> &ids, const Sequence &sequence);
  /// The session's state if it is there and has not expired (it stays).
  bool get(const std::string &session, std::vector<int32_t> &ids, Sequence &sequence, int64_t &bytes);
  int64_t bytes() const { return bytes_; }

private:
  struct Entry {
    std::vector<int32_t> ids;
    int64_t length = 0;
    std::string packed;
    std::chrono::steady_clock::time_point expires, used;
  };
  void erase(const std::string &session);

  const Manifest *manifest_;
  Options options_;
  std::map<std::string, Entry> sessions_;
  int64_t bytes_ = 0;   // of every session's packed state
};

} // namespace dsf::rt

#endif // DSF_RUNTIME_KV_TIERS_H
