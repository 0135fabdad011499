// The client <-> party protocol (DATA payloads of FramedConnection, session id 0 on the
// link; every message names the request's session id). Header-only: the client CLI
// includes it without linking the daemon.
//
//   client -> every party   Generate {session, prompt_len, steps, vocab}
//   party  -> client        SeedShare {XOR share of the client's mask seed, SHA-256 of it}
//                           (the dealer made the seed; each party sees one share only,
//                           the client checks the three hashes agree)
//   client -> every party   Prompt {d = onehot(token) - r, prompt_len x vocab values}
//                           (r: client-owned dealer masks, batch 0 of the session)
//   party  -> client        Token {pos, mask_seq, token + r'} after every MAC check
//                           (r': output masks, batch 1; the client checks all three agree)
//   client -> every party   Continue {pos, more}
//   party  -> client        Done {report} | Error {message, blamed party}
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/wire.h"

namespace mpcache::daemon::client_proto {

enum Type : std::uint8_t {
  kGenerate = 1,
  kSeedShare = 2,
  kPrompt = 3,
  kToken = 4,
  kContinue = 5,
  kDone = 6,
  kError = 7,
};

struct Generate {
  std::uint64_t session = 0;
  std::uint32_t prompt_len = 0, steps = 0, vocab = 0;
};
struct SeedShare {
  std::uint64_t session = 0;
  std::array<std::uint8_t, 16> share{};
  std::array<std::uint8_t, 32> hash{};
};
struct Prompt {
  std::uint64_t session = 0;
  std::vector<std::uint64_t> d;
};
struct Token {
  std::uint64_t session = 0;
  std::uint32_t pos = 0;
  std::uint64_t mask_seq = 0;
  std::uint64_t masked = 0;
};
struct Continue {
  std::uint64_t session = 0;
  std::uint32_t pos = 0;
  bool more = true;
};
struct Done {
  std::uint64_t session = 0;
  std::uint32_t party = 0;
  std::uint32_t positions = 0, released = 0, decode_positions = 0;
  double seconds = 0, decode_seconds = 0;
  std::uint64_t decode_bytes_sent = 0, decode_rounds = 0;
};
struct ErrorMsg {
  std::uint64_t session = 0;
  std::uint32_t reporter = 0;
  std::int32_t blamed = -1;  // -1: nobody blamed
  std::string message;
};

inline std::vector<std::uint8_t> Encode(const Generate& m) {
  return wire::Writer(kGenerate).U64(m.session).U32(m.prompt_len).U32(m.steps).U32(m.vocab).Take();
}
inline std::vector<std::uint8_t> Encode(const SeedShare& m) {
  return wire::Writer(kSeedShare)
      .U64(m.session)
      .Raw(m.share.data(), 16)
      .Raw(m.hash.data(), 32)
      .Take();
}
inline std::vector<std::uint8_t> Encode(const Prompt& m) {
  return wire::Writer(kPrompt).U64(m.session).Vec(m.d).Take();
}
inline std::vector<std::uint8_t> Encode(const Token& m) {
  return wire::Writer(kToken).U64(m.session).U32(m.pos).U64(m.mask_seq).U64(m.masked).Take();
}
inline std::vector<std::uint8_t> Encode(const Continue& m) {
  return wire::Writer(kContinue).U64(m.session).U32(m.pos).U8(m.more ? 1 : 0).Take();
}
inline std::vector<std::uint8_t> Encode(const Done& m) {
  return wire::Writer(kDone)
      .U64(m.session)
      .U32(m.party)
      .U32(m.positions)
      .U32(m.released)
      .U32(m.decode_positions)
      .F64(m.seconds)
      .F64(m.decode_seconds)
      .U64(m.decode_bytes_sent)
      .U64(m.decode_rounds)
      .Take();
}
inline std::vector<std::uint8_t> Encode(const ErrorMsg& m) {
  return wire::Writer(kError).U64(m.session).U32(m.reporter).I32(m.blamed).Str(m.message).Take();
}

// The message type of a payload (0 if empty).
inline std::uint8_t TypeOf(const std::vector<std::uint8_t>& payload) {
  return payload.empty() ? 0 : payload[0];
}

template <typename M>
Result<M> Decode(const std::vector<std::uint8_t>& payload);

namespace detail {
inline Status Expect(wire::Reader& r, Type t, const char* name) {
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t got, r.U8());
  if (got != t) {
    return ProtocolError(std::string("expected a ") + name + " message, got type " +
                         std::to_string(got));
  }
  return Status::Ok();
}
}  // namespace detail

template <>
inline Result<Generate> Decode<Generate>(const std::vector<std::uint8_t>& p) {
  wire::Reader r(p);
  MPCACHE_RETURN_IF_ERROR(detail::Expect(r, kGenerate, "Generate"));
  Generate m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.prompt_len, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.steps, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.vocab, r.U32());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}
template <>
inline Result<SeedShare> Decode<SeedShare>(const std::vector<std::uint8_t>& p) {
  wire::Reader r(p);
  MPCACHE_RETURN_IF_ERROR(detail::Expect(r, kSeedShare, "SeedShare"));
  SeedShare m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.share.data(), 16));
  MPCACHE_RETURN_IF_ERROR(r.Raw(m.hash.data(), 32));
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}
template <>
inline Result<Prompt> Decode<Prompt>(const std::vector<std::uint8_t>& p) {
  wire::Reader r(p);
  MPCACHE_RETURN_IF_ERROR(detail::Expect(r, kPrompt, "Prompt"));
  Prompt m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.d, r.Vec<std::uint64_t>());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}
template <>
inline Result<Token> Decode<Token>(const std::vector<std::uint8_t>& p) {
  wire::Reader r(p);
  MPCACHE_RETURN_IF_ERROR(detail::Expect(r, kToken, "Token"));
  Token m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.pos, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.mask_seq, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.masked, r.U64());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}
template <>
inline Result<Continue> Decode<Continue>(const std::vector<std::uint8_t>& p) {
  wire::Reader r(p);
  MPCACHE_RETURN_IF_ERROR(detail::Expect(r, kContinue, "Continue"));
  Continue m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.pos, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t more, r.U8());
  m.more = more != 0;
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}
template <>
inline Result<Done> Decode<Done>(const std::vector<std::uint8_t>& p) {
  wire::Reader r(p);
  MPCACHE_RETURN_IF_ERROR(detail::Expect(r, kDone, "Done"));
  Done m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.party, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.positions, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.released, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.decode_positions, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.seconds, r.F64());
  MPCACHE_ASSIGN_OR_RETURN(m.decode_seconds, r.F64());
  MPCACHE_ASSIGN_OR_RETURN(m.decode_bytes_sent, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.decode_rounds, r.U64());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}
template <>
inline Result<ErrorMsg> Decode<ErrorMsg>(const std::vector<std::uint8_t>& p) {
  wire::Reader r(p);
  MPCACHE_RETURN_IF_ERROR(detail::Expect(r, kError, "Error"));
  ErrorMsg m;
  MPCACHE_ASSIGN_OR_RETURN(m.session, r.U64());
  MPCACHE_ASSIGN_OR_RETURN(m.reporter, r.U32());
  MPCACHE_ASSIGN_OR_RETURN(m.blamed, r.I32());
  MPCACHE_ASSIGN_OR_RETURN(m.message, r.Str());
  MPCACHE_RETURN_IF_ERROR(r.End());
  return m;
}

}  // namespace mpcache::daemon::client_proto
