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
#include "dsf/codecs.h"
#include "dsf/weights.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

/// State rows in device memory (the device tier): a view into a buffer the
/// kernels returned, which is freed when its last view goes.
struct DeviceRows {
  std::shared_ptr<void> allocation;
  const float *data = nullptr;   // the first row; rows are contiguous
};

/// State rows still in a tier's storage format (kv_tiers.h), decoded where
/// the next call runs: for a CUDA artifact the bytes go to the device in one
/// bulk copy and one kernel decodes every tensor of the sequence; else on
/// the host. A tensor's rows may come from several records (segments).
struct PackedRows {
  struct Segment {
    bool f32 = false;              // raw f32 values (a slot kept unpacked)
    RowFormat format = RowFormat::FP8;
    size_t codes = 0, scales = 0;  // byte offsets into *bytes
    int64_t firstRow = 0, rows = 0;
  };
  std::shared_ptr<const std::string> bytes;
  std::vector<Segment> segments;
};

/// One state tensor of a sequence: f32 rows [rows, width], row-major. On
/// the CPU, `values` hold them. A CUDA artifact's calls leave them on the
/// device (`device`), where the next call reads them without a copy;
/// `values` are then empty until HostModel::fetchState copies them out
/// (for the tiers below), and a tensor with values only (restored from a
/// tier) is copied to the device by the call that needs it; one still
/// `packed` (restored from a tier) is decoded by the call that needs it.
struct StateTensor {
  int64_t rows = 0, width = 0;
  std::vector<float> values;
  std::shared_ptr<const DeviceRows> device;
  std::shared_ptr<const PackedRows> packed;
  bool onHost() const { return int64_t(values.size()) == rows * width; }
};

/// What a sequence keeps between calls: its length and the named state the
/// last call returned (windows' last rows, caches, compressors' carries).
struct Sequence {
  int64_t length = 0;
  std::map<std::string, StateTensor> state;
  /// Whether the state derives from an approximate window rebuild (a
  /// bounded replay shorter than the exact tail, or records that did): every
  /// row computed after it is approximate too, so the prefix store keeps
  /// such blocks apart from exact ones (kv_tiers.h).
  bool approximate = false;
  int64_t stateBytes() const {
    int64_t bytes = 0;
    for (const auto &[name, t] : state)
      bytes += t.rows * t.width * int64_t(sizeof(float));
    return bytes;
  }
};

class HostModel {
public:
  /// Loads the host kernels of `artifact` and binds every weight its entry
  /// points need from `weights`. Fails, naming the tensor, on a missing,
  /// misshaped or unconvertible weight, or on a tensor no entry point uses.
  static std::unique_ptr<HostModel> load(std::shared_ptr<Artifact> artifact, const WeightSource &weights,
                                         std::string &error);
  ~HostModel();

  const Manifest &manifest() const { return artifact_->manifest(); }

  /// With `on`, every call returns the logits of its last row only (rows
  /// [1, vocab], firstRow that row's position): what generation reads. A
  /// CUDA call then copies one row to the host instead of all of them: a
  /// 4,096-token prefill's logits of V4.1's vocabulary are 2.1 GB, and
  /// copying them took 1.6 s of a 2.0 s prefill whose kernels took 0.45 s
  /// (bench/results/gpu-cp-async-tiles.md).
  void setLastLogitsOnly(bool on) { lastLogitsOnly_ = on; }

  /// Logits [rows, vocab] of a fresh sequence of `ids` through entry point
  /// `entry`: every position for a full prefill; for the exact-tail and
  /// bounded-replay prefills (the manifest's `prefill`) the rows of the
  /// tail only, the first of them at position `firstRow` (exact-tail is exact
  /// at the last position, which is what it promises; bounded replay
  /// approximates it). Validates ids and positions.
  bool run(const std::string &entry, const std::vector<int32_t> &ids, std::vector<float> &logits,
           int64_t &firstRow, std::string &error) const;

  /// Runs `ids` through `entry` as the next tokens of `sequence`. An entry
  /// point that takes state ("decode") continues the sequence at position
  /// sequence.length and needs its state; one that does not ("prefill")
  /// starts it afresh. Either way the sequence then holds the state the call
  /// returned. On failure the sequence is unchanged. "replay" takes the
  /// sequence's last ids.size() tokens again: with the global caches and
  /// carries of the whole sequence and empty windows, it rebuilds the windows.
  bool run(const std::string &entry, const std::vector<int32_t> &ids, Sequence &sequence,
           std::vector<float> &logits, int64_t &firstRow, std::string &error) const;

  /// Runs `ids` as the next tokens of `sequence` in calls of at most `chunk`
  /// tokens (0: one call): "prefill" for the first call of an empty
  /// sequence, "decode" for the others (chunked prefill: a long prompt's
  /// activations, the indexer's [tokens, heads, entries] scores and the
  /// logits are then those of `chunk` tokens, not of the whole prompt;
  /// decode computes every row, exactly). After each call `logits` holds
  /// that call's rows and `firstRow` the first one's position, and
  /// `eachCall` (if given) sees them; on return they are the last call's.
  /// On failure the sequence holds the calls that completed (its length says
  /// how many tokens) and the error names the failing call's tokens.
  bool extend(const std::vector<int32_t> &ids, int64_t chunk, Sequence &sequence, std::vector<float> &logits,
              int64_t &firstRow, std::string &error,
              const std::function<void(const std::vector<float> &logits, int64_t firstRow)> &eachCall = {}) const;

  /// Gives every state tensor of the sequence host `values`: copies the
  /// device-resident ones out (one transfer a tensor, one wait; the device
  /// copy stays) and decodes packed ones. The sequence is unchanged on
  /// failure.
  bool fetchState(Sequence &sequence, std::string &error) const;

  /// Page-locks host memory for copies to this model's device (false on the
  /// CPU, or when the driver cannot), and releases it: the host pool's hooks.
  bool pinHostMemory(const void *p, size_t bytes) const;
  void unpinHostMemory(const void *p) const;

  /// GPU kernels launched by this process so far (0 on the CPU), and how
  /// many of them overlapped the kernel before them (programmatic dependent
  /// launch: kernels the compiler made wait for the grid before them).
  static uint64_t kernelLaunches();
  static uint64_t programmaticKernelLaunches();

  /// Where this process's calls spent their wall time so far, in seconds
  /// (dsf-run --timing): staging the inputs; running the compiled host code
  /// (on the GPU it queues the kernels, and waits only where the driver
  /// does: in cuMemAlloc / cuMemFree, also counted apart); waiting for the
  /// device; taking the results; releasing the call's staging. Process-wide
  /// counts, as kernelLaunches.
  struct CallTimes {
    double stage = 0, hostCode = 0, wait = 0, results = 0, release = 0;
    double deviceAllocs = 0;   // of hostCode: cuMemAlloc and cuMemFree
    uint64_t allocCalls = 0;   // of hostCode, likewise
    uint64_t calls = 0;
    /// State results copied to the host (DSF_STATE_ON_HOST, or not
    /// contiguous rows) and their bytes.
    uint64_t statesToHost = 0, bytesToHost = 0;
  };
  static CallTimes callTimes();

  /// Whether `entry` continues a sequence (takes state).
  bool continues(const std::string &entry) const;

  /// Decodes the sequence's packed tensors (restored from a tier) where
  /// calls run: on the device for a CUDA artifact built with nvcc (one bulk
  /// copy a tier buffer, one kernel, one wait), else on the host
  /// (DSF_DECODE_ON_HOST=1 forces the host, to compare). The state is the
  /// same state afterwards, so the sequence is not changed; run() does this
  /// itself, the server beforehand to time it as part of the restore.
  bool placeState(Sequence &sequence, std::string &error) const;

  /// A buffer handed to an entry point: its data and shape (row-major).
  struct Buffer {
    void *data = nullptr;
    std::vector<int64_t> shape;
  };
  /// Calls `entry` with `inputs` (every input the manifest lists, in its
  /// order) and the bound weights; `results` get the results' memref
  /// descriptors, one after the other (rank `resultRank` each). Nothing is
  /// staged, copied or synchronized: the caller owns every buffer (Batch's
  /// path, which keeps its buffers from one step to the next).
  bool invoke(const std::string &entry, const std::vector<Buffer> &inputs, size_t resultRank,
              std::vector<int64_t> &results, std::string &error) const;

  /// Whether the artifact's kernels run on a CUDA device.
  bool onDevice() const { return cuda_; }

private:
  HostModel() = default;
  struct Bound;
  /// The entry point called `entry`, or null with the error.
  const Bound *bound(const std::string &entry, std::string &error) const;
  std::shared_ptr<Artifact> artifact_;
  void *library_ = nullptr;
  bool lastLogitsOnly_ = false;   // setLastLogitsOnly
  bool cuda_ = false;   // a CUDA artifact: buffers in managed memory
  int memfd_ = -1;
  std::vector<std::unique_ptr<Bound>> entries_;
  std::shared_ptr<void> weights_;   // the bound weight buffers, by name
};

} // namespace dsf::rt

#endif // DSF_RUNTIME_HOST_MODEL_H
