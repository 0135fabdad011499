// Which queued request the three parties serve next. Every party queues the clients it
// accepted in its own arrival order, and the orders differ (a client reaches party 2 before
// party 0, another the other way round); a party that simply served the head of its own queue
// would set up a mesh for another session than its peers and every request would time out.
//
// So the parties agree, in a "lobby": a short-lived TLS mesh of their own (session id
// kLobbySession, which no client may use), one round:
//
//   party 1, party 2 -> party 0   Offer {the session ids queued there, in order;
//                                        the ids it refused or dropped lately}
//   party 0 -> party 1, party 2   Pick  {the chosen id (0: none yet);
//                                        ids the followers should drop}
//
// Party 0 (the leader) picks the first request of its own queue that both followers have
// queued too (ChooseNext): its arrival order is the service order. The picked request leaves
// every queue and is served as today (its own mesh, its own dealer session). A request a
// follower refused is dropped by the leader too (and the other way round), so a client that
// one party turned away does not hold a place elsewhere.
//
// Who learns what: session ids are public already (they name every frame of a request); the
// lobby adds the queue order. A party that lies in the lobby can only delay requests, which
// it can anyway by not serving them: it cannot make a peer serve a session that peer did not
// accept from a client (a follower ignores a Pick of a session it has not queued).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/result.h"
#include "net/channel.h"

namespace mpcache::daemon {

// The lobby's mesh session id; a client's Generate may not use it (nor 0).
inline constexpr std::uint64_t kLobbySession = ~std::uint64_t{0};

// Most ids one Offer or Pick may carry: a peer announcing more is refused before anything
// is allocated for them.
inline constexpr std::uint32_t kMaxLobbyIds = 4096;

struct Offer {
  std::vector<std::uint64_t> queued;  // in this party's arrival order
  std::vector<std::uint64_t> gone;    // refused or dropped here lately
};

struct Pick {
  std::uint64_t session = 0;        // 0: nothing all three have queued
  std::vector<std::uint64_t> drop;  // refused, dropped or served at some party
};

// Pure: the first of the leader's queue that every follower has queued, or 0.
std::uint64_t ChooseNext(const std::vector<std::uint64_t>& leader_queue,
                         const std::vector<Offer>& followers);

// Pure: what the followers must drop: ids they queued that the leader has refused, dropped
// or served (`leader_gone`), or that another follower has.
std::vector<std::uint64_t> DropsFor(const std::vector<std::uint64_t>& leader_gone,
                                    const std::vector<Offer>& followers);

// One lobby round over `mesh` (party 0 leads). `mine` is this party's offer. The leader
// returns its Pick together with the followers' offers (to drop what they refused); a
// follower returns the Pick it received. Offers or Picks over kMaxLobbyIds ids, and a Pick
// of a session this follower has not queued, are refused (kProtocol, naming the party).
struct LobbyResult {
  Pick pick;
  std::vector<Offer> offers;  // the leader only: party 1's and party 2's
};
Result<LobbyResult> RunLobbyRound(net::Channel& mesh, const Offer& mine);

}  // namespace mpcache::daemon
