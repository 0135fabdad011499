// Roles are data (SPEC §7, issue 13): who does the asymmetric work of a unit of work.
//   king       an opening through a king (Context::Open, BinaryContext::OpenMany in
//              OpenMode::kKing): the non-kings send their shares to the king, which sums
//              and sends the sum back (2 rounds; the king moves twice the bytes of the
//              others); kNoKing: all-to-all (1 round, every party the same bytes);
//              kSplitKing: every party the king of a third of each arithmetic opening
//              (mpc/context.h, OpenMode::kSplitKing: 2 rounds, a third fewer bytes than
//              all-to-all for every party; binary openings stay all-to-all).
//   corrector  the party that receives the dealer's corrections for a batch of
//              preprocessing (full-size data; the others expand seeds: batch.h,
//              bit_batch.h). Named in every dealer request.
// One RoleTable per party and session, owned by the arithmetic Context (Context::roles())
// and shared with its preprocessing (Preprocessing::UseRoles), consulted wherever a caller
// names no king or corrector. The static table (every unit: all-to-all, corrections to the
// last party) is what the protocol did before roles were data; the balancer's auction
// (balancer/session_balancer.h) is another fill. All three parties must hold the same table
// at the same point of the protocol: a fill changes only between decoding steps, at step
// indices they agree on, and the dealer refuses requests naming different correctors.
//
// A unit of work is a (layer, phase) of the secure forward: the layer the engine is in
// (LayerScope; -1 outside the layers: embedding, classifier, the step's plan, checks) and
// the net::PhaseScope name the party's traffic is counted under. The table counts each
// unit's demand (correction bytes asked for, bytes opened), the same at every party since
// the parties' requests and openings are: the balancer's bids price it.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "mpc/share.h"
#include "net/comm_stats.h"

namespace mpcache::mpc {

inline constexpr PartyId kNoKing = -1;
inline constexpr PartyId kSplitKing = -2;

struct WorkUnit {
  int layer = -1;
  std::string phase;
  auto operator<=>(const WorkUnit&) const = default;  // NOLINT(modernize-use-nullptr)
  // "layer3/scores", "step/embedding".
  std::string Name() const;
};

struct Roles {
  PartyId king = kNoKing;  // kNoKing: all-to-all openings; kSplitKing: split among kings
  PartyId corrector = 0;
  // Empty: every request of the unit corrected by `corrector`. Otherwise one weight per
  // party: the unit's correction bytes are dealt out in these proportions, request by
  // request (RoleTable::CorrectorFor), so that a unit need not go whole to one party.
  std::vector<std::uint32_t> split;
  bool operator==(const Roles&) const = default;
};

// What a unit asked for since the demand was last taken.
struct UnitDemand {
  std::uint64_t correction_bytes = 0;  // of the dealer requests issued under the unit
  std::uint64_t requests = 0;          // dealer requests
  std::uint64_t opened_bytes = 0;      // this party's share bytes of its openings
  std::uint64_t openings = 0;
};

class RoleTable {
 public:
  // The static table of n parties (n >= 1).
  explicit RoleTable(int num_parties);

  // All-to-all openings, corrections to the last party.
  static Roles StaticRoles(int num_parties) { return {kNoKing, num_parties - 1, {}}; }

  int num_parties() const { return num_parties_; }
  // A new fill: `defaults` for every unit not listed. kInvalidArgument (nothing changes)
  // for a king or corrector that is not a party.
  Status Fill(Roles defaults, std::map<WorkUnit, Roles> units = {});
  const Roles& defaults() const { return defaults_; }
  const std::map<WorkUnit, Roles>& units() const { return units_; }
  const Roles& For(const WorkUnit& u) const;
  std::uint64_t fills() const { return fills_; }

  // Where this party is: the layer (LayerScope) and the phase of `stats` (its channel's).
  void BindPhase(const net::CommStats* stats) { stats_ = stats; }
  int layer() const { return layer_; }
  void set_layer(int layer) { layer_ = layer; }
  WorkUnit Current() const;

  // The roles of the current unit for work no caller assigned, counting the unit's demand.
  // A split unit's request goes by smooth weighted round robin over its bytes: every party
  // is credited its weight x the request's bytes, the most credited (ties: the lowest
  // party) takes the request and is debited the weights' sum x its bytes. Credits carry
  // over fills, so a share smaller than one request per interval is still served in the
  // long run. The same choice at every party, whose requests are the same.
  PartyId KingFor(std::uint64_t opened_bytes);
  PartyId CorrectorFor(std::uint64_t correction_bytes);

  const std::map<WorkUnit, UnitDemand>& demand() const { return demand_; }
  // The demand counted so far, and a fresh count from here.
  std::map<WorkUnit, UnitDemand> TakeDemand();

 private:
  int num_parties_;
  Roles defaults_;
  std::map<WorkUnit, Roles> units_;
  std::uint64_t fills_ = 0;
  const net::CommStats* stats_ = nullptr;
  int layer_ = -1;
  std::map<WorkUnit, UnitDemand> demand_;
  // Per split unit: each party's credit (weight x bytes), kept across fills.
  std::map<WorkUnit, std::vector<__int128>> credit_;
};

// RAII: the engine is in `layer` (restores the previous layer).
class LayerScope {
 public:
  LayerScope(RoleTable& roles, int layer) : roles_(roles), previous_(roles.layer()) {
    roles_.set_layer(layer);
  }
  ~LayerScope() { roles_.set_layer(previous_); }
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  RoleTable& roles_;
  int previous_;
};

}  // namespace mpcache::mpc
