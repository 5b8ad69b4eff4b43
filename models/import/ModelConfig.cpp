//===- ModelConfig.cpp - reading and validating model configs --------------===//
//
// Two dialects of config.json are accepted as they are written:
//  * transformers 5.17's DeepseekV4Config (layer_types, compress_rates,
//    mlp_layer_types, rope_parameters {main, compress}; legacy compress_ratios,
//    num_hash_layers and rope_scaling folded in the way transformers folds them);
//  * DeepSeek-V4.1's released config (compress_ratios, kv_source_layer_ids,
//    index_source_layer_ids, candidate_*; rope_scaling; engram_*, dspark_*,
//    vision_config), recognised by model_type deepseek_v41 or by
//    kv_source_layer_ids.
// Every error names the file and the field (with its index for lists).
//
//===----------------------------------------------------------------------===//
#include "models/import/ModelConfig.h"
#include "passes/Schedule.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <set>

using namespace llvm;

namespace dsf {

const char *roleLetter(LayerRole role) {
  switch (role) {
  case LayerRole::Sliding: return "S";
  case LayerRole::Csa: return "C";
  case LayerRole::Hca: return "H";
  case LayerRole::Full: return "F";
  case LayerRole::Reindex: return "X";
  case LayerRole::Reuse: return "R";
  }
  return "?";
}

namespace {

Error fail(const Twine &msg) { return createStringError(inconvertibleErrorCode(), msg); }

/// A number as a person writes it: 1e-06, 1.277, 4096.
std::string numberString(double v) {
  char buffer[32];
  snprintf(buffer, sizeof buffer, "%.10g", v);
  return buffer;
}

const char *kindName(const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null: return "null";
  case json::Value::Boolean: return "a boolean";
  case json::Value::Number: return "a number";
  case json::Value::String: return "a string";
  case json::Value::Array: return "an array";
  case json::Value::Object: return "an object";
  }
  return "a value";
}

/// Reads typed fields of one JSON object; the first error wins and later reads
/// return defaults, so a parser reads everything and checks once.
class Reader {
public:
  Reader(const json::Object &obj, std::string where) : obj(obj), where(std::move(where)) {}

  bool failed() const { return !error.empty(); }
  Error takeError() { return failed() ? fail(error) : Error::success(); }
  void report(const Twine &msg) {
    if (error.empty())
      error = (where + ": " + msg).str();
  }
  bool has(StringRef key) const {
    const json::Value *v = obj.get(key);
    return v && v->kind() != json::Value::Null;
  }
  const json::Value *raw(StringRef key) const { return obj.get(key); }

  std::optional<int64_t> optInt(StringRef key) {
    const json::Value *v = obj.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (auto i = v->getAsInteger())
      return *i;
    report("field '" + key + "': expected an integer, got " + kindName(*v));
    return std::nullopt;
  }
  int64_t integer(StringRef key) {
    if (!obj.get(key)) {
      report("missing required field '" + key + "'");
      return 1;
    }
    if (obj.get(key)->kind() == json::Value::Null) {
      report("field '" + key + "': expected an integer, got null");
      return 1;
    }
    return optInt(key).value_or(1);
  }
  int64_t positive(StringRef key) { return checkPositive(key, integer(key)); }
  int64_t positive(StringRef key, int64_t dflt) {
    return checkPositive(key, optInt(key).value_or(dflt));
  }
  int64_t nonNegative(StringRef key, int64_t dflt) {
    int64_t v = optInt(key).value_or(dflt);
    if (v < 0)
      report("field '" + key + "' must not be negative, got " + Twine(v));
    return v;
  }
  double number(StringRef key, double dflt, bool strictlyPositive = true) {
    const json::Value *v = obj.get(key);
    if (!v || v->kind() == json::Value::Null)
      return dflt;
    std::optional<double> d = v->getAsNumber();
    if (!d) {
      report("field '" + key + "': expected a number, got " + kindName(*v));
      return dflt;
    }
    if (strictlyPositive && !(*d > 0))
      report("field '" + key + "' must be positive, got " + numberString(*d));
    return *d;
  }
  std::optional<std::string> optString(StringRef key) {
    const json::Value *v = obj.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (auto s = v->getAsString())
      return s->str();
    report("field '" + key + "': expected a string, got " + kindName(*v));
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> intList(StringRef key, bool required) {
    const json::Value *v = obj.get(key);
    if (!v || v->kind() == json::Value::Null) {
      if (required)
        report("missing required field '" + key + "'");
      return std::nullopt;
    }
    const json::Array *a = v->getAsArray();
    if (!a) {
      report("field '" + key + "': expected a list of integers, got " + kindName(*v));
      return std::nullopt;
    }
    std::vector<int64_t> out;
    for (auto [i, e] : llvm::enumerate(*a)) {
      auto n = e.getAsInteger();
      if (!n) {
        report(key + "[" + Twine(i) + "]: expected an integer, got " + kindName(e));
        return std::nullopt;
      }
      out.push_back(*n);
    }
    return out;
  }
  std::optional<std::vector<std::string>> stringList(StringRef key) {
    const json::Value *v = obj.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    const json::Array *a = v->getAsArray();
    if (!a) {
      report("field '" + key + "': expected a list of strings, got " + kindName(*v));
      return std::nullopt;
    }
    std::vector<std::string> out;
    for (auto [i, e] : llvm::enumerate(*a)) {
      auto s = e.getAsString();
      if (!s) {
        report(key + "[" + Twine(i) + "]: expected a string, got " + kindName(e));
        return std::nullopt;
      }
      out.push_back(s->str());
    }
    return out;
  }
  const json::Object *object(StringRef key) {
    const json::Value *v = obj.get(key);
    if (!v || v->kind() == json::Value::Null)
      return nullptr;
    if (auto *o = v->getAsObject())
      return o;
    report("field '" + key + "': expected an object, got " + kindName(*v));
    return nullptr;
  }
  std::string sub(StringRef key) const { return where + ": " + key.str(); }

private:
  int64_t checkPositive(StringRef key, int64_t v) {
    if (v <= 0)
      report("field '" + key + "' must be positive, got " + Twine(v));
    return v;
  }
  const json::Object &obj;
  std::string where;
  std::string error;
};

/// Reads one set of rope parameters (a rope_scaling / rope_parameters dict).
/// `where` is the path to it for messages.
void readRope(const json::Object &o, std::string where, double theta, int64_t dims,
              std::optional<int64_t> maxPositions, RopeParams &out, std::string &error) {
  Reader r(o, where);
  out.theta = r.number("rope_theta", theta);
  out.dims = dims;
  std::string type = r.optString("rope_type").value_or(r.optString("type").value_or("default"));
  if (type == "yarn") {
    Yarn y;
    std::optional<int64_t> original = r.optInt("original_max_position_embeddings");
    y.originalMax = original.value_or(maxPositions.value_or(0));
    if (y.originalMax <= 0)
      r.report("YaRN needs original_max_position_embeddings");
    // An explicit factor wins; otherwise the context extension implied by the
    // two lengths, as transformers derives it.
    if (r.has("factor"))
      y.factor = r.number("factor", 1);
    else if (maxPositions && y.originalMax > 0)
      y.factor = double(*maxPositions) / double(y.originalMax);
    y.betaFast = r.number("beta_fast", 32);
    y.betaSlow = r.number("beta_slow", 1);
    double attentionFactor = r.number("attention_factor", 1.0);
    if (std::fabs(attentionFactor - 1.0) > 1e-12)
      r.report("attention_factor = " + numberString(attentionFactor) +
               ": V4-family YaRN applies no attention scaling (1.0)");
    if (y.factor < 1)
      r.report("factor = " + numberString(y.factor) + ": a YaRN factor is at least 1");
    out.yarn = y;
  } else if (type != "default") {
    r.report("rope_type '" + type + "' is not supported (expected default or yarn)");
  }
  if (r.failed() && error.empty())
    error = toString(r.takeError());
}

Error parseV4Layers(Reader &r, ModelConfig &c) {
  int64_t n = c.numLayers;
  // compress_rates, with the legacy scalar overrides transformers folds in.
  int64_t csaRate = 4, hcaRate = 128;
  if (const json::Object *rates = r.object("compress_rates")) {
    Reader rr(*rates, r.sub("compress_rates"));
    csaRate = rr.positive("compressed_sparse_attention", 4);
    hcaRate = rr.positive("heavily_compressed_attention", 128);
    if (rr.failed())
      return rr.takeError();
  }
  csaRate = r.positive("compress_rate_csa", csaRate);
  hcaRate = r.positive("compress_rate_hca", hcaRate);
  if (r.failed())
    return r.takeError();
  if (csaRate < 2 || hcaRate < 2)
    return fail(r.sub("compress_rates") + ": V4 compressors pool at least 2 tokens");
  c.csaRatio = csaRate;
  c.hcaRatio = hcaRate;

  std::vector<LayerSpec> layers(n);
  if (auto types = r.stringList("layer_types")) {
    if ((int64_t)types->size() != n)
      return fail(r.sub("layer_types") + formatv(" has {0} entries but num_hidden_layers = {1}",
                                                 types->size(), n).str());
    for (auto [i, t] : llvm::enumerate(*types)) {
      if (t == "sliding_attention")
        layers[i] = {LayerRole::Sliding, 0, false};
      else if (t == "compressed_sparse_attention")
        layers[i] = {LayerRole::Csa, csaRate, false};
      else if (t == "heavily_compressed_attention")
        layers[i] = {LayerRole::Hca, hcaRate, false};
      else
        return fail(r.sub("layer_types") + "[" + Twine(i) + "]: unknown layer type '" + t +
                    "' (expected sliding_attention, compressed_sparse_attention or "
                    "heavily_compressed_attention)");
    }
  } else if (auto ratios = r.intList("compress_ratios", false)) {
    if ((int64_t)ratios->size() != n)
      return fail(r.sub("compress_ratios") + formatv(" has {0} entries but num_hidden_layers = {1}",
                                                     ratios->size(), n).str());
    for (auto [i, v] : llvm::enumerate(*ratios)) {
      if (v == 0)
        layers[i] = {LayerRole::Sliding, 0, false};
      else if (v == 4)
        layers[i] = {LayerRole::Csa, csaRate, false};
      else if (v == 128)
        layers[i] = {LayerRole::Hca, hcaRate, false};
      else
        return fail(r.sub("compress_ratios") + "[" + Twine(i) + "]: " + Twine(v) +
                    " is not a V4 ratio (0 sliding, 4 CSA, 128 HCA)");
    }
  } else {
    if (r.failed())
      return r.takeError();
    // transformers' default: two HCA layers, then CSA on odd positions of the rest.
    for (int64_t i = 0; i < n; ++i) {
      bool csa = i >= 2 && (i - 2) % 2 == 1;
      layers[i] = csa ? LayerSpec{LayerRole::Csa, csaRate, false}
                      : LayerSpec{LayerRole::Hca, hcaRate, false};
    }
  }
  if (auto mlp = r.stringList("mlp_layer_types")) {
    if ((int64_t)mlp->size() != n)
      return fail(r.sub("mlp_layer_types") + formatv(" has {0} entries but num_hidden_layers = {1}",
                                                     mlp->size(), n).str());
    for (auto [i, t] : llvm::enumerate(*mlp)) {
      if (t == "hash_moe")
        layers[i].hashMoe = true;
      else if (t != "moe")
        return fail(r.sub("mlp_layer_types") + "[" + Twine(i) + "]: unknown MLP type '" + t +
                    "' (expected hash_moe or moe)");
    }
  } else {
    int64_t hashLayers = r.nonNegative("num_hash_layers", 3);
    for (int64_t i = 0; i < std::min(hashLayers, n); ++i)
      layers[i].hashMoe = true;
  }
  if (r.failed())
    return r.takeError();
  c.layers = std::move(layers);
  return Error::success();
}

Error parseV41Layers(Reader &r, ModelConfig &c) {
  int64_t n = c.numLayers;
  auto ratios = r.intList("compress_ratios", true);
  auto kvSources = r.intList("kv_source_layer_ids", true);
  auto indexSources = r.intList("index_source_layer_ids", true);
  if (r.failed())
    return r.takeError();
  if ((int64_t)ratios->size() != n)
    return fail(r.sub("compress_ratios") + formatv(" has {0} entries but num_hidden_layers = {1}",
                                                   ratios->size(), n).str());
  for (auto [i, v] : llvm::enumerate(*ratios))
    if (v != 0 && v != 1 && v != 2)
      return fail(r.sub("compress_ratios") + "[" + Twine(i) + "] = " + Twine(v) +
                  ": a V4.1 layer has ratio 0 (sliding-only), 2 (encoder) or 1 (decoder)");

  auto checkIds = [&](StringRef field, const std::vector<int64_t> &ids) -> Error {
    std::set<int64_t> seen;
    for (auto [k, id] : llvm::enumerate(ids)) {
      std::string at = r.sub(field) + "[" + std::to_string(k) + "]";
      if (id < 0 || id >= n)
        return fail(at + ": layer " + Twine(id) + " is outside [0, " + Twine(n) + ")");
      if ((*ratios)[id] == 0)
        return fail(at + ": layer " + Twine(id) + " is sliding-only (compress_ratios[" +
                    Twine(id) + "] = 0)");
      if (!seen.insert(id).second)
        return fail(at + ": layer " + Twine(id) + " is listed twice");
    }
    return Error::success();
  };
  if (Error e = checkIds("kv_source_layer_ids", *kvSources))
    return e;
  if (Error e = checkIds("index_source_layer_ids", *indexSources))
    return e;
  std::set<int64_t> kv(kvSources->begin(), kvSources->end());
  std::set<int64_t> index(indexSources->begin(), indexSources->end());
  for (auto [k, id] : llvm::enumerate(*kvSources))
    if (!index.count(id))
      return fail(r.sub("kv_source_layer_ids") + "[" + Twine(k) + "]: layer " + Twine(id) +
                  " is a KV source but not in index_source_layer_ids (a Full layer computes "
                  "its own top-k)");

  c.layers.assign(n, LayerSpec{});
  for (int64_t i = 0; i < n; ++i) {
    int64_t ratio = (*ratios)[i];
    LayerRole role = ratio == 0   ? LayerRole::Sliding
                     : kv.count(i) ? LayerRole::Full
                     : index.count(i) ? LayerRole::Reindex
                                      : LayerRole::Reuse;
    c.layers[i] = {role, ratio, false};
  }
  // The decoder starts at the first ratio-1 layer.
  c.decoderStart = n;
  for (int64_t i = 0; i < n; ++i)
    if ((*ratios)[i] == 1) {
      c.decoderStart = i;
      break;
    }

  std::optional<int64_t> candidate = r.optInt("candidate_source_layer_id");
  int64_t blocks = r.optInt("candidate_topk_blocks").value_or(2048);
  int64_t blockSize = r.optInt("candidate_block_size").value_or(8);
  if (r.failed())
    return r.takeError();
  if (candidate && *candidate >= 0 && blocks > 0) {
    if (*candidate >= n)
      return fail(r.sub("candidate_source_layer_id") + ": layer " + Twine(*candidate) +
                  " is outside [0, " + Twine(n) + ")");
    if (blockSize <= 0)
      return fail(r.sub("candidate_block_size") + " must be positive, got " + Twine(blockSize));
    c.candidateSource = *candidate;
    c.candidateBlocks = blocks;
    c.candidateBlockSize = blockSize;
  }
  return Error::success();
}

Error parseStorage(Reader &r, ModelConfig &c) {
  std::string dtype = r.optString("torch_dtype").value_or(r.optString("dtype").value_or("float32"));
  WeightStorage plain;
  if (dtype == "float32" || dtype == "fp32")
    plain.kind = WeightStorage::F32;
  else if (dtype == "bfloat16" || dtype == "bf16")
    plain.kind = WeightStorage::BF16;
  else
    return fail(r.sub("torch_dtype") + ": '" + dtype + "' is not supported (float32 or bfloat16)");
  c.denseWeights = plain;
  c.expertWeights = plain;
  if (const json::Object *q = r.object("quantization_config")) {
    Reader qr(*q, r.sub("quantization_config"));
    std::string method = qr.optString("quant_method").value_or("");
    if (method != "fp8")
      qr.report("quant_method '" + method + "' is not supported (expected fp8)");
    std::string fmt = qr.optString("fmt").value_or("e4m3");
    if (fmt != "e4m3")
      qr.report("fmt '" + fmt + "' is not supported (expected e4m3)");
    std::string scale = qr.optString("scale_fmt").value_or("ue8m0");
    if (scale != "ue8m0")
      qr.report("scale_fmt '" + scale + "' is not supported (expected ue8m0)");
    auto block = qr.intList("weight_block_size", true);
    if (qr.failed())
      return qr.takeError();
    if (block->size() != 2 || (*block)[0] <= 0 || (*block)[1] <= 0)
      return fail(r.sub("quantization_config") + ": weight_block_size must be two positive sizes");
    c.denseWeights = {WeightStorage::FP8, (*block)[0], (*block)[1]};
    c.expertWeights = c.denseWeights;
  }
  if (auto expert = r.optString("expert_dtype")) {
    if (*expert == "fp4")
      c.expertWeights = {WeightStorage::MXFP4, 1, 32};
    else if (*expert != "fp8")
      return fail(r.sub("expert_dtype") + ": '" + *expert + "' is not supported (fp4 or fp8)");
  }
  return r.takeError();
}

} // namespace

Expected<ModelConfig> parseModelConfig(StringRef text, StringRef source) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    // llvm::json reports "[line:col, byte=N]: message" with a 0-based column;
    // editors and compilers count columns from 1.
    std::string msg = toString(parsed.takeError());
    std::string where = source.str();
    unsigned line = 0, column = 0;
    if (sscanf(msg.c_str(), "[%u:%u,", &line, &column) == 2) {
      size_t close = msg.find("]: ");
      if (close != std::string::npos) {
        where += ":" + std::to_string(line) + ":" + std::to_string(column + 1);
        msg = msg.substr(close + 3);
      }
    }
    return fail(where + ": malformed JSON: " + msg);
  }
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(source + ": expected a JSON object at the top level, got " + kindName(*parsed));

  ModelConfig c;
  c.source = source.str();
  Reader r(*root, c.source);
  std::string modelType = r.optString("model_type").value_or("deepseek_v4");
  if (modelType == "deepseek_v41" || r.has("kv_source_layer_ids"))
    c.family = Family::V41;
  else if (modelType == "deepseek_v4")
    c.family = Family::V4;
  else
    return fail(c.source + ": model_type '" + modelType +
                "' is not a DeepSeek-V4-family model (expected deepseek_v4 or deepseek_v41)");

  c.vocab = r.positive("vocab_size");
  c.hidden = r.positive("hidden_size");
  c.numLayers = r.positive("num_hidden_layers");
  c.numHeads = r.positive("num_attention_heads");
  c.headDim = r.positive("head_dim");
  c.qLora = r.positive("q_lora_rank");
  c.oLora = r.positive("o_lora_rank");
  c.oGroups = r.positive("o_groups");
  c.window = r.positive("sliding_window");
  c.moeInter = r.positive("moe_intermediate_size");
  c.nRouted = r.positive("n_routed_experts");
  c.topK = r.positive("num_experts_per_tok");
  c.nShared = r.nonNegative("n_shared_experts", 1);
  c.routedScale = r.number("routed_scaling_factor", 1.5);
  c.swigluLimit = r.number("swiglu_limit", 10);
  c.rmsEps = r.number("rms_norm_eps", 1e-6);
  c.hcMult = r.positive("hc_mult", 4);
  c.hcIters = r.positive("hc_sinkhorn_iters", 20);
  c.hcEps = r.number("hc_eps", 1e-6);
  c.indexHeads = r.positive("index_n_heads");
  c.indexDim = r.positive("index_head_dim");
  c.indexTopk = r.positive("index_topk");
  if (auto kv = r.optInt("num_key_value_heads"); kv && *kv != 1)
    r.report("field 'num_key_value_heads' must be 1 (one shared K = V latent), got " + Twine(*kv));
  if (auto scoring = r.optString("scoring_func"); scoring && *scoring != "sqrtsoftplus")
    r.report("scoring_func '" + *scoring + "' is not supported (V4-family routers use sqrtsoftplus)");
  std::optional<int64_t> maxPositions = r.optInt("max_position_embeddings");
  if (maxPositions && *maxPositions <= 0)
    r.report("field 'max_position_embeddings' must be positive, got " + Twine(*maxPositions));
  c.maxPositions = maxPositions.value_or(0);

  int64_t ropeDims = 64;
  if (auto d = r.optInt("qk_rope_head_dim"))
    ropeDims = *d;
  else if (r.has("partial_rotary_factor"))
    ropeDims = (int64_t)std::llround(r.number("partial_rotary_factor", 0.125) * c.headDim);
  if (r.failed())
    return r.takeError();
  if (ropeDims <= 0 || ropeDims % 2 || ropeDims > c.headDim)
    return fail(c.source + ": qk_rope_head_dim " + Twine(ropeDims) +
                " must be even, positive and at most head_dim (" + Twine(c.headDim) + ")");

  // Rope: plain `main` on sliding-only layers, `compress` (YaRN) elsewhere.
  double mainTheta = r.number("rope_theta", 10000);
  double compressTheta = r.number("compress_rope_theta", 160000);
  c.mainRope = {mainTheta, ropeDims, std::nullopt};
  c.compressRope = {compressTheta, ropeDims, std::nullopt};
  std::string ropeError;
  const json::Object *params = r.object("rope_parameters");
  const json::Object *main = params ? params->getObject("main") : nullptr;
  const json::Object *compress = params ? params->getObject("compress") : nullptr;
  if (main && compress) {
    // As transformers 5.17 writes it: per rope type, each with its own theta.
    auto dimsOf = [&](const json::Object &o) {
      if (auto f = o.getNumber("partial_rotary_factor"))
        return (int64_t)std::llround(*f * c.headDim);
      return ropeDims;
    };
    readRope(*main, c.source + ": rope_parameters.main", mainTheta, dimsOf(*main), maxPositions,
             c.mainRope, ropeError);
    readRope(*compress, c.source + ": rope_parameters.compress", compressTheta, dimsOf(*compress),
             maxPositions, c.compressRope, ropeError);
  } else if (const json::Object *scaling = params ? params : r.object("rope_scaling")) {
    // A flat dict: its YaRN keys belong to the compressed layers' rope.
    json::Object yarn = *scaling;
    yarn.erase("rope_theta");
    readRope(yarn, c.source + (params ? ": rope_parameters" : ": rope_scaling"), compressTheta,
             ropeDims, maxPositions, c.compressRope, ropeError);
  }
  if (!ropeError.empty())
    return fail(ropeError);
  if (r.failed())
    return r.takeError();

  if (Error e = c.family == Family::V4 ? parseV4Layers(r, c) : parseV41Layers(r, c))
    return std::move(e);
  if (Error e = parseStorage(r, c))
    return std::move(e);
  c.hasImageBias = c.family == Family::V41;

  // What dsf does not express yet: imported without it, and said so.
  if (auto engram = r.intList("engram_layer_ids", false); engram && !engram->empty()) {
    std::string ids;
    for (int64_t id : *engram)
      ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    c.notExpressed.push_back("engram_layer_ids [" + ids +
                             "]: Engram is not expressed yet; those layers import without it");
  }
  if (int64_t mtp = r.optInt("num_nextn_predict_layers").value_or(0); mtp > 0)
    c.notExpressed.push_back("num_nextn_predict_layers = " + std::to_string(mtp) +
                             ": the MTP/DSpark draft layers are not expressed yet");
  if (r.has("vision_config"))
    c.notExpressed.push_back("vision_config: the vision tower is not expressed yet");
  if (r.failed())
    return r.takeError();

  if (Error e = validateModelConfig(c))
    return std::move(e);
  return c;
}

Expected<ModelConfig> loadModelConfig(StringRef path) {
  SmallString<256> file(path);
  if (sys::fs::is_directory(file))
    sys::path::append(file, "config.json");
  auto buffer = MemoryBuffer::getFile(file, /*IsText=*/true);
  if (!buffer)
    return fail(file + ": cannot read: " + buffer.getError().message());
  Expected<ModelConfig> config = parseModelConfig((*buffer)->getBuffer(), file);
  if (!config)
    return config.takeError();
  // The model's name: its folder, or the file's stem for a loose file.
  StringRef base = sys::path::filename(sys::path::parent_path(file));
  if (sys::path::filename(file) != "config.json" || base.empty())
    base = sys::path::stem(file);
  std::string name;
  for (char ch : base)
    name += isAlnum(ch) ? ch : '_';
  if (name.empty() || isDigit(name[0]))
    name = "model_" + name;
  config->name = name;
  return config;
}

Error validateModelConfig(const ModelConfig &c) {
  const std::string &src = c.source;
  auto err = [&](const Twine &msg) { return fail(src + ": " + msg); };
  if (c.numHeads % c.oGroups)
    return err(formatv("num_attention_heads ({0}) does not split into o_groups ({1}) equal groups",
                       c.numHeads, c.oGroups).str());
  if (c.topK > c.nRouted)
    return err(formatv("num_experts_per_tok ({0}) is larger than n_routed_experts ({1})", c.topK,
                       c.nRouted).str());
  if ((int64_t)c.layers.size() != c.numLayers)
    return err("the layer schedule has " + Twine(c.layers.size()) + " layers but num_hidden_layers = " +
               Twine(c.numLayers));
  // Cache formats need whole quantization blocks (MODEL.md's KV formats).
  auto divisible = [&](StringRef field, int64_t width, int64_t block, StringRef cache) -> Error {
    if (width % block)
      return err(formatv("{0} ({1}) is not divisible by the {2}-element quantization block of the {3}",
                         field, width, block, cache).str());
    return Error::success();
  };
  if (c.family == Family::V41) {
    if (Error e = divisible("head_dim", c.headDim, 16, "NVFP4 compressed KV"))
      return e;
    if (Error e = divisible("head_dim", c.headDim, 32, "FP8 window"))
      return e;
  } else if (Error e = divisible("head_dim - qk_rope_head_dim", c.headDim - c.mainRope.dims, 64,
                                 "FP8 KV (rope channels kept in bf16)")) {
    return e;
  }
  if (Error e = divisible("index_head_dim", c.indexDim, 32, "MXFP4 index keys"))
    return e;

  if (c.family == Family::V4)
    return Error::success();

  // V4.1 structure: encoder (ratio 2) before decoder (ratio 1); every
  // compressed layer after a Full layer of its ratio; the candidate source a
  // decoder Full layer; top-k within the pool.
  int64_t firstDecoder = -1;
  std::set<int64_t> fullRatios;
  for (auto [i, l] : llvm::enumerate(c.layers)) {
    std::string at = "layer " + std::to_string(i) + " (" + roleLetter(l.role) + ", ratio " +
                     std::to_string(l.ratio) + ")";
    if (l.ratio == 1 && firstDecoder < 0)
      firstDecoder = i;
    if (l.ratio >= 2 && firstDecoder >= 0)
      return err(at + " follows decoder layer " + Twine(firstDecoder) +
                 ": encoder (ratio 2) layers come before decoder (ratio 1) layers");
    if (l.role == LayerRole::Full)
      fullRatios.insert(l.ratio);
    if ((l.role == LayerRole::Reindex || l.role == LayerRole::Reuse) && !fullRatios.count(l.ratio))
      return err(at + " has no KV-source (Full) layer of ratio " + Twine(l.ratio) +
                 " at or before it");
  }
  if (c.candidateSource >= 0) {
    const LayerSpec &l = c.layers[c.candidateSource];
    if (l.role != LayerRole::Full || l.ratio != 1)
      return err("candidate_source_layer_id: layer " + Twine(c.candidateSource) +
                 " is not a Full layer of the decoder (it is " + roleLetter(l.role) + ", ratio " +
                 Twine(l.ratio) + ")");
    int64_t capacity = c.candidateBlocks * c.candidateBlockSize;
    if (c.indexTopk > capacity)
      return err(formatv("index_topk ({0}) is larger than the candidate pool (candidate_topk_blocks "
                         "{1} x candidate_block_size {2} = {3} entries)",
                         c.indexTopk, c.candidateBlocks, c.candidateBlockSize, capacity).str());
  }
  return Error::success();
}

Error applySchedule(ModelConfig &c, StringRef text) {
  Expected<ParsedSchedule> parsed = parseSchedule(text);
  if (!parsed)
    return parsed.takeError();
  auto fail = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), "--schedule: " + msg);
  };
  if ((int64_t)parsed->letters.size() != c.numLayers)
    return fail("describes " + Twine(parsed->letters.size()) + " layers but " + c.source +
                " has num_hidden_layers = " + Twine(c.numLayers));
  bool v41 = c.family == Family::V41;
  if (!v41 && parsed->split >= 0)
    return fail("a deepseek_v4 model has no encoder/decoder split ('|')");
  for (auto [i, letter] : llvm::enumerate(parsed->letters)) {
    bool ok = letter == 'S' || (v41 ? StringRef("FXR").contains(letter)
                                    : StringRef("CH").contains(letter));
    if (!ok)
      return fail(formatv("column {0}: layer {1} is '{2}', but a {3} model takes {4}",
                          parsed->columns[i], i, letter, v41 ? "deepseek_v41" : "deepseek_v4",
                          v41 ? "S, F, X or R" : "S, C or H").str());
  }

  int64_t split = v41 ? (parsed->split >= 0 ? parsed->split : c.numLayers) : -1;
  for (auto [i, letter] : llvm::enumerate(parsed->letters)) {
    LayerSpec &l = c.layers[i];
    bool decoder = v41 && (int64_t)i >= split;
    switch (letter) {
    case 'S': l.role = LayerRole::Sliding; l.ratio = 0; break;
    case 'C': l.role = LayerRole::Csa; l.ratio = c.csaRatio; break;
    case 'H': l.role = LayerRole::Hca; l.ratio = c.hcaRatio; break;
    case 'F': l.role = LayerRole::Full; l.ratio = decoder ? 1 : 2; break;
    case 'X': l.role = LayerRole::Reindex; l.ratio = decoder ? 1 : 2; break;
    case 'R': l.role = LayerRole::Reuse; l.ratio = decoder ? 1 : 2; break;
    }
  }
  if (v41) {
    c.decoderStart = split;
    // The candidate pool stays on the config's source while it is still a
    // decoder Full layer; otherwise it moves to the first decoder Full layer.
    if (c.candidateSource >= 0) {
      const LayerSpec &src = c.layers[c.candidateSource];
      if (src.role != LayerRole::Full || src.ratio != 1) {
        int64_t moved = -1;
        for (int64_t i = split; i < c.numLayers && moved < 0; ++i)
          if (c.layers[i].role == LayerRole::Full)
            moved = i;
        c.notes.push_back(moved >= 0
                              ? formatv("the candidate pool moves from layer {0} to layer {1}, the "
                                        "first Full layer of the decoder in this schedule",
                                        c.candidateSource, moved).str()
                              : formatv("the candidate pool (layer {0}) is dropped: this schedule "
                                        "has no Full layer in the decoder", c.candidateSource).str());
        c.candidateSource = moved;
      }
    }
  }
  std::string source = c.source;
  c.source = "--schedule '" + text.str() + "'";
  Error e = validateModelConfig(c);
  c.source = source;
  return e;
}

} // namespace dsf
