// Units of work awarded one by one, by second-price auction, while keeping the parties'
// loads together (issue 13: per-party load within 15%). A party's load is the sum of its
// own bids for the units it won (its expected busy time). A unit is auctioned among the
// parties whose load after taking it stays within (1 + max_spread) of the least loaded
// bidder's load, or is the best finish any party offers, min_q (load_q + bid_q): the
// cheapest bidder wins while it is not running ahead of the others, and a slow party is
// left the units it can finish in step. The party with the best finish is always eligible,
// so every unit with a valid bid is awarded; once units are small against the loads, the
// loads end within max_spread of each other (plus one unit of the party that took it).
//
// A party's load may start at a base: work it does whatever it wins (in the session
// balancer, its time on the step's online traffic, priced as it prices a correction byte).
// The rule is then water-filling: a party whose base alone is above where the others' loads
// end wins nothing, and the rest end within max_spread of each other.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "balancer/auction.h"
#include "common/result.h"

namespace mpcache::balancer {

struct LoadSpreadOptions {
  double max_spread = 0.15;  // 0 <= max_spread <= 10
};

class LoadSpreadAuction {
 public:
  static Result<LoadSpreadAuction> Create(int num_parties, LoadSpreadOptions options = {});
  // With a base load per party (us, each >= 0; one per party).
  static Result<LoadSpreadAuction> Create(int num_parties, LoadSpreadOptions options,
                                          std::span<const std::int64_t> base_us);

  // Awards the unit `unit_id` (also the tie key) on `bids` (as SecondPrice takes them);
  // the winner's load grows by its bid. Excluded bids are those SecondPrice excludes plus
  // the parties not eligible by load (they are not listed as excluded). Errors as
  // SecondPrice's; nothing changes on an error.
  Result<Outcome> Award(std::span<const Bid> bids, std::uint64_t unit_id);

  int num_parties() const { return static_cast<int>(load_.size()); }
  // The party's load: its base plus its bids for the units it won.
  std::int64_t load_us(PartyId p) const { return load_[static_cast<std::size_t>(p)]; }
  std::int64_t base_us(PartyId p) const { return base_[static_cast<std::size_t>(p)]; }
  // (max - min) / max of the loads; 0 while every load is 0.
  double spread() const;
  // The same over the parties that won a unit (all of them while none has): how close the
  // auction brought the loads it could move.
  double winners_spread() const;

 private:
  LoadSpreadAuction(int n, LoadSpreadOptions o)
      : options_(o),
        load_(static_cast<std::size_t>(n)),
        base_(static_cast<std::size_t>(n)),
        won_(static_cast<std::size_t>(n)) {}
  LoadSpreadOptions options_;
  std::vector<std::int64_t> load_;
  std::vector<std::int64_t> base_;
  std::vector<bool> won_;
};

}  // namespace mpcache::balancer
