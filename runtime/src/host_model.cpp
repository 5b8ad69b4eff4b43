//===- host_model.cpp - running an artifact's host kernels -----------------===//
#include "dsf/host_model.h"
#include "dsf/checkpoint.h"
#include "cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <set>
#include <thread>
#include <sys/mman.h>
#include <unistd.h>

extern "C" void memrefCopy(int64_t elemSize, void *src, void *dst);
extern "C" void *mgpuModuleLoad(void *, size_t);
extern "C" void mgpuModuleUnload(void *);
extern "C" void *mgpuModuleGetFunction(void *, const char *);
extern "C" void *mgpuStreamCreate();
extern "C" void mgpuStreamDestroy(void *);
extern "C" void mgpuStreamSynchronize(void *);
extern "C" void mgpuLaunchKernel(void *, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, int32_t, void *,
                                 void **, void **, size_t);
extern "C" void *_mlir_memref_to_llvm_alloc(size_t);
extern "C" void _mlir_memref_to_llvm_free(void *);

/// Kernels resolve memrefCopy (host_abi.cpp) and, for CUDA artifacts, the
/// mgpu* launch interface and the device allocator (cuda_backend.cpp) from
/// the executable; these references keep them in every executable that
/// links the host model.
void *volatile dsfHostAbiAnchor[] = {
    reinterpret_cast<void *>(&memrefCopy),          reinterpret_cast<void *>(&mgpuModuleLoad),
    reinterpret_cast<void *>(&mgpuModuleUnload),    reinterpret_cast<void *>(&mgpuModuleGetFunction),
    reinterpret_cast<void *>(&mgpuStreamCreate),    reinterpret_cast<void *>(&mgpuStreamDestroy),
    reinterpret_cast<void *>(&mgpuStreamSynchronize), reinterpret_cast<void *>(&mgpuLaunchKernel),
    reinterpret_cast<void *>(&_mlir_memref_to_llvm_alloc), reinterpret_cast<void *>(&_mlir_memref_to_llvm_free)};

namespace dsf::rt {

namespace {

/// A weight's values in the layout the kernels read: row-major, f32, bf16
/// or i32 (the manifest's dtype).
struct WeightBuffer {
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  std::vector<int32_t> i32;
  std::vector<uint8_t> packed;   // a weight bound packed: the checkpoint's bytes
  void *device = nullptr;   // CUDA artifacts: the values in device memory
  void *host() {
    if (!bf16.empty())
      return bf16.data();
    if (!packed.empty())
      return packed.data();
    return f32.empty() ? static_cast<void *>(i32.data()) : static_cast<void *>(f32.data());
  }
  size_t bytes() const { return f32.size() * 4 + bf16.size() * 2 + i32.size() * 4 + packed.size(); }
  void *data() { return device ? device : host(); }
  /// Rounds the values read as f32 to bf16 (exact for bf16 and the
  /// released FP8 / FP4 checkpoints).
  void toBF16() {
    bf16.resize(f32.size());
    for (size_t i = 0; i < f32.size(); ++i)
      bf16[i] = encodeBF16(f32[i]);
    std::vector<float>().swap(f32);
  }
  WeightBuffer() = default;
  WeightBuffer(WeightBuffer &&o) noexcept
      : shape(std::move(o.shape)), f32(std::move(o.f32)), bf16(std::move(o.bf16)), i32(std::move(o.i32)),
        packed(std::move(o.packed)), device(o.device) {
    o.device = nullptr;
  }
  ~WeightBuffer() { cuda::deviceFree(device); }
};

/// Packed rows decoded on the host, as the tiers wrote them.
void decodeOnHost(const PackedRows &packed, int64_t width, std::vector<float> &values) {
  const auto *bytes = reinterpret_cast<const uint8_t *>(packed.bytes->data());
  for (const PackedRows::Segment &s : packed.segments) {
    float *out = values.data() + s.firstRow * width;
    if (s.f32)
      std::memcpy(out, bytes + s.codes, size_t(s.rows * width) * sizeof(float));
    else
      dequantizeRows(bytes + s.codes, bytes + s.scales, s.rows, width, s.format, out);
  }
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
  // A CUDA artifact's kernels load their modules when the library is
  // opened: the driver comes first.
  model->cuda_ = artifact->manifest().target.rfind("cuda", 0) == 0;
  if (model->cuda_) {
    std::string why;
    if (!cuda::ensureDriver(why)) {
      error = artifact->path() + ": an artifact for " + artifact->manifest().target + ", and " + why;
      return nullptr;
    }
  }
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
  if (model->cuda_ && !cuda::synchronize(error)) {
    error = artifact->path() + ": loading the GPU kernels: " + error;
    return nullptr;
  }

  // Every weight once, shared by the entry points that bind it, decoded on
  // every core: a real-size checkpoint is billions of FP8/FP4 codes. A batch
  // of one weight a thread at a time bounds the decoded copies waiting in
  // host memory; this thread uploads them in order, so the first bad weight
  // in the manifest's order is the one reported.
  std::vector<const WeightSpec *> unique;
  {
    std::set<std::string> seen;
    for (const EntryPoint &entry : artifact->manifest().entryPoints)
      for (const WeightSpec &w : entry.weights)
        if (seen.insert(w.name).second)
          unique.push_back(&w);
  }
  auto buffers = std::make_shared<std::map<std::string, WeightBuffer>>();
  std::set<std::string> consumed;
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  for (size_t begin = 0; begin < unique.size(); begin += threads) {
    const size_t count = std::min(threads, unique.size() - begin);
    std::vector<WeightBuffer> batch(count);
    std::vector<std::set<std::string>> used(count);
    std::vector<std::string> errors(count);
    std::vector<char> ok(count, 0);
    std::vector<std::thread> workers;
    for (size_t i = 0; i < count; ++i)
      workers.emplace_back([&, i] {
        const WeightSpec &w = *unique[begin + i];
        batch[i].shape = w.shape;
        ok[i] = isPackedWeight(w) ? readPackedWeight(weights, w, batch[i].packed, used[i], errors[i])
                                  : readWeight(weights, w, batch[i].f32, batch[i].i32, used[i], errors[i]);
        if (ok[i] && w.dtype == "bf16")
          batch[i].toBF16();
      });
    for (std::thread &t : workers)
      t.join();
    for (size_t i = 0; i < count; ++i) {
      const WeightSpec &w = *unique[begin + i];
      if (!ok[i]) {
        error = errors[i];
        return nullptr;
      }
      consumed.insert(used[i].begin(), used[i].end());
      WeightBuffer &buffer = batch[i];
      if (model->cuda_) {
        size_t bytes = buffer.bytes();
        buffer.device = cuda::deviceAlloc(bytes);
        cuda::copyToDevice(buffer.device, buffer.host(), bytes);
        if (!cuda::synchronize(error)) {
          error = "weight '" + w.name + "': " + error;
          return nullptr;
        }
        std::vector<float>().swap(buffer.f32);
        std::vector<uint16_t>().swap(buffer.bf16);
        std::vector<int32_t>().swap(buffer.i32);
        std::vector<uint8_t>().swap(buffer.packed);
      }
      buffers->emplace(w.name, std::move(buffer));
    }
  }
  for (const EntryPoint &entry : artifact->manifest().entryPoints) {
    auto bound = std::make_unique<Bound>();
    bound->spec = &entry;
    bound->function = reinterpret_cast<void (*)(void **)>(dlsym(model->library_, entry.symbol.c_str()));
    if (!bound->function) {
      error = artifact->path() + ": the host kernels lack entry point " + entry.symbol;
      return nullptr;
    }
    for (const WeightSpec &w : entry.weights)
      bound->weightDescriptors.push_back(descriptor(buffers->at(w.name).data(), buffers->at(w.name).shape));
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

uint64_t HostModel::kernelLaunches() { return cuda::launchCount(); }
uint64_t HostModel::programmaticKernelLaunches() { return cuda::programmaticLaunchCount(); }

namespace {
HostModel::CallTimes &callTimesSoFar() {
  static HostModel::CallTimes t;
  return t;
}
double secondsSince(std::chrono::steady_clock::time_point &from) {
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - from).count();
  from = now;
  return s;
}
} // namespace

HostModel::CallTimes HostModel::callTimes() { return callTimesSoFar(); }

bool HostModel::pinHostMemory(const void *p, size_t bytes) const { return cuda_ && cuda::pinHostMemory(p, bytes); }

void HostModel::unpinHostMemory(const void *p) const {
  if (cuda_)
    cuda::unpinHostMemory(p);
}

bool HostModel::continues(const std::string &entryName) const {
  const EntryPoint *e = manifest().entry(entryName);
  return e && std::any_of(e->inputs.begin(), e->inputs.end(),
                          [](const TensorSpec &t) { return t.name.rfind("state:", 0) == 0; });
}

bool HostModel::run(const std::string &entryName, const std::vector<int32_t> &ids, std::vector<float> &logits,
                    int64_t &firstRow, std::string &error) const {
  Sequence fresh;
  return run(entryName, ids, fresh, logits, firstRow, error);
}

bool HostModel::extend(const std::vector<int32_t> &ids, int64_t chunk, Sequence &sequence, std::vector<float> &logits,
                       int64_t &firstRow, std::string &error,
                       const std::function<void(const std::vector<float> &, int64_t)> &eachCall) const {
  if (ids.empty()) {
    error = "the prompt is empty";
    return false;
  }
  if (chunk < 0) {
    error = "a chunk of " + std::to_string(chunk) + " tokens";
    return false;
  }
  size_t step = chunk == 0 ? ids.size() : size_t(chunk);
  for (size_t at = 0; at < ids.size(); at += step) {
    std::vector<int32_t> part(ids.begin() + long(at), ids.begin() + long(std::min(ids.size(), at + step)));
    const char *entry = sequence.length == 0 ? "prefill" : "decode";
    if (!run(entry, part, sequence, logits, firstRow, error)) {
      if (step < ids.size())
        error = "tokens " + std::to_string(at) + ".." + std::to_string(at + part.size() - 1) + " (@" + entry +
                "): " + error;
      return false;
    }
    if (eachCall)
      eachCall(logits, firstRow);
  }
  return true;
}

bool HostModel::run(const std::string &entryName, const std::vector<int32_t> &ids, Sequence &sequence,
                    std::vector<float> &logits, int64_t &firstRow, std::string &error) const {
  const Bound *bound = this->bound(entryName, error);
  if (!bound)
    return false;
  const Manifest &m = manifest();
  if (ids.empty()) {
    error = "the prompt is empty";
    return false;
  }
  CallTimes &times = callTimesSoFar();
  auto lap = std::chrono::steady_clock::now();
  ++times.calls;
  bool continuing = continues(entryName);
  if (continuing && sequence.length == 0) {
    error = "entry point '" + entryName + "' continues a sequence, but the sequence is empty (prefill it first)";
    return false;
  }
  // "replay" recomputes the windows over the sequence's last tokens (its
  // global caches and carries already cover them): it does not lengthen it.
  bool replaying = entryName == "replay";
  int64_t n = int64_t(ids.size());
  if (replaying && n > sequence.length) {
    error = "replay of " + std::to_string(n) + " tokens over a sequence of " + std::to_string(sequence.length);
    return false;
  }
  int64_t start = replaying ? sequence.length - n : continuing ? sequence.length : 0;
  if (start + n > m.maxPositions) {
    error = "the sequence has " + std::to_string(start + n) + " tokens, more than the model's " +
            std::to_string(m.maxPositions) + " positions";
    return false;
  }
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= m.vocabSize) {
      error = "token id " + std::to_string(ids[i]) + " (position " + std::to_string(start + int64_t(i)) +
              ") is outside the vocabulary [0, " + std::to_string(m.vocabSize) + ")";
      return false;
    }
  if (!placeState(sequence, error))
    return false;
  std::vector<int32_t> tokens(ids), positions(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i)
    positions[size_t(i)] = int32_t(start + i);
  std::vector<uint8_t> imageMask(size_t(n), 0);   // text only: no image tokens yet
  std::vector<std::vector<int64_t>> inputs;
  // A CUDA artifact's token inputs go to pinned host memory the kernels
  // read through unified addressing (the host code reads positions too),
  // freed when the call ends; the pool then gives back what this call did
  // not reuse. Its state inputs are on the device already (the previous
  // call's results), or are copied there (state restored from a tier).
  std::vector<void *> stagedHost;
  struct Unstage {
    bool cuda;
    std::vector<void *> &host;
    ~Unstage() {
      if (!cuda)
        return;
      auto start = std::chrono::steady_clock::now();
      std::string ignored;
      cuda::synchronize(ignored);   // nothing in flight may still read them
      for (void *p : host)
        cuda::hostMappedFree(p);
      cuda::trimPool();
      callTimesSoFar().release += secondsSince(start);
    }
  } unstage{cuda_, stagedHost};
  // Each state input's buffer and what keeps it alive, by the address the
  // kernels get: a result that is an input passed through keeps its owner.
  std::map<const void *, std::shared_ptr<void>> inputOwners;
  auto placeToken = [&](const void *data, size_t bytes) -> void * {
    if (!cuda_)
      return const_cast<void *>(data);
    void *p = cuda::hostMappedAlloc(bytes);
    if (p) {
      std::memcpy(p, data, bytes);
      stagedHost.push_back(p);
    }
    return p;
  };
  for (const TensorSpec &in : bound->spec->inputs) {
    if (in.name == "token_ids") {
      inputs.push_back(descriptor(placeToken(tokens.data(), tokens.size() * 4), {n}));
    } else if (in.name == "positions") {
      inputs.push_back(descriptor(placeToken(positions.data(), positions.size() * 4), {n}));
    } else if (in.name == "image_mask") {
      inputs.push_back(descriptor(placeToken(imageMask.data(), imageMask.size()), {n}));
    } else if (in.name.rfind("state:", 0) == 0) {
      auto it = sequence.state.find(in.name.substr(6));
      if (it == sequence.state.end()) {
        error = "entry point '" + entryName + "' needs the sequence's state '" + in.name.substr(6) +
                "', which the sequence does not hold (a sequence of another artifact?)";
        return false;
      }
      const StateTensor &t = it->second;
      if (in.shape.size() != 2 || (in.shape[1] >= 0 && in.shape[1] != t.width)) {
        error = "state '" + in.name.substr(6) + "' has rows of " + std::to_string(t.width) +
                " values; entry point '" + entryName + "' expects " + shapeString(in.shape);
        return false;
      }
      void *values = nullptr;
      std::shared_ptr<void> owner;
      if (!cuda_) {
        values = const_cast<float *>(t.values.data());
        owner = std::shared_ptr<void>(values, [](void *) {});   // the sequence's
      } else if (t.device) {
        values = const_cast<float *>(t.device->data);
        owner = t.device->allocation;
      } else {
        if (int64_t(t.values.size()) != t.rows * t.width) {
          error = "state '" + in.name.substr(6) + "' holds " + std::to_string(t.values.size()) + " values for " +
                  std::to_string(t.rows) + " rows of " + std::to_string(t.width);
          return false;
        }
        size_t bytes = t.values.size() * sizeof(float);
        values = cuda::deviceAlloc(bytes);
        cuda::copyToDevice(values, t.values.data(), bytes);
        owner = std::shared_ptr<void>(values, cuda::deviceFree);
      }
      inputs.push_back(descriptor(values, {t.rows, t.width}));
      inputOwners.emplace(values, std::move(owner));
    } else {
      error = "entry point '" + entryName + "' takes input '" + in.name + "', which this runtime cannot supply";
      return false;
    }
  }
  // Results: one rank-2 descriptor per output, one after the other.
  const std::vector<TensorSpec> &outs = bound->spec->outputs;
  const size_t stride = 3 + 2 * 2;
  std::vector<int64_t> results(stride * outs.size(), 0);
  std::vector<void *> args{results.data()};
  for (auto &d : inputs)
    args.push_back(d.data());
  for (const auto &d : bound->weightDescriptors)
    args.push_back(const_cast<int64_t *>(d.data()));
  // Staging failed (the host code would read a missing input): no need to
  // wait for the queued copies to know it.
  if (cuda_ && !cuda::takeError(error))
    return false;
  if (cuda_)
    cuda::setProfileScope(entryName);
  times.stage += secondsSince(lap);
  double allocBefore = cuda::allocSeconds();
  uint64_t allocCallsBefore = cuda::allocCalls();
  {
    // A decode's kernels overlap the ends of the ones before them; a long
    // prefill's large grids do not gain by it (DSF_CUDA_PROGRAMMATIC_LAUNCH).
    cuda::ProgrammaticLaunchScope programmatic(cuda_, n);
    bound->function(args.data());
  }
  times.hostCode += secondsSince(lap);
  // The allocations' time and calls both of the host code alone.
  times.deviceAllocs += cuda::allocSeconds() - allocBefore;
  times.allocCalls += cuda::allocCalls() - allocCallsBefore;
  std::string deviceError;
  bool deviceOk = !cuda_ || cuda::synchronize(deviceError);
  times.wait += secondsSince(lap);
  // Whatever the call returns by, what follows counts as taking results.
  struct Results {
    std::chrono::steady_clock::time_point &lap;
    double &into;
    ~Results() { into += secondsSince(lap); }
  } resultsTimer{lap, times.results};

  // The result buffers are the kernels' (malloc, or device memory on CUDA;
  // results may share one, or be an input passed through). Each gets one
  // owner, which frees it when the last view of it goes: at the end of this
  // call, or with the sequence's state that stays on the device.
  struct View {
    const float *aligned;
    int64_t offset, rows, cols, rowStride, colStride;
    std::shared_ptr<void> owner;
    bool contiguous() const { return colStride == 1 && (rows <= 1 || rowStride == cols); }
  };
  std::vector<View> views;
  std::map<void *, std::shared_ptr<void>> resultOwners;
  for (size_t k = 0; k < outs.size(); ++k) {
    const int64_t *d = results.data() + stride * k;
    auto *allocated = reinterpret_cast<void *>(intptr_t(d[0]));
    std::shared_ptr<void> owner;
    if (auto in = inputOwners.find(allocated); in != inputOwners.end()) {
      owner = in->second;
    } else if (allocated) {
      std::shared_ptr<void> &o = resultOwners[allocated];
      if (!o)
        o = cuda_ ? std::shared_ptr<void>(allocated, cuda::deviceFree) : std::shared_ptr<void>(allocated, std::free);
      owner = o;
    }
    views.push_back({reinterpret_cast<const float *>(intptr_t(d[1])), d[2], d[3], d[4], d[5], d[6], owner});
  }
  // setLastLogitsOnly: the logits' view narrowed to its last row before
  // anything is copied (the shape check below reads the rows returned).
  const int64_t logitRows = views[0].rows;
  if (lastLogitsOnly_ && views[0].rows > 1) {
    views[0].offset += (views[0].rows - 1) * views[0].rowStride;
    views[0].rows = 1;
  }
  // On the GPU, the logits (and any state result that is not contiguous
  // rows) come to the host: each span (first to last element) is copied,
  // and the view then reads the host copy. The state stays on the device.
  // DSF_STATE_ON_HOST=1 sends the state to the host after every call, the
  // runtime's way before the device tier: the anchor of
  // bench/gpu_device_tier.py.
  static const bool stateOnHost = cuda::switchOn("DSF_STATE_ON_HOST");
  auto residentOnDevice = [&](size_t k) { return cuda_ && !stateOnHost && k > 0 && views[k].contiguous(); };
  std::vector<std::vector<float>> hostCopies(views.size());
  if (cuda_ && deviceOk) {
    for (size_t k = 0; k < views.size(); ++k) {
      if (residentOnDevice(k))
        continue;
      View &v = views[k];
      // From the view's first element to its last: a view into a larger
      // buffer (the last row of the logits) copies only its own span.
      int64_t span = v.rows && v.cols ? (v.rows - 1) * v.rowStride + (v.cols - 1) * v.colStride + 1 : 0;
      hostCopies[k].resize(size_t(span));
      cuda::copyToHost(hostCopies[k].data(), v.aligned + v.offset, size_t(span) * sizeof(float));
      v.offset = 0;
      if (k > 0) {
        ++times.statesToHost;
        times.bytesToHost += size_t(span) * sizeof(float);
      }
      v.aligned = hostCopies[k].data();
    }
    deviceOk = cuda::synchronize(deviceError);
  }
  if (!deviceOk) {
    error = "entry point '" + entryName + "' on " + cuda::deviceName() + ": " + deviceError;
    return false;
  }
  const View &lv = views[0];
  // A split prefill returns the logits of its tail only.
  bool tailOnly = m.prefillMode != "full" && !continuing;
  if (outs[0].shape.size() != 2 || (tailOnly ? (logitRows < 1 || logitRows > n) : logitRows != n) ||
      lv.cols != m.vocabSize) {
    error = "entry point '" + entryName + "' returned logits of shape [" + std::to_string(logitRows) + ", " +
            std::to_string(lv.cols) + "], expected [" + std::to_string(n) + ", " + std::to_string(m.vocabSize) + "]";
    return false;
  }
  auto copy = [](const View &v, float *out) {
    for (int64_t r = 0; r < v.rows; ++r)
      for (int64_t c = 0; c < v.cols; ++c)
        out[r * v.cols + c] = v.aligned[v.offset + r * v.rowStride + c * v.colStride];
  };
  firstRow = start + n - lv.rows;
  logits.resize(size_t(lv.rows * lv.cols));
  copy(lv, logits.data());
  std::map<std::string, StateTensor> next;
  for (size_t k = 1; k < outs.size(); ++k) {
    StateTensor t;
    t.rows = views[k].rows;
    t.width = views[k].cols;
    if (residentOnDevice(k)) {
      auto rows = std::make_shared<DeviceRows>();
      rows->allocation = views[k].owner;
      rows->data = views[k].aligned + views[k].offset;
      t.device = std::move(rows);
    } else {
      t.values.resize(size_t(t.rows * t.width));
      copy(views[k], t.values.data());
    }
    next[outs[k].name.substr(6)] = std::move(t);
  }
  sequence.state = std::move(next);
  sequence.length = start + n;   // replay: unchanged
  return true;
}

const HostModel::Bound *HostModel::bound(const std::string &entryName, std::string &error) const {
  for (const auto &b : entries_)
    if (b->spec->name == entryName)
      return b.get();
  error = "the artifact has no entry point '" + entryName + "'";
  return nullptr;
}

bool HostModel::invoke(const std::string &entryName, const std::vector<Buffer> &inputs, size_t resultRank,
                       std::vector<int64_t> &results, std::string &error) const {
  const Bound *bound = this->bound(entryName, error);
  if (!bound)
    return false;
  if (inputs.size() != bound->spec->inputs.size()) {
    error = "entry point '" + entryName + "' takes " + std::to_string(bound->spec->inputs.size()) + " inputs, not " +
            std::to_string(inputs.size());
    return false;
  }
  std::vector<std::vector<int64_t>> descriptors;
  for (const Buffer &in : inputs)
    descriptors.push_back(descriptor(in.data, in.shape));
  results.assign((3 + 2 * resultRank) * bound->spec->outputs.size(), 0);
  std::vector<void *> args{results.data()};
  for (auto &d : descriptors)
    args.push_back(d.data());
  for (const auto &d : bound->weightDescriptors)
    args.push_back(const_cast<int64_t *>(d.data()));
  if (cuda_)
    cuda::setProfileScope(entryName);
  bound->function(args.data());
  return true;
}

bool HostModel::placeState(Sequence &sequence, std::string &error) const {
  std::vector<StateTensor *> packed;
  for (auto &[name, t] : sequence.state)
    if (t.packed && !t.device && !t.onHost())
      packed.push_back(&t);
  if (packed.empty())
    return true;
  static const bool hostOnly = cuda::switchOn("DSF_DECODE_ON_HOST");
  if (cuda_ && cuda::haveDeviceCodecs() && !hostOnly) {
    // Each tier buffer once to the device (one bulk copy for a session from
    // the host pool, one for a prefix from the store), then one kernel for
    // every tensor. The buffers' blocks go back to the pool at once: only
    // work queued after the kernel can reuse them.
    std::map<const std::string *, std::shared_ptr<void>> uploaded;
    std::vector<cuda::DecodeSegment> segments;
    std::vector<std::shared_ptr<void>> outputs;
    for (StateTensor *t : packed) {
      const std::string &bytes = *t->packed->bytes;
      std::shared_ptr<void> &copy = uploaded[&bytes];
      if (!copy) {
        copy = std::shared_ptr<void>(cuda::deviceAlloc(bytes.size()), cuda::deviceFree);
        cuda::copyToDevice(copy.get(), bytes.data(), bytes.size());
      }
      const auto *base = static_cast<const uint8_t *>(copy.get());
      auto *out = static_cast<float *>(cuda::deviceAlloc(size_t(t->rows * t->width) * sizeof(float)));
      outputs.push_back(std::shared_ptr<void>(out, cuda::deviceFree));
      for (const PackedRows::Segment &seg : t->packed->segments) {
        cuda::DecodeSegment d;
        d.codes = base + seg.codes;
        d.scales = base + seg.scales;
        d.out = out + seg.firstRow * t->width;
        d.rows = seg.rows;
        d.cols = t->width;
        d.format = seg.f32 ? 0 : cuda::kernelFormat(seg.format);
        segments.push_back(d);
      }
    }
    if (!cuda::decodeRows(segments, error) || !cuda::synchronize(error)) {
      error = "decoding the sequence's restored state on " + cuda::deviceName() + ": " + error;
      return false;
    }
    for (size_t i = 0; i < packed.size(); ++i) {
      auto rows = std::make_shared<DeviceRows>();
      rows->allocation = outputs[i];
      rows->data = static_cast<const float *>(outputs[i].get());
      packed[i]->device = std::move(rows);
      packed[i]->packed.reset();
    }
    return true;
  }
  for (StateTensor *t : packed) {
    t->values.resize(size_t(t->rows * t->width));
    decodeOnHost(*t->packed, t->width, t->values);
    t->packed.reset();
  }
  return true;
}

bool HostModel::fetchState(Sequence &sequence, std::string &error) const {
  std::map<std::string, std::vector<float>> fetched;
  for (const auto &[name, t] : sequence.state)
    if (!t.onHost()) {
      std::vector<float> &values = fetched[name];
      values.resize(size_t(t.rows * t.width));
      if (t.device)
        cuda::copyToHost(values.data(), t.device->data, values.size() * sizeof(float));
      else if (t.packed)
        decodeOnHost(*t.packed, t.width, values);
    }
  if (fetched.empty())
    return true;
  if (cuda_ && !cuda::synchronize(error)) {
    error = "copying the sequence's state from " + cuda::deviceName() + ": " + error;
    return false;
  }
  for (auto &[name, values] : fetched)
    sequence.state[name].values = std::move(values);
  return true;
}

} // namespace dsf::rt
