// TEST ONLY: the seams through which end-to-end tests make a daemon deviate from the
// protocol or fail at a chosen point: the lying party (mpcache-party-liar,
// tests/e2e/party_liar_main.cc) and the fault-injection harness (mpcache-party-faulty and
// mpcache-dealer-faulty, tests/e2e/fault_main.cc). mpcache-party and mpcache-dealer never
// set them, and no config field or flag of the production binaries can: the deviations and
// faults themselves live in the test binaries alone.
#pragma once

#include <cstdint>
#include <functional>

namespace mpcache::mpc {
class Adversary;
}

namespace mpcache::daemon {

// Called at this party after each position's forward pass (GenerationSession's position
// hook) with the request's session id; a non-null Adversary it returns is installed in that
// request's arithmetic and binary contexts, which then deviate as it says (mpc/adversary.h)
// until the request ends. The Adversary must outlive the request. Empty in production.
using AdversaryHook = std::function<mpc::Adversary*(std::uint64_t session, int pos)>;

// Called at the dealer before it sends answer number `answer` (counted from 1 on each party
// connection) to `party` in `session`, after the answer was computed. The fault harness
// kills or stops the dealer from here. Empty in production.
using DealerHook = std::function<void(std::uint64_t session, int party, std::uint64_t answer)>;

}  // namespace mpcache::daemon
