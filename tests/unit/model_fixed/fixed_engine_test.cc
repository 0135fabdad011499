// The fixed-point engine on small synthetic models against the float engine.
#include "model/fixed_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>

#include "model/float_engine.h"
#include "model/synth.h"

namespace mpcache::model {
namespace {

ModelWeights Synthetic(const std::string& dims, bool shared) {
  ModelConfig c = *ParseDims(dims);
  c.shared_classifier = shared;
  auto w = MakeSyntheticWeights(c, 17);
  EXPECT_TRUE(w.ok());
  return std::move(*w);
}

void CompareRun(const ModelWeights& w, FixedEngineOptions fopt, int steps, double max_logit_err) {
  FloatEngineOptions o;
  o.record_layer_outputs = true;
  auto fe = FloatEngine::Create(w, o);
  fopt.record = true;
  auto xe = FixedEngine::Create(w, fopt);
  ASSERT_TRUE(fe.ok());
  ASSERT_TRUE(xe.ok()) << xe.error().ToString();
  std::vector<NamedError> errors;
  int token = 1, agreements = 0, decided = 0;
  for (int pos = 0; pos < steps; ++pos) {
    auto logits = CompareStep(*fe, *xe, token, pos, errors);
    ASSERT_TRUE(logits.ok()) << logits.error().ToString();
    const Top2 top = TopTwo(*logits);
    if (top.margin > 2 * max_logit_err) {
      ++decided;
      agreements += xe->Argmax() == top.index;
    }
    token = top.index;
  }
  ASSERT_EQ(errors.size(), static_cast<std::size_t>(w.config.n_layers + 2));
  for (const auto& e : errors) {
    std::cout << "  " << e.name << " max_abs_error " << e.max_abs_error << "\n";
  }
  EXPECT_EQ(errors.back().name, "logits");
  EXPECT_LE(errors.back().max_abs_error, max_logit_err);
  EXPECT_GT(errors.back().max_abs_error, 0.0);  // it is a different arithmetic
  EXPECT_EQ(agreements, decided);
  EXPECT_GT(decided, steps / 2);
  for (const char* name : {"layer0.attn_out", "layer0.ffn_out", "layer0.out", "final_norm"}) {
    EXPECT_EQ(xe->Trace().count(name), 1u) << name;
  }
}

// Logit bounds: ~2x the measured error (0.0019, 0.0022, 0.0040), not 10x.
TEST(FixedEngine, MatchesFloatOnSyntheticSharedClassifier) {
  CompareRun(Synthetic("64x3x8x4x172x256x64", true), {}, 40, 0.004);
}

TEST(FixedEngine, MatchesFloatOnSyntheticSeparateClassifierNoisyTruncation) {
  FixedEngineOptions o;
  o.noisy_trunc_seed = 3;
  CompareRun(Synthetic("128x2x4x2x256x300x48", false), o, 40, 0.0045);
}

TEST(FixedEngine, SixteenFractionalBitsStillClose) {
  FixedEngineOptions o;
  o.math.frac_bits = 16;
  CompareRun(Synthetic("64x2x8x8x172x256x32", true), o, 30, 0.008);
}

TEST(FixedEngine, ErrorsAndRanges) {
  const ModelWeights w = Synthetic("32x1x4x4x64x50x8", true);
  FixedEngineOptions o;
  o.collect_ranges = true;
  o.math.exp_frac_bits = 40;  // invalid
  EXPECT_FALSE(FixedEngine::Create(w, o).ok());
  o.math = {};
  auto e = FixedEngine::Create(w, o);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Forward(50, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e->Forward(1, 8).error().code(), ErrorCode::kInvalidArgument);
  for (int pos = 0; pos < 8; ++pos) ASSERT_TRUE(e->Forward(pos % 50, pos).ok());
  EXPECT_GE(e->Ranges().softmax_denominator.min, 1.0 - 1e-3);
  EXPECT_LE(e->Ranges().softmax_denominator.max, 8.0 + 1e-3);
  EXPECT_EQ(e->Ranges().rms_mean_square.count, 8u * 3);  // 2 per layer + final
  EXPECT_GT(e->Counts().cmp_elems, 0u);
  FixedEngine copy = std::move(*e);
  EXPECT_EQ(copy.RingLogits().size(), 50u);
}

}  // namespace
}  // namespace mpcache::model
