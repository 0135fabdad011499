// A party's preprocessing for one request, fed by the dealer daemon: the arithmetic pool
// is a preproc::PartyStore (seed-compressed batches, expanded locally; the client's mask
// batches arrive with the Setup), the comparison material sits in per-item reserves.
//
// Prefetching, so the online phase does not wait on the dealer: requests go out before
// they are needed and the dealer answers them in order; an answer is read (and accepted
// into the store or a reserve) only when its queue runs short. Queues, each with at most
// one request in flight ahead of need:
//   elementwise arithmetic items (triples, squares, truncation pairs per precision, bits,
//     randoms) and comparison material per item: when fewer than `ahead` items are left,
//     `ahead` more, where ahead = max(a chunk, twice the largest call so far) (calls grow
//     with the context, so the next call is covered by what is left plus what arrives),
//     capped at the largest request the dealer serves (bigger needs are split);
//   small matrix masks (KV-cache rows), per shape: the next mask of the shape;
//   matrix triples, per (mask, side, other): the next triple as soon as one is taken, and
//     a prefetched mask's first triple with the (side, other) the previous mask of its
//     shape was used with;
//   attention triples: none guessed; a step announces its plan (mpc::Preprocessing::
//     Announce, from the KV memory's public shapes) and every triple of it is asked for at
//     once, before the step's first layer runs.
// All of it depends only on the sequence of Get* calls, which is data-independent and the
// same at the three parties, so their requests (and the dealer's batches) stay aligned.
// In flight at most kMaxInFlight requests (the bound on the party's pool: backpressure is
// the party not asking). What is prefetched and never used (one chunk per queue, one
// triple per mask) is dropped with the session; nothing is ever handed out twice.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "daemon/dealer_protocol.h"
#include "daemon/message_link.h"
#include "daemon/shape_limits.h"
#include "model/mpcache_policy.h"
#include "model/weights.h"
#include "preproc/party_store.h"

namespace mpcache::daemon {

struct DealerTraffic {
  std::uint64_t requests = 0;        // requests sent
  std::uint64_t prefetched = 0;      // of which sent ahead of need
  std::uint64_t waited = 0;          // requests the online phase had to wait for
  std::uint64_t bytes_received = 0;  // answer bytes
  double wait_seconds = 0;           // time spent reading answers
  // Answers by role (mpc/roles.h): as the request's corrector (with corrections) or not
  // (a header), and the time each kind cost the online phase (reading it, then expanding
  // it into the pool): what the balancer prices the corrector's role with.
  std::uint64_t corrected_answers = 0, header_answers = 0;
  std::uint64_t corrected_bytes = 0;  // answer bytes of the corrected answers
  double corrected_seconds = 0, header_seconds = 0;
};

template <typename P>
class RemotePreprocessing {
 public:
  // Sends Join, reads Setup, accepts the client mask batches (which must be the two the
  // Join sized). Matrix items are bounded by `shapes` (the party's model).
  static Result<std::unique_ptr<RemotePreprocessing>> Open(std::unique_ptr<MessageLink> link,
                                                           const dealer_proto::Join& join,
                                                           std::chrono::milliseconds timeout,
                                                           const MatrixShapeLimits& shapes = {});
  ~RemotePreprocessing();

  preproc::PartyStore<P>& store() { return *store_; }
  mpc::BitPreprocessing<P>& bits();
  const dealer_proto::Setup& setup() const { return setup_; }
  const DealerTraffic& traffic() const { return traffic_; }
  std::size_t in_flight() const { return in_flight_.size(); }

  static constexpr std::size_t kMaxInFlight = 512;
  static constexpr std::size_t kMaxPrefetchElements = std::size_t{1} << 16;  // per matrix item

 private:
  class Bits;
  // A queue: (domain, type or item, three parameters).
  using QueueKey = std::array<std::uint64_t, 5>;
  struct InFlight {
    QueueKey key{};
    bool bits = false;
    preproc::BitItem item = preproc::BitItem::kBitTriple;
    std::uint64_t n = 0;            // comparison items asked for
    preproc::BatchRequest request;  // arithmetic: what was asked for, under
    std::uint64_t seq = 0;          // this sequence number
    std::int32_t corrector = 0;     // who receives the corrections (both domains)
  };
  RemotePreprocessing() = default;

  static QueueKey KeyOf(const preproc::BatchRequest& r);
  // Refuses a matrix request beyond shapes_ (before it is sent).
  Status CheckShape(const preproc::BatchRequest& r) const;
  // Refuses an answer that is not the batch `f` asked for (its header does not carry the
  // corrector: b gets f's).
  Status CheckAnswer(const InFlight& f, preproc::Batch& b) const;
  // Sends r with the corrector the role table names now (PartyStore::CorrectorFor).
  Status Issue(preproc::BatchRequest r, bool ahead);
  Status IssueBits(preproc::BitItem item, std::uint64_t n, bool ahead);
  // Reads the next answer and files it (store or reserve).
  Status ReadOne();
  // Reads answers until no request of `key` is in flight.
  Status Drain(const QueueKey& key);
  std::size_t Pending(const QueueKey& key) const;
  // Items to ask for ahead in `key`'s queue after a call for n: a chunk, or twice the
  // largest call seen so far (calls grow with the context), whichever is more.
  std::uint64_t Ahead(const QueueKey& key, std::uint64_t n, std::uint64_t chunk);
  // The store's refill: make `need` available (waits for the dealer).
  Status Refill(const preproc::BatchRequest& need);
  // The store's take hook: ask ahead for the queue the take drained.
  Status OnTake(const preproc::BatchRequest& taken);
  // The store's announce hook: ask for a step's attention triples (its plan) at once.
  Status OnAnnounce(const std::vector<mpc::AttentionShape>& plan);
  Status PrefetchMask(std::size_t rows, std::size_t cols);
  Status PrefetchTriple(std::uint64_t mask_id, mpc::MaskSide side, std::uint64_t other);

  std::unique_ptr<MessageLink> link_;
  std::chrono::milliseconds timeout_{30000};
  MatrixShapeLimits shapes_;
  dealer_proto::Setup setup_;
  std::unique_ptr<preproc::PartyStore<P>> store_;
  std::unique_ptr<Bits> bits_;
  std::shared_ptr<mpc::RoleTable> roles_;  // the binary domain's (Bits::UseRoles)
  DealerTraffic traffic_;
  std::deque<InFlight> in_flight_;
  std::map<QueueKey, std::size_t> pending_;
  std::map<QueueKey, std::uint64_t> largest_;  // largest call per queue
  // From the dealer's Setup: elementwise chunk; largest request it serves (items).
  std::uint64_t chunk_ = 32768, max_request_ = std::uint64_t{1} << 22;
  // The least an elementwise request asks for: the dealer's chunk, but at most kParamChunk
  // for items that come in one pool per parameter (truncation pairs per f, fused items per
  // shape: a step uses a dozen of each, a few hundred to a few thousand items of most), so
  // that the first position does not fetch 2 x 65536 of every one of them (hundreds of MB
  // to the correcting party); above that a request follows the demand (2 x the largest).
  static constexpr std::uint64_t kParamChunk = 8192;
  std::uint64_t ChunkFor(preproc::ItemType t) const {
    return t == preproc::ItemType::kTrunc || t == preproc::ItemType::kFused
               ? std::min(chunk_, kParamChunk)
               : chunk_;
  }
  // Matrix masks this party asked for: id -> shape; per shape, the (side, other) of the
  // last triple asked for a mask of that shape.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> mask_shape_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<mpc::MaskSide, std::uint64_t>>
      use_of_shape_;
};

}  // namespace mpcache::daemon
