// Malicious security of the whole session against the strongest single-message attacker: a
// corrupt party that lies *consistently* (the same wrong bytes to both peers) about one
// value of one opening mid-generation — a Beaver product's masked operand, a truncation's or
// a comparison's masked value, a fixed-mask product, or one opened bit of the binary domain
// — and then runs every check with its own view of the lie. The session must fail with a
// MAC-check failure (not some other abort). Tokens are released only through
// OutputToClient after a passing check (tests/unit/mpc); the end-to-end test with a lying
// party daemon checks that the real client then prints an error and no token.
#include <gtest/gtest.h>

#include <string>

#include "infer/in_process.h"
#include "model/synth.h"
#include "mpc/adversary.h"
#include "net/comm_stats.h"
#include "unit/mpc/lie.h"

namespace mpcache::infer {
namespace {

// Lies in the `nth` opening of `domain` after being armed: adds 2^bit to value `elem % n`
// (arithmetic) or flips bit `elem % n` (binary).
class ArmedLiar final : public mpc::Adversary {
 public:
  ArmedLiar(mpc::Domain domain, int nth, std::uint64_t elem, int bit)
      : domain_(domain), nth_(nth), elem_(elem), bit_(bit) {}
  bool armed = false;
  bool lied = false;
  // When set: only openings made while this phase is current count (e.g. "select").
  const net::CommStats* stats = nullptr;
  std::string phase;
  void OnOpen(mpc::Domain d, std::uint64_t /*index*/, std::size_t n,
              std::span<std::uint8_t> out) override {
    if (!armed || lied || d != domain_ || n == 0) return;
    if (stats != nullptr && stats->phase() != phase) return;
    if (seen_++ != nth_) return;
    const std::size_t e = static_cast<std::size_t>(elem_ % n);
    if (d == mpc::Domain::kBinary) {
      out[e / 8] ^= static_cast<std::uint8_t>(1u << (e % 8));
    } else {
      const std::size_t width = out.size() / n;
      mpc::AddPowerOfTwo(out.subspan(e * width, width), bit_);
    }
    lied = true;
  }

 private:
  mpc::Domain domain_;
  int nth_;
  int seen_ = 0;
  std::uint64_t elem_;
  int bit_;
};

struct Case {
  mpc::Domain domain;
  int after_position;  // the lie is told while computing the next position
  int nth;             // which opening of that domain after the lie is armed
  int bit;             // arithmetic: the bit lied about (clamped to the opening's width)
};

// The tamper tests' model: synthetic weights of `dims` (seed 4), ring-encoded; nullptr (and a
// test failure) when they cannot be made.
std::shared_ptr<const RingModel> TinyModel(const std::string& dims) {
  auto config = model::ParseDims(dims);
  EXPECT_TRUE(config.ok()) << dims;
  if (!config.ok()) return nullptr;
  auto w = model::MakeSyntheticWeights(*config, 4);
  EXPECT_TRUE(w.ok()) << dims;
  if (!w.ok()) return nullptr;
  auto m = EncodeModel(*w, kRecommendedFracBits);
  EXPECT_TRUE(m.ok()) << dims;
  return m.ok() ? *m : nullptr;
}

TEST(SecureTamper, ConsistentLieMidGenerationFailsTheMacCheckBeforeRelease) {
  const std::shared_ptr<const RingModel> model = TinyModel("16x1x2x2x32x20x8");
  ASSERT_NE(model, nullptr);
  const std::vector<int> prompt = {1, 3};
  auto honest = RunInProcess<mpc::Spdz2k>(model, prompt, 1, 6, InProcessOptions{});
  ASSERT_TRUE(honest.ok()) << honest.error().ToString();  // the same run without the lie passes
  const std::vector<Case> cases = {
      {mpc::Domain::kArith, 0, 0, 63},  {mpc::Domain::kArith, 1, 3, 62},
      {mpc::Domain::kArith, 2, 17, 0},  {mpc::Domain::kArith, 3, 40, 63},
      {mpc::Domain::kArith, 3, 90, 31}, {mpc::Domain::kBinary, 1, 0, 0},
      {mpc::Domain::kBinary, 2, 7, 0},  {mpc::Domain::kBinary, 3, 30, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.domain == mpc::Domain::kArith ? "arith" : "binary") + " opening " +
                 std::to_string(c.nth) + " after position " + std::to_string(c.after_position) +
                 ", bit " + std::to_string(c.bit));
    ArmedLiar liar(c.domain, c.nth, 0x9E3779B97F4A7C15ull * (c.nth + 1), c.bit);
    InProcessHook<mpc::Spdz2k> hook = [&](int party, int pos,
                                          SecureLlama<mpc::Spdz2k>& e) -> Status {
      if (party != 1 || pos != c.after_position) return Status::Ok();
      e.context().arith().set_adversary_for_testing(&liar);
      e.context().set_adversary_for_testing(&liar);
      liar.armed = true;
      return Status::Ok();
    };
    auto run = RunInProcess<mpc::Spdz2k>(model, prompt, 1, 6, InProcessOptions{}, hook);
    ASSERT_TRUE(liar.lied) << "the run ended before the lie";
    ASSERT_FALSE(run.ok()) << "a consistent lie was accepted";
    EXPECT_EQ(run.error().code(), ErrorCode::kMacCheckFailed) << run.error().ToString();
  }
}

// Every case: party 2 arms the liar after `after_position` and lies in the nth opening of
// `phase` of its domain; the run must end in a MAC-check failure, never an accepted lie.
void ExpectEveryLieFails(const std::shared_ptr<const RingModel>& model,
                         const std::vector<int>& prompt, int steps, const InProcessOptions& o,
                         const std::string& phase, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.domain == mpc::Domain::kArith ? "arith" : "binary") + " " + phase +
                 " opening " + std::to_string(c.nth) + " after position " +
                 std::to_string(c.after_position) + ", bit " + std::to_string(c.bit));
    ArmedLiar liar(c.domain, c.nth, 0x9E3779B97F4A7C15ull * (c.nth + 1), c.bit);
    liar.phase = phase;
    InProcessHook<mpc::Spdz2k> hook = [&](int party, int pos,
                                          SecureLlama<mpc::Spdz2k>& e) -> Status {
      if (party != 2 || pos != c.after_position) return Status::Ok();
      liar.stats = &e.context().arith().stats();
      e.context().arith().set_adversary_for_testing(&liar);
      e.context().set_adversary_for_testing(&liar);
      liar.armed = true;
      return Status::Ok();
    };
    auto run = RunInProcess<mpc::Spdz2k>(model, prompt, 1, steps, o, hook);
    ASSERT_TRUE(liar.lied) << "the run ended before the lie";
    ASSERT_FALSE(run.ok()) << "a consistent lie was accepted";
    EXPECT_EQ(run.error().code(), ErrorCode::kMacCheckFailed) << run.error().ToString();
  }
}

// MPCache's selection (ranking comparisons, the one-hot's masking, gather and scatter) is
// opened like everything else: a consistent lie in any of its openings, of either domain,
// fails the MAC check. (A narrow comparison opening of `bits` bits is used mod 2^bits: the
// lies here stay inside that, at bit 0, or at bits the full-width openings use.)
TEST(SecureTamper, ConsistentLieInMpcacheSelectionFailsTheMacCheck) {
  const std::shared_ptr<const RingModel> model = TinyModel("16x1x2x2x32x20x8");
  ASSERT_NE(model, nullptr);
  const std::vector<int> prompt = {1, 3, 5, 7};
  InProcessOptions o;
  o.session.mpcache = model::MpcachePolicy{};
  o.session.mpcache->cluster_tokens = 1;
  o.session.mpcache->keep_ratio = 0.3;
  auto honest = RunInProcess<mpc::Spdz2k>(model, prompt, 1, 7, o);
  ASSERT_TRUE(honest.ok()) << honest.error().ToString();
  ASSERT_TRUE(honest->phases[0].count("select"));
  const std::vector<Case> cases = {
      {mpc::Domain::kArith, 4, 0, 63},
      {mpc::Domain::kArith, 4, 1, 0},
      {mpc::Domain::kArith, 5, 2, 0},
      {mpc::Domain::kArith, 5, 3, 31},
      {mpc::Domain::kArith, 5, 4, 63},
      {mpc::Domain::kBinary, 4, 0, 0},
      // The select phase's binary openings: the pairs' comparison (combination round, root)
      // and the narrow rank tests' root: 3 since issue 19 (opening 3 was an AND level).
      {mpc::Domain::kBinary, 5, 2, 0},
  };
  ExpectEveryLieFails(model, prompt, 7, o, "select", cases);
}

// Level 2 adds its own openings (the sub-scores' ranking, S2's masking, the second gather,
// the first scatter): lies in the later openings of a selecting step, where they sit, fail too.
TEST(SecureTamper, ConsistentLieInMpcacheLevelTwoFailsTheMacCheck) {
  const std::shared_ptr<const RingModel> model = TinyModel("16x1x2x2x32x20x12");
  ASSERT_NE(model, nullptr);
  const std::vector<int> prompt = {1, 3, 5, 7};
  InProcessOptions o;
  o.session.mpcache = model::MpcachePolicy{};
  o.session.mpcache->cluster_tokens = 2;
  o.session.mpcache->keep_ratio = 0.5;
  o.session.mpcache->level2_tokens = 1;
  o.session.mpcache->level2_keep_ratio = 0.3;
  auto honest = RunInProcess<mpc::Spdz2k>(model, prompt, 1, 10, o);
  ASSERT_TRUE(honest.ok()) << honest.error().ToString();
  ASSERT_TRUE(honest->phases[0].count("select"));
  const std::vector<Case> cases = {
      {mpc::Domain::kArith, 7, 0, 63}, {mpc::Domain::kArith, 7, 4, 0},
      {mpc::Domain::kArith, 7, 8, 31}, {mpc::Domain::kArith, 7, 10, 63},
      {mpc::Domain::kArith, 7, 12, 0}, {mpc::Domain::kBinary, 7, 2, 0},
      {mpc::Domain::kBinary, 7, 5, 0},
  };
  ExpectEveryLieFails(model, prompt, 10, o, "select", cases);
}

// The static eviction's openings (the importance ranking's comparisons of both domains, the
// gathering product, the kept rows' reload) are checked like every other: a consistent lie
// in any of them fails the MAC check before the first token leaves.
TEST(SecureTamper, ConsistentLieInMpcacheEvictionFailsTheMacCheck) {
  const std::shared_ptr<const RingModel> model = TinyModel("16x1x2x2x32x20x12");
  ASSERT_NE(model, nullptr);
  const std::vector<int> prompt = {1, 3, 5, 7, 9, 11};
  InProcessOptions o;
  o.session.mpcache = model::MpcachePolicy{};
  o.session.mpcache->cluster_tokens = 1;
  o.session.mpcache->keep_ratio = 1.0;
  o.session.mpcache->static_keep_ratio = 0.7;  // sink 1, window 2, keep 2 of 3 candidates
  auto honest = RunInProcess<mpc::Spdz2k>(model, prompt, 1, 8, o);
  ASSERT_TRUE(honest.ok()) << honest.error().ToString();
  ASSERT_TRUE(honest->phases[0].count("evict"));
  // Arithmetic openings 0 .. 3 are the ranking's (comparisons of 22-bit importances: lies
  // at bits inside that width), the last ones the product and the reload (full width).
  const std::vector<Case> cases = {
      {mpc::Domain::kArith, 4, 0, 0},  {mpc::Domain::kArith, 4, 1, 21},
      {mpc::Domain::kArith, 4, 2, 0},  {mpc::Domain::kArith, 4, 3, 0},
      {mpc::Domain::kBinary, 4, 0, 0}, {mpc::Domain::kBinary, 4, 1, 0},
  };
  ExpectEveryLieFails(model, prompt, 8, o, "evict", cases);
}

// Private sampling's openings (l / T's truncation, the softmax, the nucleus threshold's
// comparisons and products, the exclusion) are checked like every other: a consistent lie
// in any of them — the top bit of a full-width opening, the top bit of a 21-bit comparison
// (f + 3) — fails the MAC check before the sampled token leaves.
TEST(SecureTamper, ConsistentLieInPrivateSamplingFailsTheMacCheck) {
  const std::shared_ptr<const RingModel> model = TinyModel("16x1x2x2x32x20x8");
  ASSERT_NE(model, nullptr);
  const std::vector<int> prompt = {1, 3, 5, 7};
  InProcessOptions o;
  o.session.sampling.temperature = 0.9;
  o.session.sampling.top_p = 0.8;
  o.session.sampling.top_k = 6;
  o.sampling_seed = 3;
  auto honest = RunInProcess<mpc::Spdz2k>(model, prompt, 1, 6, o);
  ASSERT_TRUE(honest.ok()) << honest.error().ToString();
  ASSERT_TRUE(honest->phases[0].count("sampling"));
  const std::vector<Case> cases = {
      {mpc::Domain::kArith, 3, 0, 63},  {mpc::Domain::kArith, 3, 7, 0},
      {mpc::Domain::kArith, 3, 25, 20}, {mpc::Domain::kArith, 4, 40, 20},
      {mpc::Domain::kArith, 4, 55, 63}, {mpc::Domain::kBinary, 3, 2, 0},
      {mpc::Domain::kBinary, 4, 30, 0},
  };
  ExpectEveryLieFails(model, prompt, 6, o, "sampling", cases);
}

}  // namespace
}  // namespace mpcache::infer
