#include "mpc/mac_check.h"

#include <algorithm>

namespace mpcache::mpc {

Status RunMacChecks(net::Channel& channel, std::span<MacCheckSteps* const> checks) {
  std::vector<MacCheckSteps*> live;
  for (MacCheckSteps* c : checks) {
    if (c != nullptr) live.push_back(c);
  }
  if (live.empty()) return Status::Ok();
  const net::PartyId self = channel.self();
  const int np = channel.num_parties();
  for (int round = 0; round < MacCheckSteps::kRounds; ++round) {
    std::vector<std::uint8_t> msg;
    std::size_t in_size = 0;
    for (MacCheckSteps* c : live) {
      const std::vector<std::uint8_t> part = c->Message(round);
      msg.insert(msg.end(), part.begin(), part.end());
      in_size += c->PeerMessageSize(round);
    }
    for (net::PartyId p = 0; p < np; ++p) {
      if (p != self) MPCACHE_RETURN_IF_ERROR(channel.Send(p, msg));
    }
    MPCACHE_RETURN_IF_ERROR(channel.Flush());
    channel.stats().RecordRound();
    std::vector<std::uint8_t> in(in_size);
    for (net::PartyId p = 0; p < np; ++p) {
      if (p == self) continue;
      MPCACHE_RETURN_IF_ERROR(channel.Recv(p, in));
      std::size_t off = 0;
      for (MacCheckSteps* c : live) {
        const std::size_t len = c->PeerMessageSize(round);
        c->Receive(round, p, std::span<const std::uint8_t>(in).subspan(off, len));
        off += len;
      }
    }
    for (MacCheckSteps* c : live) c->EndRound(round);
  }
  Status first = Status::Ok();
  for (MacCheckSteps* c : live) {
    Status s = c->Finish();
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  return first;
}

}  // namespace mpcache::mpc
