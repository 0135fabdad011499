// One domain's batched MAC check (SPDZ2k's Pi_MACCheck) split into its message rounds, so
// that the checks of several domains (arithmetic Z_2^64 and binary) travel in the same
// rounds: RunMacChecks sends, per round and per peer, ONE message that carries every check's
// part back to back, and the checks stay independent (own coin, own commitments, own
// randomness) — running them side by side reveals exactly what running them one after the
// other does.
//
// A check is made by its context (Context<P>::BeginMacCheck, BinaryContext<P>::
// BeginMacCheck) when something is pending; the context's log of openings is consumed and its
// `failed` flag set by Finish(). Protocol per round r = 0 .. kRounds-1, at every party:
//   Message(r) for every check → one Send per peer → Receive(r, p, part) for every peer and
//   check → EndRound(r) for every check; after the last round Finish() for every check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "net/channel.h"

namespace mpcache::mpc {

class MacCheckSteps {
 public:
  static constexpr int kRounds = 3;
  virtual ~MacCheckSteps() = default;
  // My round-r message (the same to every peer); may use what EndRound(r - 1) computed.
  virtual std::vector<std::uint8_t> Message(int round) = 0;
  // The size of the round-r message every peer sends.
  virtual std::size_t PeerMessageSize(int round) const = 0;
  // Peer p's round-r message (exactly PeerMessageSize(round) bytes).
  virtual void Receive(int round, net::PartyId p, std::span<const std::uint8_t> msg) = 0;
  // Every peer's round-r message has been received.
  virtual void EndRound(int round) = 0;
  // After the last round: clears the context's log; on a failed check marks the context
  // failed and returns kMacCheckFailed naming the party, the domain and the reason.
  virtual Status Finish() = 0;
};

// Runs the non-null checks side by side in kRounds rounds (free when all are null). Returns
// the first failing check's status in the order given (every check is finished either way).
Status RunMacChecks(net::Channel& channel, std::span<MacCheckSteps* const> checks);

}  // namespace mpcache::mpc
