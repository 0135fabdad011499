#include "balancer/auction.h"

#include <algorithm>
#include <string>

namespace mpcache::balancer {

int TieRank(PartyId party, std::uint64_t tie_key, int num_parties) {
  const auto n = static_cast<std::uint64_t>(num_parties);
  const std::uint64_t shift = tie_key % n;
  return static_cast<int>((static_cast<std::uint64_t>(party) + n - shift) % n);
}

Result<Outcome> SecondPrice(std::span<const Bid> bids, int num_parties, std::uint64_t tie_key) {
  if (num_parties < 1) {
    return InvalidArgument("auction: num_parties must be at least 1, got " +
                           std::to_string(num_parties));
  }
  Outcome out;
  std::vector<int> count(static_cast<std::size_t>(num_parties), 0);
  for (const Bid& b : bids) {
    if (b.party >= 0 && b.party < num_parties) ++count[static_cast<std::size_t>(b.party)];
  }
  std::vector<Bid> valid;
  for (const Bid& b : bids) {
    const bool known = b.party >= 0 && b.party < num_parties;
    if (!known || count[static_cast<std::size_t>(b.party)] != 1 || b.cost_us < 0 ||
        b.cost_us > kMaxBidMicros) {
      out.excluded.push_back(b.party);
      continue;
    }
    valid.push_back(b);
  }
  std::sort(out.excluded.begin(), out.excluded.end());
  out.excluded.erase(std::unique(out.excluded.begin(), out.excluded.end()), out.excluded.end());
  if (valid.empty()) {
    return InvalidArgument("auction: no valid bid among " + std::to_string(bids.size()) +
                           " (each party bids once, 0 <= cost <= " + std::to_string(kMaxBidMicros) +
                           " us)");
  }
  // Lowest cost first; equal costs in the unit's rotating party order.
  std::sort(valid.begin(), valid.end(), [&](const Bid& a, const Bid& b) {
    if (a.cost_us != b.cost_us) return a.cost_us < b.cost_us;
    return TieRank(a.party, tie_key, num_parties) < TieRank(b.party, tie_key, num_parties);
  });
  out.winner = valid[0].party;
  out.winning_bid_us = valid[0].cost_us;
  out.price_us = valid.size() > 1 ? valid[1].cost_us : valid[0].cost_us;
  return out;
}

}  // namespace mpcache::balancer
