// What a party checks at start, before it logs "ready" (issue 20): a misconfiguration that
// would otherwise surface only at the first request — as "mesh setup not complete" on
// another party, or a dealer error mid-request — is refused at once, naming the field and
// the fix:
//   - its own certificate (tls.cert) names mpcache-party-<party_id> (not another party or
//     role: the peers would refuse it at every handshake);
//   - its mesh address (its entry of network.parties) is bound on this machine, and held
//     until the daemon stops (each request's mesh accepts on it): a port something else
//     holds — another daemon started with the same party_id, say — is refused here, and no
//     daemon started later can take it;
//   - the dealer's host (network.dealer) resolves, and the dealer there answers as
//     mpcache-dealer and runs this party's security mode (a TLS server of another role, or
//     a dealer of the other mode, is refused; a dealer not running yet is a warning: it may
//     start later, and each request fails until it does).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/result.h"
#include "net/tls/tls_connector.h"

namespace mpcache::daemon {

struct StartChecked {
  // The mesh address's listening socket: keep it for the daemon's life (never started:
  // TlsMeshOptions::listen_fd takes its native_handle()).
  std::unique_ptr<net::TlsListener> mesh_address;
  std::vector<std::string> warnings;  // to log before "ready"
};
Result<StartChecked> CheckPartyStart(const config::PartyConfig& cfg, boost::asio::io_context& io,
                                     boost::asio::ssl::context& tls);
// How long the start-up check waits for the dealer: min(timeouts.connect_ms, this).
inline constexpr std::chrono::milliseconds kDealerCheckWithin{2000};

}  // namespace mpcache::daemon
