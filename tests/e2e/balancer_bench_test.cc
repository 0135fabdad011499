// The balancer's measurement (issue 13; label `heavy`, ~10 minutes): one party slowed — its
// link rate-limited with tc tbf in a network namespace topology this test makes
// (e2e/netns.h), or its CPU share cut with a cgroup (v1 cpu.cfs_quota_us) — and the decoding
// latency of the same 64-step story through the four daemons with the static assignment
// and with the auction, measured in the same run, one request of each in turn. Prints one
// line per request and a summary per case (docs/balancer.md records them); asserts only
// what is deterministic: the golden text, and that the auctions moved the corrections.
//
// Cases (MPCACHE_BALANCER_CASES, comma-separated, default
// "link:2:100mbit,link:0:100mbit,cpu:2:25"): link:P:RATE throttles party P's link (both
// directions), cpu:P:PERCENT gives party P that percentage of one core.
// MPCACHE_BALANCER_STEPS (default 32) positions per request, MPCACHE_BALANCER_RUNS (default
// 3) requests per assignment and case.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/cluster.h"
#include "e2e/netns.h"
#include "golden/golden_texts.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : def;
}

struct Case {
  std::string kind;  // "link" | "cpu"
  int party = 2;
  std::string amount;  // a tc rate, or a CPU percentage
};

std::vector<Case> Cases() {
  const char* env = std::getenv("MPCACHE_BALANCER_CASES");
  std::stringstream all(env != nullptr ? env : "link:2:100mbit,link:0:100mbit,cpu:2:25");
  std::vector<Case> out;
  std::string item;
  while (std::getline(all, item, ',')) {
    Case c;
    const auto a = item.find(':'), b = item.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    c.kind = item.substr(0, a);
    c.party = std::atoi(item.substr(a + 1, b - a - 1).c_str());
    c.amount = item.substr(b + 1);
    out.push_back(c);
  }
  return out;
}

// A cgroup (v1 cpu controller) holding the slowed party: `percent` of one core. Removed,
// its processes first moved back to the root group, whatever happens.
class CpuLimit {
 public:
  explicit CpuLimit(int percent)
      : dir_("/sys/fs/cgroup/cpu/mpcache-balancer-" + std::to_string(getpid())) {
    ok_ = ::mkdir(dir_.c_str(), 0755) == 0 && Write(dir_ + "/cpu.cfs_period_us", "100000") &&
          Write(dir_ + "/cpu.cfs_quota_us", std::to_string(percent * 1000));
  }
  ~CpuLimit() {
    std::ifstream procs(dir_ + "/cgroup.procs");
    std::string pid;
    while (procs >> pid) Write("/sys/fs/cgroup/cpu/cgroup.procs", pid);
    ::rmdir(dir_.c_str());
  }
  bool ok() const { return ok_; }
  bool Add(pid_t pid) { return Write(dir_ + "/cgroup.procs", std::to_string(pid)); }

 private:
  static bool Write(const std::string& path, const std::string& value) {
    std::ofstream f(path);
    f << value;
    f.flush();
    return static_cast<bool>(f);
  }
  std::string dir_;
  bool ok_ = false;
};

struct Timed {
  double seconds_per_token = 0;
  bool golden = false;
};

Timed Generate(Cluster& c, int steps, const std::string& tag) {
  const std::string out = c.dir() + "/" + tag + ".out", err = c.dir() + "/" + tag + ".err";
  Process p({MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(), "--prompt",
             "Once upon a time", "--max-tokens", std::to_string(steps), "--json"},
            out, err);
  Timed r;
  const auto code = p.Wait(3600s);
  if (code != 0) {
    ADD_FAILURE() << tag << ": " << ReadFile(err);
    return r;
  }
  const auto j = nlohmann::json::parse(ReadFile(out));
  r.seconds_per_token = j["seconds_per_token"].get<double>();
  r.golden = golden::ContinuesTheGoldenStory(j["text"].get<std::string>());
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string PartyMetric(const std::string& page, const std::string& name, int p) {
  const std::string key = "\n" + name + "{party=\"" + std::to_string(p) + "\"} ";
  const auto at = page.find(key);
  if (at == std::string::npos) return "-";
  return page.substr(at + key.size(), page.find('\n', at + key.size()) - at - key.size());
}

TEST(BalancerMeasurement, SlowedPartyStaticAgainstAuctionSameRun) {
  const int steps = EnvInt("MPCACHE_BALANCER_STEPS", 32);
  const int runs = EnvInt("MPCACHE_BALANCER_RUNS", 3);
  for (const Case& k : Cases()) {
    SCOPED_TRACE(k.kind + ":" + std::to_string(k.party) + ":" + k.amount);
    Netns net;
    ASSERT_TRUE(net.ok()) << net.error();
    const std::string host = "party" + std::to_string(k.party);
    if (k.kind == "link") {
      ASSERT_TRUE(net.Shape(host, k.amount));
    }
    const int recv_ms = 120000;
    Cluster fixed(ClusterOptions{.recv_ms = recv_ms, .netns = net.prefix()});
    Cluster auction(ClusterOptions{.recv_ms = recv_ms,
                                   .party_yaml = "balancer:\n  enabled: true\n"
                                                 "  reauction_interval_steps: 4\n",
                                   .netns = net.prefix()});
    ASSERT_TRUE(fixed.StartAll()) << fixed.dir();
    ASSERT_TRUE(auction.StartAll()) << auction.dir();
    std::unique_ptr<CpuLimit> cpu;
    if (k.kind == "cpu") {
      cpu = std::make_unique<CpuLimit>(std::atoi(k.amount.c_str()));
      ASSERT_TRUE(cpu->ok()) << "cgroup v1 cpu controller not writable here";
      ASSERT_TRUE(cpu->Add(fixed.party(k.party)->pid()));
      ASSERT_TRUE(cpu->Add(auction.party(k.party)->pid()));
    }
    std::vector<double> s_fixed, s_auction;
    for (int i = 0; i < runs; ++i) {
      for (bool balanced : {false, true}) {
        Cluster& c = balanced ? auction : fixed;
        const Timed r = Generate(c, steps, (balanced ? "auction-" : "static-") + std::to_string(i));
        EXPECT_TRUE(r.golden);
        (balanced ? s_auction : s_fixed).push_back(r.seconds_per_token);
        std::printf("%s:%d:%s run %d %-8s %.3f s/token\n", k.kind.c_str(), k.party,
                    k.amount.c_str(), i, balanced ? "auction" : "static", r.seconds_per_token);
        std::fflush(stdout);
      }
    }
    const double mf = Median(s_fixed), ma = Median(s_auction);
    const double bf = *std::min_element(s_fixed.begin(), s_fixed.end());
    const double ba = *std::min_element(s_auction.begin(), s_auction.end());
    std::printf(
        "SUMMARY %s:%d:%s steps %d runs %d: static median %.3f best %.3f | auction median "
        "%.3f best %.3f | lower by %.1f%% (median), %.1f%% (best)\n",
        k.kind.c_str(), k.party, k.amount.c_str(), steps, runs, mf, bf, ma, ba, 100 * (1 - ma / mf),
        100 * (1 - ba / bf));
    for (int p = 0; p < 3; ++p) {
      const std::string sp = fixed.Http(p, "/metrics"), ap = auction.Http(p, "/metrics");
      std::printf(
          "  party %d: corrected bytes static %.0f auction %.0f; seconds on them static %.2f "
          "auction %.2f; auction wins %s, load_us (last) %s of which online traffic %s\n",
          p, MetricValue(sp, "mpcache_dealer_corrected_bytes_total"),
          MetricValue(ap, "mpcache_dealer_corrected_bytes_total"),
          MetricValue(sp, "mpcache_dealer_corrected_seconds_total"),
          MetricValue(ap, "mpcache_dealer_corrected_seconds_total"),
          PartyMetric(ap, "mpcache_balancer_wins_total", p).c_str(),
          PartyMetric(ap, "mpcache_balancer_load_us", p).c_str(),
          PartyMetric(ap, "mpcache_balancer_base_load_us", p).c_str());
    }
    const std::string am = auction.Http(0, "/metrics");
    std::printf("  auction load spread (last auction): %.3f, among the parties given work %.3f\n",
                MetricValue(am, "mpcache_balancer_load_spread"),
                MetricValue(am, "mpcache_balancer_winners_load_spread"));
    std::fflush(stdout);
    // Deterministic: the static table sends every correction to party 2, the auction
    // spreads them (whatever the timing).
    EXPECT_GT(MetricValue(auction.Http(0, "/metrics"), "mpcache_dealer_corrected_bytes_total"), 0);
    EXPECT_EQ(MetricValue(fixed.Http(0, "/metrics"), "mpcache_dealer_corrected_bytes_total"), 0);
  }
}

}  // namespace
}  // namespace mpcache::e2e
