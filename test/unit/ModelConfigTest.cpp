//===- ModelConfigTest.cpp - reading configs and applying schedules --------===//
#include "models/import/ModelConfig.h"

#include "gtest/gtest.h"

using namespace dsf;

namespace {
// A small V4.1 config in the released key style.
std::string v41Config(const std::string &extra = "") {
  return R"({"model_type": "deepseek_v41", "vocab_size": 64, "hidden_size": 32,
    "num_hidden_layers": 6, "num_attention_heads": 2, "head_dim": 32, "qk_rope_head_dim": 8,
    "q_lora_rank": 16, "o_lora_rank": 8, "o_groups": 2, "sliding_window": 4,
    "moe_intermediate_size": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "index_n_heads": 2, "index_head_dim": 32, "index_topk": 4, "max_position_embeddings": 4096,
    "compress_ratios": [0, 2, 2, 1, 1, 1], "kv_source_layer_ids": [1, 3],
    "index_source_layer_ids": [1, 3, 5], "candidate_source_layer_id": 3,
    "candidate_topk_blocks": 2, "candidate_block_size": 4,
    "rope_scaling": {"type": "yarn", "original_max_position_embeddings": 64)" +
         extra + "}}";
}

std::string roles(const ModelConfig &c) {
  std::string s;
  for (const LayerSpec &l : c.layers)
    s += roleLetter(l.role);
  return s;
}

TEST(ModelConfigTest, V41RolesFollowFromSourceLists) {
  auto c = parseModelConfig(v41Config(), "cfg.json");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->family, Family::V41);
  EXPECT_EQ(roles(*c), "SFRFRX");
  EXPECT_EQ(c->decoderStart, 3);
  EXPECT_EQ(c->candidateSource, 3);
  EXPECT_EQ(c->layers[1].ratio, 2);
  EXPECT_EQ(c->layers[5].ratio, 1);
}

TEST(ModelConfigTest, YarnFactorExplicitWinsElseImpliedByLengths) {
  auto implied = parseModelConfig(v41Config(), "cfg.json");
  ASSERT_TRUE(bool(implied));
  ASSERT_TRUE(implied->compressRope.yarn.has_value());
  EXPECT_DOUBLE_EQ(implied->compressRope.yarn->factor, 4096.0 / 64.0);
  EXPECT_FALSE(implied->mainRope.yarn.has_value());
  auto explicitFactor = parseModelConfig(v41Config(", \"factor\": 4"), "cfg.json");
  ASSERT_TRUE(bool(explicitFactor));
  EXPECT_DOUBLE_EQ(explicitFactor->compressRope.yarn->factor, 4.0);
  EXPECT_EQ(explicitFactor->compressRope.yarn->originalMax, 64);
  EXPECT_DOUBLE_EQ(explicitFactor->compressRope.theta, 160000.0);
}

// The fields a minimal V4 config needs; layer_types etc. come per test.
std::string v4Config(const std::string &extra) {
  return R"({"model_type": "deepseek_v4", "vocab_size": 64, "hidden_size": 32,
    "num_hidden_layers": 5, "num_attention_heads": 2, "head_dim": 128,
    "partial_rotary_factor": 0.5, "q_lora_rank": 16, "o_lora_rank": 8, "o_groups": 2,
    "sliding_window": 4, "moe_intermediate_size": 16, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "index_n_heads": 2, "index_head_dim": 32, "index_topk": 4)" +
         extra + "}";
}

TEST(ModelConfigTest, V4DefaultsFollowTransformers) {
  auto c = parseModelConfig(v4Config(""), "cfg.json");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->family, Family::V4);
  // transformers 5.17: two HCA layers, then HCA/CSA alternating from index 2.
  EXPECT_EQ(roles(*c), "HHHCH");
  EXPECT_TRUE(c->layers[2].hashMoe);
  EXPECT_FALSE(c->layers[3].hashMoe);
  EXPECT_EQ(c->layers[3].ratio, 4);
  EXPECT_EQ(c->layers[0].ratio, 128);
  EXPECT_EQ(c->mainRope.dims, 64);
}

TEST(ModelConfigTest, V4LegacyKeysFoldInAsTransformersDoes) {
  auto c = parseModelConfig(v4Config(R"(, "compress_ratios": [0, 4, 128, 4, 0],
      "compress_rate_csa": 8, "num_hash_layers": 1,
      "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536})"),
                            "cfg.json");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(roles(*c), "SCHCS");
  EXPECT_EQ(c->layers[1].ratio, 8);
  EXPECT_TRUE(c->layers[0].hashMoe);
  EXPECT_FALSE(c->layers[1].hashMoe);
  ASSERT_TRUE(c->compressRope.yarn.has_value());
  EXPECT_DOUBLE_EQ(c->compressRope.yarn->factor, 16);
}

TEST(ModelConfigTest, ScheduleReassignsRolesAndMovesThePool) {
  auto c = parseModelConfig(v41Config(), "cfg.json");
  ASSERT_TRUE(bool(c));
  ASSERT_FALSE(bool(applySchedule(*c, "S F R F | F X")));
  EXPECT_EQ(roles(*c), "SFRFFX");
  EXPECT_EQ(c->decoderStart, 4);
  EXPECT_EQ(c->layers[3].ratio, 2);
  EXPECT_EQ(c->candidateSource, 4);
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_NE(c->notes[0].find("moves from layer 3 to layer 4"), std::string::npos);
}

TEST(ModelConfigTest, ScheduleErrors) {
  auto c = parseModelConfig(v41Config(), "cfg.json");
  ASSERT_TRUE(bool(c));
  std::string wrongCount = llvm::toString(applySchedule(*c, "S F R"));
  EXPECT_NE(wrongCount.find("describes 3 layers but cfg.json has num_hidden_layers = 6"),
            std::string::npos) << wrongCount;
  std::string v4Letter = llvm::toString(applySchedule(*c, "S F C F R R"));
  EXPECT_NE(v4Letter.find("layer 2 is 'C', but a deepseek_v41 model takes S, F, X or R"),
            std::string::npos) << v4Letter;
  std::string noSource = llvm::toString(applySchedule(*c, "S R F F | F R"));
  EXPECT_NE(noSource.find("layer 1 (R, ratio 2) has no KV-source (Full) layer of ratio 2"),
            std::string::npos) << noSource;
}
} // namespace
