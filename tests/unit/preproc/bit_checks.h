// Reconstruction checks for comparison material (mpc/compare/bit_preprocessing.h) held by
// three parties: every binary value under the binary MAC key beta (GF(2^64)) and every arithmetic
// value under alpha (malicious mode), and the relations the dealer promises.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "mpc/compare/bit_preprocessing.h"

namespace mpcache::preproc::testing {

template <typename P>
struct BitChecker {
  mpc::u128 alpha = 0;     // arithmetic MAC key (malicious)
  std::uint64_t beta = 0;  // binary MAC key (malicious)

  // Bit i of three binary shares (MAC-checked in malicious mode).
  std::uint64_t Bit(const mpc::BitShares<P>& s0, const mpc::BitShares<P>& s1,
                    const mpc::BitShares<P>& s2, std::size_t i) const {
    if constexpr (P::kMalicious) {
      // XOR shares of a bit (one word each, 0 or 1), MAC beta * bit in GF(2^64).
      EXPECT_LE(s0.v[i] | s1.v[i] | s2.v[i], 1u) << "binary share word is not a bit at " << i;
      const std::uint64_t bit = (s0.v[i] ^ s1.v[i] ^ s2.v[i]) & 1;
      EXPECT_EQ(s0.m[i] ^ s1.m[i] ^ s2.m[i], bit != 0 ? beta : 0u) << "bad binary MAC at " << i;
      return bit;
    } else {
      return ((s0.v[i / 64] ^ s1.v[i / 64] ^ s2.v[i / 64]) >> (i % 64)) & 1;
    }
  }
  // Element i of three arithmetic shares mod 2^64 (MAC-checked in malicious mode).
  std::uint64_t Arith(const mpc::Shares<P>& s0, const mpc::Shares<P>& s1, const mpc::Shares<P>& s2,
                      std::size_t i) const {
    const typename P::Word v = s0.v[i] + s1.v[i] + s2.v[i];
    if constexpr (P::kMalicious) {
      EXPECT_TRUE(s0.m[i] + s1.m[i] + s2.m[i] == alpha * v) << "bad arithmetic MAC at " << i;
    }
    return mpc::Low64(v);
  }

  // Returns the number of items whose value was 1 (to see that the material is random).
  std::size_t Check(const std::array<mpc::BitTriples<P>, 3>& x, std::size_t n) const {
    std::size_t ones = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t a = Bit(x[0].a, x[1].a, x[2].a, i), b = Bit(x[0].b, x[1].b, x[2].b, i);
      EXPECT_EQ(Bit(x[0].c, x[1].c, x[2].c, i), a & b) << "triple " << i;
      ones += a;
    }
    return ones;
  }
  // Malicious edaBits are item-major rows: bit 0 of a row's value word is the share (the
  // rest of the word is ignored), its MAC word a GF(2^64) share.
  static mpc::BitShares<P> RowBit(const mpc::EdaBits<P>& e, std::size_t i, std::size_t word) {
    mpc::BitShares<P> out(1);
    out.v[0] = e.rows.rows[i][word] & 1;
    out.m[0] = e.rows.rows[i][mpc::edabit::MacOf(word)];
    return out;
  }
  std::size_t Check(const std::array<mpc::EdaBits<P>, 3>& x, std::size_t n) const {
    std::size_t ones = 0;
    std::uint64_t high_or = 0;
    for (int p = 0; p < 3; ++p) {
      if constexpr (P::kMalicious) {
        EXPECT_EQ(x[static_cast<std::size_t>(p)].rows.size(), n) << "edaBit rows of party " << p;
      }
    }
    // A binary value of item i: bit j (word < 64) or product k (word 64 + k).
    auto value = [&](std::size_t i, std::size_t word) -> std::uint64_t {
      if constexpr (P::kMalicious) {
        return Bit(RowBit(x[0], i, word), RowBit(x[1], i, word), RowBit(x[2], i, word), 0);
      } else {
        const auto& s = [&](int p) -> const mpc::BitShares<P>& {
          const auto& e = x[static_cast<std::size_t>(p)];
          return word < 64 ? e.bits[word] : e.prods[word - 64];
        };
        return Bit(s(0), s(1), s(2), i);
      }
    };
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t bits = 0;
      for (std::size_t j = 0; j < 64; ++j)
        bits |= value(i, mpc::edabit::BitWord(static_cast<int>(j))) << j;
      EXPECT_EQ(Arith(x[0].r, x[1].r, x[2].r, i), bits) << "edaBit " << i;
      if constexpr (P::kMalicious) {
        // r's upper half is uniform (c = x + r is opened at full width): not all zero.
        high_or |= static_cast<std::uint64_t>((x[0].r.v[i] + x[1].r.v[i] + x[2].r.v[i]) >> 64);
      }
      for (int g = 0; g < mpc::edabit::kGroups; ++g) {
        for (unsigned mask = 0; mask < (1u << mpc::edabit::GroupSize(g)); ++mask) {
          const int idx = mpc::edabit::MaskIndex(mask);
          if (idx < 0) continue;
          const auto k = static_cast<std::size_t>(mpc::edabit::GroupOffset(g) + idx);
          const std::uint64_t sub = (bits >> mpc::edabit::GroupBase(g)) & mask;
          EXPECT_EQ(value(i, mpc::edabit::ProductWord(static_cast<int>(k))), sub == mask ? 1u : 0u)
              << "edaBit " << i << " product " << k;
        }
      }
      ones += bits & 1;
    }
    if constexpr (P::kMalicious) {
      if (n >= 4) {
        EXPECT_NE(high_or, 0u) << "edaBit [r] has a zero upper half";
      }
    }
    return ones;
  }
  std::size_t Check(const std::array<mpc::DaBits<P>, 3>& x, std::size_t n) const {
    std::size_t ones = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t b = Bit(x[0].b, x[1].b, x[2].b, i);
      EXPECT_EQ(Arith(x[0].a, x[1].a, x[2].a, i), b) << "daBit " << i;
      ones += b;
    }
    return ones;
  }
  std::size_t Check(const std::array<mpc::RootTuples<P>, 3>& x, std::size_t n) const {
    std::size_t ones = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t u = Bit(x[0].u, x[1].u, x[2].u, i), v = Bit(x[0].v, x[1].v, x[2].v, i),
                          w = Bit(x[0].w, x[1].w, x[2].w, i);
      const std::array<std::uint64_t, 7> mono = {u, v, w, v & w, u & w, u & v, u & v & w};
      for (std::size_t k = 0; k < 7; ++k) {
        EXPECT_EQ(Arith(x[0].mono[k], x[1].mono[k], x[2].mono[k], i), mono[k])
            << "root tuple " << i << " monomial " << k;
      }
      ones += u;
    }
    return ones;
  }
  std::size_t Check(const std::array<mpc::BitShares<P>, 3>& x, std::size_t n) const {
    std::size_t ones = 0;
    for (std::size_t i = 0; i < n; ++i) ones += Bit(x[0], x[1], x[2], i);
    return ones;
  }
};

}  // namespace mpcache::preproc::testing
