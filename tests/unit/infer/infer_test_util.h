// Helpers for the secure-inference tests: plaintext greedy tokens from FixedEngine and
// FloatEngine (teacher-forced prompt, llama2.c loop semantics) for comparison.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/prg.h"
#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "model/fixed_engine.h"
#include "model/float_engine.h"
#include "model/synth.h"

namespace mpcache::infer::testing {

// A synthetic model of `dims` (model::ParseDims) with the weights of `seed`, encoded at the
// recommended fraction bits: what an in-process generation test runs on.
inline Result<std::shared_ptr<const RingModel>> SyntheticRingModel(const std::string& dims,
                                                                   std::uint64_t seed) {
  MPCACHE_ASSIGN_OR_RETURN(model::ModelConfig config, model::ParseDims(dims));
  MPCACHE_ASSIGN_OR_RETURN(model::ModelWeights w, model::MakeSyntheticWeights(config, seed));
  return EncodeModel(w, kRecommendedFracBits);
}

// Signed values in [-2^20, 2^20) as ring elements: keys, values and queries at the scale of
// f = 16..18 activations, for the KV-memory tests.
inline std::vector<std::uint64_t> SmallSigned(std::size_t n, Prg& prg) {
  std::vector<std::uint64_t> v(n);
  for (auto& e : v)
    e = static_cast<std::uint64_t>(static_cast<std::int64_t>(prg.NextU64() >> 43) - (1 << 20));
  return v;
}

struct PlainRun {
  std::vector<int> fixed_tokens;  // BOS, prompt..., FixedEngine greedy
  std::vector<int> float_tokens;  // FloatEngine greedy on the same loop
  std::vector<double> margins;    // float top-2 margin at each generated position
};

// `steps` positions (prompt included), stopping at BOS like llama2.c (on the fixed run).
inline PlainRun RunPlain(const model::ModelWeights& w, const std::vector<int>& prompt, int steps,
                         int bos_id = 1, const model::FixedEngineOptions& fo = {}) {
  PlainRun r;
  auto xe = model::FixedEngine::Create(w, fo);
  auto fe = model::FloatEngine::Create(w, {});
  EXPECT_TRUE(xe.ok() && fe.ok());
  if (!xe.ok() || !fe.ok()) return r;
  r.fixed_tokens = prompt;
  r.float_tokens = prompt;
  bool float_done = false;
  EXPECT_TRUE(xe->BeginPrompt(static_cast<int>(prompt.size())).ok());
  for (int pos = 0; pos < steps; ++pos) {
    EXPECT_TRUE(xe->Forward(r.fixed_tokens[static_cast<std::size_t>(pos)], pos).ok());
    if (pos + 1 == static_cast<int>(prompt.size())) {
      EXPECT_TRUE(xe->EndPrefill(0).ok());
    }
    if (!float_done) {
      auto logits = fe->Forward(r.float_tokens[static_cast<std::size_t>(pos)], pos);
      EXPECT_TRUE(logits.ok());
      if (pos + 1 >= static_cast<int>(prompt.size())) {
        const model::Top2 top = model::TopTwo(*logits);
        r.margins.push_back(top.margin);
        r.float_tokens.push_back(top.index);
        if (top.index == bos_id) float_done = true;
      }
    }
    if (pos + 1 < static_cast<int>(prompt.size())) continue;
    const int next = xe->Argmax();
    r.fixed_tokens.push_back(next);
    if (next == bos_id) break;
  }
  return r;
}

// The client's view excludes BOS-terminated tails the same way: the released tokens include
// the final BOS if it was produced (the client stops there), as the plaintext list does.
inline std::string FirstDifference(const std::vector<int>& secure, const std::vector<int>& plain,
                                   const std::vector<double>& margins, int prompt_len) {
  for (std::size_t i = 0; i < std::max(secure.size(), plain.size()); ++i) {
    const int s = i < secure.size() ? secure[i] : -1, p = i < plain.size() ? plain[i] : -1;
    if (s != p) {
      const std::size_t g = i >= static_cast<std::size_t>(prompt_len) ? i - prompt_len : 0;
      return "token " + std::to_string(i) + " (position " + std::to_string(i - 1) + "): secure " +
             std::to_string(s) + ", plaintext " + std::to_string(p) +
             "; float logit margin there " +
             (g < margins.size() ? std::to_string(margins[g]) : std::string("n/a"));
    }
  }
  return "";
}

}  // namespace mpcache::infer::testing
