// MPCache's look-once eviction on the real stories260K under MPC (label golden): a 62-token
// prompt evicted to 60% (clusters of 8: sink 8, window 13, 17 of 41 candidates kept), then
// dynamic selection keeping half the clusters, equals the plaintext twin token for token in
// malicious mode, and the evicted rows are gone.
#include "unit/infer_golden/mpcache_twin.h"

namespace mpcache::infer::golden_test {
namespace {

TEST(SecureMpcacheGolden, LongPromptEvictedThenSelectedMalicious) {
  model::MpcachePolicy policy;
  policy.cluster_tokens = 8;
  policy.keep_ratio = 0.5;
  policy.static_keep_ratio = 0.6;
  const SessionReport r = ExpectMpcacheTwin<mpc::Spdz2k>(LongStoryPrompt(), 90, policy, 80);
  EXPECT_LT(r.cached_rows, r.positions) << "nothing was evicted";
}

}  // namespace
}  // namespace mpcache::infer::golden_test
