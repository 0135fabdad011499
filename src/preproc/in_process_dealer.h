// InProcessDealer<P>: the dealer and the three parties' PartyStores in one process (tests,
// benchmarks, the in-process engine). Two ways to feed the parties, freely mixed:
//   Provide(req): offline, before the online phase: make one batch and hand every party
//                 its part (single-threaded caller).
//   on demand:    a party whose pool runs short asks for (request, seq); the first party to
//                 ask makes the batch for everyone, the others pick up their part. Parties
//                 asking for different things under the same sequence number get kProtocol.
// Traffic (bytes of each party's batches, as on the wire) and time are counted as offline.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "preproc/dealer.h"
#include "preproc/party_store.h"

namespace mpcache::preproc {

// The client's clear mask values of one client batch.
Result<std::vector<std::uint64_t>> ExpandClientMasks(const Seed& client_seed, const Batch& batch);

// Sees every arithmetic batch a party takes, in that party's order (Provide: every party's
// part), before the party expands it: tests that pin the dealer's traffic
// (tests/unit/balancer/transcript_test.cc). Called under the dealer's lock.
using BatchObserver = std::function<void(PartyId party, const Batch& batch)>;

struct OfflineStats {
  std::vector<std::uint64_t> bytes_to_party;  // index = party id
  std::uint64_t bytes_to_client = 0;
  std::uint64_t batches = 0;
  double dealer_seconds = 0;  // generating batches
  double expand_seconds = 0;  // parties expanding them (sum over parties)
};

template <typename P>
class InProcessDealer {
 public:
  // `limits` bound every batch: the dealer refuses bigger requests, the stores bigger batches.
  static Result<std::unique_ptr<InProcessDealer>> Create(const Seed& master, int num_parties = 3,
                                                         bool on_demand = true,
                                                         const BatchLimits& limits = {});

  PartyStore<P>& store(PartyId p) { return *stores_[static_cast<std::size_t>(p)]; }
  Dealer& dealer() { return *dealer_; }
  int num_parties() const { return static_cast<int>(stores_.size()); }

  Status Provide(const BatchRequest& req);
  void set_observer(BatchObserver observer) { observer_ = std::move(observer); }
  // The client's clear values for the next client-owned input/output mask batch.
  Result<std::vector<std::uint64_t>> NextClientMasks();
  OfflineStats stats() const;

 private:
  InProcessDealer() = default;
  Result<Batch> Fetch(PartyId p, const BatchRequest& req, std::uint64_t seq);
  Status Record(Dealer::Output& out, double seconds);  // under mu_

  struct Pending {
    BatchRequest request;
    std::vector<std::optional<Batch>> parts;
    int left = 0;
  };
  mutable std::mutex mu_;
  std::unique_ptr<Dealer> dealer_;
  std::vector<std::unique_ptr<PartyStore<P>>> stores_;
  std::map<std::pair<ItemType, std::uint64_t>, Pending> pending_;
  std::deque<Batch> client_batches_;
  OfflineStats stats_;
  BatchObserver observer_;
};

}  // namespace mpcache::preproc
