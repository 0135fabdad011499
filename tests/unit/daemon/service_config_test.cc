// The party daemon refuses knobs of features this build does not have, and an MPCache
// section that cannot run, at start instead of silently running without them.
#include <gtest/gtest.h>

#include "daemon/party_service.h"

namespace mpcache::daemon {
namespace {

TEST(PartyServiceConfig, RefusesWhatThisBuildCannotRunNamingTheField) {
  config::PartyConfig cfg;
  cfg.file = "party0.yaml";
  cfg.mpcache.cache = config::CacheMode::kMpcache;
  cfg.mpcache.reveal = config::Reveal::kPlain;  // debugging only: needs debug: true
  // No logger: the refusal still comes back as an error, never a crash.
  auto r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("party0.yaml: field 'mpcache.reveal'"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("debug: true"), std::string::npos);

  cfg.mpcache.reveal = config::Reveal::kDp;
  cfg.mpcache.dp_sensitivity = 0;
  r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("dp_sensitivity"), std::string::npos) << r.error().message();

  cfg.mpcache.reveal = config::Reveal::kNone;
  cfg.mpcache.level1_cluster_tokens = 0;
  r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("party0.yaml: section 'mpcache'"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("level1_cluster_tokens"), std::string::npos);

  // The balancer is built (issue 13): enabling it is no longer refused; the next refusal is
  // the TLS identity's (no files here).
  cfg.mpcache = {};
  cfg.balancer.enabled = true;
  cfg.tls.cert = "/nonexistent/party0.crt";
  r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find("balancer"), std::string::npos) << r.error().message();
}

TEST(PartyServiceConfig, AValidMpcacheSectionPassesToTheIdentityCheck) {
  // Past the MPCache checks the next refusal is the TLS identity's (no files here): the
  // section itself was accepted (reveal: dp, and plain under debug), with no logger given.
  config::PartyConfig cfg;
  cfg.file = "party0.yaml";
  cfg.mpcache.cache = config::CacheMode::kMpcache;
  cfg.mpcache.reveal = config::Reveal::kDp;
  cfg.tls.cert = "/nonexistent/party0.crt";
  cfg.tls.key = "/nonexistent/party0.key";
  cfg.tls.ca = "/nonexistent/ca.crt";
  auto r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find("mpcache"), std::string::npos) << r.error().message();
  cfg.mpcache.reveal = config::Reveal::kPlain;
  cfg.debug = true;
  r = PartyService::Create(cfg, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find("mpcache"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace mpcache::daemon
