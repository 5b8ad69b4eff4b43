//===- cuda_backend.h - the CUDA driver, loaded when a GPU artifact runs ----===//
#ifndef DSF_RUNTIME_CUDA_BACKEND_H
#define DSF_RUNTIME_CUDA_BACKEND_H

#include "dsf/codecs.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dsf::rt::cuda {
/// Whether the switch `name` (DSF_CUDA_SYNC, DSF_STATE_ON_HOST, ...) is set
/// to anything but empty or "0".
bool switchOn(const char *name);
/// Loads libcuda.so.1 and makes device 0's primary context current; false,
/// with the reason, without a driver or a device.
bool ensureDriver(std::string &error);
std::string deviceName();
/// Kernels launched so far (for --timing), and how many of them with
/// programmatic stream serialization (a kernel of a module marked by the
/// compiler's dsf-gpu-grid-dependency-control, cuLaunchKernelEx in the
/// driver, DSF_CUDA_PROGRAMMATIC_LAUNCH not 0).
uint64_t launchCount();
uint64_t programmaticLaunchCount();
/// Whether a call of `tokens` token rows (a batched step's are its
/// sequences) should take programmatic launch (DSF_CUDA_PROGRAMMATIC_LAUNCH=N:
/// up to N, default 1), and the switch set around the launches (or capture)
/// of a call: while false, every kernel is launched plainly.
bool programmaticLaunchSuits(int64_t tokens);
void allowProgrammaticLaunch(bool allowed);
/// Programmatic launch while alive only if a call of `tokens` rows suits it
/// (nothing on the CPU).
class ProgrammaticLaunchScope {
public:
  ProgrammaticLaunchScope(bool cuda, int64_t tokens) : cuda_(cuda) {
    if (cuda_)
      allowProgrammaticLaunch(programmaticLaunchSuits(tokens));
  }
  ~ProgrammaticLaunchScope() {
    if (cuda_)
      allowProgrammaticLaunch(true);
  }
  ProgrammaticLaunchScope(const ProgrammaticLaunchScope &) = delete;
  ProgrammaticLaunchScope &operator=(const ProgrammaticLaunchScope &) = delete;

private:
  bool cuda_;
};
/// Seconds spent in the driver's cuMemAlloc and cuMemFree so far, and how
/// many calls (the pool's misses and trims).
double allocSeconds();
uint64_t allocCalls();
/// The entry point whose kernels are launched now. DSF_CUDA_PROFILE files a
/// kernel that is not named after it (a helper's, shared by every entry
/// point: dsf_topk_..., dsf_hc_site_...) as "<entry>/<kernel>".
void setProfileScope(const std::string &entry);
/// Device memory from the caching pool: the kernels' buffers, the weights,
/// a call's state. A failed allocation is recorded (see synchronize).
void *deviceAlloc(size_t bytes);
void deviceFree(void *p);
/// Gives back to the driver the pool's blocks that no allocation took since
/// the last trim; the runtime trims after each entry-point call.
void trimPool();
/// Pinned host memory the kernels read through unified addressing: token
/// inputs, which the host code also reads (positions give shapes).
void *hostMappedAlloc(size_t bytes);
void hostMappedFree(void *p);
/// Page-locks existing host memory (cuMemHostRegister), so that copies from
/// it are one DMA transfer; false (and nothing recorded) if it cannot be.
bool pinHostMemory(const void *p, size_t bytes);
void unpinHostMemory(const void *p);
/// Copies queued on the kernels' stream (complete at the next synchronize).
bool copyToDevice(void *device, const void *host, size_t bytes);
bool copyToHost(void *host, const void *device, size_t bytes);
/// A copy between two device buffers and a fill of one with zero bytes,
/// queued on the kernels' stream.
bool copyOnDevice(void *to, const void *from, size_t bytes);
bool zeroDevice(void *device, size_t bytes);

/// CUDA graphs: a batched decode step's launches, captured once and
/// replayed (the step's buffers and shapes are the same every time). While
/// a capture runs, the kernels' allocations come from blocks of their own,
/// never from or to the shared pool (the graph's kernels keep reading the
/// addresses they were captured with); a block the host code frees during
/// the capture serves its later allocations (the captured launches run in
/// order). Graphs need the driver's capture API and are off with
/// DSF_CUDA_SYNC, DSF_CUDA_PROFILE and DSF_CUDA_GRAPHS=0.
struct Graph;
bool graphsAvailable();
/// Starts capturing the kernels' stream.
bool beginCapture(std::string &error);
/// Ends the capture and instantiates what was captured; the graph owns the
/// blocks allocated since beginCapture. Null, with the reason, on failure.
std::shared_ptr<Graph> endCapture(std::string &error);
/// Queues a replay of `graph` on the kernels' stream.
bool launchGraph(const Graph &graph, std::string &error);
/// Kernel launches a replay of `graph` makes.
uint64_t graphKernels(const Graph &graph);

/// A row format's code in the codec kernels' segments (0 is f32 bytes).
inline int32_t kernelFormat(RowFormat f) { return f == RowFormat::FP8 ? 1 : f == RowFormat::MXFP4 ? 2 : 3; }

/// One tensor's rows (or part of them) in a tier's bytes, already on the
/// device, to be decoded into f32 rows at `out` (as dequantizeRows does).
/// The layout is the kernel's (src/device/state_codecs.cu).
struct DecodeSegment {
  const void *codes = nullptr, *scales = nullptr;
  float *out = nullptr;
  int64_t rows = 0, cols = 0;
  int32_t format = 0;   // 0 f32 bytes, 1 FP8, 2 MXFP4, 3 NVFP4
  /// 0: codes and scales each contiguous (a tier's record); else the bytes
  /// from one row to the next of both (a batch's packed pages: `scales` is
  /// then `codes` plus the row's code bytes).
  int32_t rowStride = 0;
};
/// Rows of a cache's decoded values (f32 on the device) to pack into rows
/// of `rowBytes` (the codes, then a scale byte a block), as the host's
/// quantizeRows packs them. The layout is the kernel's.
struct PackSegment {
  const float *in = nullptr;
  void *out = nullptr;
  int64_t rows = 0, cols = 0;
  int32_t format = 1;   // 1 FP8, 2 MXFP4, 3 NVFP4
  int32_t rowBytes = 0;
};
/// Whether this runtime was built with its device decoding kernel (nvcc).
bool haveDeviceCodecs();
/// Queues the decoding of `segments` on the kernels' stream: one launch.
/// Failures are recorded (see synchronize), or returned when the kernel
/// cannot be loaded.
bool decodeRows(const std::vector<DecodeSegment> &segments, std::string &error);
/// Packs `segments` on the device (one launch) and waits: `badSegment` the
/// first segment holding a value that does not decode back bit for bit (not
/// its format's), or -1. False with the reason on a failure.
bool packRows(const std::vector<PackSegment> &segments, int64_t &badSegment, std::string &error);
/// Waits for the device; false with the first failure since the last call
/// (a launch, a kernel, an allocation, a copy).
bool synchronize(std::string &error);
/// The same without waiting: only the failures already recorded (an
/// allocation, a copy that could not be queued).
bool takeError(std::string &error);
} // namespace dsf::rt::cuda

#endif // DSF_RUNTIME_CUDA_BACKEND_H
