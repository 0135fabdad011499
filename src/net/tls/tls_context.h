// TLS 1.3 contexts with mutual certificate authentication, and the identity names the
// daemons present: a party is "mpcache-party-<id>", the dealer "mpcache-dealer", the
// client "mpcache-client" (a SAN DNS name; the CN only in a certificate without DNS SANs,
// see deploy/gen-certs.sh).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "net/channel.h"
#include "net/tls/asio.h"
#include "net/tls/frame_rules.h"  // PrintableText

namespace mpcache::net {

inline constexpr std::string_view kDealerName = "mpcache-dealer";
inline constexpr std::string_view kClientName = "mpcache-client";

// "mpcache-party-<id>".
std::string PartyName(PartyId id);

// PEM files of one identity: its certificate (chain), its private key and the CA that
// every peer's certificate must be signed by.
struct TlsFiles {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
};

// A context usable for both the client and the server side of a connection: TLS 1.3
// only, our certificate and key loaded (and checked to match), peers verified against
// `ca_file` and required to present a certificate. Errors name the file at fault.
Result<std::unique_ptr<asio::ssl::context>> MakeTlsContext(const TlsFiles& files);

// The names a certificate identifies (RFC 6125 6.4.4): its DNS subjectAltNames when it
// has any DNS or URI subjectAltName, and then its CN is ignored; otherwise its most specific
// (last) subject CN. A certificate whose SAN says "mpcache-party-2" is party 2 whatever
// its CN says.
std::vector<std::string> CertificateIdentities(X509* cert);

// CertificateIdentities of the first certificate in a PEM file (a daemon checking at start
// that its own certificate names its role); an error names the file.
Result<std::vector<std::string>> CertificateFileIdentities(const std::string& pem_file);

// True when one of `identities` (CertificateIdentities) is `name` (ASCII case-insensitive,
// as DNS names compare; wildcards never accepted): the one rule every identity check uses.
bool IdentitiesInclude(const std::vector<std::string>& identities, std::string_view name);

// True when one of CertificateIdentities(cert) is `name` (ASCII case-insensitive, as DNS
// names compare). Wildcards are never accepted.
bool CertificateHasName(X509* cert, std::string_view name);

// CertificateHasName for the peer of a finished handshake, and only when its chain
// verified.
bool PeerCertificateHasName(SSL* ssl, std::string_view name);

// "CN=<cn> SAN=<dns,...>" of the peer certificate, for error messages (escaped).
std::string DescribePeerCertificate(SSL* ssl);

// One line for a Boost/OpenSSL error code ("certificate verify failed", "connection
// refused", ...).
std::string DescribeError(const boost::system::error_code& ec);

}  // namespace mpcache::net
