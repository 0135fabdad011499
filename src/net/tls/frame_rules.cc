#include "net/tls/frame_rules.h"

#include <cstdint>

namespace mpcache::net {
namespace {

bool KnownKind(proto::FrameKind kind) {
  return kind == proto::FRAME_HELLO || kind == proto::FRAME_DATA || kind == proto::FRAME_ABORT ||
         kind == proto::FRAME_CLOSE;
}

}  // namespace

std::vector<std::uint8_t> EncodeFrameHead(std::uint64_t session_id, std::uint64_t sequence,
                                          proto::FrameKind kind, std::uint32_t payload_length) {
  proto::FrameHeader header;
  header.set_session_id(session_id);
  header.set_sequence(sequence);
  header.set_kind(kind);
  header.set_payload_length(payload_length);
  const auto header_size = static_cast<std::uint32_t>(header.ByteSizeLong());
  std::vector<std::uint8_t> head(4 + header_size);
  for (int i = 0; i < 4; ++i) head[i] = static_cast<std::uint8_t>(header_size >> (8 * i));
  header.SerializeWithCachedSizesToArray(head.data() + 4);
  return head;
}

Result<std::size_t> CheckHeaderLength(std::span<const std::uint8_t, 4> prefix,
                                      const FrameRules& rules) {
  std::uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= std::uint32_t{prefix[i]} << (8 * i);
  if (len == 0 || len > kMaxFrameHeaderBytes) {
    return ProtocolError(rules.peer_label + " sent a frame header of " + std::to_string(len) +
                         " bytes (allowed 1.." + std::to_string(kMaxFrameHeaderBytes) + ")");
  }
  return std::size_t{len};
}

Result<proto::FrameHeader> CheckFrameHeader(std::span<const std::uint8_t> header_bytes,
                                            const FrameRules& rules, std::uint64_t* next_sequence) {
  proto::FrameHeader h;
  if (header_bytes.size() > kMaxFrameHeaderBytes ||
      !h.ParseFromArray(header_bytes.data(), static_cast<int>(header_bytes.size()))) {
    return ProtocolError(rules.peer_label + " sent an unparseable frame header");
  }
  if (!KnownKind(h.kind())) {
    return ProtocolError(rules.peer_label + " sent a frame of unknown kind " +
                         std::to_string(static_cast<int>(h.kind())));
  }
  if (h.session_id() != rules.session_id) {
    return ProtocolError(rules.peer_label + " sent a frame for session " +
                         std::to_string(h.session_id()) + ", expected session " +
                         std::to_string(rules.session_id));
  }
  if (h.kind() != proto::FRAME_ABORT) {
    if (h.sequence() != *next_sequence) {
      return ProtocolError(rules.peer_label + " sent frame number " + std::to_string(h.sequence()) +
                           ", expected " + std::to_string(*next_sequence) +
                           " (replayed or reordered frame)");
    }
  }
  if (h.kind() == proto::FRAME_CLOSE && h.payload_length() != 0) {
    return ProtocolError(rules.peer_label + " sent a CLOSE frame with a payload of " +
                         std::to_string(h.payload_length()) + " bytes (CLOSE carries none)");
  }
  if (h.payload_length() > rules.max_payload_bytes) {
    return ProtocolError(rules.peer_label + " sent a frame of " +
                         std::to_string(h.payload_length()) + " bytes, more than max_frame_bytes " +
                         std::to_string(rules.max_payload_bytes));
  }
  if (h.kind() != proto::FRAME_ABORT) ++*next_sequence;
  return h;
}

Status CheckHelloPayload(std::span<const std::uint8_t> payload, const HelloRules& rules,
                         proto::Hello* out) {
  const auto label = [&](std::int64_t party) {
    if (party >= 0 && party < static_cast<std::int64_t>(rules.party_labels.size())) {
      return rules.party_labels[static_cast<std::size_t>(party)];
    }
    return "party " + std::to_string(party);
  };
  const std::string who = label(rules.expected_party);
  proto::Hello hello;
  if (payload.size() > static_cast<std::size_t>(INT32_MAX) ||
      !hello.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return ProtocolError(who + " sent an unparseable hello");
  }
  if (hello.protocol_version() != kWireProtocolVersion) {
    return Unsupported(who + " speaks wire protocol version " +
                       std::to_string(hello.protocol_version()) + ", we speak " +
                       std::to_string(kWireProtocolVersion) + "; run the same release everywhere");
  }
  if (hello.num_parties() != static_cast<std::uint32_t>(rules.num_parties)) {
    return ProtocolError(who + " expects " + std::to_string(hello.num_parties()) +
                         " parties, we expect " + std::to_string(rules.num_parties));
  }
  if (hello.session_id() != rules.session_id) {
    return ProtocolError(who + " is in session " + std::to_string(hello.session_id()) +
                         ", we are in session " + std::to_string(rules.session_id));
  }
  if (hello.party_id() != static_cast<std::uint32_t>(rules.expected_party)) {
    return ProtocolError("peer with the certificate of " + who + " claims to be party " +
                         std::to_string(hello.party_id()) + "; refused");
  }
  if (out) *out = hello;
  if (!hello.setup_failed().empty()) {
    const auto by = static_cast<std::int64_t>(hello.setup_failed_by()) - 1;
    if (by >= 0 && by < rules.num_parties && by != rules.expected_party) {
      return Aborted(label(by) + " could not start this session (told by " + who +
                     "): " + PrintableText(hello.setup_failed()));
    }
    return Aborted(who + " could not start this session: " + PrintableText(hello.setup_failed()));
  }
  return Status::Ok();
}

std::string PrintableText(std::string_view text, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text.substr(0, max_bytes)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (text.size() > max_bytes) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace mpcache::net
