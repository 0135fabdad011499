// What a party refuses of a client's request before any work: positions beyond the
// model's context (naming seq_len and the fix) and a session id it has served before (a
// replay); and whom it blames for a peer's abort (not the sender of an abort caused by the
// client).
#include <gtest/gtest.h>

#include "daemon/client_protocol.h"
#include "daemon/party_session.h"

namespace mpcache::daemon {
namespace {

namespace cp = client_proto;

TEST(RequestPositions, BeyondTheContextIsRefusedAtOnceNamingTheLimit) {
  model::ModelConfig m;
  m.vocab_size = 512;
  m.seq_len = 512;
  const auto positions = [&](std::uint32_t prompt, std::uint32_t steps, std::uint32_t vocab) {
    return RequestPositions(cp::Generate{1, prompt, steps, vocab}, m, "stories260K.bin");
  };
  auto far = positions(5, 100000, 512);
  ASSERT_FALSE(far.ok());
  const std::string& msg = far.error().message();
  for (const char* part : {"100000 positions", "the prompt's 5 included", "context of 512",
                           "seq_len of stories260K.bin", "--max-tokens 512 or less"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in " << msg;
  }
  EXPECT_FALSE(positions(5, 513, 512).ok());
  ASSERT_TRUE(positions(5, 512, 512).ok());
  EXPECT_EQ(*positions(5, 512, 512), 512);
  EXPECT_EQ(*positions(5, 3, 512), 5);  // at least the prompt, as before
  auto long_prompt = positions(513, 513, 512);
  ASSERT_FALSE(long_prompt.ok());
  EXPECT_NE(long_prompt.error().message().find("513 tokens"), std::string::npos);
  auto tokenizer = positions(5, 64, 32000);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.error().message().find("tokenizer"), std::string::npos);
  EXPECT_FALSE(positions(0, 64, 512).ok());
  EXPECT_FALSE(positions(5, 0, 512).ok());
}

// Sampling parameters travel in the Generate (public to the parties): out of range, the
// request is refused before any work, naming the flag and its range; in range, the noise
// the Prompt must carry is vocab values for each position from prompt_len - 1 on.
TEST(RequestPositions, SamplingOutOfRangeIsRefusedAndTheNoiseSizeFollowsThePositions) {
  model::ModelConfig m;
  m.vocab_size = 512;
  m.seq_len = 512;
  const auto bad = [&](double t, double p, std::uint32_t k, const std::string& what) {
    auto r = RequestPositions(cp::Generate{1, 5, 64, 512, t, p, k}, m, "stories260K.bin");
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_NE(r.error().message().find("the request's sampling: " + what), std::string::npos)
        << r.error().message();
  };
  bad(500, 0.9, 0, "--temperature 500 is out of range");
  bad(0.9, 0, 0, "--top-p 0 is out of range");
  bad(0.9, 0.9, 513, "--top-k 513 is out of range: 0 (off) .. 512");
  ASSERT_TRUE(RequestPositions(cp::Generate{1, 5, 64, 512, 0.9, 0.9, 40}, m, "m").ok());
  EXPECT_EQ(cp::SampleNoiseValues(cp::Generate{1, 5, 64, 512, 0.9, 0.9, 40}), 60u * 512);
  EXPECT_EQ(cp::SampleNoiseValues(cp::Generate{1, 5, 3, 512, 0.9, 0.9, 40}), 1u * 512);
  EXPECT_EQ(cp::SampleNoiseValues(cp::Generate{1, 5, 64, 512}), 0u);  // greedy
}

TEST(UsedSessions, ASecondUseIsRefusedAndTheMemoryIsBounded) {
  UsedSessions used(3);
  ASSERT_TRUE(used.Use(0xabc).ok());
  const Status again = used.Use(0xabc);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("0000000000000abc was already used"), std::string::npos)
      << again.error().message();
  for (std::uint64_t s : {1, 2, 3}) ASSERT_TRUE(used.Use(s).ok());
  EXPECT_TRUE(used.Use(0xabc).ok());  // forgotten after 3 newer ones
  EXPECT_FALSE(used.Use(3).ok());
}

TEST(BlamedParty, APeersAbortBlamesWhomItsReasonNamesNotTheSender) {
  EXPECT_EQ(BlamedParty("session aborted by party 1 (mpcache-party-1): the client's Continue "
                        "is for position 9",
                        0),
            std::nullopt);
  EXPECT_EQ(BlamedParty("session aborted by party 1 (mpcache-party-1): timed out waiting for "
                        "party 2 (mpcache-party-2)",
                        0),
            2);
  EXPECT_EQ(BlamedParty("session aborted by party 0 (mpcache-party-0): x (blames party 2)", 1), 2);
  EXPECT_EQ(
      BlamedParty("session aborted by party 1 (mpcache-party-1): party 1 is shutting down", 0), 1);
  EXPECT_EQ(BlamedParty("connection to party 2 (mpcache-party-2) lost", 0), 2);
  EXPECT_EQ(BlamedParty("the client's input for prompt position 2 is not a one-hot vector", 0),
            std::nullopt);
}

// A MAC check fails at every party alike; when one party's abort reaches another before its
// own check ended, the sender's name heading the reason ("party 0: MAC check failed ...",
// the MPC layer's wording) must not make the honest sender the culprit. A party the reason
// names after that prefix is still blamed.
TEST(BlamedParty, APeersMacCheckFailureBlamesNobody) {
  EXPECT_EQ(BlamedParty("session aborted by party 0 (mpcache-party-0): party 0: MAC check "
                        "failed: an opened value or its MAC was tampered with",
                        2),
            std::nullopt);
  EXPECT_EQ(BlamedParty("session aborted by party 2 (mpcache-party-2): party 2 (binary domain): "
                        "MAC check failed: an opened bit or its MAC was tampered with",
                        1),
            std::nullopt);
  EXPECT_EQ(BlamedParty("session aborted by party 0 (mpcache-party-0): party 0: party 1 opened a "
                        "coin share that does not match its commitment",
                        2),
            1);
  EXPECT_EQ(
      BlamedParty("party 1: MAC check failed: an opened value or its MAC was tampered with", 1),
      std::nullopt);
}

}  // namespace
}  // namespace mpcache::daemon
