// The dealer's state for one request: the arithmetic dealer (seed-compressed batches,
// preproc/dealer.h) and the comparison-material dealer, shared by the three parties'
// connections. A party asks for (request, seq); the first party to ask makes the batch
// for all three, the others pick up their part (parties asking for different things
// under one sequence number are refused). Thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "daemon/dealer_protocol.h"
#include "daemon/message_link.h"
#include "preproc/dealer.h"

namespace mpcache::daemon {

struct DealerSessionStats {
  std::array<std::uint64_t, 3> bytes_to_party{};
  std::uint64_t batches = 0;
  std::uint64_t bit_requests = 0;
  double dealer_seconds = 0;
};

// The dealer's limits (config/dealer.yaml, pool.*). chunk_items and max_request_items are
// told to every party in its Setup. Every request is checked against them (with
// overflow-checked sizes) before anything is made; a refusal names the request field and
// the pool.* setting.
struct DealerLimits {
  std::uint64_t chunk_items = 32768;             // elementwise items a party asks ahead for
  std::uint64_t max_request_items = 1ull << 22;  // largest elementwise / comparison request
  // Largest matrix a matrix mask or triple may hold, in elements: a mask's rows x cols, a
  // triple's A, B and C each (pool.max_matrix_elements).
  std::uint64_t max_matrix_elements = 1ull << 28;
  // Threads making one comparison-material batch (pool.threads; the batch is the same bytes
  // however many make it).
  int threads = 2;
};
// The limits of the arithmetic dealer (preproc::Dealer) for these, naming the settings.
preproc::BatchLimits ArithmeticLimits(const DealerLimits& limits);

class DealerSession {
 public:
  virtual ~DealerSession() = default;
  // Makes the session for the first Join (fresh OS seeds; the client's two mask batches,
  // prompt then outputs, are made first so they are batches 0 and 1 of their type).
  static Result<std::shared_ptr<DealerSession>> Create(const dealer_proto::Join& join,
                                                       const DealerLimits& limits = {});
  const DealerLimits& limits() const { return limits_; }

  const dealer_proto::Join& join() const { return join_; }
  // The Setup message of `party` (once per party).
  virtual Result<dealer_proto::Setup> SetupFor(int party) = 0;
  virtual Result<preproc::Batch> Fetch(int party, const preproc::BatchRequest& req,
                                       std::uint64_t seq) = 0;
  // A Bits message: `party`'s next n items of `item`, the corrections to `corrector` (the
  // three parties must name the same n and corrector for the same request).
  virtual Result<std::vector<std::uint8_t>> Bits(int party, preproc::BitItem item, std::uint64_t n,
                                                 std::int32_t corrector) = 0;
  virtual DealerSessionStats stats() const = 0;

 protected:
  explicit DealerSession(const dealer_proto::Join& join) : join_(join) {}
  dealer_proto::Join join_;
  DealerLimits limits_;
};

// What the dealer answered: the request message and the answer's size (for metrics).
using AnswerObserver =
    std::function<void(const std::vector<std::uint8_t>& request, std::size_t answer_bytes)>;

// Answers one request message of `party` (BatchRequest -> Batch, BitRequest -> Bits).
Result<std::vector<std::uint8_t>> Answer(DealerSession& session, int party,
                                         const std::vector<std::uint8_t>& request);

// After the Setup: answers the party's requests in order until it closes the link (the
// session's end: Ok) or sends nothing for `idle`. The party sends its requests ahead of
// need, so this loop never waits for the party between answers it already asked for.
Status ServeRequests(MessageLink& link, DealerSession& session, int party,
                     std::chrono::milliseconds idle, const AnswerObserver& observe);

// SHA-256 of a seed (what the client checks its reconstructed seed against).
std::array<std::uint8_t, 32> SeedHash(const Seed& seed);

}  // namespace mpcache::daemon
