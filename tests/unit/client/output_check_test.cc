// The client's output checks, played against by corrupt parties: a party that releases a
// different value (each party in turn, and with the same value under another mask number),
// all three parties disagreeing, a token under the wrong mask (in range and far out of
// range), a token outside the vocabulary, a token of another session or position, a
// repeated token; and which party the client names when the parties report a failure.
#include "client/output_check.h"

#include <gtest/gtest.h>

namespace mpcache::client {
namespace {

namespace cp = daemon::client_proto;

constexpr std::uint64_t kSession = 0x5e55;
constexpr int kPromptLen = 4, kVocab = 512;
const std::vector<std::uint64_t> kMasks{0x1111222233334444, 0x9999aaaabbbbcccc, 0x0123456789abcdef};

cp::Token Tok(std::uint32_t pos, std::uint64_t masked, std::uint64_t seq) {
  return cp::Token{kSession, pos, seq, masked};
}
// The honest release of `token` at the k-th generated position.
cp::Token Honest(int k, int token) {
  const auto pos = static_cast<std::uint32_t>(kPromptLen + k);
  return Tok(pos, kMasks[static_cast<std::size_t>(k)] + static_cast<std::uint64_t>(token), pos);
}

// Feeds three releases in order; the outcome of the last one.
Result<std::optional<int>> Three(TokenReleases& r, const cp::Token& a, const cp::Token& b,
                                 const cp::Token& c) {
  for (const auto& [p, t] : {std::pair{0, a}, {1, b}}) {
    auto x = r.Add(p, t);
    if (!x.ok() || x->has_value()) return x;
  }
  return r.Add(2, c);
}

void ExpectRefused(const Result<std::optional<int>>& r, const std::string& what) {
  ASSERT_FALSE(r.ok()) << "accepted";
  EXPECT_EQ(r.error().code(), ErrorCode::kProtocol);
  EXPECT_NE(r.error().message().find(what), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("refusing the output"), std::string::npos);
}

TEST(TokenReleases, HonestReleasesAreUnmaskedInAnyArrivalOrder) {
  TokenReleases r(kSession, kPromptLen, kVocab, kMasks);
  EXPECT_EQ(r.next_position(), 4u);
  auto x = r.Add(2, Honest(0, 17));
  ASSERT_TRUE(x.ok() && !x->has_value());
  x = r.Add(0, Honest(0, 17));
  ASSERT_TRUE(x.ok() && !x->has_value());
  x = r.Add(1, Honest(0, 17));
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(*x, std::optional<int>(17));
  EXPECT_EQ(r.next_position(), 5u);
  auto y = Three(r, Honest(1, kVocab - 1), Honest(1, kVocab - 1), Honest(1, kVocab - 1));
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(*y, std::optional<int>(kVocab - 1));  // the last token of the vocabulary
}

// Blame voting: the two parties that agree name the third, whichever it is.
TEST(TokenReleases, APartyThatReleasesADifferentValueIsNamed) {
  for (int liar = 0; liar < 3; ++liar) {
    SCOPED_TRACE("liar " + std::to_string(liar));
    std::array<cp::Token, 3> t{Honest(0, 17), Honest(0, 17), Honest(0, 17)};
    t[static_cast<std::size_t>(liar)].masked += 1;  // would unmask to 18, a valid token
    TokenReleases r(kSession, kPromptLen, kVocab, kMasks);
    const char* others[] = {"1 and 2", "0 and 2", "0 and 1"};
    ExpectRefused(Three(r, t[0], t[1], t[2]), "party " + std::to_string(liar) +
                                                  " released a different value for position 4 " +
                                                  "than parties " + others[liar]);
  }
  // The same masked value under another mask number is a different release too.
  TokenReleases r(kSession, kPromptLen, kVocab, kMasks);
  cp::Token other_seq = Honest(0, 17);
  other_seq.mask_seq += 1;
  ExpectRefused(Three(r, Honest(0, 17), other_seq, Honest(0, 17)),
                "party 1 released a different value");
  TokenReleases all(kSession, kPromptLen, kVocab, kMasks);
  cp::Token b = Honest(0, 17), c = Honest(0, 17);
  b.masked += 1;
  c.masked += 2;
  ExpectRefused(Three(all, Honest(0, 17), b, c), "three different values for position 4");
}

TEST(TokenReleases, ATokenUnderAnotherMaskIsRefused) {
  // All three agree on position 4 under mask 5 (the next position's), crafted so that
  // unmasking with that mask would give the valid token 3.
  TokenReleases r(kSession, kPromptLen, kVocab, kMasks);
  const cp::Token shifted = Tok(4, kMasks[1] + 3, 5);
  ExpectRefused(Three(r, shifted, shifted, shifted), "position 4 under mask 5");
  // A mask number the request does not have: refused, not read out of bounds.
  for (std::uint64_t seq :
       {std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{7}, ~std::uint64_t{0}}) {
    TokenReleases q(kSession, kPromptLen, kVocab, kMasks);
    const cp::Token t = Tok(4, 99, seq);
    ExpectRefused(Three(q, t, t, t), "under mask " + std::to_string(seq));
  }
}

// Sampling: the noise batch sits between the prompt's masks and the outputs', so the output
// of position pos is under mask pos + 1; the unshifted number (a release under the noise
// batch's slot) is refused.
TEST(TokenReleases, WithTheNoiseBatchTheOutputMasksMoveByOne) {
  TokenReleases r(kSession, kPromptLen, kVocab, kMasks, /*skip=*/1);
  const auto pos = static_cast<std::uint32_t>(kPromptLen);
  const cp::Token shifted = Tok(pos, kMasks[0] + 42, pos + 1);
  auto x = Three(r, shifted, shifted, shifted);
  ASSERT_TRUE(x.ok()) << x.error().ToString();
  EXPECT_EQ(*x, std::optional<int>(42));
  TokenReleases s(kSession, kPromptLen, kVocab, kMasks, /*skip=*/1);
  const cp::Token unshifted = Tok(pos, kMasks[0] + 42, pos);
  ExpectRefused(Three(s, unshifted, unshifted, unshifted), "not under mask 5");
}

TEST(TokenReleases, ATokenOutsideTheVocabularyIsRefused) {
  for (std::uint64_t token :
       {std::uint64_t{kVocab}, std::uint64_t{kVocab} + 1000, ~std::uint64_t{0}}) {
    TokenReleases r(kSession, kPromptLen, kVocab, kMasks);
    const cp::Token t = Tok(4, kMasks[0] + token, 4);
    ExpectRefused(Three(r, t, t, t), "outside the vocabulary of 512 tokens");
  }
}

TEST(TokenReleases, WrongSessionPositionOrRepeatsAreRefusedNamingTheParty) {
  TokenReleases r(kSession, kPromptLen, kVocab, kMasks);
  cp::Token other = Honest(0, 17);
  other.session = kSession + 1;
  ExpectRefused(r.Add(1, other), "party 1 released a token of session");
  TokenReleases ahead(kSession, kPromptLen, kVocab, kMasks);
  ExpectRefused(ahead.Add(2, Honest(1, 17)), "party 2 released position 5 while position 4");
  TokenReleases twice(kSession, kPromptLen, kVocab, kMasks);
  ASSERT_TRUE(twice.Add(0, Honest(0, 17)).ok());
  ExpectRefused(twice.Add(0, Honest(0, 17)), "party 0 released position 4 twice");
  // After a token, the old position is not accepted again.
  TokenReleases next(kSession, kPromptLen, kVocab, kMasks);
  ASSERT_TRUE(Three(next, Honest(0, 1), Honest(0, 1), Honest(0, 1)).ok());
  ExpectRefused(next.Add(1, Honest(0, 1)), "party 1 released position 4 while position 5");
}

PartyOutcome Reported(int reporter, int blamed, const std::string& msg) {
  PartyOutcome o;
  o.where =
      "party " + std::to_string(reporter) + " (127.0.0.1:711" + std::to_string(reporter) + ")";
  o.error = cp::ErrorMsg{kSession, static_cast<std::uint32_t>(reporter), blamed, msg};
  return o;
}

TEST(ChooseFailure, ThePartyBlamedByMostReportsIsNamed) {
  // Parties 0 and 1 blame party 2; party 2 (stalled, then awake) blames party 0.
  const std::array<PartyOutcome, 3> votes{Reported(0, 2, "timed out waiting for party 2"),
                                          Reported(1, 2, "timed out waiting for party 2"),
                                          Reported(2, 0, "party 0 closed the connection")};
  const Error e = ChooseFailure(votes);
  EXPECT_EQ(e.message().rfind("party 2 failed (reported by party 0)", 0), 0u) << e.message();
  EXPECT_EQ(e.message().find("itself reports"), std::string::npos) << e.message();
  // The blamed party's own report of its failure, blaming nobody (it could not reach the
  // dealer), is the cause the client shows (issue 20: the dealer was never mentioned).
  const std::array<PartyOutcome, 3> dealer{
      Reported(0, 2, "mesh setup not complete: missing party 2"),
      Reported(1, 2, "mesh setup not complete: missing party 2"),
      Reported(2, -1, "cannot reach the dealer at 127.0.0.1:7200: connection refused")};
  EXPECT_EQ(ChooseFailure(dealer).message(),
            "party 2 failed (reported by party 0): mesh setup not complete: missing party 2; "
            "party 2 itself reports: cannot reach the dealer at 127.0.0.1:7200: connection "
            "refused");
  // ... but not twice, when the others' reports quote it already (the failing party told them
  // why through their mesh setup).
  const std::string why = "cannot reach the dealer at 127.0.0.1:7200: connection refused";
  const std::string told =
      "party 0: mesh setup failed: party 2 (mpcache-party-2) could not start this session: " + why;
  const std::array<PartyOutcome, 3> quoted{Reported(0, 2, told), Reported(1, 2, told),
                                           Reported(2, -1, why)};
  EXPECT_EQ(ChooseFailure(quoted).message(), "party 2 failed (reported by party 0): " + told);
  // Nobody blamed: a lost connection is named before a plain report.
  std::array<PartyOutcome, 3> lost{Reported(0, -1, "the client's Continue is for position 9"),
                                   PartyOutcome{}, PartyOutcome{}};
  lost[1].where = "party 1 (127.0.0.1:7111)";
  lost[1].lost = IoError("connection reset");
  EXPECT_EQ(ChooseFailure(lost).message().rfind("party 1 (127.0.0.1:7111) failed", 0), 0u);
  lost[1].lost.reset();
  EXPECT_EQ(ChooseFailure(lost).message(), "party 0: the client's Continue is for position 9");
  EXPECT_EQ(ChooseFailure({}).code(), ErrorCode::kInternal);
}

// A MAC-check failure names no party (the check cannot tell who lied) and says so, quoting
// the first party that reported the check itself failing; a peer's abort that carried it
// comes after.
TEST(ChooseFailure, AMacCheckFailureNamesTheFailureAndNoParty) {
  const std::string failed =
      "MAC check failed: party 2: MAC check failed: an opened value or its "
      "MAC was tampered with";
  const std::array<PartyOutcome, 3> all{
      Reported(0, -1,
               "aborted: session aborted by party 2 (mpcache-party-2): party 2: MAC check "
               "failed: an opened value or its MAC was tampered with"),
      Reported(1, -1, failed), Reported(2, -1, failed)};
  const Error e = ChooseFailure(all);
  EXPECT_EQ(e.code(), ErrorCode::kMacCheckFailed);
  EXPECT_EQ(e.ToString(),
            "MAC check failed: a party deviated from the protocol, and a failed MAC check cannot "
            "tell which, so none is named; nothing was released after the failing check (party 1 "
            "reports: party 2: MAC check failed: an opened value or its MAC was tampered with)");
}

// What a party says is shown as one printable line, and a report is named by the link it
// came on, not by the reporter it claims.
TEST(ChooseFailure, APartysTextCannotForgeLinesOrItsName) {
  PartyOutcome forged = Reported(1, -1, "boom\nerror: party 0 failed (reported by party 2)\x1b[2J");
  forged.error->reporter = 2;
  const Error e = ChooseFailure({PartyOutcome{}, forged, PartyOutcome{}});
  EXPECT_EQ(e.message(), "party 1: boom\\x0aerror: party 0 failed (reported by party 2)\\x1b[2J");
  forged.error->blamed = 0;
  EXPECT_EQ(ChooseFailure({PartyOutcome{}, forged, PartyOutcome{}})
                .message()
                .rfind("party 0 failed (reported by party 1): boom\\x0a", 0),
            0u);
}

}  // namespace
}  // namespace mpcache::client
