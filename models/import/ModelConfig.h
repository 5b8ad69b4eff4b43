//===- ModelConfig.h - a DeepSeek-V4-family config, read and validated ----===//
//
// What the importer knows about a model after reading its config.json (HF
// DeepseekV4Config as transformers 5.17 writes it, or DeepSeek-V4.1's released
// keys) and applying an optional schedule override. Everything here has been
// validated: the graph builder may assume it is consistent.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_MODELS_IMPORT_MODELCONFIG_H
#define DSF_MODELS_IMPORT_MODELCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsf {

enum class Family { V4, V41 };

/// What a layer's attention does (V4 kinds and V4.1 CSA2 roles).
enum class LayerRole { Sliding, Csa, Hca, Full, Reindex, Reuse };

struct Yarn {
  double factor = 1;
  int64_t originalMax = 0;
  double betaFast = 32, betaSlow = 1;
};

struct RopeParams {
  double theta = 10000;
  int64_t dims = 64;
  std::optional<Yarn> yarn;
};

struct LayerSpec {
  LayerRole role = LayerRole::Sliding;
  int64_t ratio = 0;      // tokens per compressed entry; 0 for sliding-only
  bool hashMoe = false;   // V4: experts picked from a token-id table
};

/// How the checkpoint stores a class of weights.
struct WeightStorage {
  enum Kind { F32, BF16, FP8, MXFP4 } kind = F32;
  int64_t blockRows = 0, blockCols = 0; // FP8: 2-D block; MXFP4: 1 x 32
};

struct ModelConfig {
  std::string source;     // the config file, for messages
  std::string name;       // symbol name of the dsf.model
  Family family = Family::V41;

  int64_t vocab = 0, hidden = 0, numLayers = 0;
  int64_t maxPositions = 0; // max_position_embeddings; 0 when the config has none
  int64_t numHeads = 0, headDim = 0, qLora = 0, oLora = 0, oGroups = 0, window = 0;
  int64_t nRouted = 0, nShared = 1, topK = 0, moeInter = 0;
  double routedScale = 1.5, swigluLimit = 10;
  double rmsEps = 1e-6, hcEps = 1e-6;
  int64_t hcMult = 4, hcIters = 20;
  int64_t indexHeads = 0, indexDim = 0, indexTopk = 0;
  RopeParams mainRope, compressRope;
  std::vector<LayerSpec> layers;

  // V4: tokens per entry of CSA and HCA layers (compress_rates).
  int64_t csaRatio = 4, hcaRatio = 128;
  // V4.1: first decoder layer (== numLayers when there is no decoder).
  int64_t decoderStart = -1;
  // Hierarchical indexer: candidate source layer, or -1 when disabled.
  int64_t candidateSource = -1, candidateBlocks = 0, candidateBlockSize = 0;

  WeightStorage denseWeights, expertWeights;
  bool hasImageBias = false; // V4.1 gates carry bias_vl for image tokens

  /// Parts of the config dsf does not express yet (Engram, DSpark, MTP,
  /// vision); the driver prints them as warnings.
  std::vector<std::string> notExpressed;
  /// Decisions the importer made that a user should know about.
  std::vector<std::string> notes;
};

/// Reads MODEL (a directory holding config.json, or the file itself).
llvm::Expected<ModelConfig> loadModelConfig(llvm::StringRef path);

/// Parses config text; `source` names it in messages.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef text, llvm::StringRef source);

/// Replaces the config's layer schedule by `schedule` (see Schedule.h) and
/// re-validates.
llvm::Error applySchedule(ModelConfig &config, llvm::StringRef schedule);

/// Checks the cross-field rules shared by configs and schedules.
llvm::Error validateModelConfig(const ModelConfig &config);

const char *roleLetter(LayerRole role);

} // namespace dsf

#endif // DSF_MODELS_IMPORT_MODELCONFIG_H
