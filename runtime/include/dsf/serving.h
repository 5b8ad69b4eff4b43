//===- serving.h - requests over the cache tiers ----------------------------===//
//
// One request: a prompt (the whole conversation an agent resends) and the
// tokens to generate. The server looks up the longest prefix it holds — the
// session's state in the host pool (windows included), else the global KV
// of whole blocks in the prefix store, whose windows it then rebuilds by
// replaying the last W tokens (approximate) or W + (L-1)(W-1) (exact) —
// and computes only the rest, in block-aligned pieces so that each block's
// state is persisted as it completes.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_SERVING_H
#define DSF_RUNTIME_SERVING_H

#include "dsf/host_model.h"
#include "dsf/kv_tiers.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace dsf::rt {

struct RequestStats {
  std::string session;
  int64_t promptTokens = 0, generatedTokens = 0;
  int64_t hostTokens = 0;       // prefix taken from the host pool (windows included)
  int64_t ssdTokens = 0;        // prefix whose global KV came from the prefix store
  int64_t replayTokens = 0;     // tokens replayed to rebuild the windows
  int64_t computedTokens = 0;   // prompt tokens run through prefill / decode
  bool approximate = false;     // the windows were rebuilt approximately (Sequence::approximate)
  int64_t hostBytesRead = 0, hostBytesWritten = 0, ssdBytesRead = 0, ssdBytesWritten = 0, blocksWritten = 0;
  double restoreSeconds = 0, replaySeconds = 0, firstTokenSeconds = 0, seconds = 0, savedSeconds = 0;
  std::vector<std::string> warnings;
  std::string json() const;
  std::string line() const;
};

struct ServeOptions {
  PrefixStore *store = nullptr;
  HostPool *pool = nullptr;
  bool exactReplay = false;
  /// The most tokens a call computes (0: no bound): a long prompt's rest in
  /// chunks (HostModel::extend), within the store's block-aligned pieces.
  int64_t prefillChunk = 0;
};

/// A request between its prompt and its end: what the server needs to go on
/// (its tokens, their block hashes, the state after them).
struct ServedSequence {
  std::string session;
  std::vector<int32_t> tokens;   // the prompt, then each token fed back
  std::vector<uint64_t> chain;   // the prefix store's block hashes of `tokens`, as far as computed
  Sequence sequence;             // the state after `tokens`
  std::vector<float> logits;     // the last call's rows (its last row: the next token's)
  std::chrono::steady_clock::time_point start;
};

class Server {
public:
  Server(const HostModel &model, ServeOptions options) : model_(model), options_(options) {}

  /// Runs a request alone: prefill(), then feed() for each generated token
  /// but the last, then finish(). `pick` chooses the next token from a
  /// logits row, or returns a negative id to refuse the row (the request
  /// then fails). `rows` / `rowPositions` (optional) receive every logits row
  /// computed.
  bool request(const std::string &session, const std::vector<int32_t> &ids, int64_t maxNew,
               const std::function<int32_t(const float *)> &pick, std::vector<int32_t> &generated,
               RequestStats &stats, std::string &error, std::vector<float> *rows = nullptr,
               std::vector<int32_t> *rowPositions = nullptr);

  /// A request's prompt: the longest prefix held (the session's state from
  /// the host pool, else whole blocks of global KV from the prefix store with
  /// the windows replayed), then the rest computed, each completed block
  /// persisted. `out` then holds the prompt's state and last logits; its
  /// generation may go on here (feed) or in a Batch (admit out.sequence,
  /// then finish with the state the batch releases).
  bool prefill(const std::string &session, const std::vector<int32_t> &ids, ServedSequence &out,
               RequestStats &stats, std::string &error, std::vector<float> *rows = nullptr,
               std::vector<int32_t> *rowPositions = nullptr);

  /// One generated token fed back through decode; the block it completes is
  /// persisted.
  bool feed(ServedSequence &served, int32_t next, RequestStats &stats, std::string &error,
            std::vector<float> *rows = nullptr, std::vector<int32_t> *rowPositions = nullptr);

  /// The request's end: the session's state (served.sequence, after
  /// served.tokens) goes to the host pool; the stats get the totals.
  /// `generated` counts the tokens the request generated (the last one
  /// picked, not fed back).
  bool finish(ServedSequence &served, int64_t generated, RequestStats &stats, std::string &error);

private:
  /// Persists the block served.sequence has just completed, if any.
  bool persist(ServedSequence &served, RequestStats &stats, std::string &error);

  const HostModel &model_;
  ServeOptions options_;
  double secondsPerToken_ = 0;   // measured cold compute rate, for the time-saved estimate
};

} // namespace dsf::rt

#endif // DSF_RUNTIME_SERVING_H
