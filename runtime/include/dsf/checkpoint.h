//===- checkpoint.h - reading a weight under any name and format it has ----===//
//
// A weight of the artifact (named as the released checkpoints name it) may
// stand in a checkpoint
//   * under its released name, or one released tensor per expert;
//   * under transformers' internal name (model.state_dict()), possibly as a
//     part of a tensor transformers fuses (experts' gate_up_proj holds w1
//     then w3);
// and each of those tensors plain (f32, bf16, f16; i32 or i64 for tables) or
// quantized as the released checkpoints store them: NAME holds the codes and
// NAME.scale the block scales — FP8 E4M3 with UE8M0 scales per 128 x 128 or
// 32 x 32 block (or per 32 of a row), MXFP4 (two E2M1 a byte, UE8M0 per 32)
// or NVFP4 (E4M3 per 16), told apart by their dtypes and shapes.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_CHECKPOINT_H
#define DSF_RUNTIME_CHECKPOINT_H

#include "dsf/artifact.h"
#include "dsf/weights.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dsf::rt {

/// Where transformers keeps a released-name weight: its name and, for a
/// fused tensor, which of `parts` equal slices along `axis` it is.
struct HfName {
  std::string name;
  int axis = -1;
  int part = 0, parts = 1;
};
std::optional<HfName> hfNameOf(const std::string &released);

/// Reads `spec` from `weights` into `f32` or `i32` (by spec.dtype), sized
/// to the spec's shape; records in `consumed` every checkpoint tensor used.
/// On failure `error` names the tensor, the file and what is wrong.
bool readWeight(const WeightSource &weights, const WeightSpec &spec, std::vector<float> &f32,
                std::vector<int32_t> &i32, std::set<std::string> &consumed, std::string &error);

/// Whether `spec` is a weight bound packed (dsf-to-linalg's
/// weight-storage=released): dtype "e2m1x2", an MXFP4 weight's codes (two
/// a byte), "e4m3", an FP8 weight's codes (one a byte), or "ue8m0", their
/// scales (NAME.scale, a byte a block: 32 codes, or FP8's 2-D blocks).
bool isPackedWeight(const WeightSpec &spec);
/// Reads a packed weight's bytes as the checkpoint holds them (stacked
/// under NAME, or one tensor an expert by spec.expertNames, each with its
/// NAME.scale), sized to the spec's shape. A checkpoint that holds the
/// weight in another format is an error naming the tensor and its dtype.
bool readPackedWeight(const WeightSource &weights, const WeightSpec &spec, std::vector<uint8_t> &bytes,
                      std::set<std::string> &consumed, std::string &error);

} // namespace dsf::rt

#endif // DSF_RUNTIME_CHECKPOINT_H
