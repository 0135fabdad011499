// The optimal attacker against comparisons (issue 10 §1, SPEC §3): a corrupt party lies
// consistently — the same wrong bytes to both peers — on
//   * the arithmetic opening of the masked value c = x + r (any bit 0..63 of the value:
//     a lie at bit 63 flips the comparison), or
//   * any opened bit of the binary domain (a group node's masked lt or eq in the
//     combination round, or one of the fused root's masked bits: a flipped root bit flips
//     the result),
// and then runs the combined MAC check with its own view of the opened values — for a
// flipped bit also with its own MAC share of that bit moved by its key share (all it can
// do towards a consistent MAC: the rest of beta is the honest parties'), alone or with a
// second corrupt party doing the same. The check must reject every such lie (probability
// >= 1 - 2^-40): zero accepted trials. The unit label samples positions; the heavy label
// (MPCACHE_ATTACK_FULL) takes every bit position of c, 200 trials each.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>

#include "cmp_harness.h"
#include "common/prg.h"
#include "mpc/adversary.h"
#include "mpc/compare/compare.h"
#include "unit/mpc/lie.h"

namespace mpcache::mpc {
namespace {

using P = Spdz2k;
using testing::CmpHarness;
using testing::ShareVec;
using testing::Vec;

#ifdef MPCACHE_ATTACK_FULL
constexpr int kTrials = 200;
#else
constexpr int kTrials = 16;
#endif
constexpr std::size_t kN = 3;

// Arithmetic: adds 2^bit to value `elem` of arithmetic opening `target`. Binary: flips bit
// `elem` of binary opening `target`. The same bytes go to both peers.
class ConsistentLiar final : public Adversary {
 public:
  // elem: the value (bit) lied about, drawn uniformly from the opening's when `pick` is set.
  ConsistentLiar(Domain d, std::uint64_t target, std::uint64_t pick, int bit)
      : domain_(d), target_(target), pick_(pick), bit_(bit) {}
  bool lied = false;
  void OnOpen(Domain d, std::uint64_t index, std::size_t n, std::span<std::uint8_t> out) override {
    if (d != domain_ || index != target_ || n == 0) return;
    elem_ = static_cast<std::size_t>(pick_ % n);
    lied = true;
    if (d == Domain::kBinary) {
      out[elem_ / 8] ^= static_cast<std::uint8_t>(1u << (elem_ % 8));
      return;
    }
    const std::size_t width = out.size() / n;
    AddPowerOfTwo(out.subspan(elem_ * width, width), bit_);
  }

 private:
  Domain domain_;
  std::uint64_t target_;
  std::uint64_t pick_;
  std::size_t elem_ = 0;
  int bit_;
};

// Values spread over both signs, small enough for any comparison width.
Vec Inputs(std::uint64_t seed) {
  Prg prg(TestSeed(seed));
  Vec v(kN);
  for (auto& e : v) e = (prg.NextU64() >> 40) - (std::uint64_t{1} << 23);
  return v;
}

// Counts the trials in which some honest party's check passed.
// Trials in which the lie was told (the opening exists) count in `told`.
int Accepted(Domain d, std::uint64_t target, int bit, int trials, std::uint64_t seed, int* told,
             int cmp_bits = 64) {
  CmpHarness<P> h(seed);
  Prg prg(TestSeed(seed + 1));
  const Vec x = Inputs(seed + 2);
  int accepted = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const int liar_id = static_cast<int>(prg.Uniform(3));
    ConsistentLiar liar(d, target, prg.NextU64(), bit);
    auto res = h.Run([&](BinaryContext<P>& ctx) -> Status {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, ShareVec(ctx.arith(), x));
      if (ctx.self() == liar_id) {
        ctx.arith().set_adversary_for_testing(&liar);
        ctx.set_adversary_for_testing(&liar);
      }
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, s, cmp_bits));
      ctx.arith().set_adversary_for_testing(nullptr);
      ctx.set_adversary_for_testing(nullptr);
      MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.arith().Open(lt));
      (void)v;
      return CheckAllMacs(ctx);
    });
    if (!liar.lied) continue;
    ++*told;
    bool passed = false;
    for (int p = 0; p < 3; ++p) {
      if (p == liar_id) continue;
      const auto& r = res[static_cast<std::size_t>(p)];
      if (r.ok()) {
        passed = true;
      } else {
        EXPECT_EQ(r.error().code(), ErrorCode::kMacCheckFailed) << r.error().ToString();
      }
    }
    if (passed) ++accepted;
  }
  return accepted;
}

// The masked value of an l-bit comparison is opened at l + 48 bits (l = 64: full width) and
// checked modulo that width; a lie at any of the l bits that decide the result must fail.
void ExpectMaskedValueLiesRejected(int cmp_bits) {
#ifdef MPCACHE_ATTACK_FULL
  std::vector<int> bits;
  for (int b = 0; b < cmp_bits; ++b) bits.push_back(b);
#else
  const std::vector<int> bits = {0, 5, cmp_bits / 2, cmp_bits - 2, cmp_bits - 1};
#endif
  std::string accepted_at;
  int told = 0;
  for (int bit : bits) {
    const int a = Accepted(
        Domain::kArith, 0, bit, kTrials,
        7100 + 37 * static_cast<std::uint64_t>(bit) + 1000 * static_cast<std::uint64_t>(cmp_bits),
        &told, cmp_bits);
    if (a > 0) accepted_at += " bit " + std::to_string(bit) + ": " + std::to_string(a) + ";";
  }
  EXPECT_TRUE(accepted_at.empty()) << cmp_bits << "-bit comparison: a consistent lie on c = x + r"
                                   << " passed at" << accepted_at;
  EXPECT_EQ(told, kTrials * static_cast<int>(bits.size()));
}

TEST(CompareAttack, ConsistentLieOnTheMaskedValueIsRejected) {
  ExpectMaskedValueLiesRejected(64);
}

TEST(CompareAttack, ConsistentLieOnANarrowMaskedValueIsRejected) {
  ExpectMaskedValueLiesRejected(32);
  ExpectMaskedValueLiesRejected(40);
}

TEST(CompareAttack, ConsistentlyFlippedOpenedBitIsRejected) {
  // Every binary opening of LessThanZero (the combination round, then the fused root's
  // bits).
  std::string accepted_at;
  int told = 0;
  for (std::uint64_t target = 0; target < 3; ++target) {
    // Openings past the last one tell no lie and do not count.
    const int a = Accepted(Domain::kBinary, target, 0, kTrials, 7700 + 53 * target, &told);
    if (a > 0) {
      accepted_at += " opening " + std::to_string(target) + ": " + std::to_string(a) + ";";
    }
  }
  EXPECT_TRUE(accepted_at.empty()) << "a consistently flipped opened bit passed at" << accepted_at;
  EXPECT_EQ(told, 2 * kTrials);  // the combination round and the root were attacked
}

// Flips bit `elem` of binary opening `target` (the same bytes to both peers): the liar's
// view includes the flip, and the test moves its MAC share of that bit by its key share.
class BitLiar final : public Adversary {
 public:
  BitLiar(std::uint64_t target, std::size_t elem) : target_(target), elem_(elem) {}
  bool lied = false;
  void OnOpen(Domain d, std::uint64_t index, std::size_t n, std::span<std::uint8_t> out) override {
    if (d != Domain::kBinary || index != target_ || elem_ >= n) return;
    out[elem_ / 8] ^= static_cast<std::uint8_t>(1u << (elem_ % 8));
    lied = true;
  }

 private:
  std::uint64_t target_;
  std::size_t elem_;
};

enum class Spot { kCombineBit, kRootTop, kRootBottom };

struct LieOutcome {
  int trials = 0, accepted = 0, effective = 0;
};

// A corrupt party flips one opened bit of LessThanZero (`bits` wide) at `spot`: a random
// masked group-node bit of the combination round, the root's u = lt_top ^ r_top (the top
// bit: flipping it flips the result) or the root's bottom lt; it (and, with `pair`, a
// second corrupt party) then XORs its binary key share into its MAC share of that bit.
// The result is opened (so the test sees whether the lie changed it) and checked.
LieOutcome LieInTheComparison(int bits, Spot spot, bool pair, std::uint64_t seed) {
  const LtzShape shape = LtzShapeFor(bits);
  const std::uint64_t target = spot == Spot::kCombineBit || shape.combine_bits == 0 ? 0 : 1;
  CmpHarness<P> h(seed);
  Prg prg(TestSeed(seed + 1));
  const Vec x = Inputs(seed + 2);
  LieOutcome out;
  for (int trial = 0; trial < kTrials; ++trial) {
    const int liar_id = static_cast<int>(prg.Uniform(3));
    const int second = pair ? (liar_id + 1 + static_cast<int>(prg.Uniform(2))) % 3 : -1;
    std::size_t vec = 0, pos = prg.Uniform(kN);
    if (spot == Spot::kCombineBit) {
      vec = prg.Uniform(static_cast<std::uint64_t>(shape.combine_bits));
    } else if (spot == Spot::kRootBottom) {
      vec = static_cast<std::size_t>(shape.root_bits) - 1;
    }
    // The lied bit's chunk in the binary log (one chunk per opened vector), counted from
    // the end: the root's vectors are the last ones, the combination round's before them.
    const std::size_t from_end =
        static_cast<std::size_t>(shape.root_bits) - vec +
        (target == 0 && shape.combine_bits > 0 ? static_cast<std::size_t>(shape.combine_bits) : 0);
    BitLiar liar(target, vec * kN + pos);
    bool lied = false;
    std::array<Vec, 3> opened;
    auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Vec> {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, ShareVec(ctx.arith(), x));
      MPCACHE_RETURN_IF_ERROR(ctx.arith().CheckMacs());
      if (ctx.self() == liar_id) ctx.set_adversary_for_testing(&liar);
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, s, bits));
      ctx.set_adversary_for_testing(nullptr);
      if (ctx.self() == liar_id || ctx.self() == second) {
        // (A bit missing from the log is not checked at all: nothing to adjust.)
        auto& log = ctx.log_for_testing();
        if (from_end <= log.size() && pos < log[log.size() - from_end].macs.size()) {
          log[log.size() - from_end].macs[pos] ^= ctx.key().beta;
        }
        if (ctx.self() == liar_id) lied = liar.lied;
      }
      MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.arith().Open(lt));
      opened[static_cast<std::size_t>(ctx.self())] = v;  // what the lie made of the result
      MPCACHE_RETURN_IF_ERROR(CheckAllMacs(ctx));
      return v;
    });
    if (!lied) {
      ADD_FAILURE() << "the lie was not told";
      continue;
    }
    ++out.trials;
    std::size_t honest = 0;
    while (static_cast<int>(honest) == liar_id || static_cast<int>(honest) == second) ++honest;
    Vec truth;
    for (std::uint64_t v : x) truth.push_back((v >> (bits - 1)) & 1);
    out.effective += opened[honest] != truth ? 1 : 0;
    bool passed = false;
    for (int p = 0; p < 3; ++p) {
      if (p == liar_id || p == second) continue;
      const auto& r = res[static_cast<std::size_t>(p)];
      if (r.ok()) {
        passed = true;
      } else {
        EXPECT_EQ(r.error().code(), ErrorCode::kMacCheckFailed) << r.error().ToString();
      }
    }
    out.accepted += passed ? 1 : 0;
  }
  return out;
}

// The optimal liar on the combination round and on the root, alone and with a second
// corrupt party, at widths with 4, 3 and 2 super-nodes (64, 40, 32 bits) and a small one
// (21 bits: super-nodes of 3 and 2 groups), and on the root of a comparison without a
// combination round (13 bits).
TEST(CompareAttack, LieOnTheCombinationRoundOrTheRootIsRejected) {
  std::string accepted_at;
  int trials = 0;
  std::uint64_t seed = 8100;
  for (int bits : {64, 40, 32, 21, 13}) {
    for (Spot spot : {Spot::kCombineBit, Spot::kRootTop, Spot::kRootBottom}) {
      if (spot == Spot::kCombineBit && LtzShapeFor(bits).combine_bits == 0) continue;
      for (bool pair : {false, true}) {
        const LieOutcome o = LieInTheComparison(bits, spot, pair, seed += 97);
        trials += o.trials;
        // Flipping the opened u flips the result: the lie matters, only the check stops it.
        if (spot == Spot::kRootTop) {
          EXPECT_EQ(o.effective, o.trials) << bits << " bits";
        }
        if (o.accepted > 0) {
          accepted_at += " ";
          accepted_at += std::to_string(bits);
          accepted_at += " bits, spot ";
          accepted_at += std::to_string(static_cast<int>(spot));
          accepted_at += pair ? " (two liars): " : ": ";
          accepted_at += std::to_string(o.accepted);
          accepted_at += ";";
        }
      }
    }
  }
  EXPECT_TRUE(accepted_at.empty())
      << "a flipped opened bit with its MAC share moved passed at" << accepted_at;
  EXPECT_EQ(trials, 28 * kTrials);
}

}  // namespace
}  // namespace mpcache::mpc
