// Comparison tuples (mpc/compare/ltz_layout.h): the combination round's and the root's
// tables equal the plaintext combination for every opened pattern; the dealer's tuples
// reconstruct to consistent material in both modes (bits vs [r], products vs their
// factors, MACs, the root's arithmetic monomials), through the pools and through
// serialised batches, and cost exactly their layout's corrections; the dealer's requests
// follow the public shape only.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdio>

#include "cmp_harness.h"
#include "common/prg.h"
#include "mpc/compare/compare.h"
#include "mpc/compare/ltz_layout.h"
#include "preproc/bit_batch.h"
#include "preproc/bit_dealer.h"

namespace mpcache::mpc {
namespace {

using testing::AllOk;
using testing::CmpHarness;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;

// A super-node's (lt, eq) from its group nodes (plaintext): the highest non-equal group
// decides.
std::pair<int, int> PlainSuper(const std::vector<int>& lt, const std::vector<int>& eq) {
  int out_lt = 0, out_eq = 1;
  for (std::size_t j = 0; j < lt.size(); ++j) {
    out_lt = lt[j] ^ (eq[j] & out_lt);
    out_eq &= eq[j];
  }
  return {out_lt, out_eq};
}

TEST(LtzLayout, CombinationTablesEqualThePlaintextCombination) {
  Prg prg(TestSeed(71));
  for (int groups = ltz::kMinGroups; groups <= ltz::kMaxGroups; ++groups) {
    const ltz::LtzLayout& l = ltz::LtzLayoutFor(groups);
    for (const ltz::SuperNode& s : l.supers) {
      if (s.k < 2) continue;
      for (int trial = 0; trial < 300; ++trial) {
        // Valid group nodes (lt and eq never both 1; group 0 has no eq) and random masks.
        std::vector<int> lt(static_cast<std::size_t>(s.k)), eq(lt.size());
        std::uint32_t masks = 0;  // bit 2j: s_j, bit 2j + 1: t_j
        unsigned pattern = 0;
        for (int j = 0; j < s.k; ++j) {
          const auto state = static_cast<int>(prg.Uniform(3));  // gt, eq, lt
          lt[static_cast<std::size_t>(j)] = state == 2 ? 1 : 0;
          eq[static_cast<std::size_t>(j)] = state == 1 ? 1 : 0;
          if (s.bottom && j == 0) eq[0] = 0;
          const auto sj = static_cast<std::uint32_t>(prg.Uniform(2));
          const auto tj = (s.bottom && j == 0) ? 0u : static_cast<std::uint32_t>(prg.Uniform(2));
          masks |= sj << (2 * j) | tj << (2 * j + 1);
          pattern |= (static_cast<unsigned>(lt[static_cast<std::size_t>(j)]) ^ sj) << (2 * j);
          if (!(s.bottom && j == 0)) {
            pattern |= (static_cast<unsigned>(eq[static_cast<std::size_t>(j)]) ^ tj) << (2 * j + 1);
          }
        }
        // XOR of the monomials in the set (each = AND of its masks) + the constant.
        auto eval = [&](std::uint64_t set, int one) {
          int v = one;
          for (std::size_t i = 0; i < s.monos.size(); ++i) {
            if (((set >> i) & 1) != 0) v ^= (masks & s.monos[i]) == s.monos[i] ? 1 : 0;
          }
          return v;
        };
        const auto [want_lt, want_eq] = PlainSuper(lt, eq);
        ASSERT_EQ(eval(s.lt[pattern], s.lt_one[pattern]), want_lt) << groups << " groups";
        if (!s.bottom) {
          ASSERT_EQ(eval(s.eq[pattern], s.eq_one[pattern]), want_eq);
        }
      }
    }
    // The root: every opened pattern and every mask assignment.
    const ltz::RootMonos& r = l.root;
    const std::size_t per = r.monos.size() + 1;
    for (unsigned vals = 0; vals < (1u << r.vars); ++vals) {
      // Inputs: u, then eq/lt of each super-node (mutually exclusive where it matters: a
      // super-node with lt = 1 has eq = 0).
      bool valid = true;
      for (int q = 0; q + 1 < r.m; ++q) {
        const bool lq = ((vals >> r.VarLt(q)) & 1) != 0;
        const bool eqq = q > 0 && ((vals >> r.VarEq(q)) & 1) != 0;
        valid = valid && !(lq && eqq);
      }
      if (!valid) continue;
      std::uint64_t sum_r = 0;
      for (int q = 0; q + 1 < r.m; ++q) {
        std::uint64_t term = (vals >> r.VarLt(q)) & 1;
        for (int p = q + 1; p < r.m; ++p) term &= (vals >> r.VarEq(p)) & 1;
        sum_r += term;
      }
      ASSERT_LE(sum_r, 1u);
      const std::uint64_t want = ((vals >> r.VarLt(r.m - 1)) & 1) ^ sum_r;
      for (unsigned rho = 0; rho < (1u << r.vars); rho += 1 + (rho % 3)) {
        const unsigned p = vals ^ rho;
        std::uint64_t got = r.coef[p * per + per - 1];
        for (std::size_t k = 0; k + 1 < per; ++k) {
          if ((rho & r.monos[k]) == r.monos[k]) got += r.coef[p * per + k];
        }
        ASSERT_EQ(got, want) << groups << " groups, values " << vals << " masks " << rho;
      }
    }
  }
}

// Reconstructs n tuples of three parties and checks every relation the comparison relies on.
template <typename P>
void ExpectConsistent(const std::array<LtzTuples<P>, 3>& t, std::size_t n, int groups,
                      std::uint64_t beta, u128 alpha) {
  const ltz::LtzLayout& l = ltz::LtzLayoutFor(groups);
  std::uint64_t high_or = 0, ones = 0;
  for (std::size_t e = 0; e < n; ++e) {
    std::vector<int> bit(static_cast<std::size_t>(l.num_binary));
    for (int v = 0; v < l.num_binary; ++v) {
      std::uint64_t b = 0, mac = 0;
      for (int p = 0; p < 3; ++p) {
        const auto& x = t[static_cast<std::size_t>(p)];
        if constexpr (P::kMalicious) {
          b ^= x.rows.rows[e][v] & 1;
          mac ^= x.rows.rows[e][l.MacWord(v)];
        } else {
          b ^= (x.bin[static_cast<std::size_t>(v)].v[e / 64] >> (e % 64)) & 1;
        }
      }
      if constexpr (P::kMalicious) {
        ASSERT_EQ(mac, b != 0 ? beta : 0u) << "value " << v;
      }
      bit[static_cast<std::size_t>(v)] = static_cast<int>(b);
      ones += b;
    }
    // [r]: its low W bits are the binary bits; its MAC.
    u128 r = 0, rm = 0;
    for (int p = 0; p < 3; ++p) {
      r += t[static_cast<std::size_t>(p)].r.v[e];
      if constexpr (P::kMalicious) rm += t[static_cast<std::size_t>(p)].r.m[e];
    }
    std::uint64_t bits = 0;
    for (int j = 0; j < l.r_bits; ++j) bits |= std::uint64_t(bit[static_cast<std::size_t>(j)]) << j;
    const std::uint64_t low_mask = l.r_bits == 64 ? ~0ull : (1ull << l.r_bits) - 1;
    ASSERT_EQ(static_cast<std::uint64_t>(r) & low_mask, bits);
    // Uniform above W (semi-honest: shares in Z_2^64).
    if constexpr (P::kMalicious) {
      high_or |= static_cast<std::uint64_t>(r >> l.r_bits);
    } else if (l.r_bits < 64) {
      high_or |= static_cast<std::uint64_t>(r) >> l.r_bits;
    }
    if constexpr (P::kMalicious) {
      ASSERT_EQ(rm, alpha * r);
    }
    // Group products.
    for (int g = 0; g < groups; ++g) {
      for (unsigned mask = 1; mask < (1u << l.GroupSize(g)); ++mask) {
        const unsigned sub = static_cast<unsigned>(bits >> (4 * g)) & mask;
        ASSERT_EQ(bit[static_cast<std::size_t>(l.GroupMono(g, mask))], sub == mask ? 1 : 0);
      }
    }
    // Mask products: AND of the singletons they contain.
    for (std::size_t q = 0; q < l.supers.size(); ++q) {
      const auto& s = l.supers[q];
      for (std::size_t j = 0; j < s.monos.size(); ++j) {
        int want = 1;
        for (int i = 0; i < s.vars; ++i) {
          if ((s.monos[j] & s.monos[static_cast<std::size_t>(i)]) != 0) {
            want &= bit[static_cast<std::size_t>(l.SuperMono(static_cast<int>(q), i))];
          }
        }
        ASSERT_EQ(
            bit[static_cast<std::size_t>(l.SuperMono(static_cast<int>(q), static_cast<int>(j)))],
            want);
      }
    }
    // The root's arithmetic monomials of its binary masks.
    for (std::size_t k = 0; k < l.root.monos.size(); ++k) {
      u128 v = 0, m = 0;
      for (int p = 0; p < 3; ++p) {
        const auto& x = t[static_cast<std::size_t>(p)];
        if constexpr (P::kMalicious) {
          const std::uint64_t* w = x.rows.rows[e] + l.MonoWord(static_cast<int>(k));
          v += (u128{w[1]} << 64) | w[0];
          m += (u128{w[3]} << 64) | w[2];
        } else {
          v += x.mono[k].v[e];
        }
      }
      int want = 1;
      for (int i = 0; i < l.root.vars; ++i) {
        if (((l.root.monos[k] >> i) & 1) != 0) {
          want &= bit[static_cast<std::size_t>(l.root_masks + i)];
        }
      }
      if constexpr (P::kMalicious) {
        ASSERT_EQ(v, u128(want));
        ASSERT_EQ(m, alpha * v);
      } else {
        ASSERT_EQ(static_cast<std::uint64_t>(v), static_cast<std::uint64_t>(want));
      }
    }
  }
  if (l.r_bits < 64 || P::kMalicious) {
    EXPECT_NE(high_or, 0u);
  }
  EXPECT_GT(ones, 0u);
}

template <typename P>
class LtzDealer : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(LtzDealer, Modes);

TYPED_TEST(LtzDealer, TuplesAreConsistentAndCostTheirLayout) {
  using P = TypeParam;
  const u128 alpha = P::kMalicious ? (u128{0x77} << 64 | 0x1234567) : 0;
  std::printf("  %s: G | corrections B/comparison | words held B/comparison\n",
              std::string(P::kName).c_str());
  for (int groups = ltz::kMinGroups; groups <= ltz::kMaxGroups; ++groups) {
    auto d = preproc::InProcessBitDealer<P>::Create(TestSeed(90 + groups), alpha).value();
    const std::size_t n = 70;  // semi-honest: two units of 64, the second one partly used
    const auto before = d->stats().correction_bytes;
    std::array<LtzTuples<P>, 3> t;
    for (int p = 0; p < 3; ++p) {
      auto got = d->store(p).GetLtzTuples(n, groups);
      ASSERT_TRUE(got.ok()) << got.error().ToString();
      ASSERT_EQ(got->size(), n);
      ASSERT_EQ(got->groups, groups);
      t[static_cast<std::size_t>(p)] = std::move(*got);
    }
    ExpectConsistent<P>(t, n, groups, d->mac_key(), alpha);
    // The dealer's corrections are the layout's (semi-honest: whole units of 64; malicious:
    // the products' value bits packed 64 to a word, so a batch rounds up to a whole word).
    const ltz::LtzMaterial mat = ltz::LtzMaterialPerItem(groups, P::kMalicious);
    const double items = P::kMalicious ? static_cast<double>(n) : 128.0;
    const auto sec = P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
    const auto item = preproc::LtzItem(groups);
    const std::uint64_t got_bytes = d->stats().correction_bytes - before;
    EXPECT_EQ(got_bytes,
              8 * preproc::BitCorrectionWords(sec, item, preproc::BitUnitsFor(sec, item, n)));
    EXPECT_GE(static_cast<double>(got_bytes), mat.correction_bytes * items);
    EXPECT_LT(static_cast<double>(got_bytes), mat.correction_bytes * items + 8);
    EXPECT_EQ(d->store(0).consumed(preproc::LtzItem(groups)), P::kMalicious ? n : 128u);
    std::printf("  %2d | %7.1f | %7.1f\n", groups, mat.correction_bytes, mat.party_bytes);
  }
  auto d = preproc::InProcessBitDealer<P>::Create(TestSeed(1), alpha).value();
  for (int groups : {0, 1, 17}) {
    auto bad = d->store(0).GetLtzTuples(3, groups);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument) << bad.error().ToString();
  }
}

// Takes that split a pool's chunks (part of one, the end of one and the start of the next,
// then more than the pool holds) hand out each unit once, in order: the same items as one
// take of everything from a twin dealer (same seed, same batches). Semi-honest tuples are
// read in place from the pool (TakeInPlace), malicious ones moved out (Take).
TYPED_TEST(LtzDealer, SplitTakesHandOutEachUnitOnceInOrder) {
  using P = TypeParam;
  const u128 alpha = P::kMalicious ? (u128{0x55} << 64 | 0x7654321) : 0;
  const int groups = 8;
  const auto item = preproc::LtzItem(groups);
  const std::size_t per = preproc::InProcessBitDealer<P>::UnitItems(item);
  auto split = preproc::InProcessBitDealer<P>::Create(TestSeed(400), alpha).value();
  auto whole = preproc::InProcessBitDealer<P>::Create(TestSeed(400), alpha).value();
  for (auto* d : {split.get(), whole.get()}) {  // two batches: two pool chunks per party
    ASSERT_TRUE(d->Provide(item, 3 * per).ok());
    ASSERT_TRUE(d->Provide(item, 3 * per).ok());
  }
  // Units: 2 of the first chunk, its last and 2 of the second, the second's last and 1
  // made on demand (a third batch, as the twin's extra take below).
  const std::vector<std::size_t> takes = {2 * per, 3 * per, 2 * per};
  const std::size_t total = 7 * per;
  // Item i's words (its bitsliced bits or row, its r and root monomials) at party p.
  auto item_words = [&](const LtzTuples<P>& t, std::size_t i) {
    std::vector<std::uint64_t> w;
    if constexpr (P::kMalicious) {
      const auto& l = ltz::LtzLayoutFor(groups);
      w.assign(t.rows.rows[i], t.rows.rows[i] + l.RowWords());
    } else {
      for (const auto& b : t.bin) w.push_back((b.v[i / 64] >> (i % 64)) & 1);
      for (const auto& m : t.mono) w.push_back(m.v[i]);
    }
    w.push_back(static_cast<std::uint64_t>(t.r.v[i]));
    return w;
  };
  for (int p = 0; p < 3; ++p) {
    auto ref = whole->store(p).GetLtzTuples(6 * per, groups);
    auto extra = whole->store(p).GetLtzTuples(per, groups);
    ASSERT_TRUE(ref.ok() && extra.ok());
    std::size_t at = 0;
    for (const std::size_t n : takes) {
      auto got = split->store(p).GetLtzTuples(n, groups);
      ASSERT_TRUE(got.ok()) << got.error().ToString();
      ASSERT_EQ(got->size(), n);
      for (std::size_t i = 0; i < n; ++i, ++at) {
        const auto want = at < 6 * per ? item_words(*ref, at) : item_words(*extra, at - 6 * per);
        ASSERT_EQ(item_words(*got, i), want) << "party " << p << ", item " << at;
      }
    }
    ASSERT_EQ(at, total);
    EXPECT_EQ(split->store(p).consumed(item), total);
  }
}

// The network path: the dealer's batch, serialised, parsed and expanded at each party.
TYPED_TEST(LtzDealer, SerialisedBatchesReconstruct) {
  using P = TypeParam;
  const u128 alpha = P::kMalicious ? (u128{0x99} << 64 | 0xabcdef) : 0;
  for (int groups : {2, 5, 10, 16}) {
    auto d = preproc::InProcessBitDealer<P>::Create(TestSeed(300 + groups), alpha).value();
    std::array<preproc::BitExpander<P>, 3> ex = {preproc::BitExpander<P>(0, 3, d->bit_seed(0)),
                                                 preproc::BitExpander<P>(1, 3, d->bit_seed(1)),
                                                 preproc::BitExpander<P>(2, 3, d->bit_seed(2))};
    const std::size_t n = 67;
    auto parts = d->MakeBatch(preproc::LtzItem(groups), n);
    ASSERT_TRUE(parts.ok()) << parts.error().ToString();
    std::array<LtzTuples<P>, 3> t;
    for (int p = 0; p < 3; ++p) {
      const auto bytes = (*parts)[static_cast<std::size_t>(p)].Serialize();
      auto parsed = preproc::BitBatch::Parse(bytes);
      ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
      EXPECT_STREQ(preproc::BitItemName(parsed->item),
                   ("ltz-tuple-" + std::to_string(groups)).c_str());
      auto x = ex[static_cast<std::size_t>(p)].template Expand<LtzTuples<P>>(*parsed);
      ASSERT_TRUE(x.ok()) << x.error().ToString();
      t[static_cast<std::size_t>(p)] = std::move(*x);
      // Parties 0 and 1: a header only; party 2: its corrections.
      const std::size_t units = P::kMalicious ? n : 2;
      const std::size_t corr =
          p == 2 ? preproc::BitCorrectionWords(P::kMalicious ? preproc::Security::kMalicious
                                                             : preproc::Security::kSemiHonest,
                                               preproc::LtzItem(groups), units)
                 : 0;
      EXPECT_EQ(bytes.size(), preproc::kBitBatchHeaderBytes + 8 * corr);
    }
    ExpectConsistent<P>(t, n, groups, d->mac_key(), alpha);
    // An edaBit batch handed to the tuple expander is refused.
    auto eda = d->MakeBatch(preproc::BitItem::kEdaBit, 1);
    ASSERT_TRUE(eda.ok());
    EXPECT_FALSE(ex[0].LtzTuples((*eda)[0]).ok());
  }
}

// The dealer's requests depend on the public shape (n, l) only: two different inputs of the
// same shape take the same items, and the same number of each.
TYPED_TEST(LtzDealer, RequestsFollowThePublicShapeOnly) {
  using P = TypeParam;
  auto consumed = [](const Vec& x) {
    CmpHarness<P> h(12);
    auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Vec> {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
      for (int bits : {40, 21, 12, 64}) {
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, xs, bits));
        MPCACHE_ASSIGN_OR_RETURN(Vec v, RevealChecked(ctx, lt));
        (void)v;
      }
      return Vec{};
    });
    std::vector<std::uint64_t> out;
    if (!AllOk(res)) return out;
    for (int item = 0; item < preproc::kNumBitItems; ++item) {
      for (int p = 0; p < 3; ++p) {
        out.push_back(h.bits->store(p).consumed(static_cast<preproc::BitItem>(item)));
      }
    }
    return out;
  };
  const auto a = consumed({1, 2, 3, 0 - 4ull, 5});
  const auto b = consumed({0 - 1ull, 0, 1ull << 30, 7, 0 - (1ull << 20)});
  EXPECT_EQ(a, b);
  // The tuples of the four widths' group counts (10, 5, 3, 16), and no other tuples.
  for (int groups = ltz::kMinGroups; groups <= ltz::kMaxGroups; ++groups) {
    const bool used = groups == 10 || groups == 5 || groups == 3 || groups == 16;
    const auto item = static_cast<std::size_t>(preproc::LtzItem(groups));
    for (std::size_t p = 0; p < 3; ++p) EXPECT_EQ(a[3 * item + p] > 0, used) << groups;
  }
}

}  // namespace
}  // namespace mpcache::mpc
