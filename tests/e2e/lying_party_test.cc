// A party daemon that lies consistently mid-generation (issue 10 §1; SPEC §3, §9): party 1
// runs mpcache-party-liar (tests/e2e/party_liar_main.cc), which sends the same wrong share
// of one opened value — or the same flipped opened bit — to both peers and then runs every
// check honestly with its own view of the lie. The MAC check must catch it before any
// token leaves: the client exits non-zero with one error line naming the MAC-check
// failure, prints nothing the honest parties would not have printed (no token after the
// lie), and the honest parties serve the next request. Which party lied cannot be told
// from a failed MAC check (every party sees the same failing sum), so no party may be
// blamed — least of all an honest one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/cluster.h"
#include "golden/golden_texts.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

const char* kPrompt = "Once upon a time";  // BOS + 4 tokens: positions 0..4
constexpr int kPromptLen = 5;
// The golden 64-step story (one copy: golden/golden_texts.h).
const char* const kGolden64 = golden::kOnceUponATime64;

struct ClientRun {
  std::optional<int> code;
  std::string out, err;
  double seconds = 0;
};

ClientRun RunClient(Cluster& c, int steps, const std::string& tag) {
  const std::string out = c.dir() + "/" + tag + ".out", err = c.dir() + "/" + tag + ".err";
  const auto t0 = std::chrono::steady_clock::now();
  Process p({MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(), "--prompt", kPrompt,
             "--max-tokens", std::to_string(steps)},
            out, err);
  ClientRun r;
  r.code = p.Wait(120s);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

double MacFailures(Cluster& c, int party) {
  return MetricValue(HttpGet(c.metrics_port(party), "/metrics"),
                     "mpcache_mac_check_failures_total");
}

struct Lie {
  std::string domain;  // arith | binary
  int after_position;  // armed once this position's forward pass (and classifier) ran
  int opening;         // which opening of the domain after arming (arith: of whole values)
  int element;         // which value / bit of it
};

// Party 1 restarted as the liar; one request of `steps` positions. Everything a caught lie
// must leave behind is checked here; the client's stdout must be exactly `expected_out`.
void ExpectCaught(Cluster& c, const Lie& lie, int steps, const std::string& expected_out,
                  const std::string& tag) {
  SCOPED_TRACE(tag);
  const std::size_t liar_from = c.Log("party1").size();
  const std::size_t log0_from = c.Log("party0").size(), log2_from = c.Log("party2").size();
  ASSERT_TRUE(c.StartPartyFrom(
      1, MPCACHE_PARTY_LIAR_BIN,
      {"--lie-domain", lie.domain, "--lie-after-position", std::to_string(lie.after_position),
       "--lie-opening", std::to_string(lie.opening), "--lie-element", std::to_string(lie.element),
       "--lie-bit", "63", "--lie-width", "14"}))
      << c.Log("party1").substr(liar_from);
  const double failures0 = MacFailures(c, 0), failures2 = MacFailures(c, 2);

  const ClientRun r = RunClient(c, steps, tag);
  std::printf("[%s] client exit %d after %.1f s; stdout %s; stderr:\n%s", tag.c_str(),
              r.code.value_or(-1), r.seconds, ::testing::PrintToString(r.out).c_str(),
              r.err.c_str());
  const std::string liar_log = c.Log("party1").substr(liar_from);
  const std::string lied = "TEST LIAR: lied in " + lie.domain;
  ASSERT_NE(liar_log.find(lied), std::string::npos) << "the lie was never told:\n" << liar_log;
  std::printf("[%s] %s", tag.c_str(), liar_log.substr(liar_log.find(lied)).c_str());
  if (lie.domain == "arith") {  // bit 63 of a whole value's opened share (112 bits)
    EXPECT_NE(liar_log.find("values of 14 bytes): added 2^63"), std::string::npos) << liar_log;
  }

  ASSERT_TRUE(r.code.has_value()) << "the client did not give up";
  EXPECT_NE(*r.code, 0) << "a consistent lie was accepted: " << r.out;
  // Nothing beyond what the honest parties would have released before the lie.
  EXPECT_EQ(r.out, expected_out);
  // One error line, last, naming the MAC-check failure and blaming no honest party.
  const std::vector<std::string> errors = ErrorLines(r.err);
  ASSERT_EQ(errors.size(), 1u) << r.err;
  EXPECT_EQ(r.err.substr(r.err.size() - errors[0].size() - 1), errors[0] + "\n") << r.err;
  EXPECT_EQ(errors[0].rfind("error: MAC check failed: a party deviated from the protocol", 0), 0u)
      << errors[0];
  EXPECT_NE(errors[0].find("none is named"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[0].find("party 0 failed"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[0].find("party 2 failed"), std::string::npos) << errors[0];

  // Each honest party failed the request on the MAC check — its own, or a peer's whose
  // abort reached it before its own check ended (then it counts none itself) — blaming
  // nobody; at least one party's own check failed and was counted.
  double counted = MacFailures(c, 1);  // the liar (a fresh process) runs the check too
  for (int p : {0, 2}) {
    SCOPED_TRACE("party " + std::to_string(p));
    const std::string log =
        c.Log("party" + std::to_string(p)).substr(p == 0 ? log0_from : log2_from);
    const std::size_t at = log.find("] failed");
    ASSERT_NE(at, std::string::npos) << log;
    const std::string line = log.substr(at, log.find('\n', at) - at);
    EXPECT_NE(line.find("MAC check failed"), std::string::npos) << line;
    EXPECT_EQ(line.find("blames party"), std::string::npos) << line;
    const double own = MacFailures(c, p) - (p == 0 ? failures0 : failures2);
    EXPECT_TRUE(own == 0 || own == 1) << own;
    counted += own;
  }
  EXPECT_GE(counted, 1) << "no party's own MAC check failed";
  std::printf("[%s] MAC-check failures counted by the parties themselves: %g of 3\n", tag.c_str(),
              counted);
  for (int p = 0; p < 3; ++p) EXPECT_TRUE(c.party(p)->running()) << "party " << p;
}

// (a) The lie falls in the first decoded position's computation: the client prints the
// prompt and nothing else. Arithmetic: bit 63 of a value of the first whole-value opening
// of position 4's forward pass; binary: an opened bit of its first binary opening.
TEST(LyingParty, LieInTheFirstDecodedPositionReleasesNoToken) {
  const auto t0 = std::chrono::steady_clock::now();
  Cluster c;
  ASSERT_TRUE(c.StartAll()) << c.dir();
  ExpectCaught(c, Lie{"arith", kPromptLen - 2, 0, 5}, 8, std::string(kPrompt) + "\n",
               "first-decode-arith");
  if (::testing::Test::HasFatalFailure()) return;
  ExpectCaught(c, Lie{"binary", kPromptLen - 2, 0, 7}, 8, std::string(kPrompt) + "\n",
               "first-decode-binary");
  if (::testing::Test::HasFatalFailure()) return;
  // The next request (the liar is honest after its first) is served: the golden prefix.
  const ClientRun r = RunClient(c, 8, "after");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_GT(r.out.size(), std::string(kPrompt).size() + 1) << r.out;
  EXPECT_EQ(std::string(kGolden64).rfind(r.out.substr(0, r.out.size() - 1), 0), 0u) << r.out;
  std::printf("whole test: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// (b) The lie comes after 10 released tokens (positions 5..14), in the secure argmax that
// picks the token at position 15: the client prints exactly the honest text up to
// position 14 — the same bytes as an honest request with --max-tokens 14 — and nothing
// after.
TEST(LyingParty, LieMidGenerationReleasesExactlyTheHonestPrefix) {
  const auto t0 = std::chrono::steady_clock::now();
  Cluster c;
  ASSERT_TRUE(c.StartAll()) << c.dir();
  const int last_honest = kPromptLen - 1 + 10;
  // --max-tokens N runs the forward at positions 0..N-1 and releases tokens up to position
  // N: the honest request that stops at the last token the liar lets through.
  const ClientRun honest = RunClient(c, last_honest, "honest");
  ASSERT_EQ(honest.code, 0) << honest.err;
  ASSERT_GT(honest.out.size(), std::string(kPrompt).size() + 1);
  ASSERT_EQ(std::string(kGolden64).rfind(honest.out.substr(0, honest.out.size() - 1), 0), 0u)
      << honest.out;

  ExpectCaught(c, Lie{"arith", last_honest, 0, 5}, 20, honest.out, "mid-arith");
  if (::testing::Test::HasFatalFailure()) return;
  ExpectCaught(c, Lie{"binary", last_honest, 2, 7}, 20, honest.out, "mid-binary");
  if (::testing::Test::HasFatalFailure()) return;
  // The next request (the liar is honest after its first) gets the same text.
  const ClientRun after = RunClient(c, last_honest, "after");
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_EQ(after.out, honest.out);
  std::printf("whole test: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace
}  // namespace mpcache::e2e
