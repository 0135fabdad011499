// Compact public weights (model/compact_model.h) in the secure engine: the products on
// shares equal the plaintext twin's integers EXACTLY (before the truncation), the MAC shares
// of those products verify (and a tampered product share does not), and whole generations
// give the compact FixedEngine's tokens, for Q8_0 and F16 files, in both security modes.
#include <gtest/gtest.h>

#include <filesystem>

#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "infer/secure_weights.h"
#include "infer/share_file.h"
#include "model/compact_kernels.h"
#include "model/gguf.h"
#include "model/synth.h"
#include "mpc/io.h"
#include "preproc/local_parties.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

// A synthetic model written as a GGUF of `type` matrices, opened compact. The file is
// removed when the mapping is gone (unlinked at once: the map keeps it).
std::shared_ptr<const model::CompactModel> CompactSynth(const std::string& dims,
                                                        model::GgmlType type, bool shared,
                                                        std::uint64_t seed = 7) {
  auto config = model::ParseDims(dims);
  EXPECT_TRUE(config.ok());
  config->shared_classifier = shared;
  auto w = model::MakeSyntheticWeights(*config, seed);
  EXPECT_TRUE(w.ok());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mpcache_compact_" + std::to_string(::getpid()) + "_" + dims + "_" +
                             std::to_string(static_cast<int>(type)) + ".gguf"))
                               .string();
  EXPECT_TRUE(model::WriteGguf(*w, nullptr, path, type).ok());
  auto m = model::CompactModel::Open(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(m.ok()) << m.error().ToString();
  return m.ok() ? *m : nullptr;
}

// The greedy tokens of the compact twin (the llama2.c loop, prompt teacher-forced).
std::vector<int> TwinTokens(std::shared_ptr<const model::CompactModel> m,
                            const std::vector<int>& prompt, int steps) {
  auto xe = model::FixedEngine::Create(std::move(m), {});
  EXPECT_TRUE(xe.ok()) << xe.error().ToString();
  std::vector<int> tokens = prompt;
  EXPECT_TRUE(xe->BeginPrompt(static_cast<int>(prompt.size())).ok());
  for (int pos = 0; pos < steps; ++pos) {
    EXPECT_TRUE(xe->Forward(tokens[static_cast<std::size_t>(pos)], pos).ok());
    if (pos + 1 == static_cast<int>(prompt.size())) {
      EXPECT_TRUE(xe->EndPrefill(0).ok());
    }
    if (pos + 1 < static_cast<int>(prompt.size())) continue;
    tokens.push_back(xe->Argmax());
    if (tokens.back() == 1) break;
  }
  return tokens;
}

template <typename P>
void ExpectExactProducts(model::GgmlType type) {
  auto cm = CompactSynth("64x1x4x2x96x40x16", type, false);
  ASSERT_NE(cm, nullptr);
  auto ring = EncodeCompactModel(cm, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok()) << ring.error().ToString();
  const std::size_t d = 64, h = 96, v = 40;
  Prg prg(TestSeed(9));
  std::vector<std::uint64_t> x(d), g(h);
  for (auto& e : x) e = prg.NextU64();  // any ring elements: the product is exact mod 2^64
  for (auto& e : g) e = prg.NextU64();
  const int token = 17;
  // The twin's integers: W x mod 2^64 for the stacked q|k|v, the down projection, the
  // classifier, and the embedding row (value x 2^24).
  const model::CompactLayer& l0 = cm->layers[0];
  std::vector<std::uint64_t> want_qkv;
  for (const model::CompactMatrix* m : {&l0.wq, &l0.wk, &l0.wv}) {
    std::vector<std::uint64_t> y(m->rows);
    model::CompactMatVec(*m, x.data(), y.data());
    want_qkv.insert(want_qkv.end(), y.begin(), y.end());
  }
  std::vector<std::uint64_t> want_w2(d), want_cls(v), want_row(d);
  model::CompactMatVec(l0.w2, g.data(), want_w2.data());
  model::CompactMatVec(cm->wcls, x.data(), want_cls.data());
  for (std::size_t j = 0; j < d; ++j) {
    want_row[j] = static_cast<std::uint64_t>(cm->embedding.At(token, j));
  }

  preproc::LocalPartiesOptions lo;
  lo.threads = 2;  // the rows split over two workers per party
  auto parties = preproc::LocalParties<P>::Create(lo);
  ASSERT_TRUE(parties.ok());
  auto out = (*parties)->RunArith([&](mpc::Context<P>& ctx) -> Status {
    MPCACHE_ASSIGN_OR_RETURN(SecureWeights<P> w, PublicWeights<P>(ctx, *ring));
    const bool p0 = ctx.self() == 0;
    std::vector<std::uint64_t> one_hot(v, 0);
    one_hot[token] = 1;
    MPCACHE_ASSIGN_OR_RETURN(auto sx,
                             mpc::Input<P>(ctx, 0, p0 ? x : std::vector<std::uint64_t>{}, d));
    MPCACHE_ASSIGN_OR_RETURN(auto sg,
                             mpc::Input<P>(ctx, 0, p0 ? g : std::vector<std::uint64_t>{}, h));
    MPCACHE_ASSIGN_OR_RETURN(auto so,
                             mpc::Input<P>(ctx, 0, p0 ? one_hot : std::vector<std::uint64_t>{}, v));
    mpc::Shares<P> all = PublicProduct<P>(ctx, w.layers[0].wqkv, sx);
    all.Append(PublicProduct<P>(ctx, w.layers[0].w2, sg));
    all.Append(PublicProduct<P>(ctx, w.classifier(), sx));
    all.Append(PublicLookup<P>(ctx, w.embedding, so));
    MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened, ctx.Open(all));
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());  // the products' MAC shares are right
    std::vector<std::uint64_t> want = want_qkv;
    want.insert(want.end(), want_w2.begin(), want_w2.end());
    want.insert(want.end(), want_cls.begin(), want_cls.end());
    want.insert(want.end(), want_row.begin(), want_row.end());
    EXPECT_EQ(opened, want);
    if constexpr (P::kMalicious) {
      // A party that adds 1 to its share of one product output is caught.
      mpc::Shares<P> y = PublicProduct<P>(ctx, w.layers[0].wo, sx);
      if (ctx.self() == 1) y.v[3] += 1;
      MPCACHE_RETURN_IF_ERROR(ctx.Open(y));
      const Status check = ctx.CheckMacs();
      EXPECT_FALSE(check.ok()) << "a tampered product share passed the MAC check";
    }
    return Status::Ok();
  });
  for (const auto& r : out) EXPECT_TRUE(r.ok()) << r.error().ToString();
}

TEST(CompactWeights, ProductsEqualTheTwinExactlyQ8Malicious) {
  ExpectExactProducts<mpc::Spdz2k>(model::GgmlType::kQ8_0);
}
TEST(CompactWeights, ProductsEqualTheTwinExactlyQ8SemiHonest) {
  ExpectExactProducts<mpc::SemiHonest>(model::GgmlType::kQ8_0);
}
TEST(CompactWeights, ProductsEqualTheTwinExactlyF16Malicious) {
  ExpectExactProducts<mpc::Spdz2k>(model::GgmlType::kF16);
}

template <typename P>
void ExpectTwinTokens(const std::string& dims, model::GgmlType type, bool shared,
                      const std::vector<int>& prompt, int steps) {
  auto cm = CompactSynth(dims, type, shared);
  ASSERT_NE(cm, nullptr);
  auto ring = EncodeCompactModel(cm, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  const std::vector<int> twin = TwinTokens(cm, prompt, steps);
  InProcessOptions o;
  o.threads = 2;
  auto run = RunInProcess<P>(*ring, prompt, 1, steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->tokens, twin);
  EXPECT_GT(run->tokens.size(), prompt.size());
}

TEST(CompactWeights, GenerationEqualsTheTwinQ8Malicious) {
  ExpectTwinTokens<mpc::Spdz2k>("64x2x4x2x96x40x16", model::GgmlType::kQ8_0, true, {1, 5, 9}, 8);
}
TEST(CompactWeights, GenerationEqualsTheTwinQ8SemiHonest) {
  ExpectTwinTokens<mpc::SemiHonest>("64x2x4x2x96x40x16", model::GgmlType::kQ8_0, false, {1, 5}, 8);
}
TEST(CompactWeights, GenerationEqualsTheTwinF16Malicious) {
  ExpectTwinTokens<mpc::Spdz2k>("24x1x3x3x40x37x16", model::GgmlType::kF16, false, {1, 2}, 7);
}

// A big model's prefill would pile up every opening until the first decoded token (~1 GB
// per position and party for 32 layers of 7B): past SessionOptions::prefill_check_bytes the
// MACs are checked after the position. At 1 byte every prefill position is checked (3
// rounds each), and nothing else changes.
TEST(CompactWeights, PrefillChecksBoundTheOpeningLog) {
  auto cm = CompactSynth("64x2x4x2x96x40x16", model::GgmlType::kQ8_0, true);
  ASSERT_NE(cm, nullptr);
  auto ring = EncodeCompactModel(cm, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  const std::vector<int> prompt = {1, 5, 9, 3};
  InProcessOptions o;
  auto base = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, 6, o);
  ASSERT_TRUE(base.ok()) << base.error().ToString();
  o.session.prefill_check_bytes = 1;
  auto checked = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, 6, o);
  ASSERT_TRUE(checked.ok()) << checked.error().ToString();
  EXPECT_EQ(checked->tokens, base->tokens);
  const auto rounds = [](const InProcessResult& r) { return r.phases[0].at("mac_check").rounds; };
  EXPECT_EQ(rounds(*checked), rounds(*base) + 3 * (prompt.size() - 1));
}

TEST(CompactWeights, PrivateWeightsRefuseACompactModel) {
  auto cm = CompactSynth("64x1x4x2x96x40x16", model::GgmlType::kQ8_0, true);
  ASSERT_NE(cm, nullptr);
  auto ring = EncodeCompactModel(cm, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  auto split = SplitModel(**ring, 3, TestSeed(1));
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.error().message().find("compact"), std::string::npos);
}

}  // namespace
}  // namespace mpcache::infer
