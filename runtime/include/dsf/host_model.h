//===- host_model.h - running an artifact's host kernels -------------------===//
//
// A model ready to run on the CPU: the artifact's shared object loaded
// (from memory, through memfd_create: nothing is unpacked to disk), the
// weights bound as the manifest says, validated against the checkpoint, and
// an entry point callable with token ids.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_HOST_MODEL_H
#define DSF_RUNTIME_HOST_MODEL_H

#include "dsf/artifact.h"
#include "dsf/weights.h"

#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

class HostModel {
public:
  /// Loads the host kernels of `artifact` and binds every weight its entry
  /// points need from `weights`. Fails, naming the tensor, on a missing,
  /// misshaped or unconvertible weight, or on a tensor no entry point uses.
  static std::unique_ptr<HostModel> load(std::shared_ptr<Artifact> artifact, const WeightSource &weights,
                                         std::string &error);
  ~HostModel();

  const Manifest &manifest() const { return artifact_->manifest(); }

  /// Logits [rows, vocab] of a fresh sequence of `ids` through entry point
  /// `entry`: every position for a full prefill; for the exact-tail and
  /// bounded-replay prefills (the manifest's `prefill`) the rows of the
  /// tail only, the first of them at position `firstRow` (exact-tail is exact
  /// at the last position, which is what it promises; bounded replay
  /// approximates it). Validates ids and positions.
  bool run(const std::string &entry, const std::vector<int32_t> &ids, std::vector<float> &logits,
           int64_t &firstRow, std::string &error) const;

private:
  HostModel() = default;
  struct Bound;
  std::shared_ptr<Artifact> artifact_;
  void *library_ = nullptr;
  int memfd_ = -1;
  std::vector<std::unique_ptr<Bound>> entries_;
  std::shared_ptr<void> weights_;   // the bound weight buffers, by name
};

} // namespace dsf::rt

#endif // DSF_RUNTIME_HOST_MODEL_H
