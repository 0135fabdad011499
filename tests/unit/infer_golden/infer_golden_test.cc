// stories260K through the secure engine, public weights: the golden greedy text in
// malicious (SPDZ2k) and semi-honest mode.
#include "unit/infer_golden/golden_run.h"

namespace mpcache::infer::golden_test {
namespace {

TEST(SecureGolden, OnceUponATime64MaliciousPublic) {
  ExpectGolden<mpc::Spdz2k>("Once upon a time", 64, golden::kOnceUponATime64, false);
}
TEST(SecureGolden, OnceUponATime64SemiHonestPublic) {
  ExpectGolden<mpc::SemiHonest>("Once upon a time", 64, golden::kOnceUponATime64, false);
}
TEST(SecureGolden, Bos200MaliciousPublic) {
  ExpectGolden<mpc::Spdz2k>("", 200, golden::kBosOnly200, false);
}
TEST(SecureGolden, Bos200SemiHonestPublic) {
  ExpectGolden<mpc::SemiHonest>("", 200, golden::kBosOnly200, false);
}

}  // namespace
}  // namespace mpcache::infer::golden_test
