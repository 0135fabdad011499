#include "balancer/session_balancer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "balancer/load_spread.h"

namespace mpcache::balancer {

double CorrectionMeter::Update(const Counters& now) {
  Counters d;
  d.corrected_answers = now.corrected_answers - last_.corrected_answers;
  d.header_answers = now.header_answers - last_.header_answers;
  d.corrected_bytes = now.corrected_bytes - last_.corrected_bytes;
  d.corrected_seconds = now.corrected_seconds - last_.corrected_seconds;
  d.header_seconds = now.header_seconds - last_.header_seconds;
  last_ = now;
  if (d.corrected_answers == 0 || d.corrected_bytes == 0) return price_;
  const double header_mean =
      d.header_answers > 0 ? d.header_seconds / static_cast<double>(d.header_answers) : 0.0;
  const double extra =
      std::max(0.0, d.corrected_seconds - static_cast<double>(d.corrected_answers) * header_mean);
  // At least the cost of moving the bytes at 100 GB/s: a price is never 0.
  const double interval = std::max(extra / static_cast<double>(d.corrected_bytes), 1e-11);
  price_ = price_ > 0 ? 0.5 * price_ + 0.5 * interval : interval;
  return price_;
}

namespace {

struct SettingsWire {
  std::uint8_t enabled;
  std::uint32_t interval;
  std::uint32_t spread_millionths;
  std::int32_t corrector;
  std::int32_t king;
};

std::array<std::uint8_t, 17> Encode(const SettingsWire& w) {
  std::array<std::uint8_t, 17> out{};
  out[0] = w.enabled;
  std::memcpy(out.data() + 1, &w.interval, 4);
  std::memcpy(out.data() + 5, &w.spread_millionths, 4);
  std::memcpy(out.data() + 9, &w.corrector, 4);
  std::memcpy(out.data() + 13, &w.king, 4);
  return out;
}

SettingsWire Decode(const std::array<std::uint8_t, 17>& in) {
  SettingsWire w{};
  w.enabled = in[0];
  std::memcpy(&w.interval, in.data() + 1, 4);
  std::memcpy(&w.spread_millionths, in.data() + 5, 4);
  std::memcpy(&w.corrector, in.data() + 9, 4);
  std::memcpy(&w.king, in.data() + 13, 4);
  return w;
}

std::string KingName(std::int32_t k) {
  return k == mpc::kSplitKing ? "split" : k < 0 ? "none" : std::to_string(k);
}

}  // namespace

std::int64_t BaseLoadUs(const BidList& bids, const std::map<mpc::WorkUnit, mpc::UnitDemand>& demand,
                        std::uint64_t online_bytes) {
  double bid_us = 0, bytes = 0;
  for (const UnitBid& b : bids.bids) {
    const auto it = demand.find(b.unit);
    if (it == demand.end() || it->second.correction_bytes == 0) continue;
    if (b.cost_us < 0 || b.cost_us > kMaxBidMicros) continue;  // SecondPrice excludes it
    bid_us += static_cast<double>(b.cost_us);
    bytes += static_cast<double>(it->second.correction_bytes);
  }
  if (!(bytes > 0)) return 0;
  const double us = 2.0 * static_cast<double>(online_bytes) * (bid_us / bytes);
  return static_cast<std::int64_t>(std::min(std::ceil(us), static_cast<double>(kMaxBidMicros)));
}

Status AgreeOnSettings(net::Channel& channel, const BalancerSettings& mine,
                       const std::string& my_file) {
  const SettingsWire w{static_cast<std::uint8_t>(mine.enabled ? 1 : 0),
                       static_cast<std::uint32_t>(mine.reauction_interval_steps),
                       static_cast<std::uint32_t>(std::llround(mine.max_spread * 1e6)),
                       mine.static_roles.corrector, mine.static_roles.king};
  MPCACHE_ASSIGN_OR_RETURN(const auto all, net::ExchangeWithPeers(channel, Encode(w)));
  for (int p = 0; p < channel.num_parties(); ++p) {
    if (p == channel.self()) continue;
    const SettingsWire t = Decode(all[static_cast<std::size_t>(p)]);
    // The fields in the config file's order: name, theirs, ours.
    const auto flag = [](std::uint8_t b) { return std::string(b != 0 ? "true" : "false"); };
    const std::array<std::array<std::string, 3>, 5> fields{{
        {"balancer.enabled", flag(t.enabled), flag(w.enabled)},
        {"balancer.reauction_interval_steps", std::to_string(t.interval),
         std::to_string(w.interval)},
        {"balancer.max_spread", std::to_string(t.spread_millionths / 1e6),
         std::to_string(w.spread_millionths / 1e6)},
        {"balancer.static_corrector", std::to_string(t.corrector), std::to_string(w.corrector)},
        {"balancer.static_king", KingName(t.king), KingName(w.king)},
    }};
    const auto differs =
        std::find_if(fields.begin(), fields.end(), [](const auto& f) { return f[1] != f[2]; });
    if (differs == fields.end()) continue;
    const std::string& field = (*differs)[0];
    const std::string& theirs = (*differs)[1];
    const std::string& ours = (*differs)[2];
    std::string why = "the parties' balancer settings differ: party ";
    why += std::to_string(p);
    why += " has " + field;
    why += ": " + theirs;
    why += ", party " + std::to_string(channel.self());
    why += " (" + my_file;
    why += ") " + ours;
    why +=
        "; fix: the same balancer section in the three parties' configs (the parties must hold "
        "the same role table)";
    return InvalidArgument(why);
  }
  return Status::Ok();
}

Result<std::unique_ptr<SessionBalancer>> SessionBalancer::Create(net::Channel& channel,
                                                                 mpc::RoleTable& roles,
                                                                 BalancerSettings settings,
                                                                 PriceSource prices,
                                                                 const Seed& local_seed) {
  if (settings.reauction_interval_steps < 1) {
    return InvalidArgument("balancer: reauction_interval_steps must be at least 1, got " +
                           std::to_string(settings.reauction_interval_steps));
  }
  if (!(settings.max_spread >= 0 && settings.max_spread <= 1)) {
    return InvalidArgument("balancer: max_spread must be between 0 and 1");
  }
  if (settings.unit_slices < 1 || settings.unit_slices > kMaxUnitSlices) {
    return InvalidArgument("balancer: unit_slices must be between 1 and " +
                           std::to_string(kMaxUnitSlices) + ", got " +
                           std::to_string(settings.unit_slices));
  }
  if (roles.num_parties() != channel.num_parties()) {
    return InvalidArgument("balancer: the role table is for another number of parties");
  }
  MPCACHE_ASSIGN_OR_RETURN(CreditLedger ledger, CreditLedger::Create(channel.num_parties()));
  MPCACHE_RETURN_IF_ERROR(roles.Fill(settings.static_roles));
  return std::unique_ptr<SessionBalancer>(new SessionBalancer(
      channel, roles, std::move(settings), std::move(prices), local_seed, std::move(ledger)));
}

Result<std::optional<AuctionReport>> SessionBalancer::AfterPosition(int pos, int prompt_len) {
  if (!settings_.enabled) return std::optional<AuctionReport>();
  const int first = prompt_len - 1;  // the prompt's last position: the first auction
  if (pos < first || (pos - first) % settings_.reauction_interval_steps != 0) {
    return std::optional<AuctionReport>();
  }
  MPCACHE_ASSIGN_OR_RETURN(AuctionReport report, RunAuction(pos));
  reports_.push_back(report);
  return std::optional<AuctionReport>(std::move(report));
}

Result<AuctionReport> SessionBalancer::RunAuction(int pos) {
  const int n = channel_.num_parties();
  const auto un = static_cast<std::size_t>(n);
  const std::uint64_t auction = auctions_++;
  // This party's bids: the interval's demand per unit at its own price.
  const std::map<mpc::WorkUnit, mpc::UnitDemand> demand = roles_.TakeDemand();
  double price = prices_ ? prices_().seconds_per_correction_byte : 0.0;
  if (!(price > 0) || !std::isfinite(price)) price = kPriorSecondsPerByte;
  BidList mine;
  mine.auction = auction;
  std::map<mpc::WorkUnit, std::uint64_t> bytes;
  for (const auto& [unit, d] : demand) {
    if (d.correction_bytes == 0 || unit.phase.size() > kMaxPhaseBytes) continue;
    if (mine.bids.size() == kMaxBidUnits) break;
    const double us = static_cast<double>(d.correction_bytes) * price * 1e6;
    const auto cost = static_cast<std::int64_t>(
        std::clamp(std::ceil(us), 1.0, static_cast<double>(kMaxBidMicros)));
    mine.bids.push_back({unit, cost});
    bytes[unit] = d.correction_bytes;
  }
  if (deviation_ != nullptr && deviation_->abstain) mine.bids.clear();
  Seed nonce_seed{};
  prg_.Fill(nonce_seed.data(), nonce_seed.size());
  MPCACHE_ASSIGN_OR_RETURN(
      SealedBidsResult sealed,
      ExchangeSealedBids(channel_, auction, mine, nonce_seed,
                         deviation_ != nullptr ? &deviation_->sealed : nullptr));

  AuctionReport report;
  report.auction = auction;
  report.position = pos;
  report.wins.assign(un, 0);
  report.paid_us.assign(un, 0);
  report.load_us.assign(un, 0);
  report.bytes.assign(un, 0);
  for (int p = 0; p < n; ++p) {
    const auto pi = static_cast<std::size_t>(p);
    if (!sealed.valid[pi]) report.excluded.push_back(sealed.why_not[pi]);
  }
  // Every unit any counted reveal bids for, each with the bids of the parties that listed it.
  std::map<mpc::WorkUnit, std::vector<Bid>> units;
  for (int p = 0; p < n; ++p) {
    const auto pi = static_cast<std::size_t>(p);
    if (!sealed.valid[pi]) continue;
    for (const UnitBid& b : sealed.bids[pi].bids) units[b.unit].push_back({p, b.cost_us});
  }
  report.units = units.size();
  if (units.empty()) return report;  // nothing to auction: the table keeps its fill
  // Every unit as S equal slices, each bid its party's bid / S (rounded up, at least 1 us).
  // Biggest slices first (the load-spread rule balances best that way): by the highest bid,
  // then by unit and slice; a slice's place in that order is its tie key.
  const auto slices = static_cast<std::int64_t>(settings_.unit_slices);
  struct Slice {
    const mpc::WorkUnit* unit;
    int index;
    std::vector<Bid> bids;
    std::int64_t top = 0;
  };
  std::vector<Slice> order;
  order.reserve(units.size() * static_cast<std::size_t>(slices));
  for (const auto& [unit, bids] : units) {
    std::vector<Bid> part;
    std::int64_t top = 0;
    for (const Bid& b : bids) {
      // An out-of-range bid stays out of range (SecondPrice excludes it).
      const std::int64_t c = (b.cost_us < 0 || b.cost_us > kMaxBidMicros)
                                 ? b.cost_us
                                 : std::max<std::int64_t>(1, (b.cost_us + slices - 1) / slices);
      part.push_back({b.party, c});
      top = std::max(top, c);
    }
    for (int k = 0; k < settings_.unit_slices; ++k) order.push_back({&unit, k, part, top});
  }
  std::stable_sort(order.begin(), order.end(), [](const Slice& a, const Slice& b) {
    if (a.top != b.top) return a.top > b.top;
    if (*a.unit != *b.unit) return *a.unit < *b.unit;
    return a.index < b.index;
  });
  // Base loads: each counted party's time for the interval's online traffic at the price
  // per byte its bids state (header: why).
  std::vector<std::int64_t> base(un, 0);
  for (const auto& [unit, d] : demand) report.online_bytes += d.opened_bytes;
  if (settings_.count_online_traffic) {
    for (int p = 0; p < n; ++p) {
      const auto pi = static_cast<std::size_t>(p);
      if (sealed.valid[pi]) base[pi] = BaseLoadUs(sealed.bids[pi], demand, report.online_bytes);
    }
  }
  report.base_us = base;
  LoadSpreadOptions lso;
  lso.max_spread = settings_.max_spread;
  MPCACHE_ASSIGN_OR_RETURN(LoadSpreadAuction awards, LoadSpreadAuction::Create(n, lso, base));
  std::map<mpc::WorkUnit, std::vector<std::uint32_t>> won;  // slices per party, per unit
  std::vector<std::int64_t> total_bid(un, 0);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Slice& slice = order[k];
    Result<Outcome> o = awards.Award(slice.bids, auction * 1000003 + k);
    if (!o.ok()) continue;  // no valid bid for this unit (bids out of range): default roles
    MPCACHE_RETURN_IF_ERROR(ledger_.Settle(*o));
    const auto w = static_cast<std::size_t>(o->winner);
    report.wins[w] += 1;
    report.paid_us[w] += o->price_us;
    auto& counts = won[*slice.unit];
    counts.resize(un, 0);
    counts[w] += 1;
    for (const Bid& b : slice.bids) {
      if (b.cost_us >= 0 && b.cost_us <= kMaxBidMicros) {
        total_bid[static_cast<std::size_t>(b.party)] += b.cost_us;
      }
    }
  }
  // The table: a unit won whole names its winner; one shared names the party with the most
  // slices as corrector and deals its requests out by the slices won.
  std::map<mpc::WorkUnit, mpc::Roles> fill;
  for (auto& [unit, counts] : won) {
    const auto most = std::max_element(counts.begin(), counts.end());
    mpc::Roles r{settings_.static_roles.king, static_cast<mpc::PartyId>(most - counts.begin()), {}};
    std::uint32_t holders = 0;
    for (const std::uint32_t c : counts) holders += c > 0 ? 1 : 0;
    const auto it = bytes.find(unit);
    const std::uint64_t unit_bytes = it != bytes.end() ? it->second : 0;
    for (std::size_t p = 0; p < un; ++p) {
      report.bytes[p] += unit_bytes / static_cast<std::uint64_t>(slices) * counts[p];
    }
    if (holders > 1) r.split = counts;
    fill[unit] = std::move(r);
  }
  for (int p = 0; p < n; ++p) report.load_us[static_cast<std::size_t>(p)] = awards.load_us(p);
  report.spread = awards.spread();
  report.winners_spread = awards.winners_spread();
  // Units no one bid for (new ones) go to the party whose bids were lowest in all.
  mpc::Roles defaults = settings_.static_roles;
  std::int64_t best = -1;
  for (int p = 0; p < n; ++p) {
    const auto pi = static_cast<std::size_t>(p);
    if (!sealed.valid[pi] || sealed.bids[pi].bids.empty()) continue;
    if (best < 0 || total_bid[pi] < best) {
      best = total_bid[pi];
      defaults.corrector = p;
    }
  }
  MPCACHE_RETURN_IF_ERROR(roles_.Fill(defaults, std::move(fill)));
  report.applied = true;
  return report;
}

}  // namespace mpcache::balancer
