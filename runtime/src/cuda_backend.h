//===- cuda_backend.h - the CUDA driver, loaded when a GPU artifact runs ----===//
#ifndef DSF_RUNTIME_CUDA_BACKEND_H
#define DSF_RUNTIME_CUDA_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace dsf::rt::cuda {
/// Loads libcuda.so.1 and makes device 0's primary context current; false,
/// with the reason, without a driver or a device.
bool ensureDriver(std::string &error);
std::string deviceName();
/// Kernels launched so far (for --timing).
uint64_t launchCount();
/// CUDA managed memory: the kernels and the host code share it.
void *allocShared(size_t bytes);
void freeShared(void *p);
/// Waits for the device; false with the first failure since the last call
/// (a launch, a kernel, an allocation), the kernel named.
bool synchronize(std::string &error);
} // namespace dsf::rt::cuda

#endif // DSF_RUNTIME_CUDA_BACKEND_H
