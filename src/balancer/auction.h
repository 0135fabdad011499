// A sealed-bid second-price (Vickrey) procurement auction for one unit of asymmetric work
// (SPEC §7: the king of an opening batch, the party that receives the dealer's corrections).
// Each party bids what the unit would cost it, in microseconds of its own time from its own
// measurements; the lowest bid wins and is paid the second-lowest, so bidding one's true
// cost is a dominant strategy (a lower bid can only win units that cost more than they
// pay, a higher one only lose units that paid more than they cost). Pure and exact
// (integers): every party computes the same outcome from the same revealed bids.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"

namespace mpcache::balancer {

using PartyId = int;

// The largest bid counted: 10^12 us (11.6 days); above it a bid is excluded.
inline constexpr std::int64_t kMaxBidMicros = 1'000'000'000'000;

struct Bid {
  PartyId party = 0;
  std::int64_t cost_us = 0;  // what the unit would cost this party, microseconds
};

struct Outcome {
  PartyId winner = -1;
  std::int64_t winning_bid_us = 0;
  // Paid to the winner: the lowest other valid bid, or its own bid when it bid alone.
  std::int64_t price_us = 0;
  std::vector<PartyId> excluded;  // parties whose bids did not count, ascending
};

// The place of `party` among equal bids for the unit `tie_key`: (party - tie_key) mod n.
// The preference rotates with the unit, so ties do not always go to the same party, and
// every party computes the same order.
int TieRank(PartyId party, std::uint64_t tie_key, int num_parties);

// The auction over `bids` (any order: the outcome depends only on the set). Excluded, and
// listed in Outcome::excluded: a bid of a party outside [0, num_parties), every bid of a
// party that bid twice, a cost outside [0, kMaxBidMicros]. kInvalidArgument when
// num_parties < 1 or no bid counts (the caller keeps its static assignment).
Result<Outcome> SecondPrice(std::span<const Bid> bids, int num_parties, std::uint64_t tie_key);

}  // namespace mpcache::balancer
