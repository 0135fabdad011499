#include "daemon/start_checks.h"

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <thread>

#include "daemon/dealer_protocol.h"
#include "daemon/sync_link.h"
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

// The dealer's answer to a Hello on a connection of its own (the daemon's io does not run
// yet: a local one does).
Result<dealer_proto::HelloReply> AskDealer(const config::PartyConfig& cfg,
                                           boost::asio::ssl::context& tls) {
  net::asio::io_context io;
  auto work = net::asio::make_work_guard(io);
  std::thread runner([&io] { io.run(); });
  Result<dealer_proto::HelloReply> reply = Internal("no answer");
  {
    const auto within =
        std::min(std::chrono::milliseconds(cfg.timeouts.connect_ms), kDealerCheckWithin);
    auto link =
        SyncLink::Connect(io, tls, net::ToEndpoint(cfg.dealer), std::string(net::kDealerName), 0,
                          cfg.max_frame_bytes, within, "the dealer");
    if (!link.ok()) {
      reply = link.error();
    } else {
      dealer_proto::Hello hello;
      hello.party = static_cast<std::uint32_t>(cfg.party_id);
      hello.security = cfg.security == config::Security::kMalicious
                           ? preproc::Security::kMalicious
                           : preproc::Security::kSemiHonest;
      Status sent = (*link)->Send(dealer_proto::Encode(hello));
      auto answer = sent.ok() ? (*link)->Recv(std::chrono::milliseconds(cfg.timeouts.handshake_ms))
                              : Result<std::vector<std::uint8_t>>(sent.error());
      reply = answer.ok() ? dealer_proto::DecodeHelloReply(*answer)
                          : Result<dealer_proto::HelloReply>(answer.error());
      (*link)->Close();
    }
  }
  work.reset();
  io.stop();
  runner.join();
  return reply;
}

Status CheckDealer(const config::PartyConfig& cfg, boost::asio::ssl::context& tls,
                   std::vector<std::string>& warnings) {
  const Result<dealer_proto::HelloReply> reply = AskDealer(cfg, tls);
  if (reply.ok()) return Status::Ok();
  const Error& e = reply.error();
  const std::string field = cfg.file + ": field 'network.dealer': ";
  if (e.message().find("security mode differs") != std::string::npos) {
    return InvalidArgument(
        cfg.file + ": field 'security': " + std::string(config::ToString(cfg.security)) + ", but " +
        e.message() + "; fix: one security mode in every party's and the dealer's config");
  }
  if (e.message().find("TLS handshake") != std::string::npos ||
      e.message().find("presented a certificate") != std::string::npos) {
    return InvalidArgument(field + e.message() +
                           "; fix: the address of the dealer's network.listen (the dealer "
                           "presents a certificate naming mpcache-dealer)");
  }
  // Not running (yet), slow, or of another release: each request will say what happens then.
  warnings.push_back(field + "the dealer at " + cfg.dealer.ToString() +
                     " did not answer the start-up check (" + e.message() +
                     "); starting anyway: each request fails until the dealer answers");
  return Status::Ok();
}

}  // namespace

Result<StartChecked> CheckPartyStart(const config::PartyConfig& cfg, boost::asio::io_context& io,
                                     boost::asio::ssl::context& tls) {
  if (cfg.party_id < 0 || static_cast<std::size_t>(cfg.party_id) >= cfg.parties.size()) {
    return InvalidArgument(cfg.file + ": field 'party_id': " + std::to_string(cfg.party_id) +
                           " has no entry in network.parties");
  }
  MPCACHE_RETURN_IF_ERROR(CheckOwnCertificate(cfg));
  MPCACHE_RETURN_IF_ERROR(CheckDealerResolves(cfg, io));
  StartChecked checked;
  MPCACHE_ASSIGN_OR_RETURN(checked.mesh_address, HoldMeshAddress(cfg, io, tls));
  MPCACHE_RETURN_IF_ERROR(CheckDealer(cfg, tls, checked.warnings));
  return checked;
}

}  // namespace mpcache::daemon
