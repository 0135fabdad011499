#include "balancer/ledger.h"

#include <string>

namespace mpcache::balancer {

Result<CreditLedger> CreditLedger::Create(int num_parties) {
  if (num_parties < 1) {
    return InvalidArgument("credit ledger: num_parties must be at least 1, got " +
                           std::to_string(num_parties));
  }
  return CreditLedger(num_parties);
}

Status CreditLedger::Settle(const Outcome& outcome) {
  if (outcome.winner < 0 || outcome.winner >= num_parties()) {
    return InvalidArgument("credit ledger: winner " + std::to_string(outcome.winner) +
                           " is not a party (0.." + std::to_string(num_parties() - 1) + ")");
  }
  if (outcome.winning_bid_us < 0 || outcome.price_us < outcome.winning_bid_us) {
    return InvalidArgument("credit ledger: price " + std::to_string(outcome.price_us) +
                           " us below the winning bid " + std::to_string(outcome.winning_bid_us) +
                           " us (not a second-price outcome)");
  }
  PartyAccount next = accounts_[static_cast<std::size_t>(outcome.winner)];
  std::int64_t requests = 0;
  if (__builtin_add_overflow(next.received_us, outcome.price_us, &next.received_us) ||
      __builtin_add_overflow(next.bid_us, outcome.winning_bid_us, &next.bid_us) ||
      __builtin_sub_overflow(requests_us_, outcome.price_us, &requests)) {
    return Exhausted("credit ledger: a balance would overflow (start a new ledger)");
  }
  ++next.wins;
  accounts_[static_cast<std::size_t>(outcome.winner)] = next;
  requests_us_ = requests;
  return Status::Ok();
}

}  // namespace mpcache::balancer
