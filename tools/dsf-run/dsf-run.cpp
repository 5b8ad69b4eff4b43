//===- dsf-run.cpp - run a compiled model ----------------------------------===//
//
//   dsf-run model.dsfa --weights PATH --prompt-ids 1,2,3 [--max-new-tokens N]
//           [--temperature T --top-p P --seed S] [--dump-logits FILE.safetensors]
//           [--then-ids 4,5,6 [--chunk K]] [--prefill-chunk C] [--timing [--warmup N]]
//   (--prompt-ids and --then-ids @FILE read the list from FILE; --timing prints prefill and
//   decode times and rates, and on the GPU the kernel launches of the prefill
//   and of a decode call; --warmup N
//   runs the prefill N times first on a throwaway sequence, so that the timed call finds
//   the GPU's modules loaded and its memory pool filled)
//
// Loads and validates the artifact and the checkpoint, runs the prefill entry
// point over the prompt, then the decode entry point, which continues the
// sequence from the state the previous call returned (windows, caches,
// compressors' pending rows). --prefill-chunk C runs the prompt C tokens a
// call (prefill over the first C, decode over the rest C at a time: a long
// prompt's activations and logits are then a chunk's); decode goes on first
// over --then-ids, given tokens fed K at a
// time, then one generated token at a time, up to N (greedy unless
// --temperature > 0), printing the generated ids. --dump-logits writes the
// logits of every row computed ([rows, vocab] f32, "logits": the prompt's, or
// the tail of an exact-tail / bounded-replay prefill, then one row per token
// decoded), their "positions" and the sequence's ids ("input_ids").
//
// With --cache-dir, --session or --multi-turn (one whole prompt per stdin
// line) requests go through the cache tiers (runtime/include/dsf/serving.h):
// the session's state from the host pool, else whole blocks of global KV from
// the prefix store in --cache-dir with the windows replayed, then the rest;
// --stats / --stats-json report each request. The host pool is this
// process's, or with --pool redis://HOST:PORT a Redis server's, shared by
// every process that names it. --batch-prompts FILE decodes its prompts
// together (@batch_decode), through the tiers when they are named or a line
// names a session ("SESSION: ID,ID,... +N").
//
//===----------------------------------------------------------------------===//
#include "dsf/artifact.h"
#include "dsf/batch.h"
#include "dsf/host_model.h"
#include "dsf/kv_tiers.h"
#include "dsf/serving.h"
#include "dsf/safetensors.h"
#include "dsf/weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cctype>
#include <fstream>
#include <iostream>
#include <sstream>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace dsf::rt;

namespace {
int fail(const std::string &message) {
  std::fprintf(stderr, "dsf-run: error: %s\n", message.c_str());
  return 1;
}

void usage() {
  std::fprintf(stderr,
               "usage: dsf-run MODEL.dsfa --weights PATH --prompt-ids ID,ID,... [--max-new-tokens N]\n"
               "               [--temperature T] [--top-p P] [--seed S] [--dump-logits FILE.safetensors]\n"
               "               [--then-ids ID,ID,... [--chunk K]] [--prefill-chunk C] [--timing [--warmup N]]\n"
               "       dsf-run MODEL.dsfa --weights PATH (--prompt-ids ... | --multi-turn < PROMPTS) [--session ID]\n"
               "               [--cache-dir DIR [--cache-block N] [--cache-max-bytes B] [--cache-ttl S]]\n"
               "               [--replay approx|exact] [--pool redis://HOST:PORT[/DB]] [--window-ttl S] [--pool-max-bytes B]\n"
               "               [--prefill-chunk C] [--stats] [--stats-json FILE]\n"
               "       dsf-run MODEL.dsfa --weights PATH (--prompt-ids ... --batch N | --batch-prompts FILE)\n"
               "               [--max-new-tokens N] [--temperature T] [--top-p P] [--seed S] [--dump-logits F] [--timing]\n"
               "               (FILE: one request a line, [SESSION: ]ID,ID,... [+N]; with the tiers' options above,\n"
               "               --batch-prompts serves them through the tiers and decodes them together)\n");
}

bool parseInt(const std::string &text, long long &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

bool parseDouble(const std::string &text, double &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end && *end == '\0' && std::isfinite(out);
}

/// Greedy (temperature 0) or temperature / top-p sampling from one row; -1
/// when a logit is NaN or infinite (a kernel, a weight or a cache produced
/// it: no token is chosen from such a row, greedy would take whichever
/// comparison NaN happened to lose).
int32_t pick(const float *logits, int64_t vocab, double temperature, double topP, std::mt19937_64 &rng) {
  if (!std::all_of(logits, logits + vocab, [](float x) { return std::isfinite(x); }))
    return -1;
  if (temperature <= 0)
    return int32_t(std::max_element(logits, logits + vocab) - logits);
  std::vector<double> p(static_cast<size_t>(vocab));
  double top = *std::max_element(logits, logits + vocab), sum = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sum += p[size_t(i)] = std::exp((double(logits[i]) - top) / temperature);
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
  double kept = 0;
  size_t n = 0;
  while (n < order.size() && (n == 0 || kept < topP * sum))
    kept += p[size_t(order[n++])];
  double r = std::uniform_real_distribution<double>(0, kept)(rng);
  for (size_t i = 0; i < n; ++i) {
    r -= p[size_t(order[i])];
    if (r <= 0)
      return order[i];
  }
  return order[n - 1];
}

/// What a row of logits that is not finite is reported as.
std::string notFinite(const std::string &where) {
  return "the logits of " + where + " are not finite (NaN or infinity): no token is picked from them " +
         "(--dump-logits writes them; DSF_CUDA_SYNC=1 and compute-sanitizer look for a kernel at fault)";
}

/// "@FILE" -> the text of FILE, trailing white space dropped.
bool readIdsFile(std::string &text, std::string &error) {
  if (text.empty() || text[0] != '@')
    return true;
  std::string file = text.substr(1);
  std::ifstream in(file);
  if (!in) {
    error = "cannot read '" + file + "'";
    return false;
  }
  std::stringstream contents;
  contents << in.rdbuf();
  text = contents.str();
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.pop_back();
  if (text.empty()) {
    error = "'" + file + "' is empty";
    return false;
  }
  return true;
}

/// "1,2,3" -> ids.
bool parseIds(const std::string &text, std::vector<int32_t> &ids, std::string &error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    long long id;
    if (!parseInt(item, id) || id < INT32_MIN || id > INT32_MAX) {
      error = "'" + item + "' is not a token id";
      return false;
    }
    ids.push_back(int32_t(id));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return true;
}

struct Progress {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  void done(const char *what) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > 1.0)
      std::fprintf(stderr, "dsf-run: %s in %.1f s\n", what, s);
    start = std::chrono::steady_clock::now();
  }
};
} // namespace

/// A tensor of --dump-logits: `bytes` of `data`, copied.
OwnedTensor dumpTensor(const char *name, DType dtype, std::vector<int64_t> shape, const void *data, size_t bytes) {
  OwnedTensor t{name, dtype, std::move(shape), {}};
  t.data.resize(bytes);
  std::memcpy(t.data.data(), data, bytes);
  return t;
}

/// --dump-logits: the ids fed, each computed row's position, its logits.
bool writeDump(const std::string &path, const Manifest &m, const std::string &artifactPath,
               const std::vector<int32_t> &ids, const std::vector<int32_t> &positions, const std::vector<float> &logits,
               std::string &error) {
  auto tensor = dumpTensor;
  int64_t rows = int64_t(positions.size());
  return writeSafetensors(path,
                          {tensor("input_ids", DType::I32, {int64_t(ids.size())}, ids.data(), ids.size() * 4),
                           tensor("positions", DType::I32, {rows}, positions.data(), positions.size() * 4),
                           tensor("logits", DType::F32, {rows, m.vocabSize}, logits.data(), logits.size() * 4)},
                          {{"model", m.model}, {"artifact", artifactPath}, {"prefill", m.prefillMode}}, error);
}

/// The cache tiers' settings (--cache-dir, --pool, ...).
struct TierOptions {
  std::string cacheDir, poolUrl;   // poolUrl empty: the in-process host pool
  long long cacheBlock = 0, cacheMaxBytes = 0, cacheTtl = 4 * 3600, windowTtl = 300, poolMaxBytes = 1ll << 32;
  bool exactReplay = false;
  long long prefillChunk = 0;
};

/// The prefix store (with a --cache-dir), the host pool and the server over
/// them.
struct Tiers {
  std::unique_ptr<PrefixStore> store;
  std::unique_ptr<HostPool> pool;
  std::unique_ptr<Server> server;
};

bool openTiers(const Artifact &artifact, const WeightSource &weights, const HostModel &model, const TierOptions &t,
               Tiers &tiers, std::string &error) {
  const Manifest &m = model.manifest();
  if (!t.cacheDir.empty()) {
    PrefixStore::Options o;
    o.dir = t.cacheDir;
    // 64 tokens, rounded up to a multiple of every compression ratio.
    int64_t block = t.cacheBlock;
    if (block == 0) {
      block = 64;
      for (const StateSlot &slot : m.state)
        if (slot.ratio > 1 && block % slot.ratio)
          block = (block / slot.ratio + 1) * slot.ratio;
    }
    o.blockTokens = block;
    o.maxBytes = t.cacheMaxBytes;
    o.ttlSeconds = t.cacheTtl;
    tiers.store = PrefixStore::open(o, m, modelHash(artifact, weights), error);
    if (!tiers.store)
      return false;
  }
  HostPool::Options poolOptions;
  poolOptions.ttlSeconds = t.windowTtl;
  poolOptions.maxBytes = t.poolMaxBytes;
  // On the GPU the in-process pool keeps its records page-locked: a restore
  // is then one DMA copy.
  poolOptions.pin = [&model](const void *p, size_t n) { return model.pinHostMemory(p, n); };
  poolOptions.unpin = [&model](const void *p) { model.unpinHostMemory(p); };
  tiers.pool = t.poolUrl.empty() ? HostPool::inProcess(m, poolOptions)
                                 : HostPool::redis(m, poolOptions, t.poolUrl, modelHash(artifact, weights), error);
  if (!tiers.pool)
    return false;
  ServeOptions options;
  options.store = tiers.store.get();
  options.pool = tiers.pool.get();
  options.exactReplay = t.exactReplay;
  options.prefillChunk = t.prefillChunk;
  tiers.server = std::make_unique<Server>(model, options);
  return true;
}

/// --stats-json: one JSON object a request.
bool writeStatsJson(const std::string &path, const std::vector<std::string> &lines) {
  std::string text = "[\n";
  for (size_t i = 0; i < lines.size(); ++i)
    text += " " + lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
  text += "]\n";
  std::ofstream out(path);
  return bool(out << text);
}

/// --batch N / --batch-prompts FILE: sequences decoded together through
/// @batch_decode, a token each a step. Each is prefilled alone (N copies of
/// one prompt: once), then admitted to the batch; a sequence that has
/// generated its tokens leaves it. Prints one line of generated ids per
/// sequence, in order; --dump-logits writes every row computed, sequence by
/// sequence ("sequence" says whose; sequence s's ids are "input_ids"
/// [input_offsets[s], input_offsets[s + 1])).
/// With the cache tiers (`served`: a server and each request's session),
/// each prompt is a request's: the server prefills it from the longest
/// prefix it holds (persisting the blocks it computes), the batch generates,
/// and a sequence that leaves the batch goes to its session in the host
/// pool; --stats / --stats-json report each request.
/// A prompt's prefilled sequence and logits, kept for the prompts that repeat.
using PrefillCache = std::map<std::vector<int32_t>, std::pair<Sequence, std::vector<float>>>;

struct ServedBatch {
  Server &server;
  std::vector<std::string> sessions;   // a request's each
  bool printStats = false;
  std::string statsJson;
};

int runBatch(const HostModel &model, const std::vector<std::vector<int32_t>> &prompts,
             const std::vector<long long> &newTokens, double temperature, double topP, long long seed, bool timing,
             const std::string &dumpPath, const std::string &artifactPath, PrefillCache &prefills,
             ServedBatch *served = nullptr) {
  const Manifest &m = model.manifest();
  std::string error;
  int64_t longest = 0;
  for (size_t s = 0; s < prompts.size(); ++s) {
    longest = std::max(longest, int64_t(prompts[s].size() + size_t(std::max(newTokens[s], 1ll))));
    if (int64_t(prompts[s].size()) + newTokens[s] > m.maxPositions)
      return fail("sequence " + std::to_string(s + 1) + ": prompt (" + std::to_string(prompts[s].size()) +
                  " tokens) + its new tokens (" + std::to_string(newTokens[s]) + ") exceed the model's " +
                  std::to_string(m.maxPositions) + " positions");
  }
  auto batch = Batch::create(model, int64_t(prompts.size()), longest, error);
  if (!batch)
    return fail(error);
  size_t count = prompts.size();
  std::vector<std::vector<int32_t>> generated(count);
  std::vector<std::vector<float>> rows(count);
  std::vector<std::vector<int32_t>> rowPositions(count);
  std::vector<std::vector<int32_t>> sequenceIds(prompts);
  std::vector<int32_t> next(count);
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  auto keep = [&](size_t s, const float *logits, int64_t nrows, int64_t firstRow) {
    for (int64_t r = 0; r < nrows; ++r)
      rowPositions[s].push_back(int32_t(firstRow + r));
    if (!dumpPath.empty())
      rows[s].insert(rows[s].end(), logits, logits + nrows * m.vocabSize);
  };
  // Prefill each (a repeated prompt once; a served request through the
  // tiers), pick its first token, admit it.
  std::vector<size_t> inBatch;   // slot -> sequence
  double admitSeconds = 0;   // in Batch::admit (a packed page's rows packed there)
  int64_t admitted = 0;
  std::vector<ServedSequence> requests(served ? count : 0);
  std::vector<RequestStats> requestStats(served ? count : 0);
  std::vector<std::string> statsLines(served ? count : 0);
  // A served request's end: its state to the session's pool, its stats.
  auto finishRequest = [&](size_t s) {
    requests[s].tokens = sequenceIds[s];
    if (!served->server.finish(requests[s], int64_t(generated[s].size()), requestStats[s], error))
      return false;
    for (const std::string &w : requestStats[s].warnings)
      std::fprintf(stderr, "dsf-run: warning: %s\n", w.c_str());
    if (served->printStats)
      std::fprintf(stderr, "dsf-run: stats: request %zu: %s\n", s + 1, requestStats[s].line().c_str());
    statsLines[s] = requestStats[s].json();
    requests[s].sequence = Sequence();   // its device memory back to the pool
    return true;
  };
  for (size_t s = 0; s < count; ++s) {
    Sequence *sequence = nullptr;
    const std::vector<float> *prefillRows = nullptr;
    if (served) {
      if (!served->server.prefill(served->sessions[s], prompts[s], requests[s], requestStats[s], error,
                                  dumpPath.empty() ? nullptr : &rows[s], &rowPositions[s]))
        return fail("request " + std::to_string(s + 1) + ": " + error);
      sequence = &requests[s].sequence;
      prefillRows = &requests[s].logits;
    } else {
      auto cached = prefills.find(prompts[s]);
      if (cached == prefills.end()) {
        std::pair<Sequence, std::vector<float>> p;
        int64_t firstRow = 0;
        if (!model.run("prefill", prompts[s], p.first, p.second, firstRow, error))
          return fail("sequence " + std::to_string(s + 1) + ": " + error);
        cached = prefills.emplace(prompts[s], std::move(p)).first;
      }
      sequence = &cached->second.first;
      prefillRows = &cached->second.second;
      int64_t nrows = int64_t(prefillRows->size()) / m.vocabSize;
      keep(s, prefillRows->data(), nrows, sequence->length - nrows);
    }
    if (newTokens[s] > 0) {
      next[s] = pick(prefillRows->data() + prefillRows->size() - size_t(m.vocabSize), m.vocabSize, temperature,
                     topP, rng);
      if (next[s] < 0)
        return fail("sequence " + std::to_string(s + 1) + ": " + notFinite("its prompt's last token"));
      generated[s].push_back(next[s]);
    }
    if (newTokens[s] <= 1) {
      if (served && !finishRequest(s))
        return fail("request " + std::to_string(s + 1) + ": " + error);
      continue;
    }
    auto admitStart = std::chrono::steady_clock::now();
    if (!batch->admit(*sequence, error))
      return fail("sequence " + std::to_string(s + 1) + ": " + error);
    admitSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - admitStart).count();
    ++admitted;
    if (served)
      *sequence = Sequence();   // the batch holds its state now
    inBatch.push_back(s);
  }

  // Steps until every sequence has its tokens.
  uint64_t launchesBefore = HostModel::kernelLaunches();
  uint64_t programmaticBefore = HostModel::programmaticKernelLaunches();
  auto start = std::chrono::steady_clock::now();
  int64_t steps = 0, tokens = 0;
  std::vector<double> stepSeconds;
  std::vector<float> logits;
  while (!inBatch.empty()) {
    std::vector<int32_t> ids;
    for (size_t s : inBatch) {
      ids.push_back(next[s]);
      sequenceIds[s].push_back(next[s]);
    }
    auto stepStart = std::chrono::steady_clock::now();
    if (!batch->step(ids, logits, error))
      return fail("step " + std::to_string(steps + 1) + ": " + error);
    stepSeconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - stepStart).count());
    ++steps;
    tokens += int64_t(inBatch.size());
    for (size_t slot = 0; slot < inBatch.size(); ++slot) {
      size_t s = inBatch[slot];
      const float *row = logits.data() + slot * size_t(m.vocabSize);
      keep(s, row, 1, batch->length(int64_t(slot)) - 1);
      next[s] = pick(row, m.vocabSize, temperature, topP, rng);
      if (next[s] < 0)
        return fail("step " + std::to_string(steps) + ", sequence " + std::to_string(s + 1) + ": " +
                    notFinite("its token " + std::to_string(batch->length(int64_t(slot)))));
      generated[s].push_back(next[s]);
    }
    // Those done leave, from the last slot down (a released slot takes the
    // last one's sequence).
    for (size_t slot = inBatch.size(); slot-- > 0;) {
      size_t s = inBatch[slot];
      if (int64_t(generated[s].size()) < newTokens[s])
        continue;
      Sequence done;
      if (!batch->release(int64_t(slot), done, error))
        return fail("sequence " + std::to_string(s + 1) + ": " + error);
      if (served) {
        requests[s].sequence = std::move(done);
        if (!finishRequest(s))
          return fail("request " + std::to_string(s + 1) + ": " + error);
      }
      inBatch[slot] = inBatch.back();
      inBatch.pop_back();
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint64_t launches = HostModel::kernelLaunches() - launchesBefore;
  uint64_t programmatic = HostModel::programmaticKernelLaunches() - programmaticBefore;
  if (!dumpPath.empty()) {
    std::vector<int32_t> allIds, allPositions, owner, offsets{0};
    std::vector<float> allRows;
    for (size_t s = 0; s < count; ++s) {
      allIds.insert(allIds.end(), sequenceIds[s].begin(), sequenceIds[s].end());
      offsets.push_back(int32_t(allIds.size()));
      allPositions.insert(allPositions.end(), rowPositions[s].begin(), rowPositions[s].end());
      owner.insert(owner.end(), rowPositions[s].size(), int32_t(s));
      allRows.insert(allRows.end(), rows[s].begin(), rows[s].end());
    }
    auto tensor = dumpTensor;
    int64_t n = int64_t(allPositions.size());
    if (!writeSafetensors(dumpPath,
                          {tensor("input_ids", DType::I32, {int64_t(allIds.size())}, allIds.data(), allIds.size() * 4),
                           tensor("positions", DType::I32, {n}, allPositions.data(), allPositions.size() * 4),
                           tensor("sequence", DType::I32, {n}, owner.data(), owner.size() * 4),
                           tensor("input_offsets", DType::I32, {int64_t(offsets.size())}, offsets.data(),
                                  offsets.size() * 4),
                           tensor("logits", DType::F32, {n, m.vocabSize}, allRows.data(), allRows.size() * 4)},
                          {{"model", m.model}, {"artifact", artifactPath}, {"prefill", m.prefillMode}}, error))
      return fail(error);
  }
  if (timing) {
    const Batch::Stats &st = batch->stats();
    // The first step of a shape captures its CUDA graph: the median of the
    // steps after the first says what a step costs.
    std::vector<double> later(stepSeconds.begin() + std::min<size_t>(1, stepSeconds.size()), stepSeconds.end());
    std::sort(later.begin(), later.end());
    double median = later.empty() ? 0.0 : later[later.size() / 2];
    std::fprintf(stderr,
                 "dsf-run: timing: batch of %zu: %lld steps %.6f s (%.3f ms a step, %.1f tokens/s); "
                 "first step %.3f ms, the others' median %.3f ms",
                 count, static_cast<long long>(steps), seconds, steps ? 1000.0 * seconds / double(steps) : 0.0,
                 seconds > 0 ? double(tokens) / seconds : 0.0, stepSeconds.empty() ? 0.0 : 1000.0 * stepSeconds[0],
                 1000.0 * median);
    if (launches && steps)
      std::fprintf(stderr, "; %.0f GPU kernel launches a step", double(launches) / double(steps));
    if (st.graphReplays)
      std::fprintf(stderr, "; CUDA graphs: %llu captured, %llu steps replayed",
                   static_cast<unsigned long long>(st.graphCaptures), static_cast<unsigned long long>(st.graphReplays));
    if (launches)
      std::fprintf(stderr, "; %llu of the %llu launches programmatic (overlapping the kernel before)",
                   static_cast<unsigned long long>(programmatic), static_cast<unsigned long long>(launches));
    std::fprintf(stderr, "; state %.1f MB (%lld bytes, the caches' pages %lld); %lld admitted in %.3f ms\n",
                 double(st.stateBytes) / 1e6, static_cast<long long>(st.stateBytes),
                 static_cast<long long>(st.pageBytes), static_cast<long long>(admitted), 1000.0 * admitSeconds);
  }
  if (served && !served->statsJson.empty() && !writeStatsJson(served->statsJson, statsLines))
    return fail("--stats-json: cannot write " + served->statsJson);
  for (size_t s = 0; s < count; ++s) {
    for (size_t i = 0; i < generated[s].size(); ++i)
      std::printf("%s%d", i ? "," : "", generated[s][i]);
    std::printf("\n");
  }
  return 0;
}

/// Requests over the cache tiers: one (--prompt-ids) or one a line of stdin
/// (--multi-turn), each the whole prompt; the session's state goes to the
/// host pool between them, blocks of global KV to --cache-dir.
int serve(const HostModel &model, Server &server, std::vector<int32_t> prompt, bool multiTurn,
          const std::string &session, long long maxNew, double temperature, double topP, long long seed,
          bool printStats, const std::string &statsJson, const std::string &dumpPath,
          const std::string &artifactPath) {
  const Manifest &m = model.manifest();
  std::string error;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  bool refused = false;   // a row of logits was not finite (pick)
  auto picker = [&](const float *row) {
    int32_t id = pick(row, m.vocabSize, temperature, topP, rng);
    refused = refused || id < 0;
    return id;
  };
  std::vector<std::string> statsLines;
  std::vector<float> rows;
  std::vector<int32_t> positions, lastIds;
  std::string line;
  int request = 0;
  while (true) {
    std::vector<int32_t> ids;
    if (multiTurn) {
      if (!std::getline(std::cin, line))
        break;
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
        line.pop_back();
      if (line.empty())
        continue;
      if (!parseIds(line, ids, error))
        return fail("stdin line " + std::to_string(request + 1) + ": " + error);
    } else {
      if (request > 0)
        break;
      ids = prompt;
    }
    if (int64_t(ids.size()) + maxNew > m.maxPositions)
      return fail("request " + std::to_string(request + 1) + ": prompt (" + std::to_string(ids.size()) +
                  " tokens) + --max-new-tokens (" + std::to_string(maxNew) + ") exceeds the model's " +
                  std::to_string(m.maxPositions) + " positions");
    std::vector<int32_t> generated;
    RequestStats st;
    rows.clear();
    positions.clear();
    if (!server.request(session, ids, maxNew, picker, generated, st, error, dumpPath.empty() ? nullptr : &rows,
                        &positions))
      return fail("request " + std::to_string(request + 1) + ": " + error +
                  (refused ? ": " + notFinite("its last token") : std::string()));
    for (const std::string &w : st.warnings)
      std::fprintf(stderr, "dsf-run: warning: %s\n", w.c_str());
    if (printStats)
      std::fprintf(stderr, "dsf-run: stats: request %d: %s\n", request + 1, st.line().c_str());
    statsLines.push_back(st.json());
    for (size_t i = 0; i < generated.size(); ++i)
      std::printf("%s%d", i ? "," : "", generated[i]);
    std::printf("\n");
    std::fflush(stdout);
    lastIds = ids;
    ++request;
  }
  if (!statsJson.empty() && !writeStatsJson(statsJson, statsLines))
    return fail("--stats-json: cannot write " + statsJson);
  // --dump-logits: the last request's rows.
  if (!dumpPath.empty() && !writeDump(dumpPath, m, artifactPath, lastIds, positions, rows, error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  std::string artifactPath, weightsPath, promptText, dumpPath, thenText, error;
  long long maxNew = 0, seed = 0, chunk = 1, prefillChunk = 0;
  std::string cacheDir, session, statsJson, replay = "approx";
  long long cacheBlock = 0, cacheMaxBytes = 0, cacheTtl = 4 * 3600, windowTtl = 300, poolMaxBytes = 1ll << 32;
  std::string poolUrl;   // empty: the in-process host pool
  bool multiTurn = false, stats = false;
  double temperature = 0, topP = 1;
  bool timing = false;
  long long warmup = 0, batchCopies = 0;
  std::vector<long long> batchSizes;
  std::string batchPromptsPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else if (a == "--timing") {
      timing = true;
    } else if (a == "--weights") {
      if (!value(weightsPath))
        return fail("--weights needs a path");
    } else if (a == "--prompt-ids") {
      if (!value(promptText))
        return fail("--prompt-ids needs a comma-separated list of token ids");
    } else if (a == "--dump-logits") {
      if (!value(dumpPath))
        return fail("--dump-logits needs a file name");
    } else if (a == "--max-new-tokens") {
      if (!value(v) || !parseInt(v, maxNew) || maxNew < 0)
        return fail("--max-new-tokens needs a count >= 0");
    } else if (a == "--then-ids") {
      if (!value(thenText))
        return fail("--then-ids needs a comma-separated list of token ids");
    } else if (a == "--warmup") {
      if (!value(v) || !parseInt(v, warmup) || warmup < 0)
        return fail("--warmup needs a count >= 0");
    } else if (a == "--chunk") {
      if (!value(v) || !parseInt(v, chunk) || chunk < 1)
        return fail("--chunk needs a count >= 1");
    } else if (a == "--prefill-chunk") {
      if (!value(v) || !parseInt(v, prefillChunk) || prefillChunk < 1)
        return fail("--prefill-chunk needs a token count >= 1");
    } else if (a == "--batch") {
      // N, or N,M,...: batches of each size one after another, from one
      // prefill (to measure several sizes in one process).
      std::vector<int32_t> sizes;
      if (!value(v) || !parseIds(v, sizes, error) ||
          std::any_of(sizes.begin(), sizes.end(), [](int32_t n) { return n < 1; }))
        return fail("--batch needs a count of sequences >= 1 (or several, comma-separated)");
      batchSizes.assign(sizes.begin(), sizes.end());
      batchCopies = batchSizes.front();
    } else if (a == "--batch-prompts") {
      if (!value(batchPromptsPath) || batchPromptsPath.empty())
        return fail("--batch-prompts needs a file (one prompt a line: ID,ID,... [+NEW_TOKENS])");
    } else if (a == "--cache-dir") {
      if (!value(cacheDir))
        return fail("--cache-dir needs a directory");
    } else if (a == "--session") {
      if (!value(session) || session.empty())
        return fail("--session needs an id");
    } else if (a == "--multi-turn") {
      multiTurn = true;
    } else if (a == "--stats") {
      stats = true;
    } else if (a == "--stats-json") {
      if (!value(statsJson))
        return fail("--stats-json needs a file name");
    } else if (a == "--replay") {
      if (!value(replay) || (replay != "approx" && replay != "exact"))
        return fail("--replay needs approx or exact");
    } else if (a == "--cache-block") {
      if (!value(v) || !parseInt(v, cacheBlock) || cacheBlock < 1)
        return fail("--cache-block needs a token count >= 1");
    } else if (a == "--cache-max-bytes") {
      if (!value(v) || !parseInt(v, cacheMaxBytes) || cacheMaxBytes < 0)
        return fail("--cache-max-bytes needs a byte count >= 0 (0: unbounded)");
    } else if (a == "--cache-ttl") {
      if (!value(v) || !parseInt(v, cacheTtl) || cacheTtl < 0)
        return fail("--cache-ttl needs seconds >= 0 (0: none)");
    } else if (a == "--window-ttl") {
      if (!value(v) || !parseInt(v, windowTtl) || windowTtl < 0)
        return fail("--window-ttl needs seconds >= 0");
    } else if (a == "--pool") {
      if (!value(poolUrl) || poolUrl.empty())
        return fail("--pool needs a URL (redis://HOST:PORT[/DB])");
    } else if (a == "--pool-max-bytes") {
      if (!value(v) || !parseInt(v, poolMaxBytes) || poolMaxBytes < 0)
        return fail("--pool-max-bytes needs a byte count >= 0");
    } else if (a == "--seed") {
      if (!value(v) || !parseInt(v, seed))
        return fail("--seed needs an integer");
    } else if (a == "--temperature") {
      if (!value(v) || !parseDouble(v, temperature) || temperature < 0)
        return fail("--temperature needs a number >= 0");
    } else if (a == "--top-p") {
      if (!value(v) || !parseDouble(v, topP) || topP <= 0 || topP > 1)
        return fail("--top-p needs a number in (0, 1]");
    } else if (!a.empty() && a[0] == '-') {
      usage();
      return fail("unknown option '" + a + "'");
    } else if (artifactPath.empty()) {
      artifactPath = a;
    } else {
      return fail("more than one artifact given ('" + artifactPath + "', '" + a + "')");
    }
  }
  bool batched = batchCopies > 0 || !batchPromptsPath.empty();
  if (artifactPath.empty() || weightsPath.empty() || (promptText.empty() && !multiTurn && batchPromptsPath.empty())) {
    usage();
    return fail("an artifact, --weights and --prompt-ids (or --multi-turn, or --batch-prompts) are required");
  }
  if (batchCopies > 0 && (multiTurn || !cacheDir.empty() || !session.empty() || !poolUrl.empty() ||
                          !thenText.empty() || warmup > 0 || prefillChunk > 0))
    return fail("--batch does not combine with the cache tiers, --then-ids, --prefill-chunk or --warmup "
                "(--batch-prompts takes the tiers)");
  if (!batchPromptsPath.empty() && (multiTurn || !session.empty() || !thenText.empty() || warmup > 0))
    return fail("--batch-prompts does not combine with --multi-turn, --then-ids or --warmup, nor with --session "
                "(a line names its session: SESSION: ID,ID,...)");
  if (batchCopies > 0 && !batchPromptsPath.empty())
    return fail("--batch copies --prompt-ids; --batch-prompts lists the prompts: give one of them");
  if (!batchPromptsPath.empty() && !promptText.empty())
    return fail("--batch-prompts lists the prompts; --prompt-ids does not combine with it");
  bool serving = multiTurn || !cacheDir.empty() || !session.empty() || !poolUrl.empty();
  if (serving && !thenText.empty())
    return fail("--then-ids does not combine with --cache-dir, --session or --multi-turn (send the whole prompt)");
  if (multiTurn && !promptText.empty())
    return fail("--multi-turn reads its prompts from stdin, one a line; --prompt-ids does not combine with it");
  // @FILE: the list from a file (long prompts).
  if (!promptText.empty() && !readIdsFile(promptText, error))
    return fail("--prompt-ids: " + error);
  if (!thenText.empty() && !readIdsFile(thenText, error))
    return fail("--then-ids: " + error);
  std::vector<int32_t> ids, thenIds;
  if (!promptText.empty() && !parseIds(promptText, ids, error))
    return fail("--prompt-ids: " + error);
  if (!thenText.empty() && !parseIds(thenText, thenIds, error))
    return fail("--then-ids: " + error);

  TierOptions tierOptions;
  tierOptions.cacheDir = cacheDir;
  tierOptions.poolUrl = poolUrl;
  tierOptions.cacheBlock = cacheBlock;
  tierOptions.cacheMaxBytes = cacheMaxBytes;
  tierOptions.cacheTtl = cacheTtl;
  tierOptions.windowTtl = windowTtl;
  tierOptions.poolMaxBytes = poolMaxBytes;
  tierOptions.exactReplay = replay == "exact";
  tierOptions.prefillChunk = prefillChunk;

  Progress progress;
  std::shared_ptr<Artifact> artifact(Artifact::open(artifactPath, error));
  if (!artifact)
    return fail(error);
  auto weights = WeightSource::open(weightsPath, error);
  if (!weights)
    return fail(error);
  auto model = HostModel::load(artifact, *weights, error);
  if (!model)
    return fail(error);
  progress.done("loaded the model and its weights");
  const Manifest &m = model->manifest();
  if (batched) {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<long long> newTokens;
    std::vector<std::string> sessions;
    if (batchCopies > 0) {
      PrefillCache prefills;
      for (long long n : batchSizes) {
        prompts.assign(size_t(n), ids);
        newTokens.assign(size_t(n), maxNew);
        if (int status = runBatch(*model, prompts, newTokens, temperature, topP, seed, timing, dumpPath,
                                  artifactPath, prefills))
          return status;
      }
      return 0;
    } else {
      std::ifstream in(batchPromptsPath);
      if (!in)
        return fail("--batch-prompts: cannot read '" + batchPromptsPath + "'");
      std::string line;
      for (int lineNo = 1; std::getline(in, line); ++lineNo) {
        std::string where = batchPromptsPath + ":" + std::to_string(lineNo) + ": ";
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
          line.pop_back();
        if (line.empty())
          continue;
        // "SESSION: ": the request's session (its state goes to the host
        // pool under that name when it leaves the batch).
        std::string lineSession;
        if (size_t colon = line.find(':'); colon != std::string::npos) {
          lineSession = line.substr(0, colon);
          while (!lineSession.empty() && std::isspace(static_cast<unsigned char>(lineSession.back())))
            lineSession.pop_back();
          if (lineSession.empty())
            return fail(where + "an empty session name before ':'");
          line.erase(0, colon + 1);
          while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
            line.erase(0, 1);
        }
        long long mine = maxNew;
        if (size_t plus = line.find(" +"); plus != std::string::npos) {
          if (!parseInt(line.substr(plus + 2), mine) || mine < 0)
            return fail(where + "'" + line.substr(plus + 1) + "' is not a count of new tokens (+N)");
          line.resize(plus);
        }
        std::vector<int32_t> prompt;
        if (!parseIds(line, prompt, error))
          return fail(where + error);
        prompts.push_back(std::move(prompt));
        newTokens.push_back(mine);
        sessions.push_back(lineSession);
      }
      if (prompts.empty())
        return fail("--batch-prompts: '" + batchPromptsPath + "' lists no prompt");
    }
    PrefillCache prefills;
    // Through the cache tiers when they are named, a line names a session,
    // or the prompts are computed in chunks (the server's pieces).
    bool servedPrompts = !cacheDir.empty() || !poolUrl.empty() || prefillChunk > 0 ||
                         std::any_of(sessions.begin(), sessions.end(), [](const std::string &x) { return !x.empty(); });
    if (!servedPrompts)
      return runBatch(*model, prompts, newTokens, temperature, topP, seed, timing, dumpPath, artifactPath, prefills);
    Tiers tiers;
    if (!openTiers(*artifact, *weights, *model, tierOptions, tiers, error))
      return fail(error);
    ServedBatch served{*tiers.server, sessions, stats, statsJson};
    return runBatch(*model, prompts, newTokens, temperature, topP, seed, timing, dumpPath, artifactPath, prefills,
                    &served);
  }
  if (serving) {
    Tiers tiers;
    if (!openTiers(*artifact, *weights, *model, tierOptions, tiers, error))
      return fail(error);
    return serve(*model, *tiers.server, multiTurn ? std::vector<int32_t>() : ids, multiTurn, session, maxNew,
                 temperature, topP, seed, stats, statsJson, dumpPath, artifactPath);
  }
  if (int64_t(ids.size() + thenIds.size()) + maxNew > m.maxPositions)
    return fail("prompt (" + std::to_string(ids.size()) + " tokens)" +
                (thenIds.empty() ? std::string() : " + --then-ids (" + std::to_string(thenIds.size()) + ")") +
                " + --max-new-tokens (" + std::to_string(maxNew) + ") exceeds the model's " +
                std::to_string(m.maxPositions) + " positions");
  bool canDecode = m.entry("decode") && model->continues("decode");
  if (!canDecode && (!thenIds.empty() || maxNew > 1))
    return fail(artifactPath + " has no decode entry point that continues a sequence");
  if (!canDecode && prefillChunk > 0 && prefillChunk < int64_t(ids.size()))
    return fail("--prefill-chunk: " + artifactPath + " has no decode entry point that continues a sequence");

  // Every row computed, for --dump-logits; generation reads only each
  // call's last row, so without a dump the model returns only that.
  model->setLastLogitsOnly(dumpPath.empty());
  std::vector<float> allLogits, logits;
  std::vector<int32_t> rowPositions, sequenceIds = ids;
  auto keep = [&](int64_t firstRow) {
    int64_t rows = int64_t(logits.size()) / m.vocabSize;
    for (int64_t r = 0; r < rows; ++r)
      rowPositions.push_back(int32_t(firstRow + r));
    if (!dumpPath.empty())
      allLogits.insert(allLogits.end(), logits.begin(), logits.end());
  };
  Sequence sequence;
  int64_t firstRow = 0;
  for (long long i = 0; i < warmup; ++i) {
    Sequence scratch;
    if (!model->extend(ids, prefillChunk, scratch, logits, firstRow, error))
      return fail(error);
  }
  uint64_t launchesBefore = HostModel::kernelLaunches();
  const HostModel::CallTimes timesBefore = HostModel::callTimes();
  auto prefillStart = std::chrono::steady_clock::now();
  int64_t prefillCalls = 0;
  if (!model->extend(ids, prefillChunk, sequence, logits, firstRow, error, [&](const std::vector<float> &, int64_t row) {
        keep(row);
        ++prefillCalls;
      }))
    return fail(error);
  double prefillSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - prefillStart).count();
  uint64_t prefillLaunches = HostModel::kernelLaunches() - launchesBefore;
  const HostModel::CallTimes timesAfter = HostModel::callTimes();
  progress.done("prefill");
  for (size_t at = 0; at < thenIds.size(); at += size_t(chunk)) {
    std::vector<int32_t> part(thenIds.begin() + long(at), thenIds.begin() + long(std::min(thenIds.size(), at + size_t(chunk))));
    if (!model->run("decode", part, sequence, logits, firstRow, error))
      return fail(error);
    sequenceIds.insert(sequenceIds.end(), part.begin(), part.end());
    keep(firstRow);
  }
  uint64_t decodeLaunchesBefore = HostModel::kernelLaunches();
  auto decodeStart = std::chrono::steady_clock::now();
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::vector<int32_t> generated;
  for (long long step = 0; step < maxNew; ++step) {
    const float *last = logits.data() + logits.size() - size_t(m.vocabSize);
    int32_t next = pick(last, m.vocabSize, temperature, topP, rng);
    if (next < 0)
      return fail(notFinite("token " + std::to_string(sequenceIds.size())));
    generated.push_back(next);
    if (step + 1 < maxNew) {
      sequenceIds.push_back(next);
      if (!model->run("decode", {next}, sequence, logits, firstRow, error))
        return fail(error);
      keep(firstRow);
    }
  }
  double decodeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - decodeStart).count();
  uint64_t decodeLaunches = HostModel::kernelLaunches() - decodeLaunchesBefore;
  if (maxNew > 0)
    progress.done("generation");
  if (!dumpPath.empty() && !writeDump(dumpPath, m, artifactPath, sequenceIds, rowPositions, allLogits, error))
    return fail(error);
  if (timing) {
    std::fprintf(stderr, "dsf-run: timing: prefill %zu tokens %.6f s (%.1f tokens/s)", ids.size(), prefillSeconds,
                 double(ids.size()) / prefillSeconds);
    if (prefillCalls > 1)
      std::fprintf(stderr, " in %lld calls of %lld tokens", static_cast<long long>(prefillCalls), prefillChunk);
    // The tokens that went through the decode entry point (the last one
    // generated is picked, not run).
    if (maxNew > 1)
      std::fprintf(stderr, "; decode %lld tokens %.6f s (%.2f tokens/s)", maxNew - 1, decodeSeconds,
                   double(maxNew - 1) / decodeSeconds);
    if (prefillLaunches)
      std::fprintf(stderr, "; prefill %llu GPU kernel launches", static_cast<unsigned long long>(prefillLaunches));
    if (decodeLaunches && maxNew > 1)
      std::fprintf(stderr, "; decode %.0f GPU kernel launches a call", double(decodeLaunches) / double(maxNew - 1));
    std::fprintf(stderr, "\n");
    // Where the prefill's wall time went (HostModel::CallTimes).
    const HostModel::CallTimes &a = timesBefore, &b = timesAfter;
    std::fprintf(stderr,
                 "dsf-run: timing: prefill's %llu calls: staging %.6f s, host code %.6f s (cuMemAlloc/cuMemFree %.6f s, "
                 "%llu calls), waiting for the device %.6f s, results %.6f s (%llu state tensors copied to the host, "
                 "%.1f MB), release %.6f s\n",
                 static_cast<unsigned long long>(b.calls - a.calls), b.stage - a.stage, b.hostCode - a.hostCode,
                 b.deviceAllocs - a.deviceAllocs, static_cast<unsigned long long>(b.allocCalls - a.allocCalls),
                 b.wait - a.wait, b.results - a.results, static_cast<unsigned long long>(b.statesToHost - a.statesToHost),
                 double(b.bytesToHost - a.bytesToHost) / 1e6, b.release - a.release);
  }
  for (size_t i = 0; i < generated.size(); ++i)
    std::printf("%s%d", i ? "," : "", generated[i]);
  std::printf("\n");
  return 0;
}
