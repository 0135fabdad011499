// TEST ONLY: the seam through which the lying-party end-to-end test makes a party daemon
// deviate from the protocol (mpcache-party-liar, built with the tests from
// tests/e2e/party_liar_main.cc). mpcache-party never sets it, and no config field or flag of
// the production binaries can: the deviations themselves live in the test binary alone.
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

}  // namespace mpcache::daemon
