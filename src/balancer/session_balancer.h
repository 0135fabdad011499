// The balancer of one session at one party (SPEC §7, issue 13): between decoding steps, at
// positions every party agrees on, the parties auction the corrector role of every unit of
// work (mpc/roles.h) with sealed bids (sealed_bids.h), award the units by second price under
// the load-spread rule (load_spread.h), settle the prices in the credit ledger (ledger.h) and
// fill the role table with the outcome. Every party computes the same outcome from the same
// revealed bids, so the three tables stay equal.
//
// When: after the prompt's last position (pos = prompt_len - 1: the prefill's demand prices
// the first auction), then after every `reauction_interval_steps` decoding positions. The
// table holds the static fill until the first auction.
//
// Bids: for unit U, this party's cost of receiving U's dealer corrections over the last
// interval = (correction bytes U asked for in the interval, the same at every party) x
// (this party's price of a correction byte, from its own measurements: PriceSource). A
// party without a measurement yet bids kPriorSecondsPerByte (1 GB/s): optimistic, so it is
// given work and measured. The kings stay those of the static fill (the auction assigns
// correctors only; see docs/balancer.md).
//
// Base loads: a party's corrections share its link and its CPU with the step's online
// traffic, which it carries whatever it wins. So each party's load starts at its time for
// the interval's online traffic: the share bytes opened in the interval (the same at every
// party: the table counts them), twice (sent to the peers and received from them), at the
// party's price of a byte as its revealed bids state it (sum of its bids / their correction
// bytes). A party whose link is slow then takes corrections only where they do not make it
// the last to finish (load_spread.h), and a fast party's corrections, hidden behind the
// online phase, cost it little. Computed by every party from the same counted reveals, so
// no new claim is revealed and a party cannot misstate its base apart from its bids.
//
// A party whose reveal does not count (it abstained, its reveal does not match its
// commitment or does not parse) is left out of every unit of that auction; if no reveal
// counts, the table keeps its fill. The exchange's own failures (a silent party past the
// timeout, parties told different things) fail AfterPosition: the session stops.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "balancer/ledger.h"
#include "balancer/sealed_bids.h"
#include "common/prg.h"
#include "common/result.h"
#include "mpc/roles.h"
#include "net/channel.h"

namespace mpcache::balancer {

inline constexpr double kPriorSecondsPerByte = 1e-9;
inline constexpr int kMaxUnitSlices = 256;

struct BalancerSettings {
  bool enabled = false;
  int reauction_interval_steps = 8;
  double max_spread = 0.15;
  // Each unit is auctioned as this many equal slices of its bytes (1: units go whole), and
  // the table deals a unit's requests out in proportion to the slices each party won
  // (mpc::Roles::split): loads can then come within max_spread even when a few units carry
  // most of the bytes and one party is many times dearer. Not a config key: every party
  // runs the same value (issue 13, docs/balancer.md).
  int unit_slices = 64;
  // Start each party's load at its time for the interval's online traffic (see above).
  // Not a config key; off only to measure the auction without it.
  bool count_online_traffic = true;
  // The static fill (balancer off, and until the first auction). Its king is kept by the
  // auctions.
  mpc::Roles static_roles{mpc::kNoKing, 2, {}};
};

// This party's price of the corrector role: seconds one more byte of dealer corrections
// costs its online phase (reading and expanding it). <= 0: not measured yet.
struct PartyPrices {
  double seconds_per_correction_byte = 0;
};
using PriceSource = std::function<PartyPrices()>;

// Turns a party's cumulative dealer-answer counters into its price per correction byte:
// per interval, (time of corrected answers - their number x the mean time of a header
// answer) / their bytes, i.e. what receiving the corrections added over receiving a header
// (the dealer's own time is in both); averaged over intervals (weight 1/2 to the newest).
class CorrectionMeter {
 public:
  struct Counters {
    std::uint64_t corrected_answers = 0, header_answers = 0, corrected_bytes = 0;
    double corrected_seconds = 0, header_seconds = 0;
  };
  // Folds in the counters now (cumulative); returns the price (0 until a corrected answer).
  double Update(const Counters& now);
  // A new session whose counters start from 0: the price so far is kept.
  void StartSession() { last_ = Counters{}; }
  double price() const { return price_; }

 private:
  Counters last_;
  double price_ = 0;
};

struct AuctionReport {
  std::uint64_t auction = 0;
  int position = 0;
  std::size_t units = 0;
  std::vector<std::string> excluded;  // why a party's bids did not count
  std::vector<std::uint64_t> wins;    // per party: unit slices won in this auction
  std::vector<std::int64_t> paid_us;  // per party: prices of those units
  std::vector<std::int64_t> load_us;  // per party: base + its own bids for them
  std::vector<std::int64_t> base_us;  // per party: its online traffic's time (base load)
  std::vector<std::uint64_t> bytes;   // per party: correction bytes (last interval) won
  std::uint64_t online_bytes = 0;     // share bytes opened in the last interval
  double spread = 0;                  // (max - min) / max of the loads
  double winners_spread = 0;          // the same over the parties that won slices
  bool applied = false;               // the table was filled with the outcome
};

// A party's base load (us) from its counted reveal: 2 x `online_bytes` at the price per
// byte its bids state (the sum of its bids for units with correction bytes in `demand`
// over those bytes; bids out of range left out). 0 when it bid for no such unit; at most
// kMaxBidMicros.
std::int64_t BaseLoadUs(const BidList& bids, const std::map<mpc::WorkUnit, mpc::UnitDemand>& demand,
                        std::uint64_t online_bytes);

// At the start of a session (1 round, 17 B to each peer): the three parties' settings must
// be equal, or their role tables would differ. kInvalidArgument names the first field that
// differs (as the config file spells it: balancer.enabled, ...), the peer, both values,
// `my_file` and the fix.
Status AgreeOnSettings(net::Channel& channel, const BalancerSettings& mine,
                       const std::string& my_file);

class SessionBalancer {
 public:
  static Result<std::unique_ptr<SessionBalancer>> Create(net::Channel& channel,
                                                         mpc::RoleTable& roles,
                                                         BalancerSettings settings,
                                                         PriceSource prices,
                                                         const Seed& local_seed);

  // At every party after each position with the same (pos, prompt_len): the auction when
  // one is due (its report), nothing otherwise.
  Result<std::optional<AuctionReport>> AfterPosition(int pos, int prompt_len);

  const CreditLedger& ledger() const { return ledger_; }
  std::uint64_t auctions() const { return auctions_; }
  const std::vector<AuctionReport>& reports() const { return reports_; }

  // Test-only deviations of this party's bidding (a liar, a party that abstains).
  struct Deviation {
    bool abstain = false;  // commit to and reveal no bids
    SealedBidsDeviation sealed;
  };
  void set_deviation_for_testing(const Deviation* d) { deviation_ = d; }

 private:
  SessionBalancer(net::Channel& channel, mpc::RoleTable& roles, BalancerSettings settings,
                  PriceSource prices, const Seed& local_seed, CreditLedger ledger)
      : channel_(channel),
        roles_(roles),
        settings_(std::move(settings)),
        prices_(std::move(prices)),
        prg_(local_seed),
        ledger_(std::move(ledger)) {}
  Result<AuctionReport> RunAuction(int pos);

  net::Channel& channel_;
  mpc::RoleTable& roles_;
  BalancerSettings settings_;
  PriceSource prices_;
  Prg prg_;
  CreditLedger ledger_;
  std::uint64_t auctions_ = 0;
  std::vector<AuctionReport> reports_;
  const Deviation* deviation_ = nullptr;
};

}  // namespace mpcache::balancer
