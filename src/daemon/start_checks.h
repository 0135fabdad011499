// What a party checks at start, before it logs "ready" (issue 20): a misconfiguration that
// would otherwise surface only at the first request — as "mesh setup not complete" on
// another party, or a dealer error mid-request — is refused at once, naming the field and
// the fix:
//   - its own certificate (tls.cert) names mpcache-party-<party_id> (not another party or
//     role: the peers would refuse it at every handshake);
//   - its mesh address (its entry of network.parties) can be bound on this machine now (it
//     is bound again for each request; a port something else holds fails every request);
//   - the dealer's host (network.dealer) resolves.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include "common/config.h"
#include "common/result.h"

namespace mpcache::daemon {

Status CheckPartyStart(const config::PartyConfig& cfg, boost::asio::io_context& io,
                       boost::asio::ssl::context& tls);

}  // namespace mpcache::daemon
