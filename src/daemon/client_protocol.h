// The client <-> party protocol (DATA payloads of FramedConnection, session id 0 on the
// link; every message names the request's session id). Header-only: the client CLI
// includes it without linking the daemon.
//
//   client -> every party   Generate {session, prompt_len, steps, vocab, sampling}
//                           (sampling: temperature, top_p, top_k; public to the parties)
//   party  -> client        SeedShare {XOR share of the client's mask seed, SHA-256 of it,
//                           the parties' frac_bits}
//                           (the dealer made the seed; each party sees one share only,
//                           the client checks the three hashes agree)
//   client -> every party   Prompt {d = onehot(token) - r, prompt_len x vocab values,
//                           then, when sampling, d = noise - r'' for SampleNoiseValues}
//                           (r: client-owned dealer masks, batch 0 of the session; r'': the
//                           noise batch 1, the client's T x Gumbel draws per decode position)
//   party  -> client        Queued {ahead} while the request waits for its turn (requests
//                           are served one at a time, in an order the parties agree on:
//                           daemon/session_order.h): when the count of requests ahead of
//                           it changes, and every second as a heartbeat
//   party  -> client        Progress {pos} after each prompt position but the last, and
//                           every second while positions run (daemon/step_heartbeat.h): a
//                           heartbeat (public: the prompt length and the position are), so
//                           that the client's receive timeout measures a party's silence,
//                           not the prompt's length or a slow step, and a stalled party's
//                           peers report it first
//   party  -> client        Token {pos, mask_seq, token + r'} after every MAC check
//                           (r': output masks, the last batch; the client checks all three
//                           agree)
//   client -> every party   Continue {pos, more}
//   party  -> client        Done {report} | Error {message, blamed party}
//
// Each side takes only the message types due next, each within its size limit (below;
// docs/network.md): a party never holds more of a client's message than its Prompt's
// prompt_len x vocab values. A party refuses a Generate beyond the model's context or with
// a session id it served before, a Prompt or Continue of another session, a Continue for
// another position, and prompt rows that are not one-hot (infer/input_check.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/message_limits.h"
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
  kProgress = 8,
  kQueued = 9,
};

// Each message lists its fields once (Fields(), in wire order); Encode and Decode walk
// that list (daemon/wire.h).
struct Generate {
  static constexpr Type kType = kGenerate;
  static constexpr const char* kName = "Generate";
  std::uint64_t session = 0;
  std::uint32_t prompt_len = 0, steps = 0, vocab = 0;
  double temperature = 0, top_p = 1;  // common/fixed_sampling.h (0: greedy)
  std::uint32_t top_k = 0;
  auto Fields() { return std::tie(session, prompt_len, steps, vocab, temperature, top_p, top_k); }
  auto Fields() const {
    return std::tie(session, prompt_len, steps, vocab, temperature, top_p, top_k);
  }
};

// The sampling noise a request enters after its prompt: vocab values for every position
// that may sample (prompt_len - 1 .. positions - 1, positions = max(steps, prompt_len)), or
// none for greedy requests.
inline std::uint64_t SampleNoiseValues(const Generate& g) {
  if (g.temperature == 0) return 0;
  const std::uint64_t positions = std::max(g.steps, g.prompt_len);
  return (positions - g.prompt_len + 1) * std::uint64_t{g.vocab};
}
struct SeedShare {
  static constexpr Type kType = kSeedShare;
  static constexpr const char* kName = "SeedShare";
  std::uint64_t session = 0;
  std::array<std::uint8_t, 16> share{};
  std::array<std::uint8_t, 32> hash{};
  // The parties' fixed-point precision (model.frac_bits): the client encodes its sampling
  // noise at it.
  std::uint32_t frac_bits = 0;
  auto Fields() { return std::tie(session, share, hash, frac_bits); }
  auto Fields() const { return std::tie(session, share, hash, frac_bits); }
};
struct Prompt {
  static constexpr Type kType = kPrompt;
  static constexpr const char* kName = "Prompt";
  std::uint64_t session = 0;
  std::vector<std::uint64_t> d;
  auto Fields() { return std::tie(session, d); }
  auto Fields() const { return std::tie(session, d); }
};
struct Token {
  static constexpr Type kType = kToken;
  static constexpr const char* kName = "Token";
  std::uint64_t session = 0;
  std::uint32_t pos = 0;
  std::uint64_t mask_seq = 0;
  std::uint64_t masked = 0;
  auto Fields() { return std::tie(session, pos, mask_seq, masked); }
  auto Fields() const { return std::tie(session, pos, mask_seq, masked); }
};
struct Continue {
  static constexpr Type kType = kContinue;
  static constexpr const char* kName = "Continue";
  std::uint64_t session = 0;
  std::uint32_t pos = 0;
  bool more = true;
  auto Fields() { return std::tie(session, pos, more); }
  auto Fields() const { return std::tie(session, pos, more); }
};
struct Progress {
  static constexpr Type kType = kProgress;
  static constexpr const char* kName = "Progress";
  std::uint64_t session = 0;
  std::uint32_t pos = 0;  // the prompt position whose forward pass ran
  auto Fields() { return std::tie(session, pos); }
  auto Fields() const { return std::tie(session, pos); }
};
struct Queued {
  static constexpr Type kType = kQueued;
  static constexpr const char* kName = "Queued";
  std::uint64_t session = 0;
  std::uint32_t ahead = 0;  // requests this party serves before this one (the running one too)
  auto Fields() { return std::tie(session, ahead); }
  auto Fields() const { return std::tie(session, ahead); }
};
struct Done {
  static constexpr Type kType = kDone;
  static constexpr const char* kName = "Done";
  std::uint64_t session = 0;
  std::uint32_t party = 0;
  std::uint32_t positions = 0, released = 0, decode_positions = 0;
  double seconds = 0, decode_seconds = 0;
  std::uint64_t decode_bytes_sent = 0, decode_rounds = 0;
  std::uint32_t cache = 0;     // 0: full cache, 1: MPCache
  std::uint32_t attended = 0;  // positions the last step attended per layer (MPCache: selected)
  std::uint64_t revealed = 0;  // selections revealed to the parties (reveal: plain | dp)
  double epsilon = 0;          // the DP budget they spent (reveal: dp)
  auto Fields() {
    return std::tie(session, party, positions, released, decode_positions, seconds, decode_seconds,
                    decode_bytes_sent, decode_rounds, cache, attended, revealed, epsilon);
  }
  auto Fields() const {
    return std::tie(session, party, positions, released, decode_positions, seconds, decode_seconds,
                    decode_bytes_sent, decode_rounds, cache, attended, revealed, epsilon);
  }
};
struct ErrorMsg {
  static constexpr Type kType = kError;
  static constexpr const char* kName = "Error";
  std::uint64_t session = 0;
  std::uint32_t reporter = 0;
  std::int32_t blamed = -1;  // -1: nobody blamed
  std::string message;
  auto Fields() { return std::tie(session, reporter, blamed, message); }
  auto Fields() const { return std::tie(session, reporter, blamed, message); }
};

template <typename M>
std::vector<std::uint8_t> Encode(const M& m) {
  return wire::EncodeFields(M::kType, m.Fields());
}

// The message type of a payload (0 if empty).
inline std::uint8_t TypeOf(const std::vector<std::uint8_t>& payload) {
  return payload.empty() ? 0 : payload[0];
}

template <typename M>
Result<M> Decode(const std::vector<std::uint8_t>& payload) {
  wire::Reader r(payload);
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t got, r.U8());
  if (got != M::kType) {
    return ProtocolError(std::string("expected a ") + M::kName + " message, got type " +
                         std::to_string(got));
  }
  M m;
  MPCACHE_RETURN_IF_ERROR(wire::DecodeFields(r, m.Fields()));
  return m;
}

inline std::string TypeName(std::uint8_t type) {
  switch (type) {
    case kGenerate:
      return Generate::kName;
    case kSeedShare:
      return SeedShare::kName;
    case kPrompt:
      return Prompt::kName;
    case kToken:
      return Token::kName;
    case kContinue:
      return Continue::kName;
    case kDone:
      return Done::kName;
    case kError:
      return ErrorMsg::kName;
    case kProgress:
      return Progress::kName;
    case kQueued:
      return Queued::kName;
    default:
      return "unknown (type " + std::to_string(type) + ")";
  }
}

// ---- Size limits per message type (daemon/message_limits.h) ----
//
// Every message but Prompt and Error has a fixed size. A Prompt is exactly
// prompt_len x vocab ring elements; an Error carries at most kMaxErrorText characters
// (a party cuts longer texts).
inline constexpr std::size_t kMaxErrorText = 4096;

// The encoded size of a message whose fields all have fixed sizes.
template <typename M>
std::size_t FixedSize() {
  return Encode(M{}).size();
}

inline std::string FixedWhy(const char* name) {
  return std::string("a ") + name + " message has a fixed size in the client protocol";
}

// What a party accepts first from a client: one Generate.
inline MessageLimits GenerateLimits() {
  MessageLimits l(TypeName);
  l.Allow(kGenerate, FixedSize<Generate>(), FixedWhy("Generate"));
  return l;
}

// What a party accepts after the seed share: the Prompt of the request, exactly
// prompt_len x vocab values plus the sampling noise (prompt_len and steps are at most the
// model's seq_len and vocab its vocabulary size: the party checked them against
// model.checkpoint).
inline MessageLimits PromptLimits(const Generate& g) {
  const std::size_t header = Encode(Prompt{}).size();
  const std::uint64_t noise = SampleNoiseValues(g);
  MessageLimits l(TypeName);
  const std::string rows = "prompt_len " + std::to_string(g.prompt_len) +
                           " (the request's Generate) x " + std::to_string(g.vocab) +
                           " (the vocabulary of model.checkpoint)";
  l.Allow(
      kPrompt, header + 8 * (std::size_t{g.prompt_len} * g.vocab + noise),
      (noise > 0 ? "8 bytes x (" + rows + " + " + std::to_string(noise) + " sampling noise values)"
                 : "8 bytes x " + rows) +
          " + " + std::to_string(header) + " bytes of header");
  return l;
}

// What a party accepts after each released token: one Continue.
inline MessageLimits ContinueLimits() {
  MessageLimits l(TypeName);
  l.Allow(kContinue, FixedSize<Continue>(), FixedWhy("Continue"));
  return l;
}

// What the client accepts from a party at any time.
inline MessageLimits PartyMessageLimits() {
  MessageLimits l(TypeName);
  l.Allow(kSeedShare, FixedSize<SeedShare>(), FixedWhy("SeedShare"));
  l.Allow(kProgress, FixedSize<Progress>(), FixedWhy("Progress"));
  l.Allow(kQueued, FixedSize<Queued>(), FixedWhy("Queued"));
  l.Allow(kToken, FixedSize<Token>(), FixedWhy("Token"));
  l.Allow(kDone, FixedSize<Done>(), FixedWhy("Done"));
  l.Allow(
      kError, FixedSize<ErrorMsg>() + kMaxErrorText,
      "an Error message carries at most " + std::to_string(kMaxErrorText) + " characters of text");
  return l;
}

}  // namespace mpcache::daemon::client_proto
