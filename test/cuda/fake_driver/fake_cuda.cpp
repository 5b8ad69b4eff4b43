//===- fake_cuda.cpp - a CUDA driver without a GPU, for the runtime's tests ===//
//
// Built as libcuda.so.1 into the test tree, and found by the runtime's
// dlopen through LD_LIBRARY_PATH, so that CI (which has no GPU) runs a CUDA
// artifact's host side: the runtime's driver binding, its module loading,
// the compiled host code's launches (grids, blocks, shared memory), the
// allocation pool, graph capture and replay, and every error path the
// issue asks to be clear (no device, out of memory, a launch that fails, a
// kernel that faults), which a real GPU rarely produces on demand.
//
// Nothing runs on a device: "device" memory is host memory handed out
// zeroed, copies are memcpy, and a kernel launch is a line in a log. Kernel
// outputs therefore stay zero: the tests check what the host does, never a
// value a kernel computes. A module's functions are looked up by name in
// its image (a cubin's or a PTX text's bytes), so a kernel the host code
// names but the module lacks is CUDA_ERROR_NOT_FOUND, as on a GPU.
//
// Environment (each optional):
//   DSF_FAKE_CUDA_LOG=FILE        append a line per launch, capture and replay
//   DSF_FAKE_CUDA_LOG_ALLOCATIONS=1  the log gets a line per allocation too
//   DSF_FAKE_CUDA_DEVICES=N       the device count (default 1)
//   DSF_FAKE_CUDA_MEMORY=BYTES    device memory: allocations past it fail
//                                 with CUDA_ERROR_OUT_OF_MEMORY
//   DSF_FAKE_CUDA_CAPTURE_MEMORY=BYTES  the same for what is allocated
//                                 while a graph is captured
//   DSF_FAKE_CUDA_HIDE_KERNEL=S   a module holds no kernel whose name
//                                 contains S (CUDA_ERROR_NOT_FOUND): a
//                                 module built without a kernel its host
//                                 code names
//   DSF_FAKE_CUDA_FAIL_LAUNCH=S   launching a kernel whose name contains S
//                                 fails (CUDA_ERROR_LAUNCH_FAILED)
//   DSF_FAKE_CUDA_FAULT=S         a kernel whose name contains S launches,
//                                 then the next synchronization reports
//                                 CUDA_ERROR_ILLEGAL_ADDRESS, as a kernel
//                                 that faulted does
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {
using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100, kInvalidImage = 200,
                   kInvalidHandle = 400, kNotFound = 500, kIllegalAddress = 700, kLaunchFailed = 719;

struct LaunchAttribute {
  unsigned id;
  char pad[4];
  char value[64];
};
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void *hStream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};

struct Module {
  std::string image;   // the bytes names are looked up in
  bool opaque = false; // a fatbin: its names may be compressed, so any is taken
  std::vector<std::unique_ptr<std::string>> functions;
};
/// A captured graph: the names of its kernels, in launch order.
struct Graph {
  std::vector<std::string> kernels;
};

struct State {
  std::mutex lock;
  std::string logPath;
  int devices = 1;
  bool logAllocations = false;
  uint64_t memoryLimit = UINT64_MAX, memoryInUse = 0;
  uint64_t captureLimit = UINT64_MAX, capturedBytes = 0;
  std::string failLaunch, fault, hideKernel;
  bool faultPending = false;
  std::map<CUdeviceptr, size_t> allocations;
  bool capturing = false;
  std::unique_ptr<Graph> captured;
  int streams = 0;
  int programmaticMarker = 1;
};

State &state() {
  static State *s = [] {
    auto *n = new State;
    if (const char *v = std::getenv("DSF_FAKE_CUDA_LOG"))
      n->logPath = v;
    if (const char *v = std::getenv("DSF_FAKE_CUDA_LOG_ALLOCATIONS"))
      n->logAllocations = std::string(v) == "1";
    if (const char *v = std::getenv("DSF_FAKE_CUDA_DEVICES"))
      n->devices = std::atoi(v);
    if (const char *v = std::getenv("DSF_FAKE_CUDA_MEMORY"))
      n->memoryLimit = std::strtoull(v, nullptr, 10);
    if (const char *v = std::getenv("DSF_FAKE_CUDA_CAPTURE_MEMORY"))
      n->captureLimit = std::strtoull(v, nullptr, 10);
    if (const char *v = std::getenv("DSF_FAKE_CUDA_FAIL_LAUNCH"))
      n->failLaunch = v;
    if (const char *v = std::getenv("DSF_FAKE_CUDA_HIDE_KERNEL"))
      n->hideKernel = v;
    if (const char *v = std::getenv("DSF_FAKE_CUDA_FAULT"))
      n->fault = v;
    return n;
  }();
  return *s;
}

void log(const std::string &line) {
  State &s = state();
  if (s.logPath.empty())
    return;
  if (FILE *f = std::fopen(s.logPath.c_str(), "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

bool contains(const std::string &name, const std::string &part) {
  return !part.empty() && name.find(part) != std::string::npos;
}

/// The size of a module image: an ELF (cubin) from its section headers,
/// which end it; a fatbin from its header; PTX as text.
size_t imageBytes(const unsigned char *p, bool &opaque) {
  opaque = false;
  if (std::memcmp(p, "\x7f" "ELF", 4) == 0 && p[4] == 2) {
    uint64_t sectionsAt;
    uint16_t entrySize, count;
    std::memcpy(&sectionsAt, p + 0x28, 8);
    std::memcpy(&entrySize, p + 0x3a, 2);
    std::memcpy(&count, p + 0x3c, 2);
    return size_t(sectionsAt + uint64_t(entrySize) * count);
  }
  uint32_t magic;
  std::memcpy(&magic, p, 4);
  if (magic == 0xBA55ED50u) {   // a fatbin: its header's size, then the size of what follows
    uint16_t header;
    uint64_t rest;
    std::memcpy(&header, p + 6, 2);
    std::memcpy(&rest, p + 8, 8);
    opaque = true;
    return size_t(header + rest);
  }
  return std::strlen(reinterpret_cast<const char *>(p));
}

CUresult launch(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned smem, bool programmatic) {
  if (!function)
    return kInvalidHandle;
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  const std::string &name = *static_cast<std::string *>(function);
  if (contains(name, s.failLaunch))
    return kLaunchFailed;
  std::string line = name + " grid " + std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz) +
                     " block " + std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
                     " smem " + std::to_string(smem) + (programmatic ? " programmatic" : "");
  if (s.capturing) {
    s.captured->kernels.push_back(name);
    log("capture " + line);
    return kSuccess;
  }
  if (contains(name, s.fault))
    s.faultPending = true;
  log("launch " + line);
  return kSuccess;
}

/// Whether [address, address + bytes) lies in one allocation: a real driver
/// refuses a copy to or from memory it did not hand out (a host pointer
/// given for a device one), where a memcpy here would corrupt the heap.
bool allocated(CUdeviceptr address, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  auto it = s.allocations.upper_bound(address);
  if (it == s.allocations.begin())
    return false;
  --it;
  return address >= it->first && address - it->first <= it->second && bytes <= it->second - (address - it->first);
}

CUresult synchronize() {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.faultPending) {
    s.faultPending = false;
    log("synchronize: CUDA_ERROR_ILLEGAL_ADDRESS");
    return kIllegalAddress;
  }
  return kSuccess;
}
} // namespace

extern "C" {
__attribute__((visibility("default"))) CUresult cuInit(unsigned) { return kSuccess; }
__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int *count) {
  *count = state().devices;
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal >= state().devices)
    return kNoDevice;
  *device = ordinal;
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetName(char *name, int length, int) {
  std::snprintf(name, size_t(length), "%s", "dsf fake CUDA driver (no GPU)");
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRetain(void **context, int) {
  static int primary;
  *context = &primary;
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuCtxSetCurrent(void *) { return kSuccess; }
__attribute__((visibility("default"))) CUresult cuCtxSynchronize() { return synchronize(); }

__attribute__((visibility("default"))) CUresult cuModuleLoadData(void **module, const void *image) {
  if (!image)
    return kInvalidValue;
  auto m = std::make_unique<Module>();
  const auto *bytes = static_cast<const unsigned char *>(image);
  size_t size = imageBytes(bytes, m->opaque);
  if (size == 0)
    return kInvalidImage;
  m->image.assign(reinterpret_cast<const char *>(bytes), size);
  log("load module (" + std::to_string(size) + " bytes)");
  *module = m.release();
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  auto *m = static_cast<Module *>(module);
  if (!m)
    return kInvalidHandle;
  // A name ends at a NUL in a cubin's string table, at '(' or a space in PTX.
  std::string wanted(name);
  bool found = m->opaque;
  for (size_t at = m->image.find(wanted); !found && at != std::string::npos; at = m->image.find(wanted, at + 1)) {
    char after = at + wanted.size() < m->image.size() ? m->image[at + wanted.size()] : '\0';
    found = after == '\0' || after == '(' || after == ' ' || after == '\n';
  }
  if (!found || contains(wanted, state().hideKernel))
    return kNotFound;
  m->functions.push_back(std::make_unique<std::string>(wanted));
  *function = m->functions.back().get();
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuModuleGetGlobal_v2(CUdeviceptr *address, size_t *bytes, void *module,
                                                                     const char *name) {
  auto *m = static_cast<Module *>(module);
  if (!m)
    return kInvalidHandle;
  if (m->image.find(name) == std::string::npos)
    return kNotFound;
  if (address)
    *address = reinterpret_cast<CUdeviceptr>(&state().programmaticMarker);
  if (bytes)
    *bytes = sizeof(int);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuFuncSetAttribute(void *, int, int) { return kSuccess; }

__attribute__((visibility("default"))) CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                                                               unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                                               void *, void **, void **) {
  return launch(function, gx, gy, gz, bx, by, bz, smem, false);
}
__attribute__((visibility("default"))) CUresult cuLaunchKernelEx(const LaunchConfig *c, void *function, void **,
                                                                 void **) {
  bool programmatic = false;
  for (unsigned i = 0; i < c->numAttrs; ++i)
    programmatic = programmatic || c->attrs[i].id == 6;
  return launch(function, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                c->sharedMemBytes, programmatic);
}

__attribute__((visibility("default"))) CUresult cuStreamCreate(void **stream, unsigned) {
  static int streams[16];
  State &s = state();
  *stream = &streams[s.streams++ % 16];
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuStreamDestroy_v2(void *) { return kSuccess; }
__attribute__((visibility("default"))) CUresult cuStreamSynchronize(void *) { return synchronize(); }

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *address, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (bytes > s.memoryLimit - s.memoryInUse || (s.capturing && bytes > s.captureLimit - s.capturedBytes))
    return kOutOfMemory;
  if (s.capturing)
    s.capturedBytes += bytes;
  void *p = std::calloc(1, bytes ? bytes : 1);
  if (!p)
    return kOutOfMemory;
  *address = reinterpret_cast<CUdeviceptr>(p);
  s.allocations[*address] = bytes;
  s.memoryInUse += bytes;
  if (s.logAllocations)
    log("alloc " + std::to_string(bytes) + (s.capturing ? " while capturing" : ""));
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr address) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  auto it = s.allocations.find(address);
  if (it == s.allocations.end())
    return kInvalidValue;
  s.memoryInUse -= it->second;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void *>(address));
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned) {
  *p = std::calloc(1, bytes ? bytes : 1);
  return *p ? kSuccess : kOutOfMemory;
}
__attribute__((visibility("default"))) CUresult cuMemFreeHost(void *p) {
  std::free(p);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemHostRegister_v2(void *, size_t, unsigned) { return kSuccess; }
__attribute__((visibility("default"))) CUresult cuMemHostUnregister(void *) { return kSuccess; }
__attribute__((visibility("default"))) CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr to, const void *from, size_t bytes,
                                                                     void *) {
  if (!allocated(to, bytes))
    return kInvalidValue;
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemcpyDtoHAsync_v2(void *to, CUdeviceptr from, size_t bytes, void *) {
  if (!allocated(from, bytes))
    return kInvalidValue;
  std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                                                                     void *) {
  if (!allocated(to, bytes) || !allocated(from, bytes))
    return kInvalidValue;
  std::memmove(reinterpret_cast<void *>(to), reinterpret_cast<const void *>(from), bytes);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemsetD8Async(CUdeviceptr to, unsigned char value, size_t bytes,
                                                                void *) {
  if (!allocated(to, bytes))
    return kInvalidValue;
  std::memset(reinterpret_cast<void *>(to), value, bytes);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult r, const char **name) {
  switch (r) {
  case kSuccess: *name = "CUDA_SUCCESS"; break;
  case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; break;
  case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; break;
  case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
  case kInvalidHandle: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
  case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; break;
  case kIllegalAddress: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case kLaunchFailed: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
  default: *name = nullptr; return kInvalidValue;
  }
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuEventCreate(void **event, unsigned) {
  *event = new int(0);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuEventRecord(void *, void *) { return kSuccess; }
__attribute__((visibility("default"))) CUresult cuEventSynchronize(void *) { return synchronize(); }
__attribute__((visibility("default"))) CUresult cuEventElapsedTime_v2(float *ms, void *, void *) {
  *ms = 0.001f;   // every kernel "takes" a microsecond: profiles count launches, not time
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuStreamBeginCapture_v2(void *, int) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.capturing)
    return kInvalidValue;
  s.capturing = true;
  s.capturedBytes = 0;
  s.captured = std::make_unique<Graph>();
  log("begin capture");
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuStreamEndCapture(void *, void **graph) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (!s.capturing)
    return kInvalidValue;
  s.capturing = false;
  log("end capture (" + std::to_string(s.captured->kernels.size()) + " kernels)");
  *graph = s.captured.release();
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuGraphInstantiateWithFlags(void **exec, void *graph,
                                                                            unsigned long long) {
  *exec = new Graph(*static_cast<Graph *>(graph));
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuGraphLaunch(void *exec, void *) {
  auto *g = static_cast<Graph *>(exec);
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  log("replay (" + std::to_string(g->kernels.size()) + " kernels)");
  for (const std::string &name : g->kernels)
    if (contains(name, s.fault))
      s.faultPending = true;
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuGraphExecDestroy(void *exec) {
  delete static_cast<Graph *>(exec);
  return kSuccess;
}
__attribute__((visibility("default"))) CUresult cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return kSuccess;
}
}
