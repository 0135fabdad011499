// The party daemon refuses knobs of features this build does not have instead of silently
// running without them.
#include <gtest/gtest.h>

#include "daemon/party_service.h"

namespace mpcache::daemon {
namespace {

TEST(PartyServiceConfig, RefusesMpcacheAndTheBalancerUntilTheyExist) {
  config::PartyConfig cfg;
  cfg.file = "party0.yaml";
  cfg.mpcache.cache = config::CacheMode::kMpcache;
  auto r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("party0.yaml: field 'mpcache.cache'"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("cache: full"), std::string::npos);

  cfg.mpcache.cache = config::CacheMode::kFull;
  cfg.balancer.enabled = true;
  r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("field 'balancer.enabled'"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("enabled: false"), std::string::npos);
}

}  // namespace
}  // namespace mpcache::daemon
