#include "balancer/sealed_bids.h"

#include <cstring>
#include <set>
#include <string>

#include "mpc/context.h"

namespace mpcache::balancer {

namespace {

// out += n bytes at p (resize and copy: GCC 12 misreads vector::insert of a few bytes).
void Append(std::vector<std::uint8_t>& out, const void* p, std::size_t n) {
  if (n == 0) return;
  const std::size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}

template <typename T>
void Put(std::vector<std::uint8_t>& out, T v) {
  Append(out, &v, sizeof(T));
}

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> b) : b_(b) {}
  template <typename T>
  Result<T> Get(const char* what) {
    if (b_.size() - off_ < sizeof(T)) return CorruptData(std::string("bid list: short ") + what);
    T v;
    std::memcpy(&v, b_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return v;
  }
  Result<std::string> Str(std::size_t n) {
    if (b_.size() - off_ < n) return CorruptData("bid list: short phase name");
    std::string s(reinterpret_cast<const char*>(b_.data() + off_), n);
    off_ += n;
    return s;
  }
  bool done() const { return off_ == b_.size(); }

 private:
  std::span<const std::uint8_t> b_;
  std::size_t off_ = 0;
};

std::span<const std::uint8_t> View(const std::vector<std::uint8_t>& v) {
  return {v.data(), v.size()};
}

}  // namespace

std::vector<std::uint8_t> EncodeBids(const BidList& list) {
  std::vector<std::uint8_t> out;
  Put<std::uint64_t>(out, list.auction);
  Put<std::uint32_t>(out, static_cast<std::uint32_t>(list.bids.size()));
  for (const UnitBid& b : list.bids) {
    Put<std::int32_t>(out, b.unit.layer);
    Put<std::uint16_t>(out, static_cast<std::uint16_t>(b.unit.phase.size()));
    Append(out, b.unit.phase.data(), b.unit.phase.size());
    Put<std::int64_t>(out, b.cost_us);
  }
  return out;
}

Result<BidList> DecodeBids(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  BidList list;
  MPCACHE_ASSIGN_OR_RETURN(list.auction, r.Get<std::uint64_t>("auction number"));
  MPCACHE_ASSIGN_OR_RETURN(std::uint32_t n, r.Get<std::uint32_t>("count"));
  if (n > kMaxBidUnits) {
    return CorruptData("bid list of " + std::to_string(n) + " units (at most " +
                       std::to_string(kMaxBidUnits) + ")");
  }
  std::set<mpc::WorkUnit> seen;
  for (std::uint32_t i = 0; i < n; ++i) {
    UnitBid b;
    MPCACHE_ASSIGN_OR_RETURN(b.unit.layer, r.Get<std::int32_t>("layer"));
    MPCACHE_ASSIGN_OR_RETURN(std::uint16_t len, r.Get<std::uint16_t>("phase length"));
    if (len > kMaxPhaseBytes)
      return CorruptData("bid list: a phase name of " + std::to_string(len) + " bytes");
    MPCACHE_ASSIGN_OR_RETURN(b.unit.phase, r.Str(len));
    MPCACHE_ASSIGN_OR_RETURN(b.cost_us, r.Get<std::int64_t>("cost"));
    if (!seen.insert(b.unit).second) {
      return CorruptData("bid list names unit " + b.unit.Name() + " twice");
    }
    list.bids.push_back(std::move(b));
  }
  if (!r.done()) return CorruptData("bid list: trailing bytes");
  return list;
}

Result<SealedBidsResult> ExchangeSealedBids(net::Channel& channel, std::uint64_t auction,
                                            const BidList& mine, const Seed& nonce_seed,
                                            const SealedBidsDeviation* deviation) {
  const int n = channel.num_parties();
  const int self = channel.self();
  const auto me = static_cast<std::size_t>(self);
  if (mine.auction != auction) {
    return InvalidArgument("sealed bids: this party's bids are for auction " +
                           std::to_string(mine.auction) + ", not " + std::to_string(auction));
  }
  Prg prg(nonce_seed);
  Digest nonce{};
  prg.Fill(nonce.data(), nonce.size());
  std::vector<std::uint8_t> body = EncodeBids(mine);
  const auto commit_of = [](std::span<const std::uint8_t> b, const Digest& nc) {
    return mpc::Sha256({b, nc});
  };
  const Digest commitment = commit_of(body, nonce);
  // What this party reveals (a deviation of a test liar: other bids, or bytes that do not
  // parse, under the same commitment).
  std::vector<std::uint8_t> revealed = body;
  if (deviation != nullptr && deviation->reveal_other_bids) revealed = EncodeBids(deviation->other);
  if (deviation != nullptr && deviation->garbage_reveal) revealed.assign(7, 0xEE);

  // Round 1: commitments.
  std::vector<Digest> commits(static_cast<std::size_t>(n));
  commits[me] = commitment;
  for (int p = 0; p < n; ++p) {
    if (p == self) continue;
    Digest c = commitment;
    if (deviation != nullptr && deviation->equivocate_to == p) {
      BidList other = mine;
      other.bids.push_back({mpc::WorkUnit{-7, "equivocation"}, 1});
      c = commit_of(EncodeBids(other), nonce);
    }
    MPCACHE_RETURN_IF_ERROR(channel.Send(p, c));
  }
  MPCACHE_RETURN_IF_ERROR(channel.Flush());
  channel.stats().RecordRound();
  for (int p = 0; p < n; ++p) {
    if (p != self) MPCACHE_RETURN_IF_ERROR(channel.Recv(p, commits[static_cast<std::size_t>(p)]));
  }

  // Round 2: reveals, only after every commitment arrived.
  std::vector<std::uint8_t> reveal_msg;
  Put<std::uint32_t>(reveal_msg, static_cast<std::uint32_t>(revealed.size()));
  Append(reveal_msg, revealed.data(), revealed.size());
  Append(reveal_msg, nonce.data(), nonce.size());
  for (int p = 0; p < n; ++p) {
    if (p != self) MPCACHE_RETURN_IF_ERROR(channel.Send(p, View(reveal_msg)));
  }
  MPCACHE_RETURN_IF_ERROR(channel.Flush());
  channel.stats().RecordRound();
  std::vector<std::vector<std::uint8_t>> reveals(static_cast<std::size_t>(n));
  std::vector<Digest> nonces(static_cast<std::size_t>(n));
  reveals[me] = revealed;
  nonces[me] = nonce;
  for (int p = 0; p < n; ++p) {
    if (p == self) continue;
    const auto pi = static_cast<std::size_t>(p);
    std::uint32_t len = 0;
    MPCACHE_RETURN_IF_ERROR(channel.Recv(p, {reinterpret_cast<std::uint8_t*>(&len), sizeof len}));
    if (len > kMaxRevealBytes) {
      return ProtocolError("sealed bids: party " + std::to_string(p) + " announced a reveal of " +
                           std::to_string(len) + " bytes (at most " +
                           std::to_string(kMaxRevealBytes) + ")");
    }
    reveals[pi].resize(len);
    MPCACHE_RETURN_IF_ERROR(channel.Recv(p, reveals[pi]));
    MPCACHE_RETURN_IF_ERROR(channel.Recv(p, nonces[pi]));
  }

  // Round 3: every party's view of the exchange, compared.
  std::vector<std::uint8_t> view;
  for (int p = 0; p < n; ++p) {
    const auto pi = static_cast<std::size_t>(p);
    Append(view, commits[pi].data(), commits[pi].size());
    Put<std::uint64_t>(view, reveals[pi].size());
    Append(view, reveals[pi].data(), reveals[pi].size());
    Append(view, nonces[pi].data(), nonces[pi].size());
  }
  const Digest my_view = mpc::Sha256({View(view)});
  for (int p = 0; p < n; ++p) {
    if (p != self) MPCACHE_RETURN_IF_ERROR(channel.Send(p, my_view));
  }
  MPCACHE_RETURN_IF_ERROR(channel.Flush());
  channel.stats().RecordRound();
  std::string differs;
  for (int p = 0; p < n; ++p) {
    if (p == self) continue;
    Digest theirs{};
    MPCACHE_RETURN_IF_ERROR(channel.Recv(p, theirs));
    if (theirs != my_view) differs += (differs.empty() ? "" : " and ") + std::to_string(p);
  }
  if (!differs.empty()) {
    return ProtocolError("sealed bids of auction " + std::to_string(auction) + ": party " +
                         differs + " holds other commitments or reveals than party " +
                         std::to_string(self) +
                         " (a party told its peers different bids); the auction is void and the "
                         "session stops");
  }

  SealedBidsResult out;
  out.bids.resize(static_cast<std::size_t>(n));
  out.valid.assign(static_cast<std::size_t>(n), false);
  out.why_not.resize(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    const auto pi = static_cast<std::size_t>(p);
    const std::string who = "party " + std::to_string(p);
    if (commit_of(reveals[pi], nonces[pi]) != commits[pi]) {
      out.why_not[pi] = who + "'s reveal does not match its commitment";
      continue;
    }
    Result<BidList> list = DecodeBids(reveals[pi]);
    if (!list.ok()) {
      out.why_not[pi] = who + "'s reveal does not parse: " + list.error().message();
      continue;
    }
    if (list->auction != auction) {
      out.why_not[pi] = who + " bid for auction " + std::to_string(list->auction) + ", not " +
                        std::to_string(auction);
      continue;
    }
    out.bids[pi] = std::move(list).value();
    out.valid[pi] = true;
  }
  return out;
}

}  // namespace mpcache::balancer
