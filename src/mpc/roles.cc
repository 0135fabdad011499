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
    if (r.king != kNoKing && r.king != kSplitKing && (r.king < 0 || r.king >= num_parties_)) {
      return InvalidArgument("role table: king " + std::to_string(r.king) + " of " + where +
                             " is not a party (0.." + std::to_string(num_parties_ - 1) +
                             ") nor kNoKing nor kSplitKing");
    }
    if (r.corrector < 0 || r.corrector >= num_parties_) {
      return InvalidArgument("role table: corrector " + std::to_string(r.corrector) + " of " +
                             where + " is not a party (0.." + std::to_string(num_parties_ - 1) +
                             ")");
    }
    if (!r.split.empty()) {
      if (r.split.size() != static_cast<std::size_t>(num_parties_)) {
        return InvalidArgument("role table: the split of " + where + " has " +
                               std::to_string(r.split.size()) + " weights, not one per party (" +
                               std::to_string(num_parties_) + ")");
      }
      std::uint64_t sum = 0;
      for (const std::uint32_t w : r.split) sum += w;
      if (sum == 0) {
        return InvalidArgument("role table: the split of " + where +
                               " gives no party any weight (leave it empty for one corrector)");
      }
    }
    return Status::Ok();
  };
  MPCACHE_RETURN_IF_ERROR(check(defaults, "the default"));
  for (const auto& [unit, roles] : units) MPCACHE_RETURN_IF_ERROR(check(roles, unit.Name()));
  defaults_ = std::move(defaults);
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
  const Roles& roles = For(u);
  PartyId corrector = roles.corrector;
  if (!roles.split.empty()) {
    std::vector<__int128>& credit = credit_[u];
    credit.resize(roles.split.size(), 0);
    __int128 sum = 0;
    const auto bytes = static_cast<__int128>(correction_bytes);
    for (std::size_t p = 0; p < roles.split.size(); ++p) {
      credit[p] += static_cast<__int128>(roles.split[p]) * bytes;
      sum += roles.split[p];
    }
    std::size_t most = roles.split.size();
    for (std::size_t p = 0; p < roles.split.size(); ++p) {
      if (roles.split[p] == 0) continue;
      if (most == roles.split.size() || credit[p] > credit[most]) most = p;
    }
    credit[most] -= sum * bytes;
    corrector = static_cast<PartyId>(most);
  }
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
