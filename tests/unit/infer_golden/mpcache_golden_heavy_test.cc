// MPCache on the real stories260K under MPC (label heavy): long generations (512 positions,
// the whole context) with clusters of 32 tokens and a quarter of them attended, with and
// without the look-once eviction of a long prompt, equal their plaintext twin token for
// token, in both security modes.
#include "unit/infer_golden/mpcache_twin.h"

namespace mpcache::infer::golden_test {
namespace {

model::MpcachePolicy Quarter(model::Representative rep, double static_keep = 1.0) {
  model::MpcachePolicy policy;
  policy.cluster_tokens = 32;
  policy.keep_ratio = 0.25;
  policy.representative = rep;
  policy.static_keep_ratio = static_keep;
  return policy;
}

TEST(SecureMpcacheHeavy, Stories512SemiHonestMinMax) {
  ExpectMpcacheTwin<mpc::SemiHonest>("Once upon a time", 512,
                                     Quarter(model::Representative::kMinMax), 200);
}
TEST(SecureMpcacheHeavy, Stories512MaliciousMean) {
  ExpectMpcacheTwin<mpc::Spdz2k>("Lily and Ben went to the park", 512,
                                 Quarter(model::Representative::kMean), 200);
}
TEST(SecureMpcacheHeavy, Stories512MaliciousEvictingALongPrompt) {
  const SessionReport r = ExpectMpcacheTwin<mpc::Spdz2k>(
      LongStoryPrompt(), 512, Quarter(model::Representative::kMinMax, 0.6), 200);
  EXPECT_LT(r.cached_rows, r.positions) << "nothing was evicted";
}

}  // namespace
}  // namespace mpcache::infer::golden_test
