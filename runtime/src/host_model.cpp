//===- host_model.cpp - running an artifact's host kernels -----------------===//
#include "dsf/host_model.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <set>
#include <sys/mman.h>
#include <unistd.h>

extern "C" void memrefCopy(int64_t elemSize, void *src, void *dst);

/// Kernels resolve memrefCopy (host_abi.cpp) from the executable; this
/// reference keeps it in every executable that links the host model.
void *volatile dsfHostAbiAnchor = reinterpret_cast<void *>(&memrefCopy);

namespace dsf::rt {

namespace {

/// A weight's values in the layout the kernels read: row-major, f32 or i32.
struct WeightBuffer {
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int32_t> i32;
  void *data() { return f32.empty() ? static_cast<void *>(i32.data()) : static_cast<void *>(f32.data()); }
};

bool convertInto(const TensorView &t, const std::string &dtype, WeightBuffer &out, size_t at, std::string &error) {
  if (dtype == "f32") {
    std::vector<float> values;
    if (!readAsFloat(t, values, error))
      return false;
    std::memcpy(out.f32.data() + at, values.data(), values.size() * sizeof(float));
    return true;
  }
  size_t n = size_t(t.elements());
  if (t.dtype == DType::I32) {
    std::memcpy(out.i32.data() + at, t.data, n * 4);
    return true;
  }
  if (t.dtype == DType::I64) {
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, t.data + 8 * i, 8);
      if (v < INT32_MIN || v > INT32_MAX) {
        error = "value " + std::to_string(v) + " does not fit i32";
        return false;
      }
      out.i32[at + i] = int32_t(v);
    }
    return true;
  }
  error = std::string("dtype ") + dtypeName(t.dtype) + " cannot be read as i32";
  return false;
}

/// A memref descriptor as MLIR's C interface lays it out:
/// {allocated, aligned, offset, sizes[rank], strides[rank]}, 8 bytes each.
std::vector<int64_t> descriptor(void *data, const std::vector<int64_t> &shape) {
  std::vector<int64_t> d(3 + 2 * shape.size());
  d[0] = d[1] = int64_t(reinterpret_cast<intptr_t>(data));
  d[2] = 0;
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    d[3 + i] = shape[i];
    d[3 + shape.size() + i] = stride;
    stride *= shape[i];
  }
  return d;
}
} // namespace

struct HostModel::Bound {
  const EntryPoint *spec = nullptr;
  void (*function)(void **) = nullptr;
  std::vector<std::vector<int64_t>> weightDescriptors;
};

std::unique_ptr<HostModel> HostModel::load(std::shared_ptr<Artifact> artifact, const WeightSource &weights,
                                           std::string &error) {
  auto model = std::unique_ptr<HostModel>(new HostModel());
  model->artifact_ = artifact;
  const std::string *so = artifact->section(SectionKind::HostKernels);
  if (!so) {
    error = artifact->path() + ": no host kernels (an artifact for another target?)";
    return nullptr;
  }
  // The shared object is loaded from memory: a memfd holds it, dlopen reads
  // it through /proc/self/fd.
  model->memfd_ = memfd_create("dsf-host-kernels", MFD_CLOEXEC);
  if (model->memfd_ < 0 || ::write(model->memfd_, so->data(), so->size()) != ssize_t(so->size())) {
    error = artifact->path() + ": cannot stage the host kernels in memory";
    return nullptr;
  }
  std::string fdPath = "/proc/self/fd/" + std::to_string(model->memfd_);
  // DSF_HOST_KERNELS_DUMP=FILE: load the kernels from FILE instead (written
  // here), so that debuggers and profilers see their symbols.
  if (const char *dump = std::getenv("DSF_HOST_KERNELS_DUMP")) {
    FILE *f = std::fopen(dump, "wb");
    if (!f || std::fwrite(so->data(), 1, so->size(), f) != so->size() || std::fclose(f) != 0) {
      error = std::string("DSF_HOST_KERNELS_DUMP: cannot write ") + dump;
      return nullptr;
    }
    fdPath = dump;
  }
  model->library_ = dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!model->library_) {
    error = artifact->path() + ": cannot load the host kernels: " + dlerror();
    return nullptr;
  }

  // Every weight once, shared by the entry points that bind it.
  auto buffers = std::make_shared<std::map<std::string, WeightBuffer>>();
  std::set<std::string> consumed;
  for (const EntryPoint &entry : artifact->manifest().entryPoints) {
    auto bound = std::make_unique<Bound>();
    bound->spec = &entry;
    bound->function = reinterpret_cast<void (*)(void **)>(dlsym(model->library_, entry.symbol.c_str()));
    if (!bound->function) {
      error = artifact->path() + ": the host kernels lack entry point " + entry.symbol;
      return nullptr;
    }
    for (const WeightSpec &w : entry.weights) {
      auto it = buffers->find(w.name);
      if (it == buffers->end()) {
        WeightBuffer buffer;
        buffer.shape = w.shape;
        int64_t elements = 1;
        for (int64_t d : w.shape)
          elements *= d;
        (w.dtype == "f32" ? buffer.f32.resize(size_t(elements)) : buffer.i32.resize(size_t(elements)));
        auto expect = [&](const TensorView &t, const std::vector<int64_t> &shape) {
          if (t.shape == shape)
            return true;
          error = weights.origin(t.name) + ": weight '" + t.name + "': expected shape " + shapeString(shape) +
                  ", found " + shapeString(t.shape);
          return false;
        };
        const TensorView *whole = weights.find(w.name);
        if (whole || w.expertNames.empty()) {
          if (!whole) {
            error = "weight '" + w.name + "' (" + shapeString(w.shape) + ") is missing from the checkpoint";
            return nullptr;
          }
          std::string why;
          if (!expect(*whole, w.shape))
            return nullptr;
          if (!convertInto(*whole, w.dtype, buffer, 0, why)) {
            error = weights.origin(w.name) + ": weight '" + w.name + "': " + why;
            return nullptr;
          }
          consumed.insert(w.name);
        } else {
          std::vector<int64_t> one(w.shape.begin() + 1, w.shape.end());
          size_t per = size_t(elements / w.shape[0]);
          for (int64_t e = 0; e < w.shape[0]; ++e) {
            std::string name = w.expertNames;
            name.replace(name.find("{e}"), 3, std::to_string(e));
            const TensorView *t = weights.find(name);
            if (!t) {
              error = "weight '" + name + "' (" + shapeString(one) + ", expert " + std::to_string(e) + " of '" +
                      w.name + "') is missing from the checkpoint";
              return nullptr;
            }
            std::string why;
            if (!expect(*t, one))
              return nullptr;
            if (!convertInto(*t, w.dtype, buffer, size_t(e) * per, why)) {
              error = weights.origin(name) + ": weight '" + name + "': " + why;
              return nullptr;
            }
            consumed.insert(name);
          }
        }
        it = buffers->emplace(w.name, std::move(buffer)).first;
      }
      bound->weightDescriptors.push_back(descriptor(it->second.data(), it->second.shape));
    }
    model->entries_.push_back(std::move(bound));
  }
  for (const auto &[name, view] : weights.tensors())
    if (!consumed.count(name)) {
      error = weights.origin(name) + ": tensor '" + name + "' " + shapeString(view->shape) +
              " is not a weight of " + artifact->manifest().model + " (a checkpoint of another model?)";
      return nullptr;
    }
  model->weights_ = buffers;
  return model;
}

HostModel::~HostModel() {
  if (library_)
    dlclose(library_);
  if (memfd_ >= 0)
    ::close(memfd_);
}

bool HostModel::run(const std::string &entryName, const std::vector<int32_t> &ids, std::vector<float> &logits,
                    int64_t &firstRow, std::string &error) const {
  const Bound *bound = nullptr;
  for (const auto &b : entries_)
    if (b->spec->name == entryName)
      bound = b.get();
  if (!bound) {
    error = "the artifact has no entry point '" + entryName + "'";
    return false;
  }
  const Manifest &m = manifest();
  if (ids.empty()) {
    error = "the prompt is empty";
    return false;
  }
  if (int64_t(ids.size()) > m.maxPositions) {
    error = "the sequence has " + std::to_string(ids.size()) + " tokens, more than the model's " +
            std::to_string(m.maxPositions) + " positions";
    return false;
  }
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= m.vocabSize) {
      error = "token id " + std::to_string(ids[i]) + " (position " + std::to_string(i) +
              ") is outside the vocabulary [0, " + std::to_string(m.vocabSize) + ")";
      return false;
    }
  int64_t n = int64_t(ids.size());
  std::vector<int32_t> tokens(ids), positions(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i)
    positions[size_t(i)] = int32_t(i);
  std::vector<uint8_t> imageMask(size_t(n), 0);   // text only: no image tokens yet
  std::vector<std::vector<int64_t>> inputs;
  for (const TensorSpec &in : bound->spec->inputs) {
    if (in.name == "token_ids")
      inputs.push_back(descriptor(tokens.data(), {n}));
    else if (in.name == "positions")
      inputs.push_back(descriptor(positions.data(), {n}));
    else if (in.name == "image_mask")
      inputs.push_back(descriptor(imageMask.data(), {n}));
    else {
      error = "entry point '" + entryName + "' takes input '" + in.name + "', which this runtime cannot supply";
      return false;
    }
  }
  const TensorSpec &out = bound->spec->outputs.front();
  std::vector<int64_t> result(3 + 2 * out.shape.size(), 0);
  std::vector<void *> args{result.data()};
  for (auto &d : inputs)
    args.push_back(d.data());
  for (const auto &d : bound->weightDescriptors)
    args.push_back(const_cast<int64_t *>(d.data()));
  bound->function(args.data());

  // The result buffer is the kernels' (malloc); copy it out through its
  // strides and free it.
  void *allocated = reinterpret_cast<void *>(intptr_t(result[0]));
  auto *aligned = reinterpret_cast<const float *>(intptr_t(result[1]));
  int64_t offset = result[2], rows = result[3], cols = result[4], rowStride = result[5], colStride = result[6];
  // A split prefill returns the logits of its tail only.
  bool tailOnly = m.prefillMode != "full" && entryName == "prefill";
  if (out.shape.size() != 2 || (tailOnly ? (rows < 1 || rows > n) : rows != n) || cols != m.vocabSize) {
    std::free(allocated);
    error = "entry point '" + entryName + "' returned logits of shape [" + std::to_string(rows) + ", " +
            std::to_string(cols) + "], expected [" + std::to_string(n) + ", " + std::to_string(m.vocabSize) + "]";
    return false;
  }
  firstRow = n - rows;
  logits.resize(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      logits[size_t(r * cols + c)] = aligned[offset + r * rowStride + c * colStride];
  std::free(allocated);
  return true;
}

} // namespace dsf::rt
