// The fault-injection harness (issue 15): one party or the dealer fails at a chosen point
// of a private generation — killed, crashed, stalled (SIGSTOP) or killed and restarted at
// once — through four daemons over TLS on loopback. Every case must end in a clean abort:
// the client exits non-zero within the configured timeout with one error line naming the
// failed daemon, the other daemons stay up and healthy, no process is left over (the test's
// children are exactly the four daemons), and the next request succeeds.
//
// The points are protocol positions, not times (tests/e2e/fault_main.cc): a party fails at
// the k-th opening of a domain, or in round r of a MAC check, after position p of its first
// request; the dealer before its n-th answer to party q. The cases are one fixed list, so a
// failing case reproduces by name (--gtest_filter and MPCACHE_FAULT_CASE=name).
//
// Links: the same cluster in five network namespaces (deploy/netns/netns.sh: one per
// party, the dealer and the client, veth links to a bridge) has one party's link cut once
// the client has printed a chosen prefix of the story (a step), then restored: a clean
// abort naming a party, and the next request succeeds; and one party's link throttled to
// 50 Mbit/s (tc tbf), which must not abort anything — only slow it down. (This kernel has
// no tc netem, so a link cannot be delayed here: deploy/netns/netns.sh says so.)
//
// Built twice: e2e_fault_test (label integration) runs a sample of eight cases covering
// every kind of fault and every daemon; heavy.e2e_fault_matrix_test runs all of them and
// prints the counts (docs/reliability.md records a run).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/cluster.h"
#include "e2e/netns.h"
#include "golden/golden_texts.h"

#ifndef MPCACHE_FAULT_MATRIX
#define MPCACHE_FAULT_MATRIX 0
#endif

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

const char* kPrompt = "Once upon a time";  // BOS + 4 tokens: positions 0..4 are the prompt
constexpr int kRecvMs = 5000;              // short, but not so short that two loaded cores trip it
// The client waits recv_ms + 3 s for every party's outcome (src/client/private_generation.cc:
// the peers of a stalled party report it first); an abort may take that, plus 2 s of slack
// for two loaded cores.
constexpr double kAbortWithinS = kRecvMs / 1000.0 + 3 + 2;
constexpr int kFaultSteps = 12;  // long enough for every point below to be reached

struct Case {
  std::string name;
  int target = 0;                 // party 0..2, or 3 = the dealer
  std::string kind;               // kill | crash | stall | restart
  std::string phase;              // prefill | decoding | mac-check | dealer
  std::vector<std::string> args;  // where, for the faulty binary
};

struct PartyPoint {
  std::string name, phase;
  std::vector<std::string> args;
};

// Positions: arming after position p puts the next openings in position p + 1's forward
// pass while p + 1 < 5 (prefill), and in position p's argmax and the positions after it from
// p = 4 on (decoding); the first MAC check after arming at p >= 4 is the one before p's
// token is released.
std::vector<PartyPoint> PartyPoints() {
  return {
      {"prefill-arith-open0",
       "prefill",
       {"--after-position", "0", "--at", "open", "--domain", "arith", "--index", "0"}},
      {"prefill-binary-open2",
       "prefill",
       {"--after-position", "2", "--at", "open", "--domain", "binary", "--index", "2"}},
      {"decode-arith-open12",
       "decoding",
       {"--after-position", "5", "--at", "open", "--domain", "arith", "--index", "12"}},
      {"decode-binary-open5",
       "decoding",
       {"--after-position", "7", "--at", "open", "--domain", "binary", "--index", "5"}},
      {"mac-arith-round1",
       "mac-check",
       {"--after-position", "4", "--at", "check", "--domain", "arith", "--index", "1"}},
      {"mac-binary-round2",
       "mac-check",
       {"--after-position", "6", "--at", "check", "--domain", "binary", "--index", "2"}},
  };
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  const std::vector<std::string> kinds{"kill", "crash", "stall", "restart"};
  for (int party = 0; party < 3; ++party) {
    for (const PartyPoint& p : PartyPoints()) {
      for (const std::string& kind : kinds) {
        std::vector<std::string> args = p.args;
        args.insert(args.end(), {"--fault", kind == "restart" ? "kill" : kind});
        cases.push_back({"party" + std::to_string(party) + "-" + kind + "-" + p.name, party, kind,
                         p.phase, args});
      }
    }
  }
  for (int party = 0; party < 3; ++party) {
    for (const int answer : {1, 6}) {
      for (const char* kind : {"kill", "stall", "restart"}) {
        cases.push_back({std::string("dealer-") + kind + "-party" + std::to_string(party) +
                             "-answer" + std::to_string(answer),
                         3,
                         kind,
                         "dealer",
                         {"--fault", std::string(kind) == "restart" ? "kill" : kind, "--party",
                          std::to_string(party), "--answer", std::to_string(answer)}});
      }
    }
  }
  return cases;
}

// Every kind of fault, every daemon, every phase: the integration-suite sample.
const std::vector<std::string> kSample{
    "party0-kill-prefill-arith-open0", "party1-stall-decode-binary-open5",
    "party2-restart-mac-arith-round1", "party1-crash-mac-binary-round2",
    "party2-kill-decode-arith-open12", "dealer-stall-party2-answer1", "dealer-kill-party0-answer6",
    // Found by the matrix: a stall late in the prompt, when the client had heard nothing
    // for a while, was blamed on party 0 (the client's timer ran out first) until the
    // parties sent Progress heartbeats (daemon/client_protocol.h).
    "party1-stall-prefill-arith-open0"};

std::string Name(int target) {
  return target == 3 ? "dealer" : "party" + std::to_string(target);
}

Process* Daemon(Cluster& c, int target) {
  return target == 3 ? c.dealer() : c.party(target);
}

// The pids of this process's children (running or not yet reaped).
std::vector<pid_t> Children() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  const pid_t self = getpid();
  while (dirent* e = readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
    std::string stat;
    std::getline(in, stat);
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == self) out.push_back(pid);
  }
  closedir(d);
  return out;
}

// Failed assertions so far in the running test (HasFailure() stays true after the first
// failing case; the cases are counted one by one).
int FailedParts() {
  const ::testing::TestResult* r =
      ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int n = 0;
  for (int i = 0; i < r->total_part_count(); ++i) n += r->GetTestPartResult(i).failed() ? 1 : 0;
  return n;
}

struct Tally {
  std::map<std::string, int> by_phase, by_kind, by_target;
  int passed = 0, total = 0;
  double worst_abort_s = 0;
};

class Harness {
 public:
  Harness() : cluster_(ClusterOptions{.recv_ms = kRecvMs}) {}
  Cluster& c() { return cluster_; }

  bool Start(int target, const std::string& binary, const std::vector<std::string>& args) {
    return target == 3 ? cluster_.StartDealerFrom(binary, args)
                       : cluster_.StartPartyFrom(target, binary, args);
  }
  bool StartHonest(int target) {
    return target == 3 ? cluster_.StartDealer() : cluster_.StartParty(target);
  }
  Process* Daemon(int target) { return e2e::Daemon(cluster_, target); }

  std::string last_error;  // the client's error line of the last case

  // One case; returns the seconds from the fault to the client's exit (negative: failed).
  double Run(const Case& k) {
    last_error.clear();
    SCOPED_TRACE(k.name);
    const int failures_before = FailedParts();
    const int t = k.target;
    const std::string binary = t == 3 ? MPCACHE_DEALER_FAULTY_BIN : MPCACHE_PARTY_FAULTY_BIN;
    if (!Start(t, binary, k.args)) {
      ADD_FAILURE() << "the faulty " << Name(t) << " did not start: " << cluster_.Log(Name(t));
      return -1;
    }
    const std::size_t from = cluster_.Log(Name(t)).size();
    const std::string out = cluster_.dir() + "/" + k.name + ".out";
    const std::string err = cluster_.dir() + "/" + k.name + ".err";
    Process client({MPCACHE_CLIENT_BIN, "generate", "--config", cluster_.client_config(),
                    "--prompt", kPrompt, "--max-tokens", std::to_string(kFaultSteps)},
                   out, err);
    // Until the fault fires (the faulty daemon logs it first) or the client ends without it.
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    while (cluster_.Log(Name(t)).find(
               "TEST FAULT: " + std::string(k.kind == "restart" ? "kill" : k.kind), from) ==
           std::string::npos) {
      if (!client.running() || std::chrono::steady_clock::now() > give_up) {
        ADD_FAILURE() << "the fault point was not reached; client: " << ReadFile(err) << "\n"
                      << Name(t) << ": " << cluster_.Log(Name(t)).substr(from);
        StartHonest(t);
        return -1;
      }
      std::this_thread::sleep_for(5ms);
    }
    const auto fault_at = std::chrono::steady_clock::now();
    if (k.kind == "restart") {
      // Killed by itself: start it again at once, while the others may still be in the
      // session it left.
      EXPECT_TRUE(Daemon(t)->Wait(5s).has_value());
      EXPECT_TRUE(StartHonest(t)) << "the restarted " << Name(t) << " did not come up";
    }
    const std::optional<int> code = client.Wait(std::chrono::milliseconds(kRecvMs) + 20s);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - fault_at).count();
    EXPECT_TRUE(code.has_value()) << "the client hung";
    if (code) {
      EXPECT_NE(*code, 0) << "the client succeeded despite the fault: " << ReadFile(out);
    }
    EXPECT_LT(took, kAbortWithinS) << "the abort took longer than the timeout allows";
    const std::vector<std::string> errors = ErrorLines(ReadFile(err));
    EXPECT_EQ(errors.size(), 1u) << ReadFile(err);
    if (!errors.empty()) {
      last_error = errors[0];
      const std::string want = t == 3 ? "dealer" : "party " + std::to_string(t);
      EXPECT_NE(errors[0].find(want), std::string::npos)
          << "the error does not name " << want << ": " << errors[0];
    }
    if (k.kind == "stall") {
      Daemon(t)->Signal(SIGCONT);  // resumes, finds its session gone, serves on (disarmed)
    } else if (k.kind == "kill" || k.kind == "crash") {
      const std::optional<int> exit = Daemon(t)->Wait(5s);
      EXPECT_EQ(exit, k.kind == "kill" ? 128 + SIGKILL : 128 + SIGABRT);
      EXPECT_TRUE(StartHonest(t)) << Name(t) << " did not come back";
    }
    // The others are up and healthy; the test's children are the four daemons, nothing else.
    for (int d = 0; d < 4; ++d) {
      EXPECT_TRUE(Daemon(d)->running()) << Name(d) << " is down after the fault";
      EXPECT_NE(cluster_.Http(d, "/healthz").find(" 200 "), std::string::npos)
          << Name(d) << " is not healthy";
    }
    EXPECT_EQ(Children().size(), 4u) << "a process was left over";
    // The next request succeeds.
    const std::string out2 = out + ".next", err2 = err + ".next";
    Process next({MPCACHE_CLIENT_BIN, "generate", "--config", cluster_.client_config(), "--prompt",
                  kPrompt, "--max-tokens", "7"},
                 out2, err2);
    const std::optional<int> next_code = next.Wait(120s);
    EXPECT_EQ(next_code, 0) << ReadFile(err2);
    EXPECT_TRUE(golden::ContinuesTheGoldenStory(ReadFile(out2))) << ReadFile(out2);
    return FailedParts() > failures_before ? -1 : took;
  }

 private:
  Cluster cluster_;
};

void RunCases(const std::vector<Case>& cases) {
  Harness h;
  ASSERT_TRUE(h.c().StartAll()) << h.c().dir();
  Tally tally;
  for (const Case& k : cases) {
    const double took = h.Run(k);
    tally.total += 1;
    if (took >= 0) {
      tally.passed += 1;
      tally.by_phase[k.phase] += 1;
      tally.by_kind[k.kind] += 1;
      tally.by_target[Name(k.target)] += 1;
      tally.worst_abort_s = std::max(tally.worst_abort_s, took);
    }
    std::printf("fault %-40s %s (abort after %.2f s): %s\n", k.name.c_str(),
                took >= 0 ? "clean" : "FAILED", took, h.last_error.c_str());
    std::fflush(stdout);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf(
      "faults: %d of %d ended cleanly; worst client abort %.2f s after the fault "
      "(timeout %d ms)\n",
      tally.passed, tally.total, tally.worst_abort_s, kRecvMs);
  for (const auto* m : {&tally.by_phase, &tally.by_kind, &tally.by_target}) {
    for (const auto& [key, n] : *m) std::printf("  %-10s %d\n", key.c_str(), n);
  }
  EXPECT_EQ(tally.passed, tally.total);
}

TEST(Faults, CaseListIsFixedAndNamesAreUnique) {
  const std::vector<Case> all = AllCases();
  EXPECT_GE(all.size(), 50u);
  std::map<std::string, int> seen;
  for (const Case& k : all) EXPECT_EQ(seen[k.name]++, 0) << k.name;
  for (const std::string& s : kSample) EXPECT_EQ(seen.count(s), 1u) << s;
}

TEST(Faults, EveryCaseEndsInACleanAbortAndTheNextRequestSucceeds) {
  const std::vector<Case> all = AllCases();
  std::vector<Case> chosen;
  const char* only = std::getenv("MPCACHE_FAULT_CASE");  // reproduce one case by name
  for (const Case& k : all) {
    const bool in_sample = std::find(kSample.begin(), kSample.end(), k.name) != kSample.end();
    if (only != nullptr ? k.name == only : (MPCACHE_FAULT_MATRIX || in_sample)) {
      chosen.push_back(k);
    }
  }
  ASSERT_FALSE(chosen.empty()) << "no case named " << (only ? only : "");
  RunCases(chosen);
}

struct LinkCase {
  std::string name;
  std::string host;   // whose link
  std::string after;  // once the client printed this prefix of the story
  std::string rate;   // "": cut the link; otherwise throttle it to this rate
};

TEST(Faults, LinksCutOrThrottledBetweenNamespaces) {
  Netns net;
  ASSERT_TRUE(net.ok()) << net.error();
  Cluster c(ClusterOptions{.recv_ms = kRecvMs, .netns = net.prefix()});
  ASSERT_TRUE(c.StartAll()) << c.dir();
  std::vector<LinkCase> cases{
      {"cut-party1-after-there", "party1", "Once upon a time, there", ""},
      {"cut-party2-after-little", "party2", "Once upon a time, there was a little", ""},
      {"cut-party0-after-was-a", "party0", "Once upon a time, there was a", ""},
      {"throttle-party2-50mbit", "party2", "Once upon a time, there", "50mbit"},
  };
  if (!MPCACHE_FAULT_MATRIX) {  // the integration sample: one cut and the throttle
    cases = {cases[0], cases[3]};
  }
  int clean = 0;
  for (const LinkCase& k : cases) {
    SCOPED_TRACE(k.name);
    const int failures_before = FailedParts();
    const std::string out = c.dir() + "/" + k.name + ".out", err = c.dir() + "/" + k.name + ".err";
    Process client({MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(), "--prompt",
                    kPrompt, "--max-tokens", std::to_string(kFaultSteps)},
                   out, err);
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    while (ReadFile(out).rfind(k.after, 0) != 0 && client.running() &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(client.running()) << "the client ended before '" << k.after
                                  << "': " << ReadFile(out) << ReadFile(err);
    const auto fault_at = std::chrono::steady_clock::now();
    ASSERT_TRUE(k.rate.empty() ? net.Link(k.host, false) : net.Shape(k.host, k.rate));
    const std::optional<int> code = client.Wait(std::chrono::milliseconds(kRecvMs) + 60s);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - fault_at).count();
    ASSERT_TRUE(k.rate.empty() ? net.Link(k.host, true) : net.Shape(k.host, "none"));
    ASSERT_TRUE(code.has_value()) << "the client hung";
    if (k.rate.empty()) {
      EXPECT_NE(*code, 0) << "the client succeeded with a cut link: " << ReadFile(out);
      EXPECT_LT(took, kAbortWithinS) << "the abort took longer than the timeout allows";
      const std::vector<std::string> errors = ErrorLines(ReadFile(err));
      ASSERT_EQ(errors.size(), 1u) << ReadFile(err);
      EXPECT_NE(errors[0].find("party "), std::string::npos) << errors[0];
      std::printf("link %-28s clean (abort after %.2f s): %s\n", k.name.c_str(), took,
                  errors[0].c_str());
    } else {
      EXPECT_EQ(*code, 0) << "a throttled link aborted the request: " << ReadFile(err);
      EXPECT_TRUE(golden::ContinuesTheGoldenStory(ReadFile(out)));
      std::printf("link %-28s served the golden text in %.2f s after the throttle\n",
                  k.name.c_str(), took);
    }
    for (int d = 0; d < 4; ++d) {
      EXPECT_TRUE(Daemon(c, d)->running()) << Name(d) << " is down after the link fault";
    }
    // The next request succeeds over the restored link.
    const std::string out2 = out + ".next", err2 = err + ".next";
    Process next({MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(), "--prompt",
                  kPrompt, "--max-tokens", "7"},
                 out2, err2);
    EXPECT_EQ(next.Wait(120s), 0) << ReadFile(err2);
    EXPECT_TRUE(golden::ContinuesTheGoldenStory(ReadFile(out2))) << ReadFile(out2);
    std::fflush(stdout);
    if (FailedParts() == failures_before) ++clean;
  }
  std::printf("link faults: %d of %zu as expected\n", clean, cases.size());
}

}  // namespace
}  // namespace mpcache::e2e
