// A party's preprocessing for one request, fed by the dealer daemon over TLS: the
// arithmetic pool is a preproc::PartyStore (seed-compressed batches, expanded locally;
// the client's mask batches arrive with the Setup, ahead of need) whose refill asks the
// dealer for exactly the batch it misses; the comparison material comes from the dealer
// in the party's own format (RemoteBits). The dealer connection is the request's own:
// closing it ends the dealer's session state.
#pragma once

#include <chrono>
#include <memory>

#include "daemon/dealer_protocol.h"
#include "daemon/sync_link.h"
#include "preproc/party_store.h"

namespace mpcache::daemon {

struct DealerTraffic {
  std::uint64_t requests = 0;
  std::uint64_t bytes_received = 0;
  double wait_seconds = 0;  // time the party waited for the dealer's answers
};

template <typename P>
class RemotePreprocessing {
 public:
  // Sends Join, reads Setup, accepts the client mask batches. With a plan (join.plan, the
  // requests of an earlier request of the same shape) the dealer streams the answers ahead
  // of need and Ask only checks each request against the plan.
  static Result<std::unique_ptr<RemotePreprocessing>> Open(std::unique_ptr<SyncLink> link,
                                                           const dealer_proto::Join& join,
                                                           std::chrono::milliseconds timeout);

  preproc::PartyStore<P>& store() { return *store_; }
  mpc::BitPreprocessing<P>& bits() { return *bits_; }
  const dealer_proto::Setup& setup() const { return setup_; }
  const DealerTraffic& traffic() const { return traffic_; }
  // Every request sent (or taken from the plan) so far: the plan of the next request of
  // this shape.
  const std::vector<std::vector<std::uint8_t>>& recorded() const { return recorded_; }
  std::size_t planned() const { return plan_.size(); }
  SyncLink& link() { return *link_; }

  // One request/answer exchange with the dealer.
  Result<std::vector<std::uint8_t>> Ask(std::vector<std::uint8_t> request);

 private:
  class Bits;
  RemotePreprocessing() = default;
  std::unique_ptr<SyncLink> link_;
  std::chrono::milliseconds timeout_{30000};
  dealer_proto::Setup setup_;
  std::unique_ptr<preproc::PartyStore<P>> store_;
  std::unique_ptr<mpc::BitPreprocessing<P>> bits_;
  DealerTraffic traffic_;
  std::vector<std::vector<std::uint8_t>> plan_, recorded_;
  std::size_t next_planned_ = 0;
};

}  // namespace mpcache::daemon
