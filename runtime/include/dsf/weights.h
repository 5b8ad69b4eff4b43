//===- weights.h - a checkpoint: one safetensors file or a sharded folder ---===//
#ifndef DSF_RUNTIME_WEIGHTS_H
#define DSF_RUNTIME_WEIGHTS_H

#include "dsf/safetensors.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

/// The tensors of a checkpoint by name: PATH is a .safetensors file, or a
/// folder with model.safetensors.index.json (HF's sharded layout: every
/// shard it names is opened, memory-mapped) or with one .safetensors file.
class WeightSource {
public:
  static std::unique_ptr<WeightSource> open(const std::string &path, std::string &error);
  const TensorView *find(const std::string &name) const;
  /// Where a tensor comes from, for messages.
  std::string origin(const std::string &name) const;
  const std::map<std::string, const TensorView *> &tensors() const { return index_; }

private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView *> index_;
  std::map<std::string, std::string> origin_;
};

} // namespace dsf::rt

#endif // DSF_RUNTIME_WEIGHTS_H
