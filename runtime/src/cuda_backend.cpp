//===- cuda_backend.cpp - the CUDA driver, loaded when a GPU artifact runs --===//
//
// libcuda.so.1 is opened with dlopen and its entry points looked up by name
// (a symbol table, as IREE does), so every tool starts on machines without
// a GPU or a driver and only a CUDA artifact needs one. On top of it, the C
// interface the kernels' host code calls (MLIR's gpu-to-llvm ABI):
// mgpuModuleLoad / GetFunction / LaunchKernel / Stream*, and the allocation
// functions of finalize-memref-to-llvm's generic mode, which return device
// memory from a caching pool.
//
// The host code never dereferences those buffers (the compiler's
// dsf-place-buffers proves it), and every kernel goes to one in-order
// stream, so launches are queued without waiting: the per-launch
// mgpuStreamSynchronize the host code calls is a no-op, and a buffer the
// host code frees may be handed to the next allocation at once, since any
// kernel that still reads it runs before any kernel launched later. The
// runtime synchronizes once per entry point. DSF_CUDA_SYNC=1 waits after
// every launch instead, to name the kernel that failed. DSF_CUDA_PROFILE=FILE
// times every kernel with CUDA events (each launch then waits for the one
// before) and writes, at exit, a table of the kernels by total time.
// Two switches find a kernel that reads what it did not write, which the
// pool hides (a reused block holds its last use's values, so such a read
// is deterministic and compute-sanitizer's initcheck sees it initialized):
// DSF_CUDA_POISON=1 fills every block handed out with 0xFF bytes (NaN in
// f32 and bf16, -1 in i32) on the stream; DSF_CUDA_POOL=0 gives every
// freed block back to the driver (after waiting for the device), so each
// allocation is fresh and initcheck names the kernel.
//
// A kernel of a module the compiler marked (dsf::rt::kGridDependencyMarker:
// every kernel in it begins with griddepcontrol.wait) is launched with
// programmatic stream serialization (cuLaunchKernelEx), so that its launch
// and first blocks overlap the last blocks of the kernel before it; other
// kernels (the runtime's own codec kernels) are launched plainly, and so is
// every kernel with DSF_CUDA_PROGRAMMATIC_LAUNCH=0 or a driver without
// cuLaunchKernelEx.
//
// Failures inside those calls (which return nothing) are recorded and
// reported by the runtime after the entry point returns; once one has
// happened, later launches are skipped.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"
#include "dsf/artifact.h"
#include "dsf/codecs.h"

#include <algorithm>
#include <limits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <type_traits>
#include <cstring>
#include <dlfcn.h>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#if DSF_HAVE_DEVICE_CODECS
extern "C" const unsigned char dsfStateCodecsFatbin[];   // src/device/state_codecs.cu, by nvcc
#endif
extern "C" void mgpuLaunchKernel(void *, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, intptr_t, int32_t, void *,
                                 void **, void **, size_t);

namespace dsf::rt::cuda {
namespace {
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUdeviceptr = unsigned long long;
constexpr unsigned kHostAllocPortable = 1, kHostAllocDeviceMap = 2;
constexpr CUresult kOutOfMemory = 2;
// cuLaunchKernelEx's configuration, laid out as cuda.h's CUlaunchConfig and
// CUlaunchAttribute (an id padded to 8 bytes, then a 64-byte value union).
constexpr unsigned kLaunchAttributeProgrammaticStreamSerialization = 6;
struct LaunchAttribute {
  unsigned id = 0;
  char pad[4] = {};
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value = {};
};
static_assert(sizeof(LaunchAttribute) == 72, "CUlaunchAttribute is 72 bytes");
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};

struct Driver {
  void *library = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **) = nullptr;
  // Optional: without it every kernel is launched plainly.
  CUresult (*cuLaunchKernelEx)(const LaunchConfig *, CUfunction, void **, void **) = nullptr;
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned) = nullptr;
  CUresult (*cuMemFreeHost)(void *) = nullptr;
  CUresult (*cuMemHostRegister)(void *, size_t, unsigned) = nullptr;
  CUresult (*cuMemHostUnregister)(void *) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuEventCreate)(void **, unsigned) = nullptr;
  CUresult (*cuEventRecord)(void *, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(void *) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, void *, void *) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  // Graphs (optional: without them a batched step is launched as it is).
  CUresult (*cuStreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, void **) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(void *, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(void *) = nullptr;
  CUresult (*cuGraphDestroy)(void *) = nullptr;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string device;
  bool ready = false;
  bool syncEachLaunch = false;   // DSF_CUDA_SYNC=1
  bool poison = false;           // DSF_CUDA_POISON=1
  bool noPool = false;           // DSF_CUDA_POOL=0
  std::string profilePath;       // DSF_CUDA_PROFILE=FILE
  bool programmaticLaunch = false;   // cuLaunchKernelEx bound, DSF_CUDA_PROGRAMMATIC_LAUNCH not 0
  int64_t programmaticMaxTokens = 1;  // DSF_CUDA_PROGRAMMATIC_LAUNCH=N: calls of up to N token rows
  bool programmaticAllowed = true;   // allowProgrammaticLaunch: the work being queued may take it
  void *eventStart = nullptr, *eventStop = nullptr;
};

Driver &driver() {
  static Driver d;
  return d;
}

std::mutex errorLock;
std::string firstError;
std::string lastKernel;
std::string profileScope;   // the entry point running (setProfileScope)
uint64_t launches = 0;
/// Time in cuMemAlloc / cuMemFree (allocSeconds): a miss of the pool, or
/// its trim, can wait for the device.
struct AllocTime {
  double seconds = 0;
  uint64_t calls = 0;
} allocTime;
/// Runs a driver allocation call, timed into allocTime.
template <typename Call> CUresult timedAlloc(Call call) {
  auto start = std::chrono::steady_clock::now();
  CUresult r = call();
  allocTime.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++allocTime.calls;
  return r;
}
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, and the dynamic shared
/// memory a kernel may take without it.
constexpr int kMaxDynamicSharedSizeBytes = 8;
constexpr int32_t kStaticSharedBytes = 48 * 1024;
/// The functions whose dynamic shared-memory limit is raised, and to what
/// (mgpuLaunchKernel).
std::map<CUfunction, int32_t> &raisedSharedLimit() {
  static std::map<CUfunction, int32_t> functions;
  return functions;
}
std::map<CUfunction, std::string> &kernelNames() {
  static std::map<CUfunction, std::string> names;
  return names;
}
/// The modules that define dsf::rt::kGridDependencyMarker, each with the
/// functions taken from it (forgotten with it when it is unloaded, so a
/// handle the driver reuses for another module's function is not taken for
/// one of them), and those functions: each begins by waiting for the grids
/// before it, so it may be launched with programmatic stream serialization.
std::map<CUmodule, std::vector<CUfunction>> &waitingModules() {
  static std::map<CUmodule, std::vector<CUfunction>> modules;
  return modules;
}
std::set<CUfunction> &waitingFunctions() {
  static std::set<CUfunction> functions;
  return functions;
}
uint64_t programmaticLaunches = 0;

std::string errorName(CUresult r) {
  const char *name = nullptr;
  if (driver().cuGetErrorName && driver().cuGetErrorName(r, &name) == 0 && name)
    return name;
  return "CUDA error " + std::to_string(r);
}

void record(const std::string &message) {
  std::lock_guard<std::mutex> guard(errorLock);
  if (firstError.empty())
    firstError = message;
}

bool failed() {
  std::lock_guard<std::mutex> guard(errorLock);
  return !firstError.empty();
}
} // namespace

namespace {
/// DSF_CUDA_PROFILE: per kernel and launch shape, launches and GPU time.
struct KernelTime {
  uint64_t launches = 0;
  double microseconds = 0;
};
std::map<std::string, KernelTime> &profile() {
  static std::map<std::string, KernelTime> table;
  return table;
}

void writeProfile() {
  std::vector<std::pair<std::string, KernelTime>> rows(profile().begin(), profile().end());
  std::sort(rows.begin(), rows.end(), [](auto &a, auto &b) { return a.second.microseconds > b.second.microseconds; });
  double total = 0;
  uint64_t launches = 0;
  for (auto &r : rows) {
    total += r.second.microseconds;
    launches += r.second.launches;
  }
  FILE *f = std::fopen(driver().profilePath.c_str(), "w");
  if (!f)
    return;
  std::fprintf(f, "# dsf CUDA kernel profile: %llu launches, %.1f us of kernel time (CUDA events)\n",
               static_cast<unsigned long long>(launches), total);
  std::fprintf(f, "| kernel (grid x block) | launches | total us | mean us | share |\n|---|---|---|---|---|\n");
  for (auto &[name, t] : rows)
    std::fprintf(f, "| %s | %llu | %.1f | %.2f | %.1f %% |\n", name.c_str(), static_cast<unsigned long long>(t.launches),
                 t.microseconds, t.microseconds / double(t.launches), total > 0 ? 100 * t.microseconds / total : 0.0);
  std::fclose(f);
}
} // namespace

bool switchOn(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

bool ensureDriver(std::string &error) {
  Driver &d = driver();
  if (d.ready)
    return true;
  if (!d.library) {
    d.library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.library) {
      error = std::string("no CUDA driver (libcuda.so.1): ") + dlerror();
      return false;
    }
  }
  bool ok = true;
  int lacking = 0;   // entry points missing after the first, which is named
  auto bind = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d.library, name));
    if (!fn) {
      if (ok)
        error = std::string("the CUDA driver lacks ") + name;
      else
        ++lacking;
      ok = false;
    }
  };
  bind(d.cuInit, "cuInit");
  bind(d.cuDeviceGetCount, "cuDeviceGetCount");
  bind(d.cuDeviceGet, "cuDeviceGet");
  bind(d.cuDeviceGetName, "cuDeviceGetName");
  bind(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(d.cuCtxSetCurrent, "cuCtxSetCurrent");
  bind(d.cuCtxSynchronize, "cuCtxSynchronize");
  bind(d.cuModuleLoadData, "cuModuleLoadData");
  bind(d.cuModuleUnload, "cuModuleUnload");
  bind(d.cuModuleGetFunction, "cuModuleGetFunction");
  bind(d.cuFuncSetAttribute, "cuFuncSetAttribute");
  bind(d.cuLaunchKernel, "cuLaunchKernel");
  bind(d.cuStreamCreate, "cuStreamCreate");
  bind(d.cuStreamDestroy, "cuStreamDestroy_v2");
  bind(d.cuStreamSynchronize, "cuStreamSynchronize");
  bind(d.cuMemAlloc, "cuMemAlloc_v2");
  bind(d.cuMemFree, "cuMemFree_v2");
  bind(d.cuMemHostAlloc, "cuMemHostAlloc");
  bind(d.cuMemFreeHost, "cuMemFreeHost");
  bind(d.cuMemHostRegister, "cuMemHostRegister_v2");
  bind(d.cuMemHostUnregister, "cuMemHostUnregister");
  bind(d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  bind(d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  bind(d.cuGetErrorName, "cuGetErrorName");
  bind(d.cuEventCreate, "cuEventCreate");
  bind(d.cuEventRecord, "cuEventRecord");
  bind(d.cuEventSynchronize, "cuEventSynchronize");
  bind(d.cuEventElapsedTime, "cuEventElapsedTime_v2");
  bind(d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  bind(d.cuMemsetD8Async, "cuMemsetD8Async");
  if (!ok) {
    if (lacking)
      error += " (and " + std::to_string(lacking) + " more of the entry points dsf needs: is libcuda.so.1 NVIDIA's driver?)";
    return false;
  }
  auto optional = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d.library, name));
  };
  optional(d.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  optional(d.cuStreamEndCapture, "cuStreamEndCapture");
  optional(d.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  optional(d.cuGraphLaunch, "cuGraphLaunch");
  optional(d.cuGraphExecDestroy, "cuGraphExecDestroy");
  optional(d.cuGraphDestroy, "cuGraphDestroy");
  optional(d.cuLaunchKernelEx, "cuLaunchKernelEx");
  optional(d.cuModuleGetGlobal, "cuModuleGetGlobal_v2");
  auto check = [&](CUresult r, const char *what) {
    if (r != 0) {
      error = std::string(what) + ": " + errorName(r);
      return false;
    }
    return true;
  };
  int count = 0;
  CUdevice device = 0;
  if (!check(d.cuInit(0), "cuInit") || !check(d.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return false;
  if (count < 1) {
    error = "no CUDA device";
    return false;
  }
  char name[256] = {};
  if (!check(d.cuDeviceGet(&device, 0), "cuDeviceGet") || !check(d.cuDeviceGetName(name, 255, device), "cuDeviceGetName") ||
      !check(d.cuDevicePrimaryCtxRetain(&d.context, device), "cuDevicePrimaryCtxRetain") ||
      !check(d.cuCtxSetCurrent(d.context), "cuCtxSetCurrent") || !check(d.cuStreamCreate(&d.stream, 0), "cuStreamCreate"))
    return false;
  d.device = name;
  d.syncEachLaunch = switchOn("DSF_CUDA_SYNC");
  d.poison = switchOn("DSF_CUDA_POISON");
  const char *pool = std::getenv("DSF_CUDA_POOL");
  d.noPool = pool && std::string(pool) == "0";
  // DSF_CUDA_PROGRAMMATIC_LAUNCH: 0 never; N (default 1) in calls of up to
  // N token rows (a batched step's are its sequences). On the 40-layer
  // V4.1-shaped model it took a step of 1 from 15.07 to 14.67 ms, but gained
  // nothing at 8 or 64 sequences and lost 8 % on an 8,192-token prefill
  // (bench/results/gpu-programmatic-launch.md).
  d.programmaticLaunch = d.cuLaunchKernelEx && d.cuModuleGetGlobal;
  if (const char *programmatic = std::getenv("DSF_CUDA_PROGRAMMATIC_LAUNCH"); programmatic && *programmatic) {
    char *end = nullptr;
    long long limit = std::strtoll(programmatic, &end, 10);
    if (*end || limit < 0) {
      error = std::string("DSF_CUDA_PROGRAMMATIC_LAUNCH: expected 0 (never) or the most token rows of a call "
                          "launched so (a batched step's are its sequences), not '") + programmatic + "'";
      return false;
    }
    d.programmaticMaxTokens = limit;
    d.programmaticLaunch = d.programmaticLaunch && limit > 0;
  }
  if (const char *profile = std::getenv("DSF_CUDA_PROFILE"); profile && *profile) {
    if (!check(d.cuEventCreate(&d.eventStart, 0), "cuEventCreate") ||
        !check(d.cuEventCreate(&d.eventStop, 0), "cuEventCreate"))
      return false;
    d.profilePath = profile;
    // The table first: statics die in the reverse order of their making, and
    // it must outlive the handler that writes it.
    ::dsf::rt::cuda::profile();
    std::atexit(writeProfile);
  }
  d.ready = true;
  return true;
}

std::string deviceName() { return driver().device; }
uint64_t launchCount() { return launches; }
uint64_t programmaticLaunchCount() { return programmaticLaunches; }
bool programmaticLaunchSuits(int64_t tokens) { return tokens <= driver().programmaticMaxTokens; }
void allowProgrammaticLaunch(bool allowed) { driver().programmaticAllowed = allowed; }
double allocSeconds() { return allocTime.seconds; }
uint64_t allocCalls() { return allocTime.calls; }

void setProfileScope(const std::string &entry) { profileScope = entry; }

namespace {
// Host memory handed out when the device could not allocate: the host code
// in flight only compares and passes addresses, so each must be distinct;
// its kernels are skipped and the error reported.
std::set<void *> &hostFallbacks() {
  static std::set<void *> blocks;
  return blocks;
}

/// The caching pool of device memory. Sizes are rounded (512 B below 1 MiB,
/// 1 MiB above) and a request takes the smallest idle block that fits
/// within twice its size. Blocks idle for a whole entry-point call go back
/// to the driver (trim), so a sequence whose caches grow every call does
/// not leave one block per length behind.
struct Pool {
  struct Block {
    size_t bytes;
    uint64_t lastUse;
  };
  std::multimap<size_t, CUdeviceptr> idle;
  std::unordered_map<CUdeviceptr, Block> blocks;
  uint64_t epoch = 0;
};

Pool &pool() {
  static Pool p;
  return p;
}

/// The allocations of a capture in progress (see beginCapture): blocks of
/// its own, and those of them the host code freed, for its later requests.
struct Capture {
  bool active = false;
  std::vector<CUdeviceptr> blocks;
  std::unordered_map<CUdeviceptr, size_t> sizes;
  std::multimap<size_t, CUdeviceptr> idle;
  uint64_t launches = 0, programmaticLaunches = 0;   // the counts when it began
};

Capture &capture() {
  static Capture c;
  return c;
}

size_t roundUp(size_t bytes) {
  const size_t small = 512, large = size_t(1) << 20;
  if (bytes == 0)
    bytes = 1;   // zero-sized buffers (empty windows, carries) still get an address
  return bytes < large ? (bytes + small - 1) / small * small : (bytes + large - 1) / large * large;
}

void releaseIdle(bool all) {
  Pool &p = pool();
  for (auto it = p.idle.begin(); it != p.idle.end();) {
    if (!all && p.blocks[it->second].lastUse + 1 >= p.epoch) {
      ++it;
      continue;
    }
    timedAlloc([&] { return driver().cuMemFree(it->second); });
    p.blocks.erase(it->second);
    it = p.idle.erase(it);
  }
}
} // namespace

namespace {
/// A device allocation that failed: recorded (errorLock held), and host
/// memory handed out in its place (see hostFallbacks).
void *failedAllocation(size_t bytes, CUresult r, const char *when) {
  if (firstError.empty())
    firstError = "cuMemAlloc(" + std::to_string(bytes) + " bytes)" + when + ": " + errorName(r) +
                 (r == kOutOfMemory ? " (out of device memory)" : "");
  void *host = std::calloc(1, 16);
  hostFallbacks().insert(host);
  return host;
}

/// DSF_CUDA_POISON: the block's bytes 0xFF, in stream order (so after every
/// kernel that used it before); errorLock held.
void *poisoned(CUdeviceptr block, size_t bytes) {
  if (driver().poison) {
    CUresult r = driver().cuMemsetD8Async(block, 0xFF, bytes, driver().stream);
    if (r != 0 && firstError.empty())
      firstError = "DSF_CUDA_POISON: cuMemsetD8Async(" + std::to_string(bytes) + " bytes): " + errorName(r);
  }
  return reinterpret_cast<void *>(block);
}
} // namespace

void *deviceAlloc(size_t bytes) {
  std::lock_guard<std::mutex> guard(errorLock);
  Pool &p = pool();
  size_t need = roundUp(bytes);
  CUdeviceptr block = 0;
  if (Capture &c = capture(); c.active) {
    auto it = c.idle.lower_bound(need);
    if (it != c.idle.end() && it->first <= 2 * need) {
      block = it->second;
      c.idle.erase(it);
      return poisoned(block, need);
    }
    CUresult r = timedAlloc([&] { return driver().cuMemAlloc(&block, need); });
    if (r != 0)
      return failedAllocation(bytes, r, " while capturing a CUDA graph");
    c.blocks.push_back(block);
    c.sizes[block] = need;
    return poisoned(block, need);
  }
  auto it = p.idle.lower_bound(need);
  if (it != p.idle.end() && it->first <= 2 * need) {
    block = it->second;
    p.idle.erase(it);
  } else {
    CUresult r = driver().ready ? timedAlloc([&] { return driver().cuMemAlloc(&block, need); }) : 1;
    if (r == kOutOfMemory) {
      // Cached blocks may still be read by queued kernels: wait, then give
      // them all back and try once more.
      driver().cuCtxSynchronize();
      releaseIdle(true);
      r = timedAlloc([&] { return driver().cuMemAlloc(&block, need); });
    }
    if (r != 0)
      return failedAllocation(bytes, r, "");
    p.blocks[block] = {need, p.epoch};
  }
  p.blocks[block].lastUse = p.epoch;
  return poisoned(block, need);
}

void deviceFree(void *ptr) {
  if (!ptr)
    return;
  std::lock_guard<std::mutex> guard(errorLock);
  if (hostFallbacks().erase(ptr)) {
    std::free(ptr);
    return;
  }
  Pool &p = pool();
  auto block = reinterpret_cast<CUdeviceptr>(ptr);
  if (Capture &c = capture(); c.active && c.sizes.count(block)) {
    c.idle.emplace(c.sizes[block], block);
    return;
  }
  auto it = p.blocks.find(block);
  if (it == p.blocks.end()) {
    if (firstError.empty())
      firstError = "deviceFree: an address the pool did not hand out";
    return;
  }
  if (driver().noPool) {
    // Kernels queued before the free may still read the block.
    driver().cuCtxSynchronize();
    timedAlloc([&] { return driver().cuMemFree(block); });
    p.blocks.erase(it);
    return;
  }
  p.idle.emplace(it->second.bytes, block);
}

void trimPool() {
  std::lock_guard<std::mutex> guard(errorLock);
  if (!driver().ready)
    return;
  releaseIdle(false);
  ++pool().epoch;
}

void *hostMappedAlloc(size_t bytes) {
  void *p = nullptr;
  CUresult r = driver().ready ? driver().cuMemHostAlloc(&p, bytes ? bytes : 16, kHostAllocPortable | kHostAllocDeviceMap)
                              : 1;
  if (r != 0) {
    record("cuMemHostAlloc(" + std::to_string(bytes) + " bytes): " + errorName(r));
    return nullptr;
  }
  return p;
}

void hostMappedFree(void *p) {
  if (p && driver().ready)
    driver().cuMemFreeHost(p);
}

bool pinHostMemory(const void *p, size_t bytes) {
  return driver().ready && bytes > 0 && driver().cuMemHostRegister(const_cast<void *>(p), bytes, 0) == 0;
}

void unpinHostMemory(const void *p) {
  if (driver().ready)
    driver().cuMemHostUnregister(const_cast<void *>(p));
}

bool copyToDevice(void *device, const void *host, size_t bytes) {
  if (!bytes)
    return true;
  CUresult r = driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(device), host, bytes, driver().stream);
  if (r != 0)
    record("copying " + std::to_string(bytes) + " bytes to the device: " + errorName(r));
  return r == 0;
}

bool copyToHost(void *host, const void *device, size_t bytes) {
  if (!bytes)
    return true;
  CUresult r = driver().cuMemcpyDtoHAsync(host, reinterpret_cast<CUdeviceptr>(device), bytes, driver().stream);
  if (r != 0)
    record("copying " + std::to_string(bytes) + " bytes from the device: " + errorName(r));
  return r == 0;
}

bool copyOnDevice(void *to, const void *from, size_t bytes) {
  if (!bytes)
    return true;
  CUresult r = driver().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(to), reinterpret_cast<CUdeviceptr>(from),
                                          bytes, driver().stream);
  if (r != 0)
    record("copying " + std::to_string(bytes) + " bytes on the device: " + errorName(r));
  return r == 0;
}

bool zeroDevice(void *device, size_t bytes) {
  if (!bytes)
    return true;
  CUresult r = driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(device), 0, bytes, driver().stream);
  if (r != 0)
    record("clearing " + std::to_string(bytes) + " bytes of device memory: " + errorName(r));
  return r == 0;
}

struct Graph {
  void *graph = nullptr, *exec = nullptr;
  std::vector<CUdeviceptr> blocks;   // what its kernels were captured with
  uint64_t kernels = 0;
  uint64_t programmaticKernels = 0;   // of them, launched with programmatic stream serialization
  ~Graph() {
    Driver &d = driver();
    if (!d.ready)
      return;
    d.cuCtxSynchronize();   // no replay may still run
    if (exec)
      d.cuGraphExecDestroy(exec);
    if (graph)
      d.cuGraphDestroy(graph);
    for (CUdeviceptr b : blocks)
      d.cuMemFree(b);
  }
};

bool graphsAvailable() {
  Driver &d = driver();
  static const bool disabled = std::getenv("DSF_CUDA_GRAPHS") && !switchOn("DSF_CUDA_GRAPHS");
  return d.ready && !disabled && !d.syncEachLaunch && d.profilePath.empty() && d.cuStreamBeginCapture &&
         d.cuStreamEndCapture && d.cuGraphInstantiateWithFlags && d.cuGraphLaunch && d.cuGraphExecDestroy &&
         d.cuGraphDestroy;
}

bool beginCapture(std::string &error) {
  if (!graphsAvailable()) {
    error = "CUDA graphs are not available";
    return false;
  }
  // Relaxed: the host code allocates (cuMemAlloc) while it is captured.
  constexpr int kCaptureModeRelaxed = 2;
  CUresult r = driver().cuStreamBeginCapture(driver().stream, kCaptureModeRelaxed);
  if (r != 0) {
    error = "cuStreamBeginCapture: " + errorName(r);
    return false;
  }
  std::lock_guard<std::mutex> guard(errorLock);
  capture() = Capture();
  capture().active = true;
  capture().launches = launches;
  capture().programmaticLaunches = programmaticLaunches;
  return true;
}

std::shared_ptr<Graph> endCapture(std::string &error) {
  auto graph = std::make_shared<Graph>();
  CUresult r = driver().cuStreamEndCapture(driver().stream, &graph->graph);
  {
    std::lock_guard<std::mutex> guard(errorLock);
    Capture &c = capture();
    graph->blocks = std::move(c.blocks);
    graph->kernels = launches - c.launches;
    graph->programmaticKernels = programmaticLaunches - c.programmaticLaunches;
    launches = c.launches;   // captured, not run: each replay counts them
    programmaticLaunches = c.programmaticLaunches;
    c = Capture();
  }
  if (r == 0)
    r = driver().cuGraphInstantiateWithFlags(&graph->exec, graph->graph, 0);
  if (r != 0) {
    error = "capturing the step as a CUDA graph: " + errorName(r);
    return nullptr;
  }
  return graph;
}

bool launchGraph(const Graph &graph, std::string &error) {
  CUresult r = driver().cuGraphLaunch(graph.exec, driver().stream);
  if (r != 0) {
    error = "cuGraphLaunch: " + errorName(r);
    return false;
  }
  launches += graph.kernels;
  programmaticLaunches += graph.programmaticKernels;
  return true;
}

uint64_t graphKernels(const Graph &graph) { return graph.kernels; }

bool haveDeviceCodecs() { return DSF_HAVE_DEVICE_CODECS; }

#if DSF_HAVE_DEVICE_CODECS
namespace {
/// The runtime's codec kernels and the decode tables, loaded once: the
/// tables are the host's (codecs.cpp), so the device's values are the
/// host's bit for bit.
struct CodecKernels {
  CUfunction decode = nullptr, pack = nullptr;
  void *tables = nullptr;
};
const CodecKernels *codecKernels(std::string &error) {
  static CodecKernels k;
  if (k.decode)
    return &k;
  Driver &d = driver();
  CUmodule module = nullptr;
  CUresult r = d.cuModuleLoadData(&module, dsfStateCodecsFatbin);
  if (r == 0)
    r = d.cuModuleGetFunction(&k.decode, module, "dsf_decode_state_rows");
  if (r == 0)
    r = d.cuModuleGetFunction(&k.pack, module, "dsf_pack_state_rows");
  if (r != 0) {
    error = "loading the runtime's state codec kernels: " + errorName(r);
    k.decode = k.pack = nullptr;
    return nullptr;
  }
  kernelNames()[k.decode] = "dsf_decode_state_rows (runtime)";
  kernelNames()[k.pack] = "dsf_pack_state_rows (runtime)";
  std::vector<float> host(528);   // staged by the copy before it returns (pageable)
  for (int i = 0; i < 256; ++i) {
    host[size_t(i)] = decodeE4M3(uint8_t(i));
    host[size_t(256 + i)] = decodeUE8M0(uint8_t(i));
  }
  for (int i = 0; i < 16; ++i)
    host[size_t(512 + i)] = decodeE2M1(uint8_t(i));
  k.tables = deviceAlloc(host.size() * sizeof(float));
  copyToDevice(k.tables, host.data(), host.size() * sizeof(float));
  return &k;
}

/// Launches `kernel` of the codec kernels over `segments` (a device copy of
/// them, freed after the launch that reads it: a copy from pageable memory
/// is staged before the call returns, and the block is reused only by work
/// queued after the kernel on the one stream), `mostWork` threads' work in
/// the largest; `extra`, when given, is the kernel's third parameter.
template <typename Segment>
bool launchCodec(CUfunction CodecKernels::*kernel, const std::vector<Segment> &segments, int64_t mostWork,
                 void *extra, std::string &error) {
  const CodecKernels *k = codecKernels(error);
  if (!k)
    return false;
  size_t bytes = segments.size() * sizeof(Segment);
  void *table = deviceAlloc(bytes);
  copyToDevice(table, segments.data(), bytes);
  unsigned blocksX = unsigned(std::min<int64_t>(1024, std::max<int64_t>(1, (mostWork + 255) / 256)));
  void *tables = k->tables;
  void *params[] = {&table, &tables, &extra};
  mgpuLaunchKernel(k->*kernel, blocksX, intptr_t(segments.size()), 1, 256, 1, 1, 0, driver().stream, params, nullptr,
                   extra ? 3 : 2);
  deviceFree(table);
  return true;
}
} // namespace
#endif

bool decodeRows(const std::vector<DecodeSegment> &segments, std::string &error) {
#if DSF_HAVE_DEVICE_CODECS
  int64_t most = 0;
  for (const DecodeSegment &s : segments)
    most = std::max(most, s.rows * s.cols);
  return segments.empty() || launchCodec(&CodecKernels::decode, segments, most, nullptr, error);
#else
  (void)segments;
  error = "this runtime was built without nvcc: no device decoding kernel";
  return false;
#endif
}

bool packRows(const std::vector<PackSegment> &segments, int64_t &badSegment, std::string &error) {
  badSegment = -1;
#if DSF_HAVE_DEVICE_CODECS
  if (segments.empty())
    return true;
  int64_t most = 0;
  for (const PackSegment &s : segments)
    most = std::max(most, s.rows * s.cols / (s.format == 3 ? 16 : 32));
  const int none = std::numeric_limits<int>::max();
  void *bad = deviceAlloc(sizeof(int));
  copyToDevice(bad, &none, sizeof(int));
  int found = none;
  bool ok = launchCodec(&CodecKernels::pack, segments, most, bad, error);
  if (ok) {
    copyToHost(&found, bad, sizeof(int));
    ok = synchronize(error);
  }
  deviceFree(bad);
  if (!ok)
    return false;
  badSegment = found == none ? -1 : found;
  return true;
#else
  (void)segments;
  error = "this runtime was built without nvcc: no device packing kernel";
  return false;
#endif
}

bool synchronize(std::string &error) {
  if (driver().ready) {
    CUresult r = driver().cuCtxSynchronize();
    if (r != 0)
      record("a kernel failed (" + errorName(r) + "); the last one launched was " +
             (lastKernel.empty() ? std::string("none") : lastKernel) +
             " (DSF_CUDA_SYNC=1 waits after each launch and names the one that failed)");
  }
  return takeError(error);
}

bool takeError(std::string &error) {
  std::lock_guard<std::mutex> guard(errorLock);
  if (firstError.empty())
    return true;
  error = firstError;
  firstError.clear();
  return false;
}

} // namespace dsf::rt::cuda

using namespace dsf::rt::cuda;

extern "C" {
void *mgpuModuleLoad(void *data, size_t /*size*/) {
  void *module = nullptr;
  if (!driver().ready) {
    record("a CUDA module was loaded before the driver was ready");
    return nullptr;
  }
  CUresult r = driver().cuModuleLoadData(&module, data);
  if (r != 0) {
    record("cuModuleLoadData: " + errorName(r));
    return module;
  }
  CUdeviceptr marker = 0;
  size_t markerBytes = 0;
  if (driver().programmaticLaunch &&
      driver().cuModuleGetGlobal(&marker, &markerBytes, module, ::dsf::rt::kGridDependencyMarker) == 0)
    waitingModules().emplace(module, std::vector<CUfunction>{});
  return module;
}

void mgpuModuleUnload(void *module) {
  if (module && driver().ready) {
    if (auto waiting = waitingModules().find(module); waiting != waitingModules().end()) {
      for (CUfunction function : waiting->second)
        waitingFunctions().erase(function);
      waitingModules().erase(waiting);
    }
    driver().cuModuleUnload(module);
  }
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  void *function = nullptr;
  if (!module) {
    record(std::string("kernel ") + name + ": its module was not loaded");
    return nullptr;
  }
  CUresult r = driver().cuModuleGetFunction(&function, module, name);
  if (r != 0)
    record(std::string("cuModuleGetFunction(") + name + "): " + errorName(r));
  else {
    kernelNames()[function] = name;
    if (auto waiting = waitingModules().find(module); waiting != waitingModules().end()) {
      waiting->second.push_back(function);
      waitingFunctions().insert(function);
    }
  }
  return function;
}

void *mgpuStreamCreate() { return driver().stream; }
void mgpuStreamDestroy(void *) {}
// The host code waits after each launch; with buffers it never touches,
// there is nothing to wait for (see the top of the file).
void mgpuStreamSynchronize(void *) {}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream, void **params, void **extra, size_t /*count*/) {
  if (failed() || !function)
    return;
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;   // an empty launch (zero rows): nothing to do
  ++launches;
  auto named = kernelNames().find(function);
  lastKernel = named == kernelNames().end() ? std::string("?") : named->second;
  // CUDA's grid bounds: 2^31 - 1 blocks on x, 65,535 on y and z. The
  // kernels of the tiled products and attention put a call's tokens on y or
  // z, so a call of more tokens than that cannot launch them.
  if (gridX > 2147483647 || gridY > 65535 || gridZ > 65535) {
    record("kernel " + lastKernel + ": grid " + std::to_string(gridX) + "x" + std::to_string(gridY) + "x" +
           std::to_string(gridZ) + " exceeds CUDA's 2147483647x65535x65535 (a call of this many tokens: run the "
           "prompt in chunks, dsf-run --prefill-chunk)");
    return;
  }
  // A kernel may take more than 48 KB of dynamic shared memory (the tiled
  // products' ring of cp.async stages) only once its function allows it;
  // raised before its first launch that needs it (a captured one too).
  if (smem > kStaticSharedBytes && raisedSharedLimit()[function] < smem) {
    CUresult r = driver().cuFuncSetAttribute(function, kMaxDynamicSharedSizeBytes, smem);
    if (r != 0) {
      record("kernel " + lastKernel + ": allowing " + std::to_string(smem) +
             " bytes of dynamic shared memory (cuFuncSetAttribute): " + errorName(r));
      return;
    }
    raisedSharedLimit()[function] = smem;
  }
  if (!driver().profilePath.empty())
    driver().cuEventRecord(driver().eventStart, stream);
  CUresult r;
  if (driver().programmaticLaunch && driver().programmaticAllowed && waitingFunctions().count(function)) {
    // The kernel waits for the grid before it at entry (its module says
    // so): it may be scheduled while that grid's last blocks run. Captured
    // into a graph, the same becomes a programmatic edge.
    LaunchAttribute programmatic;
    programmatic.id = kLaunchAttributeProgrammaticStreamSerialization;
    programmatic.value.programmaticStreamSerializationAllowed = 1;
    LaunchConfig config{unsigned(gridX), unsigned(gridY), unsigned(gridZ), unsigned(blockX), unsigned(blockY),
                        unsigned(blockZ), unsigned(smem), stream, &programmatic, 1};
    r = driver().cuLaunchKernelEx(&config, function, params, extra);
    if (r == 0)
      ++programmaticLaunches;
  } else {
    r = driver().cuLaunchKernel(function, unsigned(gridX), unsigned(gridY), unsigned(gridZ), unsigned(blockX),
                                unsigned(blockY), unsigned(blockZ), unsigned(smem), stream, params, extra);
  }
  if (r == 0 && !driver().profilePath.empty()) {
    Driver &d = driver();
    d.cuEventRecord(d.eventStop, stream);
    float ms = 0;
    r = d.cuEventSynchronize(d.eventStop);
    if (r == 0 && d.cuEventElapsedTime(&ms, d.eventStart, d.eventStop) == 0) {
      bool ownName = profileScope.empty() || lastKernel.compare(0, profileScope.size() + 1, profileScope + "_") == 0;
      KernelTime &t = profile()[(ownName ? lastKernel : profileScope + "/" + lastKernel) + " (" +
                                std::to_string(gridX) + "x" + std::to_string(gridY) + "x" +
                                std::to_string(gridZ) + " x " + std::to_string(blockX) + "x" +
                                std::to_string(blockY) + "x" + std::to_string(blockZ) + ")"];
      t.launches++;
      t.microseconds += 1000.0 * ms;
    }
    if (r != 0)
      record("kernel " + lastKernel + " failed: " + errorName(r));
    return;
  }
  if (r == 0 && driver().syncEachLaunch) {
    r = driver().cuStreamSynchronize(stream);
    if (r != 0)
      record("kernel " + lastKernel + " failed: " + errorName(r));
    return;
  }
  if (r != 0) {
    record("launching kernel " + lastKernel + " (grid " +
           std::to_string(gridX) + "x" + std::to_string(gridY) + "x" + std::to_string(gridZ) + ", block " +
           std::to_string(blockX) + "x" + std::to_string(blockY) + "x" + std::to_string(blockZ) + "): " +
           errorName(r));
  }
}

void *_mlir_memref_to_llvm_alloc(size_t bytes) { return deviceAlloc(bytes); }
void _mlir_memref_to_llvm_free(void *p) { deviceFree(p); }
}
