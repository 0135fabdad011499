// The view tests' shared pieces (view_test.cc, view_leak_test.cc): run counts and their
// false-positive bounds, the synthetic model, exact and seeded runs, and finding the
// openings of a request.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <vector>

#include "model/checkpoint.h"
#include "model/fixed_engine.h"
#include "model/synth.h"
#include "unit/infer/view_checks.h"

namespace mpcache::infer::viewtest {

// False positives of CheckExact's bit checks: (M + M^2 / 2) 2^-(runs - 1) for M opened
// bits (printed by each test with the other bounds).
#ifdef MPCACHE_VIEW_FULL
constexpr int kSteps = 3;
constexpr int kExactRuns = 64;  // M = 22 836: <= 2.8e-11 (stories260K, M = 149 948: 1.2e-9)
constexpr int kViewRuns = 32;   // per prompt: KS flags D >= 26/32 at ~2.4 x 10^5 positions
#else
constexpr int kSteps = 2;
constexpr int kExactRuns = 40;  // M = 13 887: <= 1.8e-4
constexpr int kViewRuns = 20;   // per prompt: KS flags D >= 19/20 at ~1.5 x 10^5 positions
#endif
constexpr double kViewAlpha = 1e-4;  // familywise false-positive bound of CompareViews

inline const std::vector<int> kPromptA{1, 5};
inline const std::vector<int> kPromptB{1, 33};

// Items whose masks never change a secret: the exact family varies only these.
constexpr std::uint32_t kFreeMasks =
    Bit(Item::kTriple) | Bit(Item::kSquare) | Bit(Item::kBit) | Bit(Item::kRandom) |
    Bit(Item::kClientMask) | Bit(Item::kMatrixMask) | Bit(Item::kMatrixTriple) |
    Bit(Item::kAttention) | Bit(Item::kBitTriple) | Bit(Item::kDaBit) | Bit(Item::kRootTuple) |
    Bit(Item::kLtzTuple);  // (tuples: their masks move, their r stays: view_ltz.h)

inline std::shared_ptr<const RingModel> SmallModel() {
  static const std::shared_ptr<const RingModel> model = []() -> std::shared_ptr<const RingModel> {
    auto config = model::ParseDims("32x1x4x2x64x40x16");  // GQA: 4 heads, 2 KV heads
    if (!config.ok()) return nullptr;
    auto w = model::MakeSyntheticWeights(*config, 9);
    if (!w.ok()) return nullptr;
    auto m = EncodeModel(*w, kRecommendedFracBits);
    return m.ok() ? *m : nullptr;
  }();
  EXPECT_NE(model, nullptr) << "the synthetic model could not be made";
  return model;
}

// Runs of `prompt` with the same dealers, local seeds and secrets; run k burns k batches of
// every free-mask item type first (CheckExact's premise, which its control asserts).
template <typename P>
std::vector<RunRecord> ExactRuns(const std::shared_ptr<const RingModel>& model,
                                 const std::vector<int>& prompt, int runs, int steps,
                                 const std::vector<Mutation>& muts = {}) {
  std::vector<RunRecord> out;
  for (int k = 0; k < runs; ++k) {
    RunConfig c;
    c.dealer_seed = 11;
    c.local_seed = 11;
    c.burn = k;
    c.burn_items = kFreeMasks;
    c.mutations = muts;
    auto r = RunRecorded<P>(model, prompt, steps, c);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    if (!r.ok()) return {};
    out.push_back(std::move(*r));
  }
  return out;
}

// Runs of `prompt` with every seed different (seeds first, first + 1, ...), messages kept.
template <typename P>
std::vector<RunRecord> SeededRuns(const std::shared_ptr<const RingModel>& model,
                                  const std::vector<int>& prompt, int runs, std::uint64_t first,
                                  const std::vector<Mutation>& muts = {}) {
  std::vector<RunRecord> out;
  for (int k = 0; k < runs; ++k) {
    RunConfig c;
    c.dealer_seed = first + static_cast<std::uint64_t>(k);
    c.local_seed = first + static_cast<std::uint64_t>(k);
    c.record_messages = true;
    c.mutations = muts;
    auto r = RunRecorded<P>(model, prompt, kSteps, c);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    if (!r.ok()) return {};
    out.push_back(std::move(*r));
  }
  return out;
}

// Ordinal (among the requests of `item`) of the `nth` request with n elements (any n: 0)
// and, for truncations, f fractional bits (any: 0).
inline int FindCall(const RunRecord& r, Item item, std::size_t n, int nth = 0, int f = 0) {
  int call = 0;
  for (const auto& o : r.openings) {
    for (const Request& q : o.requests) {
      if (q.item != item) continue;
      if ((n == 0 || q.n == n) && (f == 0 || q.frac_bits == f) && nth-- == 0) return call;
      ++call;
    }
  }
  ADD_FAILURE() << "no such request of " << ItemName(item) << "(" << n << ")";
  return -1;
}

// The opening that follows the call-th request of `item`.
inline std::size_t OpeningOf(const RunRecord& r, Item item, int call) {
  int left = call;
  for (std::size_t o = 0; o < r.openings.size(); ++o) {
    for (const Request& q : r.openings[o].requests) {
      if (q.item == item && left-- == 0) return o;
    }
  }
  ADD_FAILURE() << "no opening after request " << call << " of " << ItemName(item);
  return kNone;
}

// The requests of `item`, in call order (index = the call number of FindCall/OpeningOf).
inline std::vector<Request> RequestsOf(const RunRecord& r, Item item) {
  std::vector<Request> out;
  for (const auto& o : r.openings) {
    for (const Request& q : o.requests) {
      if (q.item == item) out.push_back(q);
    }
  }
  return out;
}

// Every finding of `rep` lies in `allowed` (openings of mutated material).
inline void ExpectOnly(const Report& rep, const std::set<std::size_t>& allowed) {
  for (const auto& f : rep.findings) {
    const bool ok = (f.opening != kNone || f.party >= 0) &&
                    (f.opening == kNone || allowed.count(f.opening)) &&
                    (f.other == kNone || allowed.count(f.other));
    EXPECT_TRUE(ok) << "flagged outside the mutated openings: " << f.what;
  }
}

inline bool HasPair(const Report& rep, std::size_t o1, std::size_t o2) {
  for (const auto& f : rep.findings) {
    if ((f.opening == o1 && f.other == o2) || (f.opening == o2 && f.other == o1)) return true;
  }
  return false;
}

inline void Print(const char* what, const Report& rep) {
  std::printf("[view] %s: %s\n", what, rep.Text(rep.findings.size() <= 40 ? 40 : 8).c_str());
}

}  // namespace mpcache::infer::viewtest
