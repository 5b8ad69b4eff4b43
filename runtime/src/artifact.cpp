//===- artifact.cpp - writing and validating .dsfa artifacts ---------------===//
#include "dsf/artifact.h"

#include <cstdlib>

#include <algorithm>
#include "file_io.h"

#include <nlohmann/json.hpp>

#include <cstring>

namespace dsf::rt {

uint64_t fnv1a64(const void *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

const EntryPoint *Manifest::entry(const std::string &name) const {
  for (const EntryPoint &e : entryPoints)
    if (e.name == name)
      return &e;
  return nullptr;
}

namespace {
using nlohmann::json;

json specToJson(const TensorSpec &t) { return {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}}; }

/// Schema checking with the path of the field at fault in every message.
struct Reader {
  std::string &error;
  static std::string path(const std::string &where, const char *key) {
    return where.empty() ? std::string(key) : where + "." + key;
  }
  bool fail(const std::string &where, const std::string &what) {
    if (error.empty())
      error = "manifest: " + where + ": " + what;
    return false;
  }
  bool string(const json &j, const char *key, const std::string &where, std::string &out, bool required = true) {
    auto it = j.find(key);
    if (it == j.end())
      return required ? fail(path(where, key), "missing") : true;
    if (!it->is_string())
      return fail(path(where, key), "expected a string");
    out = it->get<std::string>();
    return true;
  }
  bool integer(const json &j, const char *key, const std::string &where, int64_t &out, bool required = true) {
    auto it = j.find(key);
    if (it == j.end())
      return required ? fail(path(where, key), "missing") : true;
    if (!it->is_number_integer())
      return fail(path(where, key), "expected an integer");
    out = it->get<int64_t>();
    return true;
  }
  bool shape(const json &j, const std::string &where, std::vector<int64_t> &out) {
    auto it = j.find("shape");
    if (it == j.end() || !it->is_array())
      return fail(where + ".shape", "expected an array of integers");
    for (const json &d : *it) {
      if (!d.is_number_integer() || d.get<int64_t>() < -1)
        return fail(where + ".shape", "expected integers >= -1 (-1: the token axis)");
      out.push_back(d.get<int64_t>());
    }
    return true;
  }
  bool dtype(const std::string &value, const std::string &where) {
    if (value == "f32" || value == "i32" || value == "i1" || value == "u8")
      return true;
    return fail(where + ".dtype", "unknown dtype '" + value + "' (expected f32, i32, i1 or u8)");
  }
  /// A weight may also be bound as bf16, or packed as the checkpoint's
  /// MXFP4 codes and UE8M0 scales (dsf-to-linalg's weight-storage).
  bool weightDtype(const std::string &value, const std::string &where) {
    if (value == "f32" || value == "bf16" || value == "i32" || value == "e2m1x2" || value == "e4m3" ||
        value == "ue8m0")
      return true;
    return fail(where + ".dtype", "unknown weight dtype '" + value + "' (expected f32, bf16, i32, e2m1x2, e4m3 or ue8m0)");
  }
  bool tensor(const json &j, const std::string &where, TensorSpec &out) {
    if (!j.is_object())
      return fail(where, "expected an object");
    return string(j, "name", where, out.name) && string(j, "dtype", where, out.dtype) &&
           dtype(out.dtype, where) && shape(j, where, out.shape);
  }
  bool tensors(const json &j, const char *key, const std::string &where, std::vector<TensorSpec> &out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array())
      return fail(where + "." + key, "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      TensorSpec t;
      if (!tensor((*it)[i], where + "." + key + "[" + std::to_string(i) + "]", t))
        return false;
      out.push_back(std::move(t));
    }
    return true;
  }
};
} // namespace

std::string manifestToJson(const Manifest &m) {
  json entries = json::array();
  for (const EntryPoint &e : m.entryPoints) {
    json inputs = json::array(), outputs = json::array(), weights = json::array();
    for (const TensorSpec &t : e.inputs)
      inputs.push_back(specToJson(t));
    for (const TensorSpec &t : e.outputs)
      outputs.push_back(specToJson(t));
    for (const WeightSpec &w : e.weights) {
      json jw = {{"name", w.name}, {"dtype", w.dtype}, {"shape", w.shape}};
      if (!w.expertNames.empty())
        jw["expert_names"] = w.expertNames;
      weights.push_back(jw);
    }
    entries.push_back({{"name", e.name}, {"symbol", e.symbol}, {"inputs", inputs}, {"outputs", outputs},
                       {"weights", weights}});
  }
  json plan = json::array();
  for (const CachePlanEntry &c : m.cachePlan)
    plan.push_back({{"what", c.what}, {"ratio", c.ratio}, {"width", c.width}, {"format", c.format},
                    {"live", c.live}, {"idle", c.idle}, {"ttl_seconds", c.ttlSeconds}, {"layers", c.layers}});
  json state = json::array();
  for (const StateSlot &t : m.state)
    state.push_back({{"name", t.name}, {"kind", t.kind}, {"ratio", t.ratio}, {"width", t.width},
                     {"window_size", t.windowSize}, {"element", t.element}, {"scale", t.scale},
                     {"block", t.block}, {"bf16_tail", t.bf16Tail}});
  json j = {{"model", m.model},           {"family", m.family},       {"target", m.target},
            {"vocab_size", m.vocabSize},  {"max_positions", m.maxPositions},
            {"prefill", m.prefillMode},   {"kv_quant", m.kvQuant},    {"entry_points", entries},
            {"cache_plan", plan},         {"state", state}};
  return j.dump(1);
}

bool manifestFromJson(const std::string &text, Manifest &m, std::string &error) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  Reader r{error};
  if (j.is_discarded() || !j.is_object())
    return r.fail("(root)", "not a JSON object");
  if (!r.string(j, "model", "", m.model) || !r.string(j, "family", "", m.family) ||
      !r.string(j, "target", "", m.target) || !r.integer(j, "vocab_size", "", m.vocabSize) ||
      !r.integer(j, "max_positions", "", m.maxPositions) || !r.string(j, "prefill", "", m.prefillMode))
    return false;
  if (m.vocabSize <= 0)
    return r.fail("vocab_size", "must be positive");
  if (m.maxPositions <= 0)
    return r.fail("max_positions", "must be positive");
  auto kv = j.find("kv_quant");
  if (kv == j.end() || !kv->is_boolean())
    return r.fail("kv_quant", "expected true or false");
  m.kvQuant = kv->get<bool>();
  auto entries = j.find("entry_points");
  if (entries == j.end() || !entries->is_array() || entries->empty())
    return r.fail("entry_points", "expected a non-empty array");
  for (size_t i = 0; i < entries->size(); ++i) {
    const json &je = (*entries)[i];
    std::string where = "entry_points[" + std::to_string(i) + "]";
    if (!je.is_object())
      return r.fail(where, "expected an object");
    EntryPoint e;
    if (!r.string(je, "name", where, e.name) || !r.string(je, "symbol", where, e.symbol) ||
        !r.tensors(je, "inputs", where, e.inputs) || !r.tensors(je, "outputs", where, e.outputs))
      return false;
    if (e.outputs.empty() || e.outputs[0].name != "logits")
      return r.fail(where + ".outputs", "expected the logits first");
    for (size_t k = 1; k < e.outputs.size(); ++k)
      if (e.outputs[k].name.rfind("state:", 0) != 0 || e.outputs[k].dtype != "f32" || e.outputs[k].shape.size() != 2)
        return r.fail(where + ".outputs[" + std::to_string(k) + "]",
                      "expected a sequence state \"state:NAME\" of f32 rows [rows, width]");
    bool batched = false;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      const TensorSpec &in = e.inputs[k];
      std::string inWhere = where + ".inputs[" + std::to_string(k) + "]";
      if (in.name.rfind("state:", 0) == 0 &&
          std::none_of(e.outputs.begin(), e.outputs.end(), [&](const TensorSpec &o) { return o.name == in.name; }))
        return r.fail(inWhere, "state '" + in.name + "' is taken but not returned");
      // A batched decode step: its state's slots, updated in place, and
      // the page tables of its caches.
      if (in.name.rfind("slots:", 0) == 0) {
        batched = true;
        if ((in.dtype != "f32" && in.dtype != "u8") || in.shape.size() != 3 || in.shape[1] < 1 || in.shape[2] < 1)
          return r.fail(inWhere, "expected slots \"slots:NAME\" of f32 [slots, rows, width] or, packed, u8 "
                                 "[pages, entries, row bytes]");
      } else if (in.name.rfind("pages:", 0) == 0) {
        char *end = nullptr;
        long ratio = std::strtol(in.name.c_str() + 6, &end, 10);
        if (ratio < 1 || *end || in.dtype != "i32" || in.shape.size() != 2)
          return r.fail(inWhere, "expected a page table \"pages:RATIO\" of i32 [slots, pages]");
      }
    }
    if (batched && e.outputs.size() != 1)
      return r.fail(where + ".outputs", "a batched step updates its slots in place and returns the logits alone");
    auto weights = je.find("weights");
    if (weights == je.end() || !weights->is_array())
      return r.fail(where + ".weights", "expected an array");
    for (size_t k = 0; k < weights->size(); ++k) {
      const json &jw = (*weights)[k];
      std::string wwhere = where + ".weights[" + std::to_string(k) + "]";
      WeightSpec w;
      if (!jw.is_object())
        return r.fail(wwhere, "expected an object");
      if (!r.string(jw, "name", wwhere, w.name) || !r.string(jw, "dtype", wwhere, w.dtype) ||
          !r.weightDtype(w.dtype, wwhere) || !r.shape(jw, wwhere, w.shape) ||
          !r.string(jw, "expert_names", wwhere, w.expertNames, /*required=*/false))
        return false;
      for (int64_t d : w.shape)
        if (d < 0)
          return r.fail(wwhere + ".shape", "weights have static shapes");
      if (!w.expertNames.empty() && w.expertNames.find("{e}") == std::string::npos)
        return r.fail(wwhere + ".expert_names", "expected a pattern containing {e}");
      e.weights.push_back(std::move(w));
    }
    m.entryPoints.push_back(std::move(e));
  }
  auto plan = j.find("cache_plan");
  if (plan == j.end() || !plan->is_array())
    return r.fail("cache_plan", "expected an array");
  for (size_t i = 0; i < plan->size(); ++i) {
    const json &jc = (*plan)[i];
    std::string where = "cache_plan[" + std::to_string(i) + "]";
    CachePlanEntry c;
    if (!jc.is_object())
      return r.fail(where, "expected an object");
    if (!r.string(jc, "what", where, c.what) || !r.integer(jc, "ratio", where, c.ratio) ||
        !r.integer(jc, "width", where, c.width) || !r.string(jc, "format", where, c.format) ||
        !r.string(jc, "live", where, c.live) || !r.string(jc, "idle", where, c.idle) ||
        !r.integer(jc, "ttl_seconds", where, c.ttlSeconds) || !r.integer(jc, "layers", where, c.layers))
      return false;
    m.cachePlan.push_back(std::move(c));
  }
  auto state = j.find("state");
  if (state == j.end() || !state->is_array())
    return r.fail("state", "expected an array");
  for (size_t i = 0; i < state->size(); ++i) {
    const json &js = (*state)[i];
    std::string where = "state[" + std::to_string(i) + "]";
    StateSlot t;
    if (!js.is_object())
      return r.fail(where, "expected an object");
    if (!r.string(js, "name", where, t.name) || !r.string(js, "kind", where, t.kind) ||
        !r.integer(js, "ratio", where, t.ratio) || !r.integer(js, "width", where, t.width) ||
        !r.integer(js, "window_size", where, t.windowSize) || !r.string(js, "element", where, t.element) ||
        !r.string(js, "scale", where, t.scale) || !r.integer(js, "block", where, t.block) ||
        !r.integer(js, "bf16_tail", where, t.bf16Tail))
      return false;
    if (t.kind != "window" && t.kind != "kv" && t.kind != "index_keys" && t.kind != "carry")
      return r.fail(where + ".kind", "expected window, kv, index_keys or carry, got '" + t.kind + "'");
    if (t.width < 1 || (t.kind == "window" && t.windowSize < 1) ||
        ((t.kind == "kv" || t.kind == "index_keys") && t.ratio < 1))
      return r.fail(where, "expected a positive width, window size (windows) and ratio (caches)");
    m.state.push_back(std::move(t));
  }
  // Every state an entry point takes or returns is described.
  for (const EntryPoint &e : m.entryPoints)
    for (const auto *list : {&e.inputs, &e.outputs})
      for (const TensorSpec &t : *list) {
        if ((t.name.rfind("state:", 0) == 0 || t.name.rfind("slots:", 0) == 0) && !m.slot(t.name.substr(6)))
          return r.fail("state", "entry point '" + e.name + "' uses state '" + t.name.substr(6) +
                                     "', which is not described");
        // Packed pages hold the rows of the state's format, nothing else.
        RowFormat f;
        const StateSlot *slot = t.name.rfind("slots:", 0) == 0 ? m.slot(t.name.substr(6)) : nullptr;
        if (slot && t.dtype == "u8" &&
            (!rowFormatOf(*slot, f) || (slot->kind != "kv" && slot->kind != "index_keys") ||
             t.shape.back() != packedRowBytes(f, slot->width)))
          return r.fail("state", "entry point '" + e.name + "' holds state '" + slot->name + "' as rows of " +
                                     std::to_string(t.shape.back()) + " bytes, which are not the packed rows of its " +
                                     slot->kind + " (" + slot->element + " with " + slot->scale + " scales per " +
                                     std::to_string(slot->block) + ", width " + std::to_string(slot->width) + ")");
      }
  return true;
}

bool rowFormatOf(const StateSlot &slot, RowFormat &f) {
  if (slot.bf16Tail != 0)
    return false;
  if (slot.element == "e4m3" && slot.scale == "ue8m0" && slot.block == 32)
    f = RowFormat::FP8;
  else if (slot.element == "e2m1" && slot.scale == "ue8m0" && slot.block == 32)
    f = RowFormat::MXFP4;
  else if (slot.element == "e2m1" && slot.scale == "e4m3" && slot.block == 16)
    f = RowFormat::NVFP4;
  else
    return false;
  return slot.width % slot.block == 0;
}

const StateSlot *Manifest::slot(const std::string &name) const {
  for (const StateSlot &t : state)
    if (t.name == name)
      return &t;
  return nullptr;
}

namespace {
constexpr size_t kHeaderFixed = 16, kTableEntry = 32;

void put32(std::string &s, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s.push_back(char((v >> (8 * i)) & 0xff));
}
void put64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s.push_back(char((v >> (8 * i)) & 0xff));
}
uint32_t get32(const char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}
uint64_t get64(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}
} // namespace

bool writeArtifact(const std::string &path, const std::vector<Section> &sections, std::string &error) {
  std::string header(kArtifactMagic, sizeof(kArtifactMagic));
  put32(header, kArtifactVersion);
  put32(header, uint32_t(sections.size()));
  uint64_t offset = kHeaderFixed + kTableEntry * sections.size() + 8;
  for (const Section &s : sections) {
    put32(header, uint32_t(s.kind));
    put32(header, 0);
    put64(header, offset);
    put64(header, s.bytes.size());
    put64(header, fnv1a64(s.bytes.data(), s.bytes.size()));
    offset += s.bytes.size();
  }
  put64(header, fnv1a64(header.data(), header.size()));
  std::vector<std::pair<const void *, size_t>> chunks{{header.data(), header.size()}};
  for (const Section &s : sections)
    chunks.push_back({s.bytes.data(), s.bytes.size()});
  return writeFileAtomically(path, chunks, error);
}

const std::string *Artifact::section(SectionKind kind) const {
  auto it = sections_.find(kind);
  return it == sections_.end() ? nullptr : &it->second;
}

std::unique_ptr<Artifact> Artifact::open(const std::string &path, std::string &error) {
  std::string bytes;
  if (!readWholeFile(path, bytes, error))
    return nullptr;
  auto fail = [&](const std::string &what) {
    error = path + ": " + what;
    return nullptr;
  };
  if (bytes.size() < kHeaderFixed || std::memcmp(bytes.data(), kArtifactMagic, sizeof(kArtifactMagic)) != 0)
    return fail("not a dsf artifact (bad magic)");
  uint32_t version = get32(bytes.data() + 8);
  if (version != kArtifactVersion)
    return fail("artifact format version " + std::to_string(version) + ", this runtime reads version " +
                std::to_string(kArtifactVersion) + " (recompile the model with this dsf)");
  uint32_t count = get32(bytes.data() + 12);
  if (count > 64)
    return fail("corrupt header (" + std::to_string(count) + " sections)");
  size_t tableEnd = kHeaderFixed + kTableEntry * count;
  if (bytes.size() < tableEnd + 8)
    return fail("truncated header");
  if (fnv1a64(bytes.data(), tableEnd) != get64(bytes.data() + tableEnd))
    return fail("header checksum mismatch (corrupted file)");
  auto artifact = std::unique_ptr<Artifact>(new Artifact());
  artifact->path_ = path;
  for (uint32_t i = 0; i < count; ++i) {
    const char *e = bytes.data() + kHeaderFixed + kTableEntry * i;
    auto kind = SectionKind(get32(e));
    uint64_t offset = get64(e + 8), size = get64(e + 16), sum = get64(e + 24);
    std::string name = "section " + std::to_string(i);
    if (offset > bytes.size() || size > bytes.size() - offset)
      return fail(name + " runs past the end of the file (truncated?)");
    if (fnv1a64(bytes.data() + offset, size) != sum)
      return fail(name + " checksum mismatch (corrupted file)");
    if (kind != SectionKind::Manifest && kind != SectionKind::HostKernels)
      return fail(name + ": unknown kind " + std::to_string(uint32_t(kind)));
    if (!artifact->sections_.emplace(kind, bytes.substr(offset, size)).second)
      return fail(name + ": duplicate section kind");
  }
  const std::string *manifest = artifact->section(SectionKind::Manifest);
  if (!manifest)
    return fail("no manifest section");
  std::string manifestError;
  if (!manifestFromJson(*manifest, artifact->manifest_, manifestError))
    return fail(manifestError);
  return artifact;
}

} // namespace dsf::rt
