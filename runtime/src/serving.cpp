//===- serving.cpp - requests over the cache tiers --------------------------===//
#include "dsf/serving.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace dsf::rt {

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// A call's logits rows and their positions, into the caller's (optional)
/// lists of every row computed.
void keepRows(const std::vector<float> &logits, int64_t firstRow, int64_t vocab, std::vector<float> *rows,
              std::vector<int32_t> *rowPositions) {
  if (rows)
    rows->insert(rows->end(), logits.begin(), logits.end());
  if (rowPositions)
    for (int64_t r = 0; r < int64_t(logits.size()) / vocab; ++r)
      rowPositions->push_back(int32_t(firstRow + r));
}
} // namespace

std::string RequestStats::json() const {
  nlohmann::json j = {{"session", session},
                      {"prompt_tokens", promptTokens},
                      {"generated_tokens", generatedTokens},
                      {"host_hit_tokens", hostTokens},
                      {"ssd_hit_tokens", ssdTokens},
                      {"replayed_tokens", replayTokens},
                      {"computed_tokens", computedTokens},
                      {"approximate", approximate},
                      {"host_bytes_read", hostBytesRead},
                      {"host_bytes_written", hostBytesWritten},
                      {"ssd_bytes_read", ssdBytesRead},
                      {"ssd_bytes_written", ssdBytesWritten},
                      {"ssd_blocks_written", blocksWritten},
                      {"restore_seconds", restoreSeconds},
                      {"replay_seconds", replaySeconds},
                      {"first_token_seconds", firstTokenSeconds},
                      {"seconds", seconds},
                      {"saved_seconds_estimate", savedSeconds},
                      {"warnings", warnings}};
  return j.dump();
}

std::string RequestStats::line() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "prompt %lld: host %lld, ssd %lld (replayed %lld), computed %lld; bytes: host %lld read / %lld "
                "written, ssd %lld read / %lld written (%lld blocks); first token %.3f s, total %.3f s, saved ~%.3f s",
                (long long)promptTokens, (long long)hostTokens, (long long)ssdTokens, (long long)replayTokens,
                (long long)computedTokens, (long long)hostBytesRead, (long long)hostBytesWritten,
                (long long)ssdBytesRead, (long long)ssdBytesWritten, (long long)blocksWritten, firstTokenSeconds,
                seconds, savedSeconds);
  return buf;
}

bool Server::request(const std::string &session, const std::vector<int32_t> &ids, int64_t maxNew,
                     const std::function<int32_t(const float *)> &pick, std::vector<int32_t> &generated,
                     RequestStats &stats, std::string &error, std::vector<float> *rows,
                     std::vector<int32_t> *rowPositions) {
  const Manifest &m = model_.manifest();
  ServedSequence served;
  if (!prefill(session, ids, served, stats, error, rows, rowPositions))
    return false;
  // Generation: one decode call a token (the last one is picked, not run).
  for (int64_t step = 0; step < maxNew; ++step) {
    int32_t next = pick(served.logits.data() + served.logits.size() - size_t(m.vocabSize));
    if (next < 0) {
      error = "no token could be picked after " + std::to_string(ids.size() + generated.size()) + " tokens";
      return false;
    }
    generated.push_back(next);
    if (step + 1 == maxNew)
      break;
    if (!feed(served, next, stats, error, rows, rowPositions))
      return false;
  }
  return finish(served, int64_t(generated.size()), stats, error);
}

bool Server::prefill(const std::string &session, const std::vector<int32_t> &ids, ServedSequence &out,
                     RequestStats &stats, std::string &error, std::vector<float> *rows,
                     std::vector<int32_t> *rowPositions) {
  auto start = std::chrono::steady_clock::now();
  const Manifest &m = model_.manifest();
  int64_t n = int64_t(ids.size());
  stats = RequestStats();
  stats.session = session;
  stats.promptTokens = n;
  if (n == 0) {
    error = "the prompt is empty";
    return false;
  }
  Sequence sequence;
  int64_t have = 0;
  std::vector<uint64_t> chain;   // the prefix store's block hashes of this request's tokens
  // 1. The session's whole state, if the pool has it and the prompt goes on
  // from it.
  if (options_.pool && !session.empty()) {
    std::vector<int32_t> held;
    Sequence s;
    int64_t bytes = 0;
    auto t = std::chrono::steady_clock::now();
    bool found = options_.pool->get(session, held, s, bytes, stats.warnings);
    if (found && s.length < n && int64_t(held.size()) >= s.length &&
        std::equal(held.begin(), held.begin() + s.length, ids.begin())) {
      if (!model_.placeState(s, error))
        return false;
      stats.restoreSeconds = since(t);
      sequence = std::move(s);
      have = sequence.length;
      stats.hostTokens = have;
      stats.hostBytesRead = bytes;
    }
  }
  // 2. The global KV of the longest stored prefix (leaving a token to
  // compute), then the windows rebuilt by replay.
  if (have == 0 && options_.store && m.entry("replay")) {
    Sequence s;
    int64_t bytes = 0;
    auto t = std::chrono::steady_clock::now();
    int64_t got = options_.store->restore(ids, chain, n - 1, !options_.exactReplay, s, bytes, stats.warnings);
    if (got > 0 && !model_.placeState(s, error))
      return false;
    stats.restoreSeconds = since(t);
    if (got > 0) {
      int64_t window = 0, layers = 0;
      for (const StateSlot &slot : m.state)
        if (slot.kind == "window") {
          window = std::max(window, slot.windowSize);
          ++layers;
        }
      int64_t exactTail = window + (layers - 1) * (window - 1);
      int64_t count = std::min(got, options_.exactReplay ? exactTail : window);
      std::vector<int32_t> replayed(ids.begin() + (got - count), ids.begin() + got);
      std::vector<float> ignored;
      int64_t firstRow = 0;
      t = std::chrono::steady_clock::now();
      if (!model_.run("replay", replayed, s, ignored, firstRow, error))
        return false;
      stats.replaySeconds = since(t);
      // A replay from the start or over the exact tail rebuilds the windows
      // exactly (MODEL.md); a shorter one approximates them, and everything
      // computed from them.
      s.approximate |= count < std::min(got, exactTail);
      sequence = std::move(s);
      have = got;
      stats.ssdTokens = got;
      stats.replayTokens = count;
      stats.ssdBytesRead = bytes;
    }
  }
  // 3. The rest, in pieces that end at block boundaries when persisting.
  out.session = session;
  out.tokens = ids;
  out.chain = std::move(chain);
  out.sequence = std::move(sequence);
  out.logits.clear();
  out.start = start;
  auto computeStart = std::chrono::steady_clock::now();
  while (have < n) {
    int64_t next = n;
    if (options_.store)
      next = std::min(n, (have / options_.store->blockTokens() + 1) * options_.store->blockTokens());
    // A piece in calls of at most prefillChunk tokens (@prefill first when
    // nothing was held, then @decode).
    std::vector<int32_t> piece(ids.begin() + have, ids.begin() + next);
    int64_t firstRow = 0;
    if (!model_.extend(piece, options_.prefillChunk, out.sequence, out.logits, firstRow, error,
                       [&](const std::vector<float> &logits, int64_t row) {
                         keepRows(logits, row, m.vocabSize, rows, rowPositions);
                       }))
      return false;
    stats.computedTokens += next - have;
    have = next;
    if (!persist(out, stats, error))
      return false;
  }
  double computeSeconds = since(computeStart);
  stats.firstTokenSeconds = since(start);
  if (stats.hostTokens == 0 && stats.ssdTokens == 0 && stats.computedTokens > 0)
    secondsPerToken_ = computeSeconds / double(stats.computedTokens);
  // Time saved, estimated: the reused tokens at the compute rate of this
  // server's last cold request (else this request's own).
  double rate = secondsPerToken_ > 0 ? secondsPerToken_
                : stats.computedTokens > 0 ? computeSeconds / double(stats.computedTokens) : 0.0;
  stats.savedSeconds = std::max(0.0, rate * double(stats.hostTokens + stats.ssdTokens - stats.replayTokens));
  return true;
}

bool Server::feed(ServedSequence &served, int32_t next, RequestStats &stats, std::string &error,
                  std::vector<float> *rows, std::vector<int32_t> *rowPositions) {
  served.tokens.push_back(next);
  int64_t firstRow = 0;
  if (!model_.run("decode", {next}, served.sequence, served.logits, firstRow, error))
    return false;
  keepRows(served.logits, firstRow, model_.manifest().vocabSize, rows, rowPositions);
  return persist(served, stats, error);
}

// The tiers keep host copies: a CUDA sequence's state comes off the device
// when a block is persisted and when the session goes to the pool.
bool Server::persist(ServedSequence &served, RequestStats &stats, std::string &error) {
  if (options_.store && served.sequence.length % options_.store->blockTokens() == 0) {
    if (!model_.fetchState(served.sequence, error))
      return false;
    int64_t written = options_.store->persist(served.tokens, served.chain, served.sequence, stats.warnings);
    stats.ssdBytesWritten += written;
    stats.blocksWritten += written > 0;
  }
  return true;
}

bool Server::finish(ServedSequence &served, int64_t generated, RequestStats &stats, std::string &error) {
  stats.generatedTokens = generated;
  stats.approximate = served.sequence.approximate;
  if (options_.pool && !served.session.empty()) {
    if (!model_.fetchState(served.sequence, error))
      return false;
    stats.hostBytesWritten = options_.pool->put(served.session, served.tokens, served.sequence, stats.warnings);
  }
  stats.seconds = since(served.start);
  return true;
}

} // namespace dsf::rt
