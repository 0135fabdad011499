// Sealed bids between the parties over the mesh (SPEC §7): every party commits to its bids
// before any party sees another's, then reveals them; a reveal that does not match its
// commitment, or does not parse, is excluded (and said so in the result, which the caller
// logs). Three rounds, and every party sends in every round whatever it bids (an empty bid
// list abstains), so the mesh's byte streams stay aligned for the protocol after it:
//   1 commit  32 B to each peer: SHA-256(bids || nonce), nonce 32 fresh private bytes
//   2 reveal  to each peer: u32 length, the bids (EncodeBids), the 32-byte nonce
//   3 agree   32 B to each peer: SHA-256 of every party's commitment and reveal as this
//             party received them (its own included)
// After round 3 every party checks that both peers hold what it holds. They all do when
// every party told both peers the same (an honest party always does); then every party
// excludes the same reveals and computes the same auction from the same bids. A party that
// told its peers different things is caught there: the exchange fails at every party that
// saw a difference (kProtocol), and the session stops rather than run on with tables that
// differ (the dealer would refuse the parties' differing requests anyway).
//
// A party that sends nothing waits the others out to the channel's receive timeout (the
// mesh's; the daemon sets balancer.bid_timeout_ms for the exchange), which then fails the
// exchange naming it. A reveal longer than kMaxRevealBytes fails it at once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/prg.h"
#include "common/result.h"
#include "mpc/roles.h"
#include "net/channel.h"

namespace mpcache::balancer {

// One party's bid for a unit of work: what taking it would cost this party.
struct UnitBid {
  mpc::WorkUnit unit;
  std::int64_t cost_us = 0;
  bool operator==(const UnitBid&) const = default;
};

struct BidList {
  std::uint64_t auction = 0;  // the auction's number (every party the same)
  std::vector<UnitBid> bids;
  bool operator==(const BidList&) const = default;
};

inline constexpr std::size_t kMaxBidUnits = 4096;
inline constexpr std::size_t kMaxPhaseBytes = 64;
inline constexpr std::uint32_t kMaxRevealBytes = 1u << 20;

// Bytes: u64 auction, u32 count, per bid: i32 layer, u16 phase length, phase, i64 cost_us.
// Decode refuses trailing bytes, more than kMaxBidUnits bids, longer phase names, and a
// unit listed twice (one encoding per list).
std::vector<std::uint8_t> EncodeBids(const BidList& list);
Result<BidList> DecodeBids(std::span<const std::uint8_t> bytes);

using Digest = std::array<std::uint8_t, 32>;

struct SealedBidsResult {
  std::vector<BidList> bids;         // index = party; excluded parties' are empty
  std::vector<bool> valid;           // per party: its reveal counted
  std::vector<std::string> why_not;  // per party: why its reveal did not count ("" if it did)
};

// Test-only deviations of this party (a party that lies in its reveal, commits to nothing).
struct SealedBidsDeviation {
  bool reveal_other_bids = false;  // reveal `other` instead of what it committed to
  BidList other;
  bool garbage_reveal = false;  // a reveal that does not parse (its commitment matches it)
  int equivocate_to = -1;       // send this peer another commitment than the other peer
};

// Runs the exchange of `mine` (its auction number must be `auction`) at this party.
// `nonce_seed` is fresh private randomness (OsSeed() in production). Errors: the channel's
// (a peer silent past the timeout, a peer gone), a reveal announced longer than
// kMaxRevealBytes, and peers holding different commitments or reveals (kProtocol, naming
// the peer whose digest differs).
Result<SealedBidsResult> ExchangeSealedBids(net::Channel& channel, std::uint64_t auction,
                                            const BidList& mine, const Seed& nonce_seed,
                                            const SealedBidsDeviation* deviation = nullptr);

}  // namespace mpcache::balancer
