// stories260K through the secure engine, private (secret-shared) weights: the golden greedy
// text in malicious (SPDZ2k) and semi-honest mode (label heavy).
#include "unit/infer_golden/golden_run.h"

namespace mpcache::infer::golden_test {
namespace {

TEST(SecureGoldenPrivate, OnceUponATime64MaliciousPrivate) {
  ExpectGolden<mpc::Spdz2k>("Once upon a time", 64, golden::kOnceUponATime64, true);
}
TEST(SecureGoldenPrivate, OnceUponATime64SemiHonestPrivate) {
  ExpectGolden<mpc::SemiHonest>("Once upon a time", 64, golden::kOnceUponATime64, true);
}
TEST(SecureGoldenPrivate, Bos200MaliciousPrivate) {
  ExpectGolden<mpc::Spdz2k>("", 200, golden::kBosOnly200, true);
}
TEST(SecureGoldenPrivate, Bos200SemiHonestPrivate) {
  ExpectGolden<mpc::SemiHonest>("", 200, golden::kBosOnly200, true);
}

}  // namespace
}  // namespace mpcache::infer::golden_test
