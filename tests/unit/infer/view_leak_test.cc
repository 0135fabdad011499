// The view checkers catch leaks (part 3 of view_test.cc's list): runs whose dealer material
// was mutated so that one opening leaks — masks zeroed or handed out twice — must be flagged
// at the opening each mutation touched, and nothing else may be. MPCACHE_VIEW_FULL (label
// heavy) runs the mutations in both modes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "unit/infer/view_test_util.h"

namespace mpcache::infer::viewtest {
namespace {

// ---- 3. the checkers catch leaks ----------------------------------------------------------

using Op = Mutation::Op;

// Masks that never change a secret, zeroed or handed out twice: CheckExact must flag each
// at its opening and nothing else.
template <typename P>
void ExpectExactCheckCatchesLeaks() {
  RunConfig plain;
  auto shape = RunRecorded<P>(SmallModel(), kPromptA, kSteps, plain);
  ASSERT_TRUE(shape.ok()) << shape.error().ToString();
  const RunRecord& r = *shape;
  // (No Beaver triples: since the classifier's argmax runs on the kernels' backend, every
  // product of a generation takes a fused item, which this family keeps fixed; the noisy
  // family zeroes and reuses those.)
  // Comparison tuples of 40-bit comparisons (10 groups: super-nodes of 4, 3, 3): opened c
  // (arithmetic), then the combination round (binary), then the root (binary).
  const mpc::ltz::LtzLayout& l10 = mpc::ltz::LtzLayoutFor(10);
  const int lt_a = FindCall(r, Item::kLtzTuple, 0, 1, 10);
  const int lt_b = FindCall(r, Item::kLtzTuple, 0, 4, 10);
  const int lt_c = FindCall(r, Item::kLtzTuple, 0, 2, 10);
  const int release = FindCall(r, Item::kClientMask, 1);  // the released token's mask
  // A mask of the top super-node's second group (its lt), and the root's u mask.
  const int top_mask = l10.super_base.back() + 2;
  const int u_mask = l10.root_masks + l10.root.VarLt(l10.root.m - 1);
  const std::vector<Mutation> muts = {
      {Op::kZero, Item::kClientMask, 1, 9},                // prompt token 1's input, entry 9
      {Op::kReuse, Item::kClientMask, 1, 3, false, 0, 3},  // entry 3 of token 1 := token 0's
      {Op::kZero, Item::kClientMask, release, 0},          // the token opened in the clear
      {Op::kZero, Item::kLtzTuple, lt_a, 0, false, 0, 0, top_mask},
      {Op::kReuse, Item::kLtzTuple, lt_b, 0, false, lt_a, 1, kLtzMasks},
      {Op::kZero, Item::kLtzTuple, lt_c, 0, false, 0, 0, u_mask},
  };
  ASSERT_TRUE(lt_a >= 0 && lt_b >= 0 && lt_c >= 0 && release >= 0);
  EXPECT_TRUE(RequestsOf(r, Item::kTriple).empty());
  const std::size_t o_in0 = OpeningOf(r, Item::kClientMask, 0),
                    o_in1 = OpeningOf(r, Item::kClientMask, 1),
                    o_rel = OpeningOf(r, Item::kClientMask, release),
                    o_lta = OpeningOf(r, Item::kLtzTuple, lt_a),
                    o_ltb = OpeningOf(r, Item::kLtzTuple, lt_b),
                    o_ltc = OpeningOf(r, Item::kLtzTuple, lt_c);
  for (std::size_t o : {o_in0, o_in1, o_rel, o_lta, o_ltb, o_ltc}) {
    ASSERT_NE(o, kNone);
  }
  ASSERT_GE(r.openings[o_lta].n, 2u);  // element 1 is the reused masks' source
  // The openings the tuples' masks touch: the combination round (c's opening + 1) and the
  // root (+ 2), both binary, n bits per opened variable.
  const std::size_t comb_a = o_lta + 1, comb_b = o_ltb + 1, root_a = o_lta + 2, root_b = o_ltb + 2,
                    root_c = o_ltc + 2;
  for (std::size_t o : {comb_a, comb_b, root_a, root_b, root_c}) {
    ASSERT_LT(o, r.openings.size());
    ASSERT_EQ(r.openings[o].kind, Kind::kBinary);
  }
  const auto runs = ExactRuns<P>(SmallModel(), kPromptA, kExactRuns, kSteps, muts);
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kExactRuns));
  const Report rep = CheckExact(runs);
  Print("exact, mutated", rep);
  EXPECT_TRUE(rep.Has(o_in1, 9)) << "unmasked client input not flagged";
  EXPECT_TRUE(HasPair(rep, o_in0, o_in1)) << "reused client mask not flagged";
  EXPECT_TRUE(rep.Has(o_rel, 0)) << "token opened in the clear not flagged";
  // The zeroed mask: its group's masked lt of element 0 (vector top_mask - first mask).
  const std::size_t na = r.openings[o_lta].n;
  EXPECT_TRUE(rep.Has(comb_a, static_cast<std::size_t>(top_mask - l10.super_fresh) * na))
      << "raw combination-round bit not flagged";
  EXPECT_TRUE(HasPair(rep, comb_a, comb_b)) << "reused combination-round masks not flagged";
  EXPECT_TRUE(HasPair(rep, root_a, root_b)) << "reused root masks not flagged";
  EXPECT_TRUE(rep.Has(root_c, 0)) << "raw root bit (u) not flagged";
  ExpectOnly(rep, {o_in0, o_in1, o_rel, comb_a, comb_b, root_a, root_b, root_c});
}

// Truncation and comparison masks, and the client link: CheckNoisy and CompareViews must
// flag each at its opening (or client message) and nothing else.
template <typename P>
void ExpectNoisyChecksCatchLeaks() {
  RunConfig plain;
  auto shape = RunRecorded<P>(SmallModel(), kPromptA, kSteps, plain);
  ASSERT_TRUE(shape.ok()) << shape.error().ToString();
  const RunRecord& r = *shape;
  // Truncation pairs (the deferred truncations': mpc/context.h). The first two of the same size
  // and f (the first RMSNorm's squares of two positions: exact values, no run-to-run noise)
  // reused; the zeroed one: another of the fewest bits (its x carries the least noise: the
  // noisy family sees an unmasked value as a small difference between runs).
  const std::vector<Request> truncs = RequestsOf(r, Item::kTrunc);
  int tr1a = -1, tr1b = -1;
  for (std::size_t j = 1; j < truncs.size() && tr1b < 0; ++j) {
    for (std::size_t i = 0; i < j && tr1b < 0; ++i) {
      if (truncs[i].n == truncs[j].n && truncs[i].frac_bits == truncs[j].frac_bits) {
        tr1a = static_cast<int>(i);
        tr1b = static_cast<int>(j);
      }
    }
  }
  int tr8 = -1;
  for (std::size_t i = 0, best_f = 1 << 30; i < truncs.size(); ++i) {
    if (static_cast<int>(i) == tr1a || static_cast<int>(i) == tr1b) continue;
    if (truncs[i].n >= 2 && static_cast<std::size_t>(truncs[i].frac_bits) < best_f) {
      best_f = static_cast<std::size_t>(truncs[i].frac_bits);
      tr8 = static_cast<int>(i);
    }
  }
  // Fused product items (their Beaver masks and truncation masks): one zeroed whole, one
  // reused. The zeroed one is the last but one: the last is the classifier argmax's final
  // product level, whose outputs are the token's one-hot — zeroed, that sharing becomes
  // (value, 0, 0) and party 0's share of the released token index would show the prompt in
  // a party-to-party message, a consequence of the mutation that the view check below (only
  // the client link carries whole values) is not about.
  const std::vector<Request> fused = RequestsOf(r, Item::kFused);
  const int fz = FindCall(r, Item::kFused, 0, static_cast<int>(fused.size()) - 2);
  // Two of the same shape (its code is the request's third field), not adjacent: the first
  // call whose shape occurred at least two calls earlier, and that earlier one.
  int fa = -1, fb = -1;
  for (std::size_t j = 0; j < fused.size() && fb < 0; ++j) {
    for (std::size_t i = 0; i + 2 <= j && fb < 0; ++i) {
      if (fused[i].frac_bits == fused[j].frac_bits) {
        fa = static_cast<int>(i);
        fb = static_cast<int>(j);
      }
    }
  }
  // Comparison tuples' r (their edaBit part): zeroed (c = x opened) and reused.
  // (Two batches of the narrowest comparisons that come in two batches or more, so that c is
  // opened mod the same 2^l: exact small integers such as the row maxima's win counts or the
  // reciprocal's bucket tests, with little run-to-run noise.)
  int eda_a = -1, eda_b = -1;
  {
    const std::vector<Request> seen = RequestsOf(r, Item::kLtzTuple);
    std::map<int, int> batches;  // groups (width) -> batches of 2 or more
    for (const Request& q : seen) batches[q.frac_bits] += q.n >= 2 ? 1 : 0;
    int narrowest = 1 << 30;
    for (const auto& [groups, count] : batches) {
      if (count >= 2) narrowest = std::min(narrowest, groups);
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (seen[i].frac_bits != narrowest) continue;
      if (eda_a < 0 && seen[i].n >= 3) {
        eda_a = static_cast<int>(i);
      } else if (eda_a >= 0 && eda_b < 0 && seen[i].n >= 2) {
        eda_b = static_cast<int>(i);
      }
    }
  }
  const int release = FindCall(r, Item::kClientMask, 1);
  const std::vector<Mutation> muts = {
      {Op::kZero, Item::kTrunc, tr8, 0, /*all=*/true},
      {Op::kReuse, Item::kTrunc, tr1b, 0, false, tr1a, 0},
      {Op::kZero, Item::kFused, fz, 0, /*all=*/true},
      {Op::kReuse, Item::kFused, fb, 0, false, fa, 0},
      {Op::kZero, Item::kLtzTuple, eda_a, 2, false, 0, 0, kLtzR},
      {Op::kReuse, Item::kLtzTuple, eda_b, 1, false, eda_a, 0, kLtzR},
      {Op::kZero, Item::kClientMask, release, 0},  // the token opened in the clear
      {Op::kZero, Item::kClientMask, 1, 5},        // prompt A's token entry sent raw
  };
  ASSERT_TRUE(tr8 >= 0 && tr1a >= 0 && tr1b >= 0 && eda_a >= 0 && eda_b >= 0 && release >= 0 &&
              fz >= 0 && fa >= 0 && fb >= 0)
      << tr8 << " " << tr1a << " " << tr1b << " " << eda_a << " " << eda_b << " " << release << " "
      << fz << " " << fa << " " << fb;
  const std::size_t o_tr8 = OpeningOf(r, Item::kTrunc, tr8),
                    o_tr1a = OpeningOf(r, Item::kTrunc, tr1a),
                    o_tr1b = OpeningOf(r, Item::kTrunc, tr1b),
                    o_fz = OpeningOf(r, Item::kFused, fz), o_fa = OpeningOf(r, Item::kFused, fa),
                    o_fb = OpeningOf(r, Item::kFused, fb),
                    o_ea = OpeningOf(r, Item::kLtzTuple, eda_a),
                    o_eb = OpeningOf(r, Item::kLtzTuple, eda_b),
                    o_rel = OpeningOf(r, Item::kClientMask, release),
                    o_in1 = OpeningOf(r, Item::kClientMask, 1);
  for (std::size_t o : {o_tr8, o_tr1a, o_tr1b, o_fz, o_fa, o_fb, o_ea, o_eb, o_rel, o_in1}) {
    ASSERT_NE(o, kNone);
  }
  const auto a = SeededRuns<P>(SmallModel(), kPromptA, kViewRuns, 100, muts);
  const auto b = SeededRuns<P>(SmallModel(), kPromptB, kViewRuns, 200, muts);
  ASSERT_EQ(a.size(), static_cast<std::size_t>(kViewRuns));
  ASSERT_EQ(b.size(), static_cast<std::size_t>(kViewRuns));
  const std::set<std::size_t> touched{o_tr8, o_tr1a, o_tr1b, o_fz,  o_fa,
                                      o_fb,  o_ea,   o_eb,   o_rel, o_in1};
  const Report noisy = CheckNoisy(a);
  Print("noisy, mutated", noisy);
  const std::size_t n_tr8 = truncs[static_cast<std::size_t>(tr8)].n;
  ASSERT_GE(n_tr8, 1u);
  // (A deferred opening carries every pending truncation of the session: the zeroed pair's
  // values are n_tr8 of its elements; which ones depends on the sources' order there.)
  std::size_t flagged_tr8 = 0;
  for (std::size_t e = 0; e < r.openings[o_tr8].n; ++e) flagged_tr8 += noisy.Has(o_tr8, e);
  EXPECT_GE(flagged_tr8, n_tr8) << "raw truncation values not flagged";
  // (A reused truncation pair is not asserted here since issue 19: a pair's values now open
  // inside a deferred opening, among every truncation pending at that point, and the pairs
  // tried so far carry too much run-to-run noise for this family to see the reuse. The
  // mutation stays applied: ExpectOnly below still checks it flags nothing elsewhere.)
  EXPECT_TRUE(noisy.Has(o_fz, 0)) << "raw fused product opening not flagged";
  EXPECT_TRUE(HasPair(noisy, o_fa, o_fb)) << "reused fused product masks not flagged";
  EXPECT_TRUE(noisy.Has(o_ea, 2)) << "unmasked comparison opening not flagged";
  EXPECT_TRUE(HasPair(noisy, o_ea, o_eb)) << "reused comparison r not flagged";
  EXPECT_TRUE(noisy.Has(o_rel, 0)) << "token opened in the clear not flagged";
  EXPECT_TRUE(noisy.Has(o_in1, 5)) << "unmasked client input not flagged";
  ExpectOnly(noisy, touched);

  const Report views = CompareViews(a, b, kViewAlpha);
  Print("views, mutated", views);
  EXPECT_TRUE(views.Has(o_rel, 0)) << "released token in the clear: views not told apart";
  EXPECT_TRUE(views.Has(o_in1, 5)) << "raw client input: views not told apart";
  bool to_client = false, from_client = false;
  for (const auto& f : views.findings) {
    to_client |= f.from == kToClient;
    from_client |= f.from == kFromClient;
    // Messages between parties carry shares, each uniform on its own: only the client
    // link carries whole values.
    if (f.party >= 0) {
      EXPECT_TRUE(f.from == kToClient || f.from == kFromClient) << f.what;
    }
  }
  EXPECT_TRUE(to_client) << "the clear token sent to the client was not flagged";
  EXPECT_TRUE(from_client) << "the raw client broadcast was not flagged";
  ExpectOnly(views, touched);
}

// The one-hot input check's zero test (a coin opened, then values masked by nothing that
// must be 0): both checkers accept zeros there and flag anything else at its element.
TEST(SecureView, ZeroTestsMustOpenZero) {
  auto runs_with = [](std::uint64_t leaked) {
    std::vector<RunRecord> runs;
    for (int k = 0; k < 40; ++k) {
      RunRecord r;
      Opening coin;
      coin.n = 2;
      coin.width = 16;
      coin.sources = Bit(Item::kSquare) | Bit(Item::kRandom);
      coin.values = {u128{0x9e3779b97f4a7c15ull} * static_cast<unsigned>(k + 1),
                     u128{0xc2b2ae3d27d4eb4full} * static_cast<unsigned>(k + 7)};
      Opening zero;
      zero.index = 1;
      zero.n = 3;
      zero.width = 16;
      zero.values = {0, 0, k == 5 ? leaked : 0};
      r.openings = {coin, zero};
      runs.push_back(std::move(r));
    }
    return runs;
  };
  const auto honest = runs_with(0);
  EXPECT_TRUE(CheckExact(honest).findings.empty()) << CheckExact(honest).findings[0].what;
  EXPECT_TRUE(CheckNoisy(honest).findings.empty());
  const auto leaky = runs_with(1);  // one run opens a 1 where the test expects 0
  const Report exact = CheckExact(leaky), noisy = CheckNoisy(leaky);
  ASSERT_EQ(exact.findings.size(), 1u);
  EXPECT_TRUE(exact.Has(1, 2)) << exact.findings[0].what;
  ASSERT_EQ(noisy.findings.size(), 1u);
  EXPECT_TRUE(noisy.Has(1, 2)) << noisy.findings[0].what;
}

TEST(SecureView, ExactCheckCatchesLeaksSemiHonest) {
  ExpectExactCheckCatchesLeaks<mpc::SemiHonest>();
}
TEST(SecureView, NoisyChecksCatchLeaksSemiHonest) {
  ExpectNoisyChecksCatchLeaks<mpc::SemiHonest>();
}

#ifdef MPCACHE_VIEW_FULL
TEST(SecureView, ExactCheckCatchesLeaksMalicious) {
  ExpectExactCheckCatchesLeaks<mpc::Spdz2k>();
}
TEST(SecureView, NoisyChecksCatchLeaksMalicious) {
  ExpectNoisyChecksCatchLeaks<mpc::Spdz2k>();
}
#endif

}  // namespace
}  // namespace mpcache::infer::viewtest
