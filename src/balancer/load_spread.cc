#include "balancer/load_spread.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace mpcache::balancer {

Result<LoadSpreadAuction> LoadSpreadAuction::Create(int num_parties, LoadSpreadOptions options) {
  if (num_parties < 1) {
    return InvalidArgument("load-spread auction: num_parties must be at least 1, got " +
                           std::to_string(num_parties));
  }
  if (!(options.max_spread >= 0 && options.max_spread <= 10)) {
    return InvalidArgument("load-spread auction: max_spread must be between 0 and 10, got " +
                           std::to_string(options.max_spread));
  }
  return LoadSpreadAuction(num_parties, options);
}

Result<LoadSpreadAuction> LoadSpreadAuction::Create(int num_parties, LoadSpreadOptions options,
                                                    std::span<const std::int64_t> base_us) {
  MPCACHE_ASSIGN_OR_RETURN(LoadSpreadAuction a, Create(num_parties, options));
  if (base_us.size() != static_cast<std::size_t>(num_parties)) {
    return InvalidArgument("load-spread auction: " + std::to_string(base_us.size()) +
                           " base loads for " + std::to_string(num_parties) +
                           " parties (one per party)");
  }
  for (std::size_t p = 0; p < base_us.size(); ++p) {
    if (base_us[p] < 0) {
      return InvalidArgument("load-spread auction: party " + std::to_string(p) +
                             "'s base load is negative (" + std::to_string(base_us[p]) + " us)");
    }
    a.base_[p] = base_us[p];
    a.load_[p] = base_us[p];
  }
  return a;
}

Result<Outcome> LoadSpreadAuction::Award(std::span<const Bid> bids, std::uint64_t unit_id) {
  // The valid bids first (SecondPrice's rules), then those eligible by load among them.
  MPCACHE_ASSIGN_OR_RETURN(Outcome all, SecondPrice(bids, num_parties(), unit_id));
  auto finish = [&](const Bid& b) {
    return static_cast<double>(load_[static_cast<std::size_t>(b.party)]) +
           static_cast<double>(b.cost_us);
  };
  auto counted = [&](const Bid& b) {
    return !std::binary_search(all.excluded.begin(), all.excluded.end(), b.party);
  };
  double best = std::numeric_limits<double>::infinity();
  double least = std::numeric_limits<double>::infinity();  // the lowest load of a bidder
  for (const Bid& b : bids) {
    if (!counted(b)) continue;
    best = std::min(best, finish(b));
    least = std::min(least, static_cast<double>(load_[static_cast<std::size_t>(b.party)]));
  }
  // A bidder may finish up to max_spread past the least loaded bidder's load, and the best
  // finish is always allowed. (Measured from the best finish instead, a cheap party could
  // run ahead of a slow one by the slow party's whole cost of the unit.)
  const double limit = std::max(best, least * (1 + options_.max_spread));
  std::vector<Bid> eligible;
  for (const Bid& b : bids) {
    if (counted(b) && finish(b) <= limit) eligible.push_back(b);
  }
  MPCACHE_ASSIGN_OR_RETURN(Outcome out, SecondPrice(eligible, num_parties(), unit_id));
  out.excluded = all.excluded;
  std::int64_t& load = load_[static_cast<std::size_t>(out.winner)];
  std::int64_t next = 0;
  if (__builtin_add_overflow(load, out.winning_bid_us, &next)) {
    return Exhausted("load-spread auction: a load would overflow (start a new one)");
  }
  load = next;
  won_[static_cast<std::size_t>(out.winner)] = true;
  return out;
}

namespace {

double Spread(std::int64_t lo, std::int64_t hi) {
  if (hi == 0) return 0;
  return static_cast<double>(hi - lo) / static_cast<double>(hi);
}

}  // namespace

double LoadSpreadAuction::spread() const {
  const auto [lo, hi] = std::minmax_element(load_.begin(), load_.end());
  return Spread(*lo, *hi);
}

double LoadSpreadAuction::winners_spread() const {
  const bool any = std::find(won_.begin(), won_.end(), true) != won_.end();
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = 0;
  for (std::size_t p = 0; p < load_.size(); ++p) {
    if (any && !won_[p]) continue;
    lo = std::min(lo, load_[p]);
    hi = std::max(hi, load_[p]);
  }
  return Spread(lo, hi);
}

}  // namespace mpcache::balancer
