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
//    Blocks computed after an approximate window rebuild are approximate:
//    they are kept as separate records (`HASH.approx.kvb`, flagged in the
//    header), never replace an exact record, and serve only requests that
//    accept approximation, so that an exact request's result always equals
//    a cold run's, whatever other requests and processes wrote.
//  * HostPool: whole states of idle sessions (windows included), one packed
//    buffer per session (one bulk copy each way), with a TTL and a byte
//    bound. Two backends: this process's memory (the default), or a Redis
//    server shared by several runtime processes and hosts, where the TTL and
//    the byte bound are Redis's own and each record is checksummed and tagged
//    with the format version; a server that goes away degrades to misses
//    (the windows are then rebuilt by replay), with a warning.
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
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

/// The model's identity for cached state: the artifact's manifest and
/// kernels, and the checkpoint (every tensor's name, dtype, shape and a
/// sample of its bytes: the first, middle and last 4 KiB).
uint64_t modelHash(const Artifact &artifact, const WeightSource &weights);

/// FNV-1a, 64 bits: the chained block hashes (the records' names) and the
/// model hash.
uint64_t checksum64(const void *data, size_t n, uint64_t seed = 0xcbf29ce484222325ull);

/// XXH3-64 (xxHash, Debian's libxxhash-dev, inlined): the checksums of the
/// prefix store's and the Redis pool's records, which a restore computes over
/// every byte it reads (XXH3 runs at memory speed; byte-wise FNV-1a was most
/// of a store restore).
uint64_t recordChecksum(const void *data, size_t n);

/// A state tensor in its slot's storage format (lossless; `t` needs host
/// values), and back: unpackState checks the tensor at `at` in `bytes` and
/// makes `t` refer to it there (t.packed), to be decoded where the next call
/// runs.
std::string packState(const StateSlot &slot, const StateTensor &t);
bool unpackState(const StateSlot &slot, const std::shared_ptr<const std::string> &bytes, size_t &at, StateTensor &t,
                 std::string &error);

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
  /// it is extended as far as the lookup needs. With `allowApproximate`, a
  /// block with no exact record may come from an approximate one (the
  /// sequence is then marked approximate); without it, only exact records.
  int64_t restore(const std::vector<int32_t> &ids, std::vector<uint64_t> &chain, int64_t maxTokens,
                  bool allowApproximate, Sequence &sequence, int64_t &bytes, std::vector<std::string> &warnings);

  /// Persists the block that ends at sequence.length (a multiple of the
  /// block size), `ids` being the sequence's tokens, as an approximate
  /// record if the sequence is approximate. Skipped when that record, or an
  /// exact one for the block, is present.
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
  std::string recordName(uint64_t hash, bool approximate) const;
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

/// Where idle sessions' whole states wait (their windows included).
class HostPool {
public:
  struct Options {
    int64_t ttlSeconds = 300;
    int64_t maxBytes = int64_t(1) << 32;
    /// The in-process pool's records page-locked while they are kept (for a
    /// CUDA model: HostModel::pinHostMemory), so that a restore is one DMA
    /// copy to the device. Optional; a failure leaves a record pageable.
    std::function<bool(const void *, size_t)> pin;
    std::function<void(const void *)> unpin;
  };
  virtual ~HostPool() = default;

  /// Keeps a session's whole state (its tokens and sequence), packed in one
  /// buffer, for the TTL. Returns the bytes stored (0 if it was not).
  virtual int64_t put(const std::string &session, const std::vector<int32_t> &ids, const Sequence &sequence,
                      std::vector<std::string> &warnings) = 0;
  /// The session's state if it is there, intact and not expired (it stays).
  virtual bool get(const std::string &session, std::vector<int32_t> &ids, Sequence &sequence, int64_t &bytes,
                   std::vector<std::string> &warnings) = 0;
  /// Where it is, for messages ("in-process", "redis://HOST:PORT").
  virtual std::string where() const = 0;

  /// In this process's memory: least recently used sessions are evicted past
  /// the byte bound.
  static std::unique_ptr<HostPool> inProcess(const Manifest &manifest, Options options);
  /// In the Redis server at `url` (redis://HOST:PORT[/DB]), under keys named
  /// by the model's hash and the session. Redis enforces the TTL (each record
  /// is written with it) and the byte bound (the server's maxmemory and its
  /// eviction policy, which the operator sets; `maxBytes` bounds one record).
  /// Fails if the server cannot be reached now; later failures are warnings.
  static std::unique_ptr<HostPool> redis(const Manifest &manifest, Options options, const std::string &url,
                                         uint64_t modelHash, std::string &error);
};

/// A session's state as one buffer (ids, length, every slot packed), and
/// back; what both host-pool backends store.
std::string packSession(const Manifest &manifest, const std::vector<int32_t> &ids, const Sequence &sequence);
bool unpackSession(const Manifest &manifest, const std::shared_ptr<const std::string> &packed, std::vector<int32_t> &ids,
                   Sequence &sequence, std::string &error);

} // namespace dsf::rt

#endif // DSF_RUNTIME_KV_TIERS_H
