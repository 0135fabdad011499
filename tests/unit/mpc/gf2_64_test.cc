// GF(2^64) arithmetic of the binary domain's MACs: the hardware carry-less product equals
// the portable one, the reduction is by X^64 + X^4 + X^3 + X + 1, and the field laws hold.
#include "mpc/gf2_64.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/prg.h"

namespace mpcache::mpc::gf64 {
namespace {

// Reference product: shift-and-add with reduction at every step.
std::uint64_t SlowMul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  for (int i = 63; i >= 0; --i) {
    const bool carry = (r >> 63) != 0;
    r <<= 1;
    if (carry) r ^= 0x1B;  // X^64 = X^4 + X^3 + X + 1
    if ((b >> i) & 1) r ^= a;
  }
  return r;
}

TEST(Gf64, ProductsMatchTheReference) {
  Prg prg(TestSeed(1));
  for (int t = 0; t < 2000; ++t) {
    const std::uint64_t a = prg.NextU64(), b = prg.NextU64();
    EXPECT_EQ(ClMul(a, b), ClMulPortable(a, b));
    EXPECT_EQ(Mul(a, b), SlowMul(a, b));
  }
  EXPECT_EQ(Mul(std::uint64_t{1} << 63, 2), 0x1Bu);  // X^64 reduces to X^4 + X^3 + X + 1
  EXPECT_EQ(Mul(~std::uint64_t{0}, 1), ~std::uint64_t{0});
  EXPECT_EQ(Mul(0, 12345), 0u);
}

TEST(Gf64, FieldLaws) {
  Prg prg(TestSeed(2));
  for (int t = 0; t < 500; ++t) {
    const std::uint64_t a = prg.NextU64(), b = prg.NextU64(), c = prg.NextU64();
    EXPECT_EQ(Mul(a, b), Mul(b, a));
    EXPECT_EQ(Mul(a, b ^ c), Mul(a, b) ^ Mul(a, c));
    EXPECT_EQ(Mul(Mul(a, b), c), Mul(a, Mul(b, c)));
    if (a != 0 && b != 0) {
      EXPECT_NE(Mul(a, b), 0u);  // no zero divisors
    }
  }
}

TEST(Gf64, DotAndSelect) {
  Prg prg(TestSeed(3));
  for (std::size_t n : {0, 1, 2, 3, 17, 64, 129}) {
    std::vector<std::uint64_t> chi(n), m(n), bits((n + 63) / 64 + 1);
    for (auto& x : chi) x = prg.NextU64();
    for (auto& x : m) x = prg.NextU64();
    for (auto& x : bits) x = prg.NextU64();
    u128 dot = 0;
    std::uint64_t sel = 0;
    for (std::size_t j = 0; j < n; ++j) {
      dot ^= ClMulPortable(chi[j], m[j]);
      if ((bits[(j + 5) / 64] >> ((j + 5) % 64)) & 1) sel ^= chi[j];
    }
    EXPECT_EQ(DotUnreduced(chi, m), dot) << n;
    EXPECT_EQ(SelectXor(chi, bits.data(), 5), sel) << n;
  }
}

}  // namespace
}  // namespace mpcache::mpc::gf64
