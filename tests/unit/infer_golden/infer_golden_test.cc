// stories260K through the secure engine, public weights: the 64-step golden greedy text
// from "Once upon a time" in malicious (SPDZ2k) and semi-honest mode (label golden; about
// 25 s and 13 s here). The 200-step runs and private weights are in the heavy test.
#include "unit/infer_golden/golden_run.h"

namespace mpcache::infer::golden_test {
namespace {

TEST(SecureGolden, OnceUponATime64MaliciousPublic) {
  ExpectGolden<mpc::Spdz2k>("Once upon a time", 64, golden::kOnceUponATime64, false);
}
TEST(SecureGolden, OnceUponATime64SemiHonestPublic) {
  ExpectGolden<mpc::SemiHonest>("Once upon a time", 64, golden::kOnceUponATime64, false);
}

}  // namespace
}  // namespace mpcache::infer::golden_test
