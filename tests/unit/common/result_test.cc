#include "common/result.h"

#include <gtest/gtest.h>

namespace mpcache {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd number " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  MPCACHE_ASSIGN_OR_RETURN(int h, Half(x));
  MPCACHE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckPositive(int x) {
  if (x <= 0) return InvalidArgument("not positive");
  return Status::Ok();
}

Status Both(int a, int b) {
  MPCACHE_RETURN_IF_ERROR(CheckPositive(a));
  MPCACHE_RETURN_IF_ERROR(CheckPositive(b));
  return Status::Ok();
}

TEST(ResultTest, ValueAndErrorPropagate) {
  auto q = Quarter(12);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 3);
  auto bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "odd number 3");
  EXPECT_EQ(bad.error().ToString(), "invalid argument: odd number 3");
}

TEST(ResultTest, StatusPropagates) {
  EXPECT_TRUE(Both(1, 2).ok());
  auto s = Both(1, -2);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().WithContext("checking b").message(), "checking b: not positive");
}

}  // namespace
}  // namespace mpcache
