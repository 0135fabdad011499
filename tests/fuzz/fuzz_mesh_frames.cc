// The byte stream a peer sends on a mesh, dealer or client link (net/tls/frame_rules.h):
// frames, a hello first, then DATA frames carrying fragmented messages
// (daemon/message_limits.h) decoded as the client decodes what a party sends.
// Properties: an accepted frame is of our session, numbered in order, within the payload
// limit; a reassembled message is within its type's limit; nothing is allocated for a
// payload the rules refuse (ASan's allocation limit would report it).
#include <cstdint>
#include <span>
#include <vector>

#include "daemon/client_protocol.h"
#include "daemon/message_limits.h"
#include "fuzz_util.h"
#include "net/tls/frame_rules.h"

namespace {

using mpcache::fuzz::Violated;
namespace net = mpcache::net;
namespace client_proto = mpcache::daemon::client_proto;

constexpr std::uint64_t kSession = 42;
constexpr std::size_t kMaxPayload = 1 << 16;
constexpr std::size_t kMaxMessage = 1 << 20;

void DecodeMessage(const std::vector<std::uint8_t>& m) {
  switch (client_proto::TypeOf(m)) {
    case client_proto::kSeedShare:
      (void)client_proto::Decode<client_proto::SeedShare>(m);
      break;
    case client_proto::kProgress:
      (void)client_proto::Decode<client_proto::Progress>(m);
      break;
    case client_proto::kQueued:
      (void)client_proto::Decode<client_proto::Queued>(m);
      break;
    case client_proto::kToken:
      (void)client_proto::Decode<client_proto::Token>(m);
      break;
    case client_proto::kDone:
      (void)client_proto::Decode<client_proto::Done>(m);
      break;
    case client_proto::kError:
      (void)client_proto::Decode<client_proto::ErrorMsg>(m);
      break;
    default:
      Violated("only the allowed message types are reassembled");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const net::FrameRules rules{kSession, kMaxPayload, "party 1 (mpcache-party-1)"};
  const net::HelloRules hello_rules{
      1, 3, kSession, {"party 0 (mpcache-party-0)", "party 1 (mpcache-party-1)", "party 2"}};
  const auto limits = client_proto::PartyMessageLimits();
  std::uint64_t next_sequence = 0;
  std::uint64_t accepted = 0;
  bool hello_done = false;
  mpcache::daemon::MessageAssembler message(&limits, kMaxMessage, rules.peer_label);
  std::size_t at = 0;
  while (size - at >= 4) {
    auto len = net::CheckHeaderLength(std::span<const std::uint8_t, 4>(data + at, 4), rules);
    if (!len.ok()) break;
    at += 4;
    if (*len > size - at) break;  // the connection would wait for more bytes
    auto header = net::CheckFrameHeader(std::span(data + at, *len), rules, &next_sequence);
    if (!header.ok()) break;
    at += *len;
    const auto& h = *header;
    if (h.session_id() != kSession) Violated("an accepted frame is of our session");
    if (h.payload_length() > kMaxPayload) Violated("an accepted frame is within the limit");
    if (h.kind() != mpcache::proto::FRAME_ABORT) {
      if (h.sequence() != accepted) Violated("accepted frames are numbered in order");
      ++accepted;
      if (next_sequence != accepted) Violated("the next expected number advances by one");
    }
    if (h.payload_length() > size - at) break;
    const std::vector<std::uint8_t> payload(data + at, data + at + h.payload_length());
    at += h.payload_length();
    if (!hello_done) {
      if (h.kind() != mpcache::proto::FRAME_HELLO) break;
      mpcache::proto::Hello hello;
      if (!net::CheckHelloPayload(payload, hello_rules, &hello).ok()) break;
      if (hello.party_id() != 1 || hello.session_id() != kSession) {
        Violated("an accepted hello is of the expected party and session");
      }
      hello_done = true;
      continue;
    }
    if (h.kind() != mpcache::proto::FRAME_DATA) break;
    auto complete = message.Add(payload);
    if (!complete.ok()) break;
    if (*complete) {
      const auto m = message.Take();
      if (limits.Check(client_proto::TypeOf(m), m.size(), "peer").ok() == false) {
        Violated("a reassembled message is within its type's limit");
      }
      DecodeMessage(m);
    }
  }
  (void)net::PrintableText(std::string_view(reinterpret_cast<const char*>(data), size), 64);
  return 0;
}
