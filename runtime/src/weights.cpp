//===- weights.cpp - a checkpoint: one safetensors file or a sharded folder -===//
#include "dsf/weights.h"
#include "file_io.h"

#include <nlohmann/json.hpp>

#include <set>
#include <sys/stat.h>

namespace dsf::rt {

namespace {
bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}
} // namespace

std::unique_ptr<WeightSource> WeightSource::open(const std::string &path, std::string &error) {
  std::vector<std::string> files;
  if (isDirectory(path)) {
    std::string index = path + "/model.safetensors.index.json";
    if (exists(index)) {
      std::string text;
      if (!readWholeFile(index, text, error))
        return nullptr;
      auto j = nlohmann::json::parse(text, nullptr, false);
      auto map = j.is_object() ? j.find("weight_map") : j.end();
      if (j.is_discarded() || map == j.end() || !map->is_object()) {
        error = index + ": expected a JSON object with a 'weight_map' object";
        return nullptr;
      }
      std::set<std::string> shards;
      for (auto it = map->begin(); it != map->end(); ++it) {
        if (!it->is_string() || it->get<std::string>().find('/') != std::string::npos) {
          error = index + ": weight_map['" + it.key() + "']: expected a shard file name in this folder";
          return nullptr;
        }
        shards.insert(it->get<std::string>());
      }
      for (const std::string &s : shards)
        files.push_back(path + "/" + s);
    } else if (exists(path + "/model.safetensors")) {
      files.push_back(path + "/model.safetensors");
    } else if (exists(path + "/weights.safetensors")) {
      files.push_back(path + "/weights.safetensors");
    } else {
      error = path + ": no model.safetensors.index.json, model.safetensors or weights.safetensors in this folder";
      return nullptr;
    }
  } else {
    files.push_back(path);
  }
  auto source = std::unique_ptr<WeightSource>(new WeightSource());
  for (const std::string &f : files) {
    auto file = SafetensorsFile::open(f, error);
    if (!file)
      return nullptr;
    for (const TensorView &t : file->tensors()) {
      if (source->index_.count(t.name)) {
        error = f + ": tensor '" + t.name + "' is also in " + source->origin_[t.name];
        return nullptr;
      }
      source->index_[t.name] = &t;
      source->origin_[t.name] = f;
    }
    source->files_.push_back(std::move(file));
  }
  return source;
}

const TensorView *WeightSource::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::string WeightSource::origin(const std::string &name) const {
  auto it = origin_.find(name);
  return it == origin_.end() ? std::string() : it->second;
}

} // namespace dsf::rt
