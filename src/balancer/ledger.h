// The per-party credit ledger of the auctions of one deployment: every unit's price is
// credited to its winner and debited to the requests' account (the work is the client's),
// so the ledger always sums to zero and no party pays another. That keeps the mechanism
// truthful: were the losers to fund the price, the second-lowest bidder (who sets it)
// could lower what it pays by shading its bid. Integers (microseconds), overflow-checked.
#pragma once

#include <cstdint>
#include <vector>

#include "balancer/auction.h"
#include "common/result.h"

namespace mpcache::balancer {

struct PartyAccount {
  std::uint64_t wins = 0;
  std::int64_t received_us = 0;  // the prices of the units it won
  std::int64_t bid_us = 0;       // its own bids for those units (what it said they cost)
  // What the auctions paid it beyond what it said the work costs (>= 0).
  std::int64_t surplus_us() const { return received_us - bid_us; }
};

class CreditLedger {
 public:
  static Result<CreditLedger> Create(int num_parties);

  // Records one outcome of SecondPrice. kInvalidArgument for a winner outside the parties
  // or a price below the winning bid (not an outcome of SecondPrice); kExhausted on
  // overflow. Nothing changes on an error.
  Status Settle(const Outcome& outcome);

  int num_parties() const { return static_cast<int>(accounts_.size()); }
  const PartyAccount& account(PartyId p) const { return accounts_[static_cast<std::size_t>(p)]; }
  // Credits paid out by the requests' account: minus the sum of every party's received_us.
  std::int64_t requests_balance_us() const { return requests_us_; }

 private:
  explicit CreditLedger(int n) : accounts_(static_cast<std::size_t>(n)) {}
  std::vector<PartyAccount> accounts_;
  std::int64_t requests_us_ = 0;
};

}  // namespace mpcache::balancer
