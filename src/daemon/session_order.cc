#include "daemon/session_order.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_set>

namespace mpcache::daemon {
namespace {

bool Contains(const std::vector<std::uint64_t>& v, std::uint64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void PutU32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint32_t GetU32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
std::uint64_t GetU64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string Who(net::PartyId p) {
  return "party " + std::to_string(p);
}

Status CheckCount(std::uint64_t n, net::PartyId from, const char* what) {
  if (n > kMaxLobbyIds) {
    return ProtocolError(Who(from) + " announced " + std::to_string(n) + " session ids in its " +
                         what + " (at most " + std::to_string(kMaxLobbyIds) + "); refused");
  }
  return Status::Ok();
}

Result<std::vector<std::uint64_t>> RecvIds(net::Channel& mesh, net::PartyId from, std::uint64_t n) {
  std::vector<std::uint8_t> bytes(n * 8);
  if (n > 0) MPCACHE_RETURN_IF_ERROR(mesh.Recv(from, bytes));
  std::vector<std::uint64_t> ids(n);
  for (std::uint64_t i = 0; i < n; ++i) ids[i] = GetU64(bytes.data() + 8 * i);
  return ids;
}

Status SendOffer(net::Channel& mesh, const Offer& offer) {
  std::vector<std::uint8_t> out;
  const std::size_t nq = std::min<std::size_t>(offer.queued.size(), kMaxLobbyIds);
  const std::size_t ng = std::min<std::size_t>(offer.gone.size(), kMaxLobbyIds);
  PutU32(out, static_cast<std::uint32_t>(nq));
  PutU32(out, static_cast<std::uint32_t>(ng));
  for (std::size_t i = 0; i < nq; ++i) PutU64(out, offer.queued[i]);
  for (std::size_t i = 0; i < ng; ++i) PutU64(out, offer.gone[i]);
  MPCACHE_RETURN_IF_ERROR(mesh.Send(0, out));
  return mesh.Flush();
}

Result<Offer> RecvOffer(net::Channel& mesh, net::PartyId from) {
  std::array<std::uint8_t, 8> head{};
  MPCACHE_RETURN_IF_ERROR(mesh.Recv(from, head));
  const std::uint32_t nq = GetU32(head.data()), ng = GetU32(head.data() + 4);
  MPCACHE_RETURN_IF_ERROR(CheckCount(nq, from, "offer"));
  MPCACHE_RETURN_IF_ERROR(CheckCount(ng, from, "offer's refusals"));
  Offer offer;
  MPCACHE_ASSIGN_OR_RETURN(offer.queued, RecvIds(mesh, from, nq));
  MPCACHE_ASSIGN_OR_RETURN(offer.gone, RecvIds(mesh, from, ng));
  return offer;
}

}  // namespace

std::uint64_t ChooseNext(const std::vector<std::uint64_t>& leader_queue,
                         const std::vector<Offer>& followers) {
  for (const std::uint64_t id : leader_queue) {
    if (id == 0 || id == kLobbySession) continue;
    const bool everywhere = std::all_of(followers.begin(), followers.end(),
                                        [id](const Offer& o) { return Contains(o.queued, id); });
    if (everywhere) return id;
  }
  return 0;
}

std::vector<std::uint64_t> DropsFor(const std::vector<std::uint64_t>& leader_gone,
                                    const std::vector<Offer>& followers) {
  std::unordered_set<std::uint64_t> gone(leader_gone.begin(), leader_gone.end());
  for (const Offer& o : followers) gone.insert(o.gone.begin(), o.gone.end());
  std::vector<std::uint64_t> drop;
  for (const Offer& o : followers) {
    for (const std::uint64_t id : o.queued) {
      if (gone.count(id) > 0 && !Contains(drop, id)) drop.push_back(id);
    }
  }
  return drop;
}

Result<LobbyResult> RunLobbyRound(net::Channel& mesh, const Offer& mine) {
  LobbyResult out;
  if (mesh.self() != 0) {
    MPCACHE_RETURN_IF_ERROR(SendOffer(mesh, mine));
    std::array<std::uint8_t, 12> head{};
    MPCACHE_RETURN_IF_ERROR(mesh.Recv(0, head));
    out.pick.session = GetU64(head.data());
    const std::uint32_t nd = GetU32(head.data() + 8);
    MPCACHE_RETURN_IF_ERROR(CheckCount(nd, 0, "pick's drops"));
    MPCACHE_ASSIGN_OR_RETURN(out.pick.drop, RecvIds(mesh, 0, nd));
    if (out.pick.session != 0 && !Contains(mine.queued, out.pick.session)) {
      return ProtocolError(Who(0) + " picked session " + std::to_string(out.pick.session) +
                           ", which party " + std::to_string(mesh.self()) +
                           " has not queued; ignored");
    }
    return out;
  }
  for (net::PartyId p = 1; p < mesh.num_parties(); ++p) {
    MPCACHE_ASSIGN_OR_RETURN(Offer o, RecvOffer(mesh, p));
    out.offers.push_back(std::move(o));
  }
  // The leader's own refusals count as the followers' do: such an id is never picked.
  std::vector<std::uint64_t> queue;
  for (const std::uint64_t id : mine.queued) {
    const bool refused = std::any_of(out.offers.begin(), out.offers.end(),
                                     [id](const Offer& o) { return Contains(o.gone, id); });
    if (!refused) queue.push_back(id);
  }
  out.pick.session = ChooseNext(queue, out.offers);
  out.pick.drop = DropsFor(mine.gone, out.offers);
  std::vector<std::uint8_t> bytes;
  PutU64(bytes, out.pick.session);
  const std::size_t nd = std::min<std::size_t>(out.pick.drop.size(), kMaxLobbyIds);
  PutU32(bytes, static_cast<std::uint32_t>(nd));
  for (std::size_t i = 0; i < nd; ++i) PutU64(bytes, out.pick.drop[i]);
  for (net::PartyId p = 1; p < mesh.num_parties(); ++p) {
    MPCACHE_RETURN_IF_ERROR(mesh.Send(p, bytes));
  }
  MPCACHE_RETURN_IF_ERROR(mesh.Flush());
  return out;
}

}  // namespace mpcache::daemon
