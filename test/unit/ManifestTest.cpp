//===- ManifestTest.cpp - the artifact manifest's schema checks ------------===//
#include "dsf/artifact.h"

#include <gtest/gtest.h>

using namespace dsf::rt;

namespace {
Manifest sample() {
  Manifest m;
  m.model = "tiny";
  m.family = "deepseek_v41";
  m.target = "cpu-x86_64";
  m.vocabSize = 512;
  m.maxPositions = 4096;
  m.prefillMode = "full";
  EntryPoint e;
  e.name = "prefill";
  e.symbol = "dsf_entry_prefill";
  e.inputs = {{"token_ids", "i32", {-1}}};
  e.outputs = {{"logits", "f32", {-1, 512}}};
  e.weights = {{"embed.weight", "f32", {512, 128}, ""},
               {"layers.0.ffn.experts.w1.weight", "f32", {8, 64, 128}, "layers.0.ffn.experts.{e}.w1.weight"}};
  m.entryPoints = {e};
  m.cachePlan = {{"kv", 2, 128, "#dsf.quant<f32>", "device", "ssd", 14400, 2}};
  return m;
}

/// `json` with the `occurrence`-th `from` replaced by `to` fails with `message`.
void expectRejectedJson(std::string json, const std::string &from, const std::string &to, const std::string &message,
                        size_t occurrence = 0) {
  size_t at = json.find(from);
  for (size_t i = 0; i < occurrence && at != std::string::npos; ++i)
    at = json.find(from, at + 1);
  ASSERT_NE(at, std::string::npos) << from;
  json.replace(at, from.size(), to);
  Manifest m;
  std::string error;
  EXPECT_FALSE(manifestFromJson(json, m, error));
  EXPECT_EQ(error, message);
}

/// The sample manifest with `from` replaced by `to` fails with `message`.
void expectRejected(const std::string &from, const std::string &to, const std::string &message) {
  expectRejectedJson(manifestToJson(sample()), from, to, message);
}
} // namespace

TEST(Manifest, RoundTrips) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(manifestFromJson(manifestToJson(sample()), m, error)) << error;
  EXPECT_EQ(m.vocabSize, 512);
  ASSERT_EQ(m.entryPoints.size(), 1u);
  EXPECT_EQ(m.entryPoints[0].weights[1].expertNames, "layers.0.ffn.experts.{e}.w1.weight");
  EXPECT_EQ(m.entryPoints[0].inputs[0].shape, std::vector<int64_t>{-1});
  EXPECT_EQ(m.cachePlan[0].ttlSeconds, 14400);
}

// A weight may be bound as bf16 (dsf-to-linalg's weight-storage); tensors
// the entry points take and return may not.
TEST(Manifest, WeightsMayBeBF16) {
  Manifest sampled = sample();
  sampled.entryPoints[0].weights[0].dtype = "bf16";
  Manifest m;
  std::string error;
  ASSERT_TRUE(manifestFromJson(manifestToJson(sampled), m, error)) << error;
  EXPECT_EQ(m.entryPoints[0].weights[0].dtype, "bf16");
  sampled = sample();
  sampled.entryPoints[0].inputs[0].dtype = "bf16";
  EXPECT_FALSE(manifestFromJson(manifestToJson(sampled), m, error));
  EXPECT_EQ(error, "manifest: entry_points[0].inputs[0].dtype: unknown dtype 'bf16' (expected f32, i32, i1 or u8)");
  sampled = sample();
  sampled.entryPoints[0].weights[0].dtype = "f16";
  error.clear();
  EXPECT_FALSE(manifestFromJson(manifestToJson(sampled), m, error));
  EXPECT_EQ(error, "manifest: entry_points[0].weights[0].dtype: unknown weight dtype 'f16' (expected f32, bf16, i32, "
                   "e2m1x2, e4m3 or ue8m0)");
  // Or packed, as the checkpoint holds it (weight-storage=released): an
  // MXFP4 or FP8 weight's codes and its scales.
  for (const char *packed : {"e2m1x2", "e4m3", "ue8m0"}) {
    sampled = sample();
    sampled.entryPoints[0].weights[0].dtype = packed;
    Manifest read;
    ASSERT_TRUE(manifestFromJson(manifestToJson(sampled), read, error)) << error;
    EXPECT_EQ(read.entryPoints[0].weights[0].dtype, packed);
  }
}

TEST(Manifest, NamesTheFieldAtFault) {
  expectRejected("{", "[", "manifest: (root): not a JSON object");
  expectRejected("\"vocab_size\": 512", "\"vocab_size\": 0", "manifest: vocab_size: must be positive");
  expectRejected("\"vocab_size\": 512", "\"vocab_size\": \"512\"", "manifest: vocab_size: expected an integer");
  expectRejected("\"kv_quant\": true", "\"kv_quant\": 1", "manifest: kv_quant: expected true or false");
  expectRejected("\"dtype\": \"i32\"", "\"dtype\": \"i8\"",
                 "manifest: entry_points[0].inputs[0].dtype: unknown dtype 'i8' (expected f32, i32, i1 or u8)");
  expectRejected("experts.{e}.w1", "experts.{x}.w1",
                 "manifest: entry_points[0].weights[1].expert_names: expected a pattern containing {e}");
  expectRejected("\"ttl_seconds\": 14400", "\"ttl_seconds\": 1.5",
                 "manifest: cache_plan[0].ttl_seconds: expected an integer");
  expectRejected("\"model\": \"tiny\"", "\"name\": \"tiny\"", "manifest: model: missing");
}

namespace {
/// `sample()` with a decode entry point that takes and returns one window.
std::string withStateJson() {
  Manifest m = sample();
  EntryPoint d = m.entryPoints[0];
  d.name = "decode";
  d.symbol = "dsf_entry_decode";
  d.inputs.push_back({"state:layers.0.window", "f32", {-1, 128}});
  d.outputs.push_back({"state:layers.0.window", "f32", {-1, 128}});
  m.entryPoints[0].outputs.push_back({"state:layers.0.window", "f32", {-1, 128}});
  m.entryPoints.push_back(d);
  StateSlot slot;
  slot.name = "layers.0.window";
  slot.kind = "window";
  slot.width = 128;
  slot.windowSize = 16;
  slot.element = "e4m3";
  slot.scale = "ue8m0";
  slot.block = 32;
  m.state = {slot};
  return manifestToJson(m);
}

void expectStateRejected(const std::string &from, const std::string &to, const std::string &message,
                         size_t occurrence = 0) {
  expectRejectedJson(withStateJson(), from, to, message, occurrence);
}
} // namespace

TEST(Manifest, StateRoundTrips) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(manifestFromJson(withStateJson(), m, error)) << error;
  ASSERT_EQ(m.state.size(), 1u);
  ASSERT_NE(m.slot("layers.0.window"), nullptr);
  EXPECT_EQ(m.slot("layers.0.window")->windowSize, 16);
  EXPECT_EQ(m.slot("layers.0.window")->element, "e4m3");
  EXPECT_EQ(m.entryPoints[1].inputs.back().name, "state:layers.0.window");
}

TEST(Manifest, StateErrorsNameTheFieldAtFault) {
  expectStateRejected("\"kind\": \"window\"", "\"kind\": \"ring\"",
                      "manifest: state[0].kind: expected window, kv, index_keys or carry, got 'ring'");
  expectStateRejected("\"window_size\": 16", "\"window_size\": 0",
                      "manifest: state[0]: expected a positive width, window size (windows) and ratio (caches)");
  expectStateRejected("\"name\": \"layers.0.window\"", "\"name\": \"layers.1.window\"",
                      "manifest: state: entry point 'prefill' uses state 'layers.0.window', which is not described");
  expectStateRejected("\"state\": [", "\"nostate\": [", "manifest: state: expected an array");
  expectStateRejected("\"name\": \"logits\"", "\"name\": \"logit\"",
                      "manifest: entry_points[0].outputs: expected the logits first");
}

namespace {
/// `withStateJson()` plus a batched step (@batch_decode): the window's
/// slots, a page table, the logits alone.
std::string withBatchJson() {
  Manifest m;
  std::string error;
  manifestFromJson(withStateJson(), m, error);
  EntryPoint b = m.entryPoints[0];
  b.name = "batch_decode";
  b.symbol = "dsf_entry_batch_decode";
  b.inputs = {{"token_ids", "i32", {-1}},
              {"positions", "i32", {-1}},
              {"slots:layers.0.window", "f32", {-1, 16, 128}},
              {"pages:2", "i32", {-1, -1}}};
  b.outputs = {{"logits", "f32", {-1, 512}}};
  m.entryPoints.push_back(b);
  return manifestToJson(m);
}
} // namespace

TEST(Manifest, BatchedStepRoundTrips) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(manifestFromJson(withBatchJson(), m, error)) << error;
  const EntryPoint *b = m.entry("batch_decode");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->inputs[2].shape, (std::vector<int64_t>{-1, 16, 128}));
  EXPECT_EQ(b->outputs.size(), 1u);
}

TEST(Manifest, PackedPagesRoundTrip) {
  // A cache's packed pages are u8 [pages, entries, row bytes]: NVFP4 rows
  // of 128 channels are 64 code bytes and 8 scale bytes.
  Manifest m;
  std::string error;
  ASSERT_TRUE(manifestFromJson(withBatchJson(), m, error)) << error;
  StateSlot kv;
  kv.name = "layers.0.kv";
  kv.kind = "kv";
  kv.ratio = 2;
  kv.width = 128;
  kv.element = "e2m1";
  kv.scale = "e4m3";
  kv.block = 16;
  m.state.push_back(kv);
  std::vector<TensorSpec> &inputs = m.entryPoints[2].inputs;
  inputs.insert(inputs.begin() + 3, TensorSpec{"slots:layers.0.kv", "u8", {-1, 32, 72}});
  std::string json = manifestToJson(m);
  Manifest back;
  ASSERT_TRUE(manifestFromJson(json, back, error)) << error;
  EXPECT_EQ(back.entry("batch_decode")->inputs[3].dtype, "u8");
  // Rows of another size than the format's, and a window's slots as bytes
  // (windows stay f32 rings), are refused, naming the state.
  expectRejectedJson(json, "      72\n", "      80\n",
                     "manifest: state: entry point 'batch_decode' holds state 'layers.0.kv' as rows of 80 bytes, which "
                     "are not the packed rows of its kv (e2m1 with e4m3 scales per 16, width 128)");
  expectRejectedJson(json, "\"dtype\": \"f32\",\n     \"name\": \"slots:layers.0.window\"",
                     "\"dtype\": \"u8\",\n     \"name\": \"slots:layers.0.window\"",
                     "manifest: state: entry point 'batch_decode' holds state 'layers.0.window' as rows of 128 bytes, "
                     "which are not the packed rows of its window (e4m3 with ue8m0 scales per 32, width 128)");
  // A page table is i32, never bytes.
  expectRejectedJson(json, "\"dtype\": \"i32\",\n     \"name\": \"pages:2\"",
                     "\"dtype\": \"u8\",\n     \"name\": \"pages:2\"",
                     "manifest: entry_points[2].inputs[4]: expected a page table \"pages:RATIO\" of i32 [slots, pages]");
}

TEST(Manifest, BatchedStepErrorsNameTheFieldAtFault) {
  std::string json = withBatchJson();
  expectRejectedJson(json, "\"name\": \"slots:layers.0.window\"", "\"name\": \"slots:layers.9.window\"",
                     "manifest: state: entry point 'batch_decode' uses state 'layers.9.window', which is not described");
  expectRejectedJson(json, "\"name\": \"pages:2\"", "\"name\": \"pages:two\"",
                     "manifest: entry_points[2].inputs[3]: expected a page table \"pages:RATIO\" of i32 [slots, pages]");
  // Slots are [slots, rows, width]: a rank-2 tensor is not.
  expectRejectedJson(json, "\"name\": \"slots:layers.0.window\",\n     \"shape\": [\n      -1,\n      16,",
                     "\"name\": \"slots:layers.0.window\",\n     \"shape\": [\n      -1,",
                     "manifest: entry_points[2].inputs[2]: expected slots \"slots:NAME\" of f32 [slots, rows, width] or, packed, u8 [pages, entries, row bytes]");
}
