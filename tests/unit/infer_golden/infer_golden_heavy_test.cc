// stories260K through the secure engine (label heavy): the 200-step BOS golden text with
// public weights (about 220 s malicious, 105 s semi-honest here), and every golden run with
// private (secret-shared) weights, in malicious (SPDZ2k) and semi-honest mode.
#include "unit/infer_golden/golden_run.h"

namespace mpcache::infer::golden_test {
namespace {

TEST(SecureGoldenHeavy, Bos200MaliciousPublic) {
  ExpectGolden<mpc::Spdz2k>("", 200, golden::kBosOnly200, false);
}
TEST(SecureGoldenHeavy, Bos200SemiHonestPublic) {
  ExpectGolden<mpc::SemiHonest>("", 200, golden::kBosOnly200, false);
}
TEST(SecureGoldenHeavy, OnceUponATime64MaliciousPrivate) {
  ExpectGolden<mpc::Spdz2k>("Once upon a time", 64, golden::kOnceUponATime64, true);
}
TEST(SecureGoldenHeavy, OnceUponATime64SemiHonestPrivate) {
  ExpectGolden<mpc::SemiHonest>("Once upon a time", 64, golden::kOnceUponATime64, true);
}
TEST(SecureGoldenHeavy, Bos200MaliciousPrivate) {
  ExpectGolden<mpc::Spdz2k>("", 200, golden::kBosOnly200, true);
}
TEST(SecureGoldenHeavy, Bos200SemiHonestPrivate) {
  ExpectGolden<mpc::SemiHonest>("", 200, golden::kBosOnly200, true);
}

}  // namespace
}  // namespace mpcache::infer::golden_test
