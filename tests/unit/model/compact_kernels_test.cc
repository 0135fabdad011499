// The compact-matrix kernels (model/compact_kernels.h) against the definition: W's exact
// integers (value x 2^24, ScaledHalf) times x, modulo 2^64 and 2^128 — the vectorised path,
// the scalar path and a naive double loop over CompactMatrix::At must agree bit for bit,
// including extreme values (q = -128, digits at -2^15, subnormal and negative scales, words
// near 2^64 and 2^128) and odd row counts.
#include "model/compact_kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model/gguf.h"

namespace mpcache::model {
namespace {

using u128 = unsigned __int128;

struct Rng {
  std::uint64_t s;
  std::uint64_t Next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  u128 Next128() { return (static_cast<u128>(Next()) << 64) | Next(); }
};

// A Q8_0 or F16 matrix in its own bytes, with random scales/values in [2^-24, 2^(max_exp)].
struct TestMatrix {
  std::vector<std::uint8_t> bytes;
  CompactMatrix m;
  TestMatrix(CompactType type, std::size_t rows, std::size_t cols, Rng& rng, int max_exp = -4,
             bool extremes = false) {
    m.type = type;
    m.rows = rows;
    m.cols = cols;
    bytes.resize(m.bytes() + 16);
    m.data = bytes.data();
    const auto half = [&]() {
      // Random exponent field 0 (subnormal) .. 15 + max_exp, random sign and mantissa.
      const std::uint64_t r = rng.Next();
      const std::uint16_t exp =
          static_cast<std::uint16_t>(r % static_cast<std::uint64_t>(16 + max_exp));
      std::uint16_t h = static_cast<std::uint16_t>((exp << 10) | ((r >> 8) & 0x3FF));
      if ((r >> 20) & 1) h |= 0x8000;
      return h;
    };
    for (std::size_t r = 0; r < rows; ++r) {
      std::uint8_t* row = bytes.data() + r * m.row_bytes();
      if (type == CompactType::kQ8_0) {
        for (std::size_t b = 0; b < cols / 32; ++b) {
          std::uint16_t h = half();
          if (extremes && b % 3 == 0)
            h = 0x8000 | (static_cast<std::uint16_t>(15 + max_exp) << 10) | 0x3FF;
          std::memcpy(row + b * 34, &h, 2);
          for (int k = 0; k < 32; ++k) {
            auto q = static_cast<std::int8_t>(rng.Next());
            if (extremes && k % 5 == 0) q = -128;
            row[b * 34 + 2 + k] = static_cast<std::uint8_t>(q);
          }
        }
      } else {
        for (std::size_t j = 0; j < cols; ++j) {
          const std::uint16_t h = half();
          std::memcpy(row + 2 * j, &h, 2);
        }
      }
    }
    std::int64_t worst = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < cols; j += (type == CompactType::kQ8_0 ? 32 : 1)) {
        std::uint16_t h;
        std::memcpy(&h, m.row(r) + (type == CompactType::kQ8_0 ? j / 32 * 34 : 2 * j), 2);
        worst = std::max(worst, std::abs(ScaledHalf(h)));
      }
    }
    m.max_scaled = worst;
  }
};

template <typename W>
std::vector<W> NaiveMatVec(const CompactMatrix& m, const std::vector<W>& x) {
  std::vector<W> y(m.rows, 0);
  for (std::size_t r = 0; r < m.rows; ++r) {
    for (std::size_t j = 0; j < m.cols; ++j) y[r] += static_cast<W>(m.At(r, j)) * x[j];
  }
  return y;
}

template <typename W>
std::vector<W> NaiveVecMat(const CompactMatrix& m, const std::vector<W>& x) {
  std::vector<W> y(m.cols, 0);
  for (std::size_t r = 0; r < m.rows; ++r) {
    for (std::size_t j = 0; j < m.cols; ++j) y[j] += x[r] * static_cast<W>(m.At(r, j));
  }
  return y;
}

std::vector<std::uint64_t> Words64(std::size_t n, Rng& rng, bool extremes) {
  std::vector<std::uint64_t> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = rng.Next();
    if (extremes && i % 4 == 0) x[i] = 0x8000800080008000ull;  // every digit -2^15
    if (extremes && i % 4 == 1) x[i] = ~std::uint64_t{0};
  }
  return x;
}

std::vector<u128> Words128(std::size_t n, Rng& rng, bool extremes) {
  std::vector<u128> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = rng.Next128();
    if (extremes && i % 4 == 0) {
      x[i] = (static_cast<u128>(0x8000800080008000ull) << 64) | 0x8000800080008000ull;
    }
    if (extremes && i % 4 == 1) x[i] = ~u128{0};
  }
  return x;
}

void ExpectSame(const std::vector<u128>& a, const std::vector<u128>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i] == b[i]) << what << " differs at " << i;
  }
}

class CompactKernels : public ::testing::TestWithParam<std::tuple<CompactType, bool, int>> {};

TEST_P(CompactKernels, MatVecAndVecMatEqualTheDefinition) {
  const auto [type, extremes, threads] = GetParam();
  Rng rng{0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(threads) ^ (extremes ? 77 : 0)};
  for (const auto& [rows, cols] :
       {std::pair<std::size_t, std::size_t>{7, 64}, {33, 96}, {5, 352}, {64, 32}}) {
    TestMatrix t(type, rows, cols, rng, -4, extremes);
    const CompactMatrix& m = t.m;
    for (KernelPath path : {KernelPath::kAuto, KernelPath::kScalar}) {
      const KernelOptions o{threads, path};
      // mod 2^64
      const auto x = Words64(cols, rng, extremes);
      std::vector<std::uint64_t> y(rows);
      CompactMatVec(m, x.data(), y.data(), o);
      EXPECT_EQ(y, NaiveMatVec(m, x)) << rows << "x" << cols;
      const auto xr = Words64(rows, rng, extremes);
      std::vector<std::uint64_t> yr(cols);
      CompactVecMat(m, xr.data(), yr.data(), o);
      EXPECT_EQ(yr, NaiveVecMat(m, xr)) << rows << "x" << cols;
      // mod 2^128, two vectors in one pass
      const auto xa = Words128(cols, rng, extremes), xb = Words128(cols, rng, extremes);
      std::vector<u128> ya(rows), yb(rows);
      CompactMatVec2(m, xa.data(), xb.data(), ya.data(), yb.data(), o);
      ExpectSame(ya, NaiveMatVec(m, xa), "MatVec2 a");
      ExpectSame(yb, NaiveMatVec(m, xb), "MatVec2 b");
      const auto ra = Words128(rows, rng, extremes), rb = Words128(rows, rng, extremes);
      std::vector<u128> za(cols), zb(cols);
      CompactVecMat2(m, ra.data(), rb.data(), za.data(), zb.data(), o);
      ExpectSame(za, NaiveVecMat(m, ra), "VecMat2 a");
      ExpectSame(zb, NaiveVecMat(m, rb), "VecMat2 b");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, CompactKernels,
                         ::testing::Combine(::testing::Values(CompactType::kQ8_0,
                                                              CompactType::kF16),
                                            ::testing::Bool(), ::testing::Values(1, 3)));

TEST(CompactKernelsTest, ScaledHalfIsTheExactValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1F) == 0x1F) continue;  // inf / nan
    const double v = static_cast<double>(HalfToFloat(static_cast<std::uint16_t>(h)));
    ASSERT_EQ(static_cast<double>(ScaledHalf(static_cast<std::uint16_t>(h))), v * 16777216.0) << h;
  }
}

TEST(CompactKernelsTest, VectorisedPathOnlyWhereItsLanesAreExact) {
  Rng rng{5};
  TestMatrix small(CompactType::kQ8_0, 2, 11008, rng, -4);
  EXPECT_EQ(MatVecVectorised(small.m), CompactKernelsVectorised());
  // Scales near 2^15 (weights up to ~4 million): the 64-bit lanes could overflow, so the
  // scalar path serves the matrix, and the result is still the definition.
  TestMatrix huge(CompactType::kQ8_0, 3, 11008, rng, 15, true);
  EXPECT_FALSE(MatVecVectorised(huge.m));
  const auto xa = Words128(11008, rng, true), xb = Words128(11008, rng, true);
  std::vector<u128> ya(3), yb(3);
  CompactMatVec2(huge.m, xa.data(), xb.data(), ya.data(), yb.data());
  ExpectSame(ya, NaiveMatVec(huge.m, xa), "huge a");
  TestMatrix f16(CompactType::kF16, 2, 64, rng);
  EXPECT_FALSE(MatVecVectorised(f16.m));
}

// Every product at its extreme (q = -128 against digits of -2^15, scale 1) for 1001 rows:
// the 32-bit sums of VecMat would overflow after 256 row pairs without their flushes.
TEST(CompactKernelsTest, VecMatSumsStayExactOverManyExtremeRows) {
  const std::size_t rows = 1001, cols = 64;
  std::vector<std::uint8_t> bytes(rows * cols / 32 * 34);
  for (std::size_t b = 0; b < rows * cols / 32; ++b) {
    bytes[b * 34] = 1;  // f16 0x0001: 2^-24, scaled 1
    bytes[b * 34 + 1] = 0;
    for (int k = 0; k < 32; ++k) bytes[b * 34 + 2 + k] = 0x80;  // -128
  }
  CompactMatrix m;
  m.type = CompactType::kQ8_0;
  m.data = bytes.data();
  m.rows = rows;
  m.cols = cols;
  m.max_scaled = 1;
  const std::vector<std::uint64_t> x(rows, 0x8000800080008000ull);
  std::vector<std::uint64_t> y(cols);
  CompactVecMat(m, x.data(), y.data());
  const std::uint64_t want = 0x8000800080008000ull * static_cast<std::uint64_t>(-128 * 1001);
  for (std::size_t j = 0; j < cols; ++j) ASSERT_EQ(y[j], want) << j;
  const u128 x128 = (static_cast<u128>(0x8000800080008000ull) << 64) | 0x8000800080008000ull;
  const std::vector<u128> xa(rows, x128), xb(rows, x128);
  std::vector<u128> ya(cols), yb(cols);
  CompactVecMat2(m, xa.data(), xb.data(), ya.data(), yb.data());
  const u128 want128 = x128 * static_cast<u128>(static_cast<__int128>(-128 * 1001));
  for (std::size_t j = 0; j < cols; ++j) ASSERT_TRUE(ya[j] == want128 && yb[j] == want128) << j;
}

}  // namespace
}  // namespace mpcache::model
