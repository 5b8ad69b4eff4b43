//===- host_model_misuse.cpp - HostModel::run's errors, one by one ---------===//
//
// The runtime's API errors that dsf-run never provokes (it always names a
// real entry point and keeps its sequences whole), for host-model-misuse.test:
//   host-model-misuse ARTIFACT WEIGHTS
// Each case prints "CASE: error" (or "CASE: no error", which the test's
// FileCheck rejects) and, for a failed call on a live sequence, whether the
// sequence is unchanged.
//
//===----------------------------------------------------------------------===//
#include "dsf/artifact.h"
#include "dsf/host_model.h"
#include "dsf/weights.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace dsf::rt;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: host-model-misuse ARTIFACT WEIGHTS\n");
    return 2;
  }
  std::string error;
  std::shared_ptr<Artifact> artifact(Artifact::open(argv[1], error));
  if (!artifact) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto weights = WeightSource::open(argv[2], error);
  if (!weights) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto model = HostModel::load(artifact, *weights, error);
  if (!model) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::vector<float> logits;
  int64_t firstRow = 0;
  auto report = [&](const char *name, bool ok) {
    std::printf("%s: %s\n", name, ok ? "no error" : error.c_str());
    error.clear();
  };
  auto same = [](const Sequence &a, const Sequence &b) {
    if (a.length != b.length || a.state.size() != b.state.size())
      return false;
    for (const auto &[name, t] : a.state) {
      auto it = b.state.find(name);
      if (it == b.state.end() || it->second.rows != t.rows || it->second.width != t.width ||
          it->second.values != t.values)
        return false;
    }
    return true;
  };

  report("unknown entry point", model->run("nonexistent", {1, 2}, logits, firstRow, error));
  report("empty prompt", model->run("prefill", {}, logits, firstRow, error));
  Sequence empty;
  report("decode of an empty sequence", model->run("decode", {1}, empty, logits, firstRow, error));

  Sequence live;
  if (!model->run("prefill", {5, 6, 7, 8}, live, logits, firstRow, error)) {
    std::fprintf(stderr, "prefill: %s\n", error.c_str());
    return 1;
  }
  const Sequence before = live;
  report("replay longer than the sequence", model->run("replay", {1, 2, 3, 4, 5, 6}, live, logits, firstRow, error));
  std::printf("  unchanged: %s\n", same(live, before) ? "yes" : "no");

  Sequence missing = live;
  missing.state.erase(missing.state.begin());
  report("missing state", model->run("decode", {1}, missing, logits, firstRow, error));

  Sequence misshaped = live;
  StateTensor &first = misshaped.state.begin()->second;
  first.width += 1;
  first.values.resize(size_t(first.rows * first.width));
  report("misshaped state", model->run("decode", {1}, misshaped, logits, firstRow, error));

  Sequence full = live;
  full.length = model->manifest().maxPositions;
  report("past the last position", model->run("decode", {1}, full, logits, firstRow, error));

  report("token outside the vocabulary", model->run("decode", {int32_t(model->manifest().vocabSize)}, live, logits,
                                                    firstRow, error));
  std::printf("  unchanged: %s\n", same(live, before) ? "yes" : "no");
  return 0;
}
