// BitReserve: items come out in the order they were added, whatever the chunking, in both
// layouts (malicious: one lift per bit; semi-honest: packed bits at any bit offset).
#include "daemon/bit_pool.h"

#include <gtest/gtest.h>

#include <random>

namespace mpcache::daemon {
namespace {

// Items from..from+n-1 carrying value i in every field, malicious layout.
mpc::DaBits<mpc::Spdz2k> Numbered(std::size_t from, std::size_t n) {
  mpc::DaBits<mpc::Spdz2k> d;
  d.b = mpc::BitShares<mpc::Spdz2k>(n);
  d.a = mpc::Shares<mpc::Spdz2k>(n);
  for (std::size_t i = 0; i < n; ++i) {
    d.b.v[i] = d.b.m[i] = from + i;
    d.a.v[i] = d.a.m[i] = from + i;
  }
  return d;
}

TEST(BitReserve, HandsOutMaliciousItemsInOrderAcrossChunks) {
  BitReserve<mpc::Spdz2k, mpc::DaBits<mpc::Spdz2k>> reserve;
  std::size_t made = 0, next = 0;
  for (std::size_t n : {3u, 10u, 1u, 40u, 7u, 0u, 16u}) {
    while (reserve.left() < n) {
      reserve.Add(Numbered(made, 16));
      made += 16;
    }
    auto got = reserve.Take(n);
    ASSERT_EQ(got.a.size(), n);
    ASSERT_EQ(got.b.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(got.a.v[i], next + i);
      EXPECT_EQ(got.a.m[i], next + i);
      EXPECT_EQ(got.b.m[i], next + i);
    }
    next += n;
  }
  EXPECT_EQ(reserve.left(), made - next);
}

// Semi-honest packed bits: random bit strings added in odd-sized pieces come out as the
// same bit string, at every offset, with the padding bits of the last word cleared.
TEST(BitReserve, SlicesPackedSemiHonestBitsAtAnyOffset) {
  using P = mpc::SemiHonest;
  std::mt19937_64 rng(7);
  std::vector<int> truth;
  BitReserve<P, mpc::BitShares<P>> reserve;
  std::size_t taken = 0;
  for (std::size_t n : {1u, 63u, 64u, 65u, 130u, 7u, 200u, 64u, 3u}) {
    const std::size_t add = n + rng() % 100;
    mpc::BitShares<P> more(add);
    for (auto& w : more.v) w = rng();  // padding beyond `add` is random too
    for (std::size_t i = 0; i < add; ++i)
      truth.push_back(static_cast<int>((more.v[i / 64] >> (i % 64)) & 1));
    reserve.Add(std::move(more));
    mpc::BitShares<P> got = reserve.Take(n);
    ASSERT_EQ(got.size(), n);
    ASSERT_EQ(got.v.size(), mpc::WordsFor(n));
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(static_cast<int>((got.v[i / 64] >> (i % 64)) & 1), truth[taken + i]) << "bit " << i;
    }
    taken += n;
  }
  EXPECT_EQ(reserve.left(), truth.size() - taken);
}

// EdaBits mix arithmetic shares and packed bits: both halves stay aligned.
TEST(BitReserve, KeepsEdaBitHalvesAligned) {
  using P = mpc::SemiHonest;
  auto make = [](std::size_t from, std::size_t n) {
    mpc::EdaBits<P> e;
    e.r = mpc::Shares<P>(n);
    for (auto& b : e.bits) b = mpc::BitShares<P>(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t x = from + i;
      e.r.v[i] = x;
      for (std::size_t j = 0; j < 64; ++j) {
        if ((x >> j) & 1) e.bits[j].v[i / 64] |= std::uint64_t{1} << (i % 64);
      }
    }
    return e;
  };
  BitReserve<P, mpc::EdaBits<P>> reserve;
  reserve.Add(make(0, 70));
  reserve.Add(make(70, 33));
  auto a = reserve.Take(50);
  auto b = reserve.Take(53);
  for (std::size_t i = 0; i < 53; ++i) {
    const std::uint64_t x = b.r.v[i];
    EXPECT_EQ(x, 50 + i);
    for (std::size_t j = 0; j < 64; ++j) {
      EXPECT_EQ((b.bits[j].v[i / 64] >> (i % 64)) & 1, (x >> j) & 1);
    }
  }
  EXPECT_EQ(a.r.v[49], 49u);
  EXPECT_EQ(reserve.left(), 0u);
}

}  // namespace
}  // namespace mpcache::daemon
