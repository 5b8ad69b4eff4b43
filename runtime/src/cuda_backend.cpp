//===- cuda_backend.cpp - the CUDA driver, loaded when a GPU artifact runs --===//
//
// libcuda.so.1 is opened with dlopen and its entry points looked up by name
// (a symbol table, as IREE does), so every tool starts on machines without
// a GPU or a driver and only a CUDA artifact needs one. On top of it, the C
// interface the kernels' host code calls (MLIR's gpu-to-llvm ABI):
// mgpuModuleLoad / GetFunction / LaunchKernel / Stream*, and the allocation
// functions of finalize-memref-to-llvm's generic mode, which return CUDA
// managed memory so that kernels and the host code between them share
// buffers. Failures inside those calls (which return nothing) are recorded,
// with the kernel's name, and reported by the runtime after the entry point
// returns; once one has happened, later launches are skipped.
//
//===----------------------------------------------------------------------===//
#include "cuda_backend.h"

#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <set>

namespace dsf::rt::cuda {
namespace {
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUdeviceptr = unsigned long long;
constexpr unsigned kMemAttachGlobal = 1;

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
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string device;
  bool ready = false;
};

Driver &driver() {
  static Driver d;
  return d;
}

std::mutex errorLock;
std::string firstError;
std::string lastKernel;
uint64_t launches = 0;
std::map<CUfunction, std::string> &kernelNames() {
  static std::map<CUfunction, std::string> names;
  return names;
}

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
  auto bind = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d.library, name));
    if (!fn) {
      error = std::string("the CUDA driver lacks ") + name;
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
  bind(d.cuLaunchKernel, "cuLaunchKernel");
  bind(d.cuStreamCreate, "cuStreamCreate");
  bind(d.cuStreamDestroy, "cuStreamDestroy_v2");
  bind(d.cuStreamSynchronize, "cuStreamSynchronize");
  bind(d.cuMemAllocManaged, "cuMemAllocManaged");
  bind(d.cuMemFree, "cuMemFree_v2");
  bind(d.cuGetErrorName, "cuGetErrorName");
  if (!ok)
    return false;
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
  d.ready = true;
  return true;
}

std::string deviceName() { return driver().device; }
uint64_t launchCount() { return launches; }

namespace {
// Host memory handed out when the device could not allocate: the host code
// in flight must not crash; its kernels are skipped and the error reported.
std::set<void *> &hostFallbacks() {
  static std::set<void *> blocks;
  return blocks;
}
} // namespace

void *allocShared(size_t bytes) {
  CUdeviceptr p = 0;
  // Zero-sized buffers (empty windows, empty carries) still get an address.
  CUresult r = driver().ready ? driver().cuMemAllocManaged(&p, bytes ? bytes : 16, kMemAttachGlobal) : 1;
  if (r != 0) {
    record("cuMemAllocManaged(" + std::to_string(bytes) + " bytes): " + errorName(r) +
           (r == 2 ? " (out of device memory)" : ""));
    void *host = std::calloc(1, bytes ? bytes : 16);
    std::lock_guard<std::mutex> guard(errorLock);
    hostFallbacks().insert(host);
    return host;
  }
  return reinterpret_cast<void *>(p);
}

void freeShared(void *p) {
  if (!p)
    return;
  {
    std::lock_guard<std::mutex> guard(errorLock);
    if (hostFallbacks().erase(p)) {
      std::free(p);
      return;
    }
  }
  driver().cuMemFree(reinterpret_cast<CUdeviceptr>(p));
}

bool synchronize(std::string &error) {
  if (driver().ready) {
    CUresult r = driver().cuCtxSynchronize();
    if (r != 0)
      record("cuCtxSynchronize: " + errorName(r));
  }
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
  if (r != 0)
    record("cuModuleLoadData: " + errorName(r));
  return module;
}

void mgpuModuleUnload(void *module) {
  if (module && driver().ready)
    driver().cuModuleUnload(module);
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
  else
    kernelNames()[function] = name;
  return function;
}

void *mgpuStreamCreate() { return driver().stream; }
void mgpuStreamDestroy(void *) {}
void mgpuStreamSynchronize(void *stream) {
  if (failed() || !driver().ready)
    return;
  CUresult r = driver().cuStreamSynchronize(stream);
  if (r != 0)
    record("kernel " + lastKernel + " failed: " + errorName(r));
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream, void **params, void **extra, size_t /*count*/) {
  if (failed() || !function)
    return;
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;   // an empty launch (zero rows): nothing to do
  ++launches;
  auto named = kernelNames().find(function);
  lastKernel = named == kernelNames().end() ? std::string("?") : named->second;
  CUresult r = driver().cuLaunchKernel(function, unsigned(gridX), unsigned(gridY), unsigned(gridZ), unsigned(blockX),
                                       unsigned(blockY), unsigned(blockZ), unsigned(smem), stream, params, extra);
  if (r != 0) {
    record("launching kernel " + lastKernel + " (grid " +
           std::to_string(gridX) + "x" + std::to_string(gridY) + "x" + std::to_string(gridZ) + ", block " +
           std::to_string(blockX) + "x" + std::to_string(blockY) + "x" + std::to_string(blockZ) + "): " +
           errorName(r));
  }
}

void *_mlir_memref_to_llvm_alloc(size_t bytes) { return allocShared(bytes); }
void _mlir_memref_to_llvm_free(void *p) { freeShared(p); }
}
