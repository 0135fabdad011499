// The split-king opening (mpc/context.h, OpenMode::kSplitKing) and the open styles' names.
//
// Round 1: every party sends its shares of segment k (SplitSegment) to party k, the king of
// that segment, and sums the shares it receives of its own segment. Round 2: every king
// sends its segment's sum to every peer and takes the other segments from their kings. As
// in king mode a king only relays: every party logs the value it ends with (the king: the
// sum it sent) for the MAC check, so a king that relays a wrong sum — to both peers alike or
// a different one to each — leaves a party holding a value its MAC share does not follow.
#include <string>

#include "mpc/context.h"
#include "mpc/wire_pack.h"

namespace mpcache::mpc {

const char* OpenStyleName(OpenStyle style) {
  return style == OpenStyle::kSplitKing ? "split-king" : "all-to-all";
}

Result<OpenStyle> ParseOpenStyle(std::string_view name) {
  if (name == "all-to-all") return OpenStyle::kAllToAll;
  if (name == "split-king") return OpenStyle::kSplitKing;
  return InvalidArgument("open style \"" + std::string(name) +
                         "\": use all-to-all (1 round per opening) or split-king (2 rounds, a "
                         "third fewer bytes)");
}

template <typename P>
typename Context<P>::OpenCost Context<P>::CostOf(const LastOpen& how, std::size_t values) const {
  const std::uint64_t width = OpenBytes<P>(how.bits);
  const auto np = static_cast<std::uint64_t>(num_parties());
  switch (how.mode) {
    case OpenMode::kSplitKing:
      return {2, SplitKingBytes(values, width, num_parties(), how.rot, self())};
    case OpenMode::kKing:
      return {2, (self() == how.king ? np - 1 : 1) * width * values};
    default:
      return {1, (np - 1) * width * values};
  }
}

template <typename P>
typename Context<P>::OpenCost Context<P>::NextOpenCost(std::size_t n, int bits) const {
  LastOpen next;
  next.bits = bits;
  next.king = roles_->For(roles_->Current()).king;
  next.rot = static_cast<int>(split_opens_ % static_cast<std::uint64_t>(num_parties()));
  next.mode = ModeForKing(next.king, options_.open_style);
  return CostOf(next, n);
}

template <typename P>
Status Context<P>::SplitExchange(std::vector<typename P::Word>& sum,
                                 std::span<const std::uint8_t> out, std::size_t width) {
  using W = typename P::Word;
  const int np = num_parties();
  const std::size_t n = sum.size();
  const auto rot = static_cast<int>(split_opens_++ % static_cast<std::uint64_t>(np));
  const auto segment = [&](PartyId k) { return SplitSegment(n, np, rot, k); };
  // Round 1: my shares of each peer's segment to that peer.
  for (PartyId p = 0; p < np; ++p) {
    if (p == self()) continue;
    const auto [b, e] = segment(p);
    if (e > b) MPCACHE_RETURN_IF_ERROR(channel_.Send(p, out.subspan(b * width, (e - b) * width)));
  }
  MPCACHE_RETURN_IF_ERROR(channel_.Flush());
  stats().RecordRound();
  const auto [mb, me] = segment(self());
  const std::span<W> mine(sum.data() + mb, me - mb);
  std::vector<std::uint8_t>& in = open_in_;
  for (PartyId p = 0; p < np; ++p) {
    if (p == self()) continue;
    MPCACHE_RETURN_IF_ERROR(RecvDeferred(p));
    if (me == mb) continue;
    in.resize((me - mb) * width);
    MPCACHE_RETURN_IF_ERROR(channel_.Recv(p, in));
    wire::UnpackLow<W>(in, width, mine, true);
  }
  // Round 2: my segment's sum to every peer; the other segments from their kings.
  const W wire_mask = wire::WireMask<W>(width);
  for (auto& v : mine) v &= wire_mask;
  std::vector<std::uint8_t>& relay = open_wire_;
  wire::PackLow<W>(std::span<const W>(mine), width, relay);
  if (adversary_ != nullptr && me > mb) {
    // Test-only: a lying king relays another sum to both peers alike and keeps it ...
    adversary_->OnOpen(Domain::kArith, opens_ - 1, me - mb, relay);
    wire::UnpackLow<W>(relay, width, mine, false);
  }
  for (PartyId p = 0; p < np; ++p) {
    if (p == self() || me == mb) continue;
    if (adversary_ == nullptr) {
      MPCACHE_RETURN_IF_ERROR(channel_.Send(p, relay));
      continue;
    }
    // ... or a different one to each (the king's own view stays what it kept above).
    std::vector<std::uint8_t> to_p(relay.begin(), relay.end());
    adversary_->OnRelay(Domain::kArith, opens_ - 1, p, me - mb, to_p);
    MPCACHE_RETURN_IF_ERROR(channel_.Send(p, to_p));
  }
  MPCACHE_RETURN_IF_ERROR(channel_.Flush());
  stats().RecordRound();
  for (PartyId p = 0; p < np; ++p) {
    if (p == self()) continue;
    const auto [b, e] = segment(p);
    if (e == b) continue;
    in.resize((e - b) * width);
    MPCACHE_RETURN_IF_ERROR(channel_.Recv(p, in));
    wire::UnpackLow<W>(in, width, std::span<W>(sum.data() + b, e - b), false);
  }
  return Status::Ok();
}

template Context<SemiHonest>::OpenCost Context<SemiHonest>::CostOf(const LastOpen&,
                                                                   std::size_t) const;
template Context<Spdz2k>::OpenCost Context<Spdz2k>::CostOf(const LastOpen&, std::size_t) const;
template Context<SemiHonest>::OpenCost Context<SemiHonest>::NextOpenCost(std::size_t, int) const;
template Context<Spdz2k>::OpenCost Context<Spdz2k>::NextOpenCost(std::size_t, int) const;
template Status Context<SemiHonest>::SplitExchange(std::vector<SemiHonest::Word>&,
                                                   std::span<const std::uint8_t>, std::size_t);
template Status Context<Spdz2k>::SplitExchange(std::vector<Spdz2k::Word>&,
                                               std::span<const std::uint8_t>, std::size_t);

}  // namespace mpcache::mpc
