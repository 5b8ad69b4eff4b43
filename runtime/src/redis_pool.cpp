//===- redis_pool.cpp - the host pool in a Redis server ---------------------===//
//
// Sessions' whole states in a Redis server, shared by every runtime process
// that reaches it, through hiredis (Debian's libhiredis-dev: the client the
// Redis project keeps; binary-safe arguments, timeouts). One key per session,
//   dsf:pool:<model hash>:<session>
// whose value is a 48-byte header (magic, format version, model hash,
// payload size and checksum, header checksum) and the packed session. Redis
// owns the lifetime: every SET carries the TTL (PX), and the byte bound is
// the server's maxmemory with its eviction policy. A record that fails a
// check is reported, deleted and not used. A server that stops answering
// turns into misses with one warning; the pool tries to reconnect at most
// once a second, so a request never waits on a dead server for long.
//
//===----------------------------------------------------------------------===//
#include "dsf/kv_tiers.h"

#include <chrono>
#include <cstring>
#include <hiredis/hiredis.h>

namespace dsf::rt {
namespace {
constexpr char kMagic[8] = {'D', 'S', 'F', 'P', 'O', 'O', 'L', '1'};
// Version 2: a session's state says whether it is approximate (Sequence::approximate).
constexpr uint32_t kVersion = 3;   // 3: XXH3-64 checksums (recordChecksum)
constexpr size_t kHeader = 48;

struct ReplyDeleter {
  void operator()(redisReply *r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

class RedisPool : public HostPool {
public:
  RedisPool(const Manifest &manifest, Options options, std::string url, std::string host, int port, int db,
            uint64_t modelHash)
      : manifest_(&manifest), options_(options), url_(std::move(url)), host_(std::move(host)), port_(port), db_(db),
        modelHash_(modelHash) {}
  ~RedisPool() override {
    if (context_)
      redisFree(context_);
  }

  bool connect(std::string &error) {
    if (context_) {
      redisFree(context_);
      context_ = nullptr;
    }
    lastAttempt_ = std::chrono::steady_clock::now();
    timeval connectTimeout{0, 500 * 1000}, commandTimeout{2, 0};
    context_ = redisConnectWithTimeout(host_.c_str(), port_, connectTimeout);
    if (!context_ || context_->err) {
      error = url_ + ": cannot connect: " + (context_ ? context_->errstr : "out of memory");
      return drop();
    }
    redisSetTimeout(context_, commandTimeout);
    Reply r(static_cast<redisReply *>(db_ ? redisCommand(context_, "SELECT %d", db_) : redisCommand(context_, "PING")));
    if (!r || r->type == REDIS_REPLY_ERROR) {
      error = url_ + ": " + (r ? std::string(r->str, r->len) : std::string(context_->errstr));
      return drop();
    }
    return true;
  }

  int64_t put(const std::string &session, const std::vector<int32_t> &ids, const Sequence &sequence,
              std::vector<std::string> &warnings) override {
    if (options_.ttlSeconds <= 0 || !ready(warnings))
      return 0;
    std::string payload = packSession(*manifest_, ids, sequence);
    if (int64_t(payload.size() + kHeader) > options_.maxBytes) {
      warnings.push_back(url_ + ": session '" + session + "' needs " + std::to_string(payload.size() + kHeader) +
                         " bytes, more than the pool's bound of " + std::to_string(options_.maxBytes) + "; not kept");
      return 0;
    }
    std::string record = header(payload) + payload;
    std::string key = keyOf(session);
    Reply r(static_cast<redisReply *>(redisCommand(context_, "SET %b %b PX %lld", key.data(), key.size(), record.data(),
                                                   record.size(), static_cast<long long>(options_.ttlSeconds) * 1000)));
    if (!r || r->type == REDIS_REPLY_ERROR) {
      fault(r ? "SET: " + std::string(r->str, r->len) : std::string(context_->errstr), warnings);
      return 0;
    }
    return int64_t(record.size());
  }

  bool get(const std::string &session, std::vector<int32_t> &ids, Sequence &sequence, int64_t &bytes,
           std::vector<std::string> &warnings) override {
    if (!ready(warnings))
      return false;
    std::string key = keyOf(session);
    Reply r(static_cast<redisReply *>(redisCommand(context_, "GET %b", key.data(), key.size())));
    if (!r || r->type == REDIS_REPLY_ERROR) {
      fault(r ? "GET: " + std::string(r->str, r->len) : std::string(context_->errstr), warnings);
      return false;
    }
    if (r->type == REDIS_REPLY_NIL)
      return false;   // never kept, expired, or evicted by Redis
    std::string record(r->str, r->len), why;
    if (!check(record, why) ||
        !unpackSession(*manifest_, std::make_shared<const std::string>(record, kHeader), ids, sequence, why)) {
      warnings.push_back(url_ + ": session '" + session + "': " + why + "; not used (recomputed)");
      Reply gone(static_cast<redisReply *>(redisCommand(context_, "DEL %b", key.data(), key.size())));
      return false;
    }
    bytes = int64_t(record.size());
    return true;
  }

  std::string where() const override { return url_; }

private:
  std::string keyOf(const std::string &session) const {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(modelHash_));
    return std::string("dsf:pool:") + hash + ":" + session;
  }

  std::string header(const std::string &payload) const {
    std::string h(kMagic, 8);
    auto add = [&](auto v) { h.append(reinterpret_cast<const char *>(&v), sizeof v); };
    add(kVersion);
    add(uint32_t(0));
    add(modelHash_);
    add(uint64_t(payload.size()));
    add(recordChecksum(payload.data(), payload.size()));
    add(recordChecksum(h.data(), h.size()));
    return h;
  }

  bool check(const std::string &record, std::string &why) const {
    if (record.size() < kHeader || std::memcmp(record.data(), kMagic, 8) != 0) {
      why = "not a dsf host-pool record (foreign format)";
      return false;
    }
    uint32_t version;
    uint64_t model, size, sum, headerSum;
    std::memcpy(&version, record.data() + 8, 4);
    std::memcpy(&model, record.data() + 16, 8);
    std::memcpy(&size, record.data() + 24, 8);
    std::memcpy(&sum, record.data() + 32, 8);
    std::memcpy(&headerSum, record.data() + 40, 8);
    // The version first: an older record's checksums are of another kind.
    if (version != kVersion) {
      why = "record format version " + std::to_string(version) + ", this runtime reads " + std::to_string(kVersion);
      return false;
    }
    if (headerSum != recordChecksum(record.data(), 40)) {
      why = "header checksum mismatch (corrupted)";
      return false;
    }
    if (model != modelHash_) {
      why = "a record of another model";
      return false;
    }
    if (size != record.size() - kHeader) {
      why = "truncated (" + std::to_string(record.size() - kHeader) + " payload bytes, expected " +
            std::to_string(size) + ")";
      return false;
    }
    if (sum != recordChecksum(record.data() + kHeader, size)) {
      why = "payload checksum mismatch (corrupted)";
      return false;
    }
    return true;
  }

  /// Connected, or reconnected now (at most once a second after a failure).
  bool ready(std::vector<std::string> &warnings) {
    if (context_)
      return true;
    if (std::chrono::steady_clock::now() - lastAttempt_ < std::chrono::seconds(1))
      return false;
    std::string error;
    if (!connect(error)) {
      if (!warned_)
        warnings.push_back(error + "; the host pool is unavailable (windows are rebuilt by replay)");
      warned_ = true;
      return false;
    }
    warned_ = false;
    return true;
  }

  void fault(const std::string &what, std::vector<std::string> &warnings) {
    if (!warned_)
      warnings.push_back(url_ + ": " + what + "; the host pool is unavailable (windows are rebuilt by replay)");
    warned_ = true;
    drop();
  }

  bool drop() {
    if (context_)
      redisFree(context_);
    context_ = nullptr;
    return false;
  }

  const Manifest *manifest_;
  Options options_;
  std::string url_, host_;
  int port_, db_;
  uint64_t modelHash_;
  redisContext *context_ = nullptr;
  std::chrono::steady_clock::time_point lastAttempt_;
  bool warned_ = false;
};
} // namespace

std::unique_ptr<HostPool> HostPool::redis(const Manifest &manifest, Options options, const std::string &url,
                                          uint64_t modelHash, std::string &error) {
  // redis://HOST:PORT[/DB]
  const std::string scheme = "redis://";
  std::string rest = url.rfind(scheme, 0) == 0 ? url.substr(scheme.size()) : "";
  size_t colon = rest.rfind(':'), slash = rest.find('/');
  std::string host = rest.substr(0, std::min(colon, slash));
  int port = 6379, db = 0;
  try {
    if (colon != std::string::npos)
      port = std::stoi(rest.substr(colon + 1, slash == std::string::npos ? std::string::npos : slash - colon - 1));
    if (slash != std::string::npos)
      db = std::stoi(rest.substr(slash + 1));
  } catch (...) {
    host.clear();
  }
  if (host.empty() || port <= 0 || port > 65535 || db < 0) {
    error = "host pool '" + url + "': expected redis://HOST:PORT[/DB]";
    return nullptr;
  }
  auto pool = std::make_unique<RedisPool>(manifest, options, url, host, port, db, modelHash);
  if (!pool->connect(error))
    return nullptr;
  return pool;
}

} // namespace dsf::rt
