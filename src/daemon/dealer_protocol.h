// The dealer <-> party protocol (DATA payloads over a FramedConnection whose session id
// is the request's): one connection per party per request.
//
//   party  -> dealer   Join {party, security, prompt_len, steps, vocab}
//   dealer -> party    Setup {party seed, binary MAC key share, bit seed, XOR share of the
//                      client's seed and its SHA-256, the session's two client mask batches}
//   party  -> dealer   BatchRequest {request, seq}   -> Batch (seed-compressed: the
//                      request names its corrector, which gets the corrections, the others
//                      a header; batch.h)
//   party  -> dealer   BitRequest {item, n, corrector} -> Bits (the party's part of a
//                      seed-compressed batch of comparison material: the corrector gets the
//                      corrections, the others a header; bit_batch.h)
// The three parties send the same requests (the dealer refuses a batch asked for
// differently, corrector included), their correctors from their role tables (mpc/roles.h).
//   dealer -> party    Error {message} instead of any answer
//   party  -> dealer   Hello {party, security}  -> HelloReply {security} (a party's start-up
//                      check, daemon/start_checks.h, on a connection of its own)
// Requests are answered in order. A party sends its requests ahead of need and reads the
// answers when it needs them (daemon/remote_preprocessing.h), so neither side waits for a
// round trip per item; flow control is the party's bound on requests in flight.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/wire.h"
#include "mpc/compare/bit_preprocessing.h"
#include "preproc/batch.h"
#include "preproc/bit_dealer.h"

namespace mpcache::daemon::dealer_proto {

enum Type : std::uint8_t {
  kJoin = 1,
  kSetup = 2,
  kBatchRequest = 3,
  kBatch = 4,
  kBitRequest = 5,
  kBits = 6,
  kError = 7,
  kHello = 8,
  kHelloReply = 9,
};

// A party's start-up check: the dealer answers with its own security mode, or an Error when
// the party's differs (every request would fail on it).
struct Hello {
  std::uint32_t party = 0;
  preproc::Security security = preproc::Security::kMalicious;
};
struct HelloReply {
  preproc::Security security = preproc::Security::kMalicious;
};
std::vector<std::uint8_t> Encode(const Hello& m);
std::vector<std::uint8_t> Encode(const HelloReply& m);
Result<Hello> DecodeHello(const std::vector<std::uint8_t>& p);
Result<HelloReply> DecodeHelloReply(const std::vector<std::uint8_t>& p);

struct Join {
  std::uint64_t session = 0;  // links use frame session id 0; the request's id is here
  std::uint32_t party = 0;
  preproc::Security security = preproc::Security::kMalicious;
  std::uint32_t prompt_len = 0, steps = 0, vocab = 0;
  // Sampling: the client's noise values (decode positions x vocab), else 0.
  std::uint64_t noise = 0;
};
// The client's mask batches of a session, in the order the parties take them: the
// prompt's (prompt_len x vocab), the sampling noise's (when noise > 0), the outputs' (steps).
std::vector<std::uint64_t> ClientMaskBatches(const Join& join);
struct Setup {
  Seed party_seed{};
  std::uint64_t bit_key_share = 0;
  Seed bit_seed{};  // expands the comparison material (preproc::BitExpander)
  std::array<std::uint8_t, 16> client_seed_share{};
  std::array<std::uint8_t, 32> client_seed_hash{};
  std::vector<preproc::Batch> client_batches;    // this party's part of ClientMaskBatches
  std::uint64_t chunk_items = 32768;             // ask ahead for at least this many items
  std::uint64_t max_request_items = 1ull << 22;  // never ask for more in one request
};
struct BatchRequest {
  preproc::BatchRequest request;
  std::uint64_t seq = 0;
};
struct BitRequest {
  preproc::BitItem item = preproc::BitItem::kBitTriple;
  std::uint64_t n = 0;
  std::int32_t corrector = preproc::kStaticCorrector;  // receives the corrections
};

std::vector<std::uint8_t> Encode(const Join& m);
std::vector<std::uint8_t> Encode(const Setup& m);
std::vector<std::uint8_t> Encode(const BatchRequest& m);
std::vector<std::uint8_t> EncodeBatch(const preproc::Batch& b);
std::vector<std::uint8_t> Encode(const BitRequest& m);
std::vector<std::uint8_t> EncodeError(const std::string& message);

Result<Join> DecodeJoin(const std::vector<std::uint8_t>& p);
Result<Setup> DecodeSetup(const std::vector<std::uint8_t>& p);
Result<BatchRequest> DecodeBatchRequest(const std::vector<std::uint8_t>& p);
Result<preproc::Batch> DecodeBatch(const std::vector<std::uint8_t>& p);
Result<BitRequest> DecodeBitRequest(const std::vector<std::uint8_t>& p);
// The dealer's Error message as an error (kProtocol), or kProtocol for an unexpected type.
Error UnexpectedMessage(const std::vector<std::uint8_t>& p, const char* wanted);

// Comparison material (type kBits): one party's part of a bit batch.
std::vector<std::uint8_t> EncodeBitBatch(const preproc::BitBatch& b);
Result<preproc::BitBatch> DecodeBitBatch(const std::vector<std::uint8_t>& p);

}  // namespace mpcache::daemon::dealer_proto
