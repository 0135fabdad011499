#include "net/tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <string>

namespace mpcache::net {
namespace {

Error FileError(std::string_view what, const std::string& path,
                const boost::system::error_code& ec) {
  std::error_code fs_ec;
  if (!std::filesystem::exists(path, fs_ec)) {
    return NotFound(std::string(what) + " file '" + path +
                    "' does not exist (make certificates with deploy/gen-certs.sh DIR)");
  }
  return InvalidArgument("cannot load " + std::string(what) + " file '" + path +
                         "': " + DescribeError(ec));
}

}  // namespace

std::string PartyName(PartyId id) {
  return "mpcache-party-" + std::to_string(id);
}

std::string DescribeError(const boost::system::error_code& ec) {
  if (ec == asio::ssl::error::stream_truncated) return "connection closed without TLS close";
  if (ec.category() == asio::error::get_ssl_category()) return "TLS: " + ec.message();
  return ec.message();
}

Result<std::unique_ptr<asio::ssl::context>> MakeTlsContext(const TlsFiles& files) {
  std::unique_ptr<asio::ssl::context> ctx;
  try {
    ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls);
  } catch (const std::exception& e) {
    return Internal(std::string("cannot create a TLS context: ") + e.what());
  }
  SSL_CTX* handle = ctx->native_handle();
  if (SSL_CTX_set_min_proto_version(handle, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(handle, TLS1_3_VERSION) != 1) {
    return Internal("cannot restrict the TLS context to TLS 1.3");
  }
  // No session resumption: every connection authenticates with certificates.
  SSL_CTX_set_options(handle, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(handle, 0);
  SSL_CTX_set_session_cache_mode(handle, SSL_SESS_CACHE_OFF);

  boost::system::error_code ec;
  ctx->use_certificate_chain_file(files.cert_file, ec);
  if (ec) return FileError("certificate", files.cert_file, ec);
  ctx->use_private_key_file(files.key_file, asio::ssl::context::pem, ec);
  if (ec && ec.message().find("mismatch") != std::string::npos) {
    return InvalidArgument("private key '" + files.key_file + "' does not match certificate '" +
                           files.cert_file + "'");
  }
  if (ec) return FileError("private key", files.key_file, ec);
  if (SSL_CTX_check_private_key(handle) != 1) {
    ERR_clear_error();
    return InvalidArgument("private key '" + files.key_file + "' does not match certificate '" +
                           files.cert_file + "'");
  }
  ctx->load_verify_file(files.ca_file, ec);
  if (ec) return FileError("CA", files.ca_file, ec);
  ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  if (ec) return Internal("cannot set the TLS verify mode: " + DescribeError(ec));
  return ctx;
}

bool PeerCertificateHasName(SSL* ssl, std::string_view name) {
  if (ssl == nullptr || name.empty()) return false;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return false;
  if (X509_check_host(cert, name.data(), name.size(), X509_CHECK_FLAG_NO_WILDCARDS, nullptr) == 1) {
    return true;
  }
  char cn[256] = {};
  const int len =
      X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  return len > 0 && std::string_view(cn, static_cast<std::size_t>(len)) == name;
}

std::string DescribePeerCertificate(SSL* ssl) {
  X509* cert = ssl ? SSL_get0_peer_certificate(ssl) : nullptr;
  if (cert == nullptr) return "no certificate";
  std::string out = "CN=";
  char cn[256] = {};
  if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn)) > 0) {
    out += cn;
  }
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans != nullptr) {
    out += " SAN=";
    bool first = true;
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans, i);
      if (gn->type != GEN_DNS) continue;
      const auto* s = gn->d.dNSName;
      if (!first) out += ",";
      out.append(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                 static_cast<std::size_t>(ASN1_STRING_length(s)));
      first = false;
    }
    GENERAL_NAMES_free(sans);
  }
  return out;
}

}  // namespace mpcache::net
