#include "mpc/roles.h"

#include <string>
#include <utility>

namespace mpcache::mpc {

std::string WorkUnit::Name() const {
  return (layer < 0 ? std::string("step") : "layer" + std::to_string(layer)) + "/" + phase;
}

RoleTable::RoleTable(int num_parties)
    : num_parties_(num_parties), defaults_(StaticRoles(num_parties)) {}

Status RoleTable::Fill(Roles defaults, std::map<WorkUnit, Roles> units) {
  auto check = [&](const Roles& r, const std::string& where) -> Status {
    if (r.king != kNoKing && (r.king < 0 || r.king >= num_parties_)) {
      return InvalidArgument("role table: king " + std::to_string(r.king) + " of " + where +
                             " is not a party (0.." + std::to_string(num_parties_ - 1) +
                             ") nor kNoKing");
    }
    if (r.corrector < 0 || r.corrector >= num_parties_) {
      return InvalidArgument("role table: corrector " + std::to_string(r.corrector) + " of " +
                             where + " is not a party (0.." + std::to_string(num_parties_ - 1) +
                             ")");
    }
    return Status::Ok();
  };
  MPCACHE_RETURN_IF_ERROR(check(defaults, "the default"));
  for (const auto& [unit, roles] : units) MPCACHE_RETURN_IF_ERROR(check(roles, unit.Name()));
  defaults_ = defaults;
  units_ = std::move(units);
  ++fills_;
  return Status::Ok();
}

const Roles& RoleTable::For(const WorkUnit& u) const {
  auto it = units_.find(u);
  return it == units_.end() ? defaults_ : it->second;
}

WorkUnit RoleTable::Current() const {
  return WorkUnit{layer_, stats_ != nullptr ? stats_->phase() : std::string()};
}

PartyId RoleTable::KingFor(std::uint64_t opened_bytes) {
  WorkUnit u = Current();
  const PartyId king = For(u).king;
  UnitDemand& d = demand_[std::move(u)];
  d.opened_bytes += opened_bytes;
  d.openings += 1;
  return king;
}

PartyId RoleTable::CorrectorFor(std::uint64_t correction_bytes) {
  WorkUnit u = Current();
  const PartyId corrector = For(u).corrector;
  UnitDemand& d = demand_[std::move(u)];
  d.correction_bytes += correction_bytes;
  d.requests += 1;
  return corrector;
}

std::map<WorkUnit, UnitDemand> RoleTable::TakeDemand() {
  std::map<WorkUnit, UnitDemand> out;
  out.swap(demand_);
  return out;
}

}  // namespace mpcache::mpc
