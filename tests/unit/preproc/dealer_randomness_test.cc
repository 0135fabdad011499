// Issue 10 §5: "the dealer tests would pass all-zero triples and masks". Every item is
// reconstructed from the three parties' shares, along both ways a party gets them — the
// in-process dealer (on-demand refill) and the seed-compressed batch path (Dealer::Make,
// Serialize/Parse, a separate PartyStore per party expanding from its own seed) — in both
// security modes, and checked for:
//   - the correlation: c = a b, aa = a^2, r_top = bit 63 of r, r_shift = (r mod 2^63) >> f,
//     bits in {0, 1}, C = B A (right) / A B (left), all mod 2^64; an input mask's clear
//     value (r mod 2^64) at its owner only (a party, or the client via its seed);
//   - the MACs: m = alpha x mod 2^128 for every value (malicious);
//   - non-degenerate free values: every bit of the full share word (malicious: all 128 bits
//     of the lift, semi-honest: 64) of triple a and b, square a, trunc r, randoms, input
//     masks (the upper half too: it is opened at full width), matrix masks A and matrix
//     triple B is 1 in N/2 +- 6 sqrt(N)/2 of N = 4096 samples (a uniform bit leaves that
//     band with probability ~2e-9), the bits' values likewise; and no two free values (of
//     any kind) are equal.
// Seeds are fixed (TestSeed), so each run checks the same values.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>
#include <string>

#include "preproc/in_process_dealer.h"

namespace mpcache::preproc {
namespace {

using mpc::MaskSide;
using mpc::Shares;
using mpc::u128;

constexpr std::size_t kN = 4096;    // samples per kind
constexpr std::size_t kDim = 64;    // matrix masks are kDim x kDim (kN elements)
constexpr int kFracBits = 16;       // trunc pairs
constexpr mpc::PartyId kOwner = 1;  // party-owned input masks
constexpr double kSigmas = 6.0;     // the band of the bit-frequency test
constexpr std::uint64_t kTwo63 = std::uint64_t{1} << 63;

template <typename P>
using Words = std::vector<typename P::Word>;

// The three parties' Preprocessing<P> views and what only the dealer/client know.
template <typename P>
struct Source {
  std::array<mpc::Preprocessing<P>*, 3> party{};
  u128 alpha = 0;
  std::vector<std::uint64_t> client_clear;  // the client's clear masks (kN)
  // Keeps the dealer and the stores alive.
  std::unique_ptr<InProcessDealer<P>> in_process;
  std::vector<std::unique_ptr<PartyStore<P>>> stores;
};

// In-process: the parties' Get* calls make the batches on demand.
template <typename P>
Source<P> InProcess() {
  Source<P> s;
  s.in_process = InProcessDealer<P>::Create(TestSeed(60), 3, /*on_demand=*/true).value();
  for (int p = 0; p < 3; ++p) s.party[static_cast<std::size_t>(p)] = &s.in_process->store(p);
  s.alpha = s.in_process->dealer().mac_key();
  EXPECT_TRUE(
      s.in_process->Provide({.type = ItemType::kInputMask, .count = kN, .owner = mpc::kClient})
          .ok());
  s.client_clear = s.in_process->NextClientMasks().value();
  return s;
}

// Seed-compressed batches: made by the dealer, serialised, parsed and expanded by three
// stores that share nothing but their seeds with it.
template <typename P>
Source<P> BatchPath() {
  const Security sec = P::kMalicious ? Security::kMalicious : Security::kSemiHonest;
  auto dealer = Dealer::Create(sec, TestSeed(61)).value();
  Source<P> s;
  for (int p = 0; p < 3; ++p) {
    s.stores.push_back(std::make_unique<PartyStore<P>>(p, 3, dealer->party_seed(p)));
    s.party[static_cast<std::size_t>(p)] = s.stores.back().get();
  }
  s.alpha = dealer->mac_key();
  const std::vector<BatchRequest> requests = {
      {.type = ItemType::kTriple, .count = kN},
      {.type = ItemType::kSquare, .count = kN},
      {.type = ItemType::kTrunc, .count = kN, .frac_bits = kFracBits},
      {.type = ItemType::kBit, .count = kN},
      {.type = ItemType::kRandom, .count = kN},
      {.type = ItemType::kInputMask, .count = kN, .owner = kOwner},
      {.type = ItemType::kInputMask, .count = kN, .owner = mpc::kClient},
      {.type = ItemType::kMatrixMask, .rows = kDim, .cols = kDim},
      {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kRight, .other = kDim},
      {.type = ItemType::kMatrixMask, .rows = kDim, .cols = kDim},
      {.type = ItemType::kMatrixTriple, .mask_id = 1, .side = MaskSide::kLeft, .other = kDim},
  };
  for (const BatchRequest& req : requests) {
    auto out = dealer->Make(req);
    EXPECT_TRUE(out.ok()) << out.error().ToString();
    if (!out.ok()) return s;
    for (int p = 0; p < 3; ++p) {
      const auto bytes = out->parties[static_cast<std::size_t>(p)].Serialize();
      auto parsed = Batch::Parse(bytes);
      EXPECT_TRUE(parsed.ok() && s.stores[static_cast<std::size_t>(p)]->Accept(*parsed).ok());
    }
    if (out->client) {
      auto back = Batch::Parse(out->client->Serialize()).value();
      s.client_clear = ExpandClientMasks(dealer->party_seed(mpc::kClient), back).value();
    }
  }
  return s;
}

// The full words of the reconstructed values; every MAC checked (malicious).
template <typename P>
Words<P> Open(const std::array<const Shares<P>*, 3>& s, u128 alpha, const std::string& what) {
  const std::size_t n = s[0]->size();
  Words<P> out(n, 0);
  std::size_t bad_macs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    u128 m = 0;
    for (const auto* p : s) {
      out[i] += p->v[i];
      if constexpr (P::kMalicious) m += p->m[i];
    }
    if constexpr (P::kMalicious) bad_macs += (m != alpha * out[i]) ? 1 : 0;
  }
  EXPECT_EQ(bad_macs, 0u) << what << ": MACs that are not alpha x";
  return out;
}

// Each bit of the share word is 1 in N/2 +- kSigmas sqrt(N)/2 of the values.
template <typename P>
void ExpectUniformBits(const Words<P>& xs, const std::string& what) {
  const int bits = P::kMalicious ? 128 : 64;
  const double n = static_cast<double>(xs.size());
  const double band = kSigmas * std::sqrt(n) / 2;
  for (int b = 0; b < bits; ++b) {
    std::size_t ones = 0;
    for (const auto& x : xs) ones += static_cast<std::size_t>((u128{x} >> b) & 1);
    EXPECT_LE(std::fabs(static_cast<double>(ones) - n / 2), band)
        << what << ": bit " << b << " is 1 in " << ones << " of " << xs.size() << " values";
  }
}

std::uint64_t Lo(u128 x) {
  return static_cast<std::uint64_t>(x);
}

template <typename P>
void CheckEverything(Source<P>& src) {
  const u128 alpha = src.alpha;
  if constexpr (P::kMalicious) {
    EXPECT_NE(Lo(alpha), 0u);
    EXPECT_NE(Lo(alpha >> 64), 0u);
  }
  // Every party asks for the same things in the same order (the in-process dealer makes
  // each batch at the first party's call).
  std::vector<mpc::Triples<P>> t;
  std::vector<mpc::SquarePairs<P>> sq;
  std::vector<mpc::TruncPairs<P>> tr;
  std::vector<Shares<P>> bits, rnd;
  std::vector<mpc::InputMasks<P>> owned, client;
  std::vector<mpc::MatrixMask<P>> mr, ml;
  std::vector<mpc::MatrixTriple<P>> tr_right, tr_left;
  for (mpc::Preprocessing<P>* s : src.party) {
    t.push_back(s->GetTriples(kN).value());
    sq.push_back(s->GetSquares(kN).value());
    tr.push_back(s->GetTruncPairs(kN, kFracBits).value());
    bits.push_back(s->GetBits(kN).value());
    rnd.push_back(s->GetRandoms(kN).value());
    owned.push_back(s->GetInputMasks(kN, kOwner).value());
    client.push_back(s->GetInputMasks(kN, mpc::kClient).value());
    mr.push_back(s->GetMatrixMask(kDim, kDim).value());
    tr_right.push_back(s->GetMatrixTriple(mr.back().id, MaskSide::kRight, kDim).value());
    ml.push_back(s->GetMatrixMask(kDim, kDim).value());
    tr_left.push_back(s->GetMatrixTriple(ml.back().id, MaskSide::kLeft, kDim).value());
  }
  const auto open = [&](auto get, const std::string& what) {
    return Open<P>({&get(0), &get(1), &get(2)}, alpha, what);
  };
  const auto a = open(
      [&](std::size_t i) -> auto& { return t[i].a; }, "triple a");
  const auto b = open(
      [&](std::size_t i) -> auto& { return t[i].b; }, "triple b");
  const auto c = open(
      [&](std::size_t i) -> auto& { return t[i].c; }, "triple c");
  const auto s1 = open(
      [&](std::size_t i) -> auto& { return sq[i].a; }, "square a");
  const auto s2 = open(
      [&](std::size_t i) -> auto& { return sq[i].aa; }, "square aa");
  const auto r = open(
      [&](std::size_t i) -> auto& { return tr[i].r; }, "trunc r");
  const auto top = open(
      [&](std::size_t i) -> auto& { return tr[i].r_top; }, "trunc r_top");
  const auto sh = open(
      [&](std::size_t i) -> auto& { return tr[i].r_shift; }, "trunc r_shift");
  const auto bv = open(
      [&](std::size_t i) -> auto& { return bits[i]; }, "bits");
  const auto rv = open(
      [&](std::size_t i) -> auto& { return rnd[i]; }, "randoms");
  const auto om = open(
      [&](std::size_t i) -> auto& { return owned[i].r; }, "party input masks");
  const auto cm = open(
      [&](std::size_t i) -> auto& { return client[i].r; }, "client input masks");
  const auto ar = open(
      [&](std::size_t i) -> auto& { return mr[i].a; }, "matrix mask (right)");
  const auto br = open(
      [&](std::size_t i) -> auto& { return tr_right[i].b; }, "right triple B");
  const auto cr = open(
      [&](std::size_t i) -> auto& { return tr_right[i].c; }, "right triple C");
  const auto al = open(
      [&](std::size_t i) -> auto& { return ml[i].a; }, "matrix mask (left)");
  const auto bl = open(
      [&](std::size_t i) -> auto& { return tr_left[i].b; }, "left triple B");
  const auto cl = open(
      [&](std::size_t i) -> auto& { return tr_left[i].c; }, "left triple C");

  // Correlations (mod 2^64).
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kN; ++i) {
    wrong += Lo(c[i]) != Lo(a[i]) * Lo(b[i]);
    wrong += Lo(s2[i]) != Lo(s1[i]) * Lo(s1[i]);
    wrong += u128{top[i]} != u128{Lo(r[i]) >> 63};
    wrong += u128{sh[i]} != u128{(Lo(r[i]) & (kTwo63 - 1)) >> kFracBits};
    wrong += u128{bv[i]} > 1;
  }
  EXPECT_EQ(wrong, 0u) << "elementwise correlations";
  for (std::size_t i = 0; i < kDim; ++i) {
    for (std::size_t j = 0; j < kDim; ++j) {
      std::uint64_t right = 0, left = 0;
      for (std::size_t k = 0; k < kDim; ++k) {
        right += Lo(br[i * kDim + k]) * Lo(ar[k * kDim + j]);  // C = B A
        left += Lo(al[i * kDim + k]) * Lo(bl[k * kDim + j]);   // C = A B
      }
      wrong += Lo(cr[i * kDim + j]) != right;
      wrong += Lo(cl[i * kDim + j]) != left;
    }
  }
  EXPECT_EQ(wrong, 0u) << "matrix triple correlations";
  // Input masks: r mod 2^64 in the clear at the owner only.
  for (int p = 0; p < 3; ++p) {
    if (p == kOwner) continue;
    EXPECT_TRUE(owned[static_cast<std::size_t>(p)].clear.empty()) << "party " << p;
  }
  ASSERT_EQ(owned[kOwner].clear.size(), kN);
  ASSERT_EQ(src.client_clear.size(), kN);
  for (int p = 0; p < 3; ++p) EXPECT_TRUE(client[static_cast<std::size_t>(p)].clear.empty());
  for (std::size_t i = 0; i < kN; ++i) {
    wrong += owned[kOwner].clear[i] != Lo(om[i]);
    wrong += src.client_clear[i] != Lo(cm[i]);
  }
  EXPECT_EQ(wrong, 0u) << "input masks' clear values";

  // Non-degenerate free values.
  ExpectUniformBits<P>(a, "triple a");
  ExpectUniformBits<P>(b, "triple b");
  ExpectUniformBits<P>(s1, "square a");
  ExpectUniformBits<P>(r, "trunc r");
  ExpectUniformBits<P>(rv, "randoms");
  ExpectUniformBits<P>(om, "party input masks");
  ExpectUniformBits<P>(cm, "client input masks");
  ExpectUniformBits<P>(ar, "matrix mask (right)");
  ExpectUniformBits<P>(al, "matrix mask (left)");
  ExpectUniformBits<P>(br, "right triple B");
  ExpectUniformBits<P>(bl, "left triple B");
  std::size_t ones = 0;
  for (const auto& x : bv) ones += static_cast<std::size_t>(Lo(x) & 1);
  EXPECT_LE(std::fabs(static_cast<double>(ones) - kN / 2.0), kSigmas * std::sqrt(kN) / 2)
      << "bits: " << ones << " ones of " << kN;
  std::set<u128> seen;
  std::size_t repeats = 0;
  for (const Words<P>* kind : {&a, &b, &s1, &r, &rv, &om, &cm, &ar, &al, &br, &bl}) {
    for (const auto& x : *kind) repeats += seen.insert(u128{x}).second ? 0 : 1;
  }
  EXPECT_EQ(repeats, 0u) << "free values that repeat (of " << 11 * kN << ")";
}

template <typename P>
class DealerRandomness : public ::testing::Test {};
using Modes = ::testing::Types<mpc::SemiHonest, mpc::Spdz2k>;
TYPED_TEST_SUITE(DealerRandomness, Modes);

TYPED_TEST(DealerRandomness, InProcessItemsAreCorrectAuthenticatedAndUniform) {
  Source<TypeParam> src = InProcess<TypeParam>();
  CheckEverything<TypeParam>(src);
}

TYPED_TEST(DealerRandomness, SeedCompressedBatchItemsAreCorrectAuthenticatedAndUniform) {
  Source<TypeParam> src = BatchPath<TypeParam>();
  CheckEverything<TypeParam>(src);
}

}  // namespace
}  // namespace mpcache::preproc
