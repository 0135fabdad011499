#include "common/fixed_point.h"

#include <gtest/gtest.h>

namespace mpcache {
namespace {

TEST(FixedPointTest, RoundTripWithinHalfUlp) {
  FixedPoint fp{16};
  for (double x : {0.0, 1.0, -1.0, 3.14159, -2.71828, 1e-6, -12345.678}) {
    EXPECT_NEAR(fp.Decode(fp.Encode(x)), x, fp.Ulp() / 2 + 1e-12) << x;
  }
}

TEST(FixedPointTest, MulTruncatesLikeFloorOfProduct) {
  FixedPoint fp{16};
  const Ring64 a = fp.Encode(1.5);
  const Ring64 b = fp.Encode(-2.25);
  EXPECT_DOUBLE_EQ(fp.Decode(fp.Mul(a, b)), -3.375);
  EXPECT_EQ(FixedPoint::Truncate(static_cast<Ring64>(-1), 4), static_cast<Ring64>(-1));
}

TEST(FixedPointTest, SaturatesOutsideRange) {
  FixedPoint fp{16};
  EXPECT_EQ(static_cast<std::int64_t>(fp.Encode(1e300)), INT64_MAX);
  EXPECT_EQ(static_cast<std::int64_t>(fp.Encode(-1e300)), INT64_MIN);
}

}  // namespace
}  // namespace mpcache
