// The rules every received MPCache frame must follow (framed_connection.h), as pure
// functions over bytes so that they are unit-tested and fuzzed without a socket:
//
//   [u32 little-endian header length][FrameHeader][payload]
//
// A header length outside 1..kMaxFrameHeaderBytes, an unparseable header, an unknown kind,
// another session's id, a sequence number other than the next one (replayed or reordered),
// a CLOSE with a payload and a payload over the connection's maximum are refused before
// anything is allocated for the payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "mesh.pb.h"

namespace mpcache::net {

inline constexpr std::uint32_t kWireProtocolVersion = 1;
inline constexpr std::size_t kMaxFrameHeaderBytes = 1024;

// A received frame: its checked header and its payload.
struct Frame {
  proto::FrameHeader header;
  std::vector<std::uint8_t> payload;
};

// What goes on the wire before a frame's payload: the u32 little-endian header length and
// the FrameHeader. The caller keeps payload_length within 2^32-1.
std::vector<std::uint8_t> EncodeFrameHead(std::uint64_t session_id, std::uint64_t sequence,
                                          proto::FrameKind kind, std::uint32_t payload_length);

// What a connection expects of the frames it receives.
struct FrameRules {
  std::uint64_t session_id = 0;
  std::size_t max_payload_bytes = 0;
  std::string peer_label;  // names the sender in errors ("party 1 (mpcache-party-1)")
};

// The header length from the 4-byte little-endian prefix, or a protocol error.
Result<std::size_t> CheckHeaderLength(std::span<const std::uint8_t, 4> prefix,
                                      const FrameRules& rules);

// Parses and checks a frame header. `next_sequence` is the number the next non-ABORT frame
// must carry; it is advanced when such a frame is accepted (ABORT frames are numbered 0 and
// may arrive at any point).
Result<proto::FrameHeader> CheckFrameHeader(std::span<const std::uint8_t> header_bytes,
                                            const FrameRules& rules, std::uint64_t* next_sequence);

// What a party's hello must say: the party its certificate names, the party count and
// the session (tls_mesh.h).
struct HelloRules {
  int expected_party = 0;
  int num_parties = 0;
  std::uint64_t session_id = 0;
  std::vector<std::string> party_labels;  // names each party in errors, by id
};

// Parses and checks a hello payload; `out` (optional) gets the hello once its identity
// fields passed. A hello carrying a setup failure (Hello.setup_failed) gives kAborted
// naming the party that failed.
Status CheckHelloPayload(std::span<const std::uint8_t> payload, const HelloRules& rules,
                         proto::Hello* out = nullptr);

// `text` (a name or a reason a peer sent) for an error message or a log line: bytes
// outside printable ASCII, and backslashes, as \xNN, so a peer cannot break or forge a
// line; cut after `max_bytes` bytes (then "... (N bytes)").
std::string PrintableText(std::string_view text, std::size_t max_bytes = 512);

}  // namespace mpcache::net
