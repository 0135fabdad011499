// The balancer through the four daemons (issue 13): with `balancer.enabled: true` the
// parties auction the dealer-correction role between decoding steps over their mesh, the
// story is the golden one, the corrections reach every party and /metrics shows the
// auctions; parties whose balancer sections differ refuse the request naming the field.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "e2e/cluster.h"
#include "golden/golden_texts.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

// A labelled sample `name{party="p"}` of a /metrics page (-1 when absent).
double PartyMetric(const std::string& page, const std::string& name, int p) {
  const std::string key = "\n" + name + "{party=\"" + std::to_string(p) + "\"} ";
  const auto at = page.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(page.c_str() + at + key.size(), nullptr);
}

struct ClientRun {
  std::optional<int> code;
  std::string out, err;
};

ClientRun Generate(Cluster& c, int steps, const std::string& tag) {
  const std::string out = c.dir() + "/" + tag + ".out", err = c.dir() + "/" + tag + ".err";
  Process p({MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(), "--prompt",
             "Once upon a time", "--max-tokens", std::to_string(steps)},
            out, err);
  ClientRun r;
  r.code = p.Wait(240s);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

TEST(BalancerDaemons, AuctionsBetweenStepsKeepTheGoldenStoryAndSpreadTheCorrections) {
  Cluster c(ClusterOptions{.party_yaml = "balancer:\n  enabled: true\n"
                                         "  reauction_interval_steps: 4\n"});
  ASSERT_TRUE(c.StartAll()) << c.dir();
  const ClientRun r = Generate(c, 24, "balanced");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(golden::ContinuesTheGoldenStory(r.out)) << r.out;
  std::vector<double> corrected(3);
  for (int p = 0; p < 3; ++p) {
    const std::string page = c.Http(p, "/metrics");
    // Auctions after the prompt's last position and every 4 decoding positions after it.
    EXPECT_GE(MetricValue(page, "mpcache_balancer_auctions_total"), 4) << page;
    EXPECT_EQ(MetricValue(page, "mpcache_balancer_excluded_bids_total"), 0);
    double wins = 0;
    for (int q = 0; q < 3; ++q) wins += PartyMetric(page, "mpcache_balancer_wins_total", q);
    EXPECT_GT(wins, 0) << page;
    EXPECT_GE(PartyMetric(page, "mpcache_balancer_payments_us_total", 0), 0) << page;
    EXPECT_GE(PartyMetric(page, "mpcache_balancer_load_us", 2), 0) << page;
    corrected[static_cast<std::size_t>(p)] =
        MetricValue(page, "mpcache_dealer_corrected_bytes_total");
    EXPECT_NE(c.Log("party" + std::to_string(p)).find("auction #1 after position"),
              std::string::npos);
  }
  // Every party received corrections (under the static table only party 2 does).
  for (int p = 0; p < 3; ++p) {
    EXPECT_GT(corrected[static_cast<std::size_t>(p)], 1e6) << "party " << p;
  }
}

TEST(BalancerDaemons, PartiesWithDifferentBalancerSettingsRefuseTheRequestNamingTheField) {
  ClusterOptions o;
  o.party_yaml_of = {"", "balancer:\n  static_corrector: 0\n", ""};
  Cluster c(o);
  ASSERT_TRUE(c.StartAll()) << c.dir();
  const ClientRun r = Generate(c, 4, "mismatch");
  ASSERT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.err.find("balancer.static_corrector"), std::string::npos) << r.err;
  // The parties stay up and serve the next request once the configs agree.
  for (int p = 0; p < 3; ++p) EXPECT_TRUE(c.party(p)->running());
}

}  // namespace
}  // namespace mpcache::e2e
