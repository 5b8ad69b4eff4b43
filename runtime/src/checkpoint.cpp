//===- checkpoint.cpp - reading a weight under any name and format it has --===//
#include "dsf/checkpoint.h"
#include "dsf/codecs.h"

#include <cstring>
#include <utility>

namespace dsf::rt {

namespace {
bool startsWith(const std::string &s, const std::string &prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

/// The released layer-relative names and transformers' (DeepseekV4 in 5.17).
const std::pair<const char *, const char *> kLayerNames[] = {
    {"hc_attn_fn", "attn_hc.fn"},
    {"hc_attn_base", "attn_hc.base"},
    {"hc_attn_scale", "attn_hc.scale"},
    {"hc_ffn_fn", "ffn_hc.fn"},
    {"hc_ffn_base", "ffn_hc.base"},
    {"hc_ffn_scale", "ffn_hc.scale"},
    {"attn_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"attn.wq_a.weight", "self_attn.q_a_proj.weight"},
    {"attn.q_norm.weight", "self_attn.q_a_norm.weight"},
    {"attn.wq_b.weight", "self_attn.q_b_proj.weight"},
    {"attn.wkv.weight", "self_attn.kv_proj.weight"},
    {"attn.kv_norm.weight", "self_attn.kv_norm.weight"},
    {"attn.attn_sink", "self_attn.sinks"},
    {"attn.wo_a.weight", "self_attn.o_a_proj.weight"},
    {"attn.wo_b.weight", "self_attn.o_b_proj.weight"},
    {"attn.indexer.wq_b.weight", "self_attn.compressor.indexer.q_b_proj.weight"},
    {"attn.indexer.weights_proj.weight", "self_attn.compressor.indexer.scorer.weights_proj.weight"},
    {"ffn.gate.weight", "mlp.gate.weight"},
    {"ffn.gate.bias", "mlp.gate.e_score_correction_bias"},
    {"ffn.gate.tid2eid", "mlp.gate.tid2eid"},
    {"ffn.shared_experts.w1.weight", "mlp.shared_experts.gate_proj.weight"},
    {"ffn.shared_experts.w2.weight", "mlp.shared_experts.down_proj.weight"},
    {"ffn.shared_experts.w3.weight", "mlp.shared_experts.up_proj.weight"},
};
const std::pair<const char *, const char *> kCompressorNames[] = {
    {"wkv.weight", "kv_proj.weight"},
    {"wgate.weight", "gate_proj.weight"},
    {"ape", "position_bias"},
    {"norm.weight", "kv_norm.weight"},
};

/// A checkpoint tensor's values as f32 and its logical shape: plain, or
/// dequantized from NAME + NAME.scale.
bool readValues(const WeightSource &weights, const TensorView &t, std::vector<float> &values,
                std::vector<int64_t> &shape, std::set<std::string> &consumed, std::string &error) {
  const TensorView *s = weights.find(t.name + ".scale");
  consumed.insert(t.name);
  if (!s) {
    shape = t.shape;
    if (!readAsFloat(t, values, error)) {
      error = weights.origin(t.name) + ": tensor '" + t.name + "': " + error;
      return false;
    }
    return true;
  }
  consumed.insert(s->name);
  auto bad = [&](const std::string &why) {
    error = weights.origin(t.name) + ": tensor '" + t.name + "' " + shapeString(t.shape) + " " + dtypeName(t.dtype) +
            " with scales " + shapeString(s->shape) + " " + dtypeName(s->dtype) + ": " + why;
    return false;
  };
  if (t.shape.empty() || s->shape.size() != t.shape.size())
    return bad("the scales must have the tensor's rank");
  int64_t rank = int64_t(t.shape.size());
  shape = t.shape;
  auto count = [](const std::vector<int64_t> &v) {
    int64_t n = 1;
    for (int64_t d : v)
      n *= d;
    return n;
  };
  // Axes before the last two (or, for row scales, before the last) match.
  auto leadingMatch = [&](int64_t upTo) {
    for (int64_t i = 0; i < upTo; ++i)
      if (s->shape[size_t(i)] != t.shape[size_t(i)])
        return false;
    return true;
  };
  int64_t cols = t.shape.back(), scaleCols = s->shape.back();
  if (t.dtype == DType::F8_E4M3) {
    int64_t rows = rank >= 2 ? t.shape[size_t(rank - 2)] : 1, scaleRows = rank >= 2 ? s->shape[size_t(rank - 2)] : 1;
    int64_t outer = count(t.shape) / (rows * cols);
    values.resize(size_t(count(t.shape)));
    bool rowScaled = scaleRows == rows && cols % 32 == 0 && scaleCols == cols / 32;
    if (!leadingMatch(rank - 2))
      return bad("the scales' leading axes must be the tensor's");
    if (!rowScaled) {
      // 2-D blocks: the square block size that gives the scales' shape.
      for (int64_t block : {128, 32})
        if ((rows + block - 1) / block == scaleRows && (cols + block - 1) / block == scaleCols) {
          if (s->dtype != DType::F8_E8M0 && s->dtype != DType::U8)
            return bad("FP8 block scales are UE8M0 bytes");
          for (int64_t o = 0; o < outer; ++o)
            dequantizeFp8Blocks(t.data + o * rows * cols, s->data + o * scaleRows * scaleCols, rows, cols, block, block,
                                values.data() + o * rows * cols);
          return true;
        }
      return bad("no 128x128 or 32x32 blocks give these scales");
    }
    dequantizeRows(t.data, s->data, count(t.shape) / cols, cols, RowFormat::FP8, values.data());
    return true;
  }
  if (t.dtype == DType::U8 || t.dtype == DType::I8) {
    // FP4: two E2M1 a byte; UE8M0 per 32 (MXFP4) or E4M3 per 16 (NVFP4).
    RowFormat format = s->dtype == DType::F8_E4M3 ? RowFormat::NVFP4 : RowFormat::MXFP4;
    int64_t full = cols * 2, block = blockOf(format);
    if (!leadingMatch(rank - 1) || full % block || scaleCols != full / block)
      return bad(std::string(rowFormatName(format)) + " rows take one scale per " + std::to_string(block) + " values");
    shape.back() = full;
    values.resize(size_t(count(shape)));
    dequantizeRows(t.data, s->data, count(shape) / full, full, format, values.data());
    return true;
  }
  return bad("quantized codes are F8_E4M3 (FP8) or U8 (two FP4 a byte)");
}

/// Copies part `part` of `parts` along `axis` of `values` (shape `shape`).
std::vector<float> slicePart(const std::vector<float> &values, const std::vector<int64_t> &shape, int axis, int part,
                             int parts) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i)
    outer *= shape[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < shape.size(); ++i)
    inner *= shape[i];
  int64_t along = shape[size_t(axis)], piece = along / parts;
  std::vector<float> out(size_t(outer * piece * inner));
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.data() + o * piece * inner, values.data() + (o * along + part * piece) * inner,
                size_t(piece * inner) * sizeof(float));
  return out;
}

bool toInt32(const WeightSource &weights, const TensorView &t, std::vector<int32_t> &out, size_t at, std::string &error) {
  size_t n = size_t(t.elements());
  auto fail = [&](const std::string &why) {
    error = weights.origin(t.name) + ": weight '" + t.name + "': " + why;
    return false;
  };
  if (t.dtype == DType::I32) {
    std::memcpy(out.data() + at, t.data, n * 4);
    return true;
  }
  if (t.dtype != DType::I64)
    return fail(std::string("dtype ") + dtypeName(t.dtype) + " cannot be read as i32");
  for (size_t i = 0; i < n; ++i) {
    int64_t v;
    std::memcpy(&v, t.data + 8 * i, 8);
    if (v < INT32_MIN || v > INT32_MAX)
      return fail("value " + std::to_string(v) + " does not fit i32");
    out[at + i] = int32_t(v);
  }
  return true;
}
} // namespace

std::optional<HfName> hfNameOf(const std::string &released) {
  if (released == "embed.weight")
    return HfName{"model.embed_tokens.weight"};
  if (released == "head.weight")
    return HfName{"lm_head.weight"};
  if (released == "norm.weight")
    return HfName{"model.norm.weight"};
  for (const char *p : {"fn", "base", "scale"})
    if (released == std::string("hc_head_") + p)
      return HfName{std::string("model.hc_head.hc_") + p};
  if (!startsWith(released, "layers."))
    return std::nullopt;
  size_t dot = released.find('.', 7);
  if (dot == std::string::npos)
    return std::nullopt;
  std::string layer = "model." + released.substr(0, dot + 1), rest = released.substr(dot + 1);
  for (const auto &[ours, theirs] : kLayerNames)
    if (rest == ours)
      return HfName{layer + theirs};
  for (const auto &[prefix, hfPrefix] : {std::pair<std::string, std::string>{"attn.indexer.compressor.", "self_attn.compressor.indexer."},
                                         {"attn.compressor.", "self_attn.compressor."}})
    if (startsWith(rest, prefix))
      for (const auto &[ours, theirs] : kCompressorNames)
        if (rest.substr(prefix.size()) == ours)
          return HfName{layer + hfPrefix + theirs};
  if (rest == "ffn.experts.w1.weight")
    return HfName{layer + "mlp.experts.gate_up_proj", 1, 0, 2};
  if (rest == "ffn.experts.w3.weight")
    return HfName{layer + "mlp.experts.gate_up_proj", 1, 1, 2};
  if (rest == "ffn.experts.w2.weight")
    return HfName{layer + "mlp.experts.down_proj"};
  return std::nullopt;
}

bool readWeight(const WeightSource &weights, const WeightSpec &w, std::vector<float> &f32, std::vector<int32_t> &i32,
                std::set<std::string> &consumed, std::string &error) {
  int64_t elements = 1;
  for (int64_t d : w.shape)
    elements *= d;
  bool integral = w.dtype == "i32";
  (integral ? i32.assign(size_t(elements), 0) : f32.assign(size_t(elements), 0.0f));
  auto misshaped = [&](const std::string &name, const std::vector<int64_t> &want, const std::vector<int64_t> &found,
                       const std::string &note) {
    error = weights.origin(name) + ": weight '" + name + "'" + note + ": expected shape " + shapeString(want) +
            ", found " + shapeString(found);
    return false;
  };
  // One tensor into [at, at + its size), plain or quantized.
  auto readInto = [&](const TensorView &t, const std::vector<int64_t> &want, size_t at, const std::string &note) {
    if (integral) {
      if (t.shape != want)
        return misshaped(t.name, want, t.shape, note);
      consumed.insert(t.name);
      return toInt32(weights, t, i32, at, error);
    }
    std::vector<float> values;
    std::vector<int64_t> shape;
    if (!readValues(weights, t, values, shape, consumed, error))
      return false;
    if (shape != want)
      return misshaped(t.name, want, shape, note);
    std::memcpy(f32.data() + at, values.data(), values.size() * sizeof(float));
    return true;
  };

  if (const TensorView *whole = weights.find(w.name))
    return readInto(*whole, w.shape, 0, "");
  if (!w.expertNames.empty()) {
    auto expertName = [&](int64_t e) {
      std::string name = w.expertNames;
      return name.replace(name.find("{e}"), 3, std::to_string(e));
    };
    if (weights.find(expertName(0))) {
      std::vector<int64_t> one(w.shape.begin() + 1, w.shape.end());
      size_t per = size_t(elements / w.shape[0]);
      for (int64_t e = 0; e < w.shape[0]; ++e) {
        const TensorView *t = weights.find(expertName(e));
        if (!t) {
          error = "weight '" + expertName(e) + "' (" + shapeString(one) + ", expert " + std::to_string(e) + " of '" +
                  w.name + "') is missing from the checkpoint";
          return false;
        }
        if (!readInto(*t, one, size_t(e) * per, ""))
          return false;
      }
      return true;
    }
  }
  std::optional<HfName> hf = hfNameOf(w.name);
  const TensorView *t = hf ? weights.find(hf->name) : nullptr;
  if (!t) {
    error = "weight '" + w.name + "' (" + shapeString(w.shape) + ") is missing from the checkpoint" +
            (hf ? " (also under transformers' name '" + hf->name + "')" : std::string());
    return false;
  }
  std::string note = " (for '" + w.name + "')";
  if (hf->parts == 1)
    return readInto(*t, w.shape, 0, note);
  // A part of a fused tensor: read it all, keep the slice.
  std::vector<float> values;
  std::vector<int64_t> shape;
  if (!readValues(weights, *t, values, shape, consumed, error))
    return false;
  std::vector<int64_t> want = w.shape;
  want[size_t(hf->axis)] *= hf->parts;
  if (shape != want)
    return misshaped(t->name, want, shape, note);
  f32 = slicePart(values, shape, hf->axis, hf->part, hf->parts);
  return true;
}

bool isPackedWeight(const WeightSpec &spec) {
  return spec.dtype == "e2m1x2" || spec.dtype == "e4m3" || spec.dtype == "ue8m0";
}

bool readPackedWeight(const WeightSource &weights, const WeightSpec &w, std::vector<uint8_t> &bytes,
                      std::set<std::string> &consumed, std::string &error) {
  const bool scales = w.dtype == "ue8m0";
  const std::string suffix = ".scale";
  // The codes' name: the weight's, or its scales' without the suffix.
  std::string base = w.name;
  if (scales) {
    if (base.size() <= suffix.size() || base.compare(base.size() - suffix.size(), suffix.size(), suffix) != 0) {
      error = "weight '" + w.name + "': UE8M0 scales of a packed weight must be named NAME.scale";
      return false;
    }
    base.resize(base.size() - suffix.size());
  }
  if (w.shape.empty() || (!w.expertNames.empty() && w.shape.size() < 2)) {
    error = "weight '" + w.name + "': a packed weight needs a shape of at least " +
            std::string(w.expertNames.empty() ? "one axis" : "two axes (experts, then one expert's)");
    return false;
  }
  size_t total = 1;
  for (int64_t d : w.shape)
    total *= size_t(d);
  bytes.assign(total, 0);
  // One checkpoint tensor (the codes' name) into [at, at + its bytes): the
  // codes (MXFP4 U8 / I8, or FP8 F8_E4M3) with their UE8M0 scales beside
  // them, as the artifact expects.
  auto readInto = [&](const std::string &codesName, const std::vector<int64_t> &want, size_t at) {
    const TensorView *codes = weights.find(codesName);
    const TensorView *scale = weights.find(codesName + suffix);
    std::string what = "weight '" + w.name + "' (bound packed: --weight-storage=released)";
    // The codes' format: the spec's, or for its scales the checkpoint's.
    const bool fp8 = scales ? codes->dtype == DType::F8_E4M3 : w.dtype == "e4m3";
    if (fp8 ? codes->dtype != DType::F8_E4M3 : codes->dtype != DType::U8 && codes->dtype != DType::I8) {
      error = weights.origin(codesName) + ": " + what + ": the checkpoint holds '" + codesName + "' as " +
              dtypeName(codes->dtype) + ", not " + (fp8 ? "FP8 codes (F8_E4M3)" : "MXFP4 codes (U8)") +
              "; build with --weight-storage=declared";
      return false;
    }
    if (!scale || (scale->dtype != DType::U8 && scale->dtype != DType::F8_E8M0)) {
      error = weights.origin(codesName) + ": " + what + ": '" + codesName + "' needs UE8M0 scales '" + codesName +
              suffix + "' (U8 or F8_E8M0)" + (scale ? std::string(", found ") + dtypeName(scale->dtype) : ", missing");
      return false;
    }
    const TensorView &t = scales ? *scale : *codes;
    std::vector<int64_t> other = scales ? codes->shape : scale->shape;
    // MXFP4's scales take one byte a 32 codes' 16 bytes. FP8's cover 2-D
    // blocks the compiler chose from the config: each of the two specs
    // (codes and scales) checks its own shape, the pair only their rank.
    if (fp8 && (t.shape != want || other.size() != want.size())) {
      error = weights.origin(codesName) + ": " + what + ": expected " + (scales ? "scales " : "codes ") +
              shapeString(want) + " of rank " + std::to_string(want.size()) + " with " +
              (scales ? "codes" : "scales") + " of that rank, found codes " + shapeString(codes->shape) +
              " and scales " + shapeString(scale->shape);
      return false;
    }
    std::vector<int64_t> pair = want;
    if (fp8)
      pair = other;
    else
      pair.back() = scales ? want.back() * 16 : want.back() / 16;
    if (t.shape != want || other != pair) {
      error = weights.origin(codesName) + ": " + what + ": expected codes " +
              shapeString(scales ? pair : want) + " and scales " + shapeString(scales ? want : pair) + ", found " +
              shapeString(codes->shape) + " and " + shapeString(scale->shape);
      return false;
    }
    std::memcpy(bytes.data() + at, t.data, t.bytes);
    consumed.insert(codesName);
    consumed.insert(codesName + suffix);
    return true;
  };
  if (weights.find(base))
    return readInto(base, w.shape, 0);
  if (!w.expertNames.empty()) {
    auto expertName = [&](int64_t e) {
      std::string name = w.expertNames;
      return name.replace(name.find("{e}"), 3, std::to_string(e));
    };
    std::vector<int64_t> one(w.shape.begin() + 1, w.shape.end());
    size_t per = total / size_t(w.shape[0]);
    for (int64_t e = 0; e < w.shape[0]; ++e) {
      if (!weights.find(expertName(e))) {
        error = "weight '" + expertName(e) + "' (expert " + std::to_string(e) + " of '" + base +
                "', bound packed) is missing from the checkpoint";
        return false;
      }
      if (!readInto(expertName(e), one, size_t(e) * per))
        return false;
    }
    return true;
  }
  error = "weight '" + base + "' (bound packed: --weight-storage=released) is missing from the checkpoint" +
          std::string(hfNameOf(base) ? " (a transformers checkpoint's fused experts are read decoded: build with "
                                       "--weight-storage=declared)"
                                     : "");
  return false;
}

} // namespace dsf::rt
