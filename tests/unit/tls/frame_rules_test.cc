// The frame and hello rules as pure functions (net/tls/frame_rules.h): every refusal, and
// the sequence number advancing only on accepted frames. tls_frame_test.cc checks the same
// rules through a real TLS link; the fuzz target fuzz_mesh_frames drives them with
// arbitrary streams.
#include "net/tls/frame_rules.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace mpcache::net {
namespace {

const FrameRules kRules{42, 1000, "party 1 (mpcache-party-1)"};

std::vector<std::uint8_t> Header(std::uint64_t session, std::uint64_t seq, proto::FrameKind kind,
                                 std::uint32_t payload) {
  proto::FrameHeader h;
  h.set_session_id(session);
  h.set_sequence(seq);
  h.set_kind(kind);
  h.set_payload_length(payload);
  const std::string s = h.SerializeAsString();
  return {s.begin(), s.end()};
}

std::string Refusal(const std::vector<std::uint8_t>& header, std::uint64_t* next) {
  auto r = CheckFrameHeader(header, kRules, next);
  if (r.ok()) return "accepted";
  EXPECT_EQ(r.error().code(), ErrorCode::kProtocol);
  return r.error().message();
}

TEST(FrameRules, HeaderLengthIsOneToTheMaximum) {
  for (const std::uint32_t len : {0u, 1025u, 0xffffffffu}) {
    const std::array<std::uint8_t, 4> p{
        static_cast<std::uint8_t>(len), static_cast<std::uint8_t>(len >> 8),
        static_cast<std::uint8_t>(len >> 16), static_cast<std::uint8_t>(len >> 24)};
    auto r = CheckHeaderLength(p, kRules);
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_EQ(r.error().message(), "party 1 (mpcache-party-1) sent a frame header of " +
                                       std::to_string(len) + " bytes (allowed 1..1024)");
  }
  const std::array<std::uint8_t, 4> ok{0x00, 0x04, 0, 0};  // 1024
  ASSERT_TRUE(CheckHeaderLength(ok, kRules).ok());
  EXPECT_EQ(*CheckHeaderLength(ok, kRules), 1024u);
}

TEST(FrameRules, EveryRefusalNamesWhatWasWrong) {
  std::uint64_t next = 0;
  EXPECT_EQ(Refusal({0xff, 0xff, 0xff}, &next),
            "party 1 (mpcache-party-1) sent an unparseable frame header");
  EXPECT_EQ(Refusal(Header(42, 0, static_cast<proto::FrameKind>(9), 0), &next),
            "party 1 (mpcache-party-1) sent a frame of unknown kind 9");
  EXPECT_EQ(Refusal(Header(43, 0, proto::FRAME_DATA, 0), &next),
            "party 1 (mpcache-party-1) sent a frame for session 43, expected session 42");
  EXPECT_EQ(Refusal(Header(42, 1, proto::FRAME_DATA, 0), &next),
            "party 1 (mpcache-party-1) sent frame number 1, expected 0 (replayed or reordered "
            "frame)");
  EXPECT_EQ(Refusal(Header(42, 0, proto::FRAME_CLOSE, 3), &next),
            "party 1 (mpcache-party-1) sent a CLOSE frame with a payload of 3 bytes (CLOSE "
            "carries none)");
  EXPECT_EQ(Refusal(Header(42, 0, proto::FRAME_DATA, 1001), &next),
            "party 1 (mpcache-party-1) sent a frame of 1001 bytes, more than max_frame_bytes 1000");
  EXPECT_EQ(next, 0u) << "a refused frame does not advance the sequence";
}

TEST(FrameRules, SequenceAdvancesOnAcceptedFramesAndAbortsAreUnnumbered) {
  std::uint64_t next = 0;
  EXPECT_EQ(Refusal(Header(42, 0, proto::FRAME_HELLO, 10), &next), "accepted");
  EXPECT_EQ(Refusal(Header(42, 1, proto::FRAME_DATA, 1000), &next), "accepted");
  EXPECT_EQ(Refusal(Header(42, 0, proto::FRAME_ABORT, 5), &next), "accepted");
  EXPECT_EQ(next, 2u);
  // A replay of frame 1 is refused.
  EXPECT_NE(Refusal(Header(42, 1, proto::FRAME_DATA, 10), &next), "accepted");
  EXPECT_EQ(Refusal(Header(42, 2, proto::FRAME_CLOSE, 0), &next), "accepted");
  EXPECT_EQ(next, 3u);
}

std::vector<std::uint8_t> HelloBytes(std::uint32_t party, std::uint32_t parties,
                                     std::uint64_t session,
                                     std::uint32_t version = kWireProtocolVersion,
                                     const std::string& failed = {}, std::uint32_t by = 0) {
  proto::Hello h;
  h.set_party_id(party);
  h.set_num_parties(parties);
  h.set_protocol_version(version);
  h.set_session_id(session);
  if (!failed.empty()) h.set_setup_failed(failed);
  h.set_setup_failed_by(by);
  const std::string s = h.SerializeAsString();
  return {s.begin(), s.end()};
}

TEST(HelloRules, IdentityVersionCountAndSessionAreChecked) {
  const HelloRules rules{1, 3, 42, {"party 0 (p0)", "party 1 (p1)", "party 2 (p2)"}};
  proto::Hello out;
  EXPECT_TRUE(CheckHelloPayload(HelloBytes(1, 3, 42), rules, &out).ok());
  EXPECT_EQ(out.party_id(), 1u);
  const auto msg = [&](const std::vector<std::uint8_t>& b) {
    auto s = CheckHelloPayload(b, rules);
    return s.ok() ? std::string("accepted") : s.error().message();
  };
  EXPECT_EQ(msg({0xff, 0xff}), "party 1 (p1) sent an unparseable hello");
  EXPECT_EQ(msg(HelloBytes(1, 3, 42, 2)),
            "party 1 (p1) speaks wire protocol version 2, we speak 1; run the same release "
            "everywhere");
  EXPECT_EQ(msg(HelloBytes(1, 4, 42)), "party 1 (p1) expects 4 parties, we expect 3");
  EXPECT_EQ(msg(HelloBytes(1, 3, 41)), "party 1 (p1) is in session 41, we are in session 42");
  EXPECT_EQ(msg(HelloBytes(2, 3, 42)),
            "peer with the certificate of party 1 (p1) claims to be party 2; refused");
}

TEST(HelloRules, ASetupFailureNamesTheFailingPartyEscaped) {
  const HelloRules rules{1, 3, 42, {"party 0 (p0)", "party 1 (p1)", "party 2 (p2)"}};
  auto own = CheckHelloPayload(HelloBytes(1, 3, 42, 1, "dealer\nunreachable"), rules);
  ASSERT_FALSE(own.ok());
  EXPECT_EQ(own.error().code(), ErrorCode::kAborted);
  EXPECT_EQ(own.error().message(),
            "party 1 (p1) could not start this session: dealer\\x0aunreachable");
  auto relayed = CheckHelloPayload(HelloBytes(1, 3, 42, 1, "no dealer", 3), rules);
  ASSERT_FALSE(relayed.ok());
  EXPECT_EQ(relayed.error().message(),
            "party 2 (p2) could not start this session (told by party 1 (p1)): no dealer");
  // A relay naming a party that does not exist is the sender's own failure.
  auto bogus = CheckHelloPayload(HelloBytes(1, 3, 42, 1, "x", 99), rules);
  ASSERT_FALSE(bogus.ok());
  EXPECT_EQ(bogus.error().message(), "party 1 (p1) could not start this session: x");
}

// Found by fuzz_mesh_frames: a reason that is not UTF-8 (setup_failed was a protobuf string,
// which refuses such bytes) made the whole hello unparseable, so the peer's real reason was
// lost behind "an unparseable hello". It is bytes now, shown escaped.
TEST(HelloRules, ASetupFailureReasonThatIsNotUtf8StillArrives) {
  const HelloRules rules{1, 3, 42, {"party 0 (p0)", "party 1 (p1)", "party 2 (p2)"}};
  auto r = CheckHelloPayload(HelloBytes(1, 3, 42, 1, std::string("bad \xff\xfe path")), rules);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kAborted);
  EXPECT_EQ(r.error().message(), "party 1 (p1) could not start this session: bad \\xff\\xfe path");
}

}  // namespace
}  // namespace mpcache::net
