#include "daemon/start_checks.h"

#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "net/tls/mesh_config.h"
#include "net/tls/tls_connector.h"
#include "net/tls/tls_context.h"

namespace mpcache::daemon {

namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "no name" : out;
}

Status CheckOwnCertificate(const config::PartyConfig& cfg) {
  const std::string want = net::PartyName(cfg.party_id);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                           net::CertificateFileIdentities(cfg.tls.cert));
  if (net::IdentitiesInclude(names, want)) return Status::Ok();  // the peers' own rule
  return InvalidArgument(cfg.file + ": field 'tls.cert': " + cfg.tls.cert + " names " +
                         Joined(names) + ", not " + want + " (party_id " +
                         std::to_string(cfg.party_id) +
                         "): the other parties would refuse it at every connection; fix: point "
                         "tls.cert and tls.key at this party's certificate (deploy/gen-certs.sh "
                         "writes party" +
                         std::to_string(cfg.party_id) + ".crt), or correct party_id");
}

Result<std::unique_ptr<net::TlsListener>> HoldMeshAddress(const config::PartyConfig& cfg,
                                                          boost::asio::io_context& io,
                                                          boost::asio::ssl::context& tls) {
  const config::HostPort& own = cfg.parties[static_cast<std::size_t>(cfg.party_id)];
  auto held = net::TlsListener::Bind(io, tls, net::ToEndpoint(own));
  if (!held.ok()) {
    const std::string id = std::to_string(cfg.party_id);
    const bool in_use = held.error().message().find("something else listens") != std::string::npos;
    return InvalidArgument(cfg.file + ": field 'network.parties': this party's mesh address " +
                           own.ToString() + " (entry " + id +
                           ", party_id) cannot be used: " + held.error().message() +
                           (in_use ? "; is another daemon running as party " + id +
                                         " on this machine? every party needs its own party_id"
                                   : std::string()) +
                           "; fix: stop the other daemon or correct party_id, or change entry " +
                           id + " in every party's network.parties");
  }
  return held;
}

Status CheckDealerResolves(const config::PartyConfig& cfg, boost::asio::io_context& io) {
  boost::asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto results = resolver.resolve(cfg.dealer.host, std::to_string(cfg.dealer.port),
                                        boost::asio::ip::tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return InvalidArgument(cfg.file + ": field 'network.dealer': host '" + cfg.dealer.host +
                           "' does not resolve (" + (ec ? ec.message() : "no address") +
                           "); fix: the dealer's IP address or a host name this machine "
                           "resolves");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<net::TlsListener>> CheckPartyStart(const config::PartyConfig& cfg,
                                                          boost::asio::io_context& io,
                                                          boost::asio::ssl::context& tls) {
  if (cfg.party_id < 0 || static_cast<std::size_t>(cfg.party_id) >= cfg.parties.size()) {
    return InvalidArgument(cfg.file + ": field 'party_id': " + std::to_string(cfg.party_id) +
                           " has no entry in network.parties");
  }
  MPCACHE_RETURN_IF_ERROR(CheckOwnCertificate(cfg));
  MPCACHE_RETURN_IF_ERROR(CheckDealerResolves(cfg, io));
  return HoldMeshAddress(cfg, io, tls);
}

}  // namespace mpcache::daemon
