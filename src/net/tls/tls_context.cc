#include "net/tls/tls_context.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

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

// A private key's PEM bytes, wiped when dropped.
struct PrivateKeyBytes {
  std::vector<char> bytes;
  PrivateKeyBytes() = default;
  PrivateKeyBytes(PrivateKeyBytes&&) = default;
  PrivateKeyBytes& operator=(PrivateKeyBytes&&) = delete;
  PrivateKeyBytes(const PrivateKeyBytes&) = delete;
  PrivateKeyBytes& operator=(const PrivateKeyBytes&) = delete;
  ~PrivateKeyBytes() {
    if (!bytes.empty()) OPENSSL_cleanse(bytes.data(), bytes.size());
  }
};

// `path` as a shell word, for the "fix:" part of an error.
std::string ShellQuoted(const std::string& path) {
  const bool plain = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("/._-+:@,=").find(c) != std::string_view::npos;
  });
  if (plain) return path;
  std::string out = "'";
  for (const char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Reads a private key file, refusing one that group or others may access (as ssh does):
// the mode is checked on the descriptor that is read, so the file cannot be swapped
// between the check and the read.
Result<PrivateKeyBytes> ReadPrivateKeyFile(const std::string& path) {
  constexpr std::size_t kMaxKeyFileBytes = std::size_t{1} << 20;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return NotFound("private key file '" + path +
                      "' does not exist (make certificates with deploy/gen-certs.sh DIR)");
    }
    return IoError("cannot open private key file '" + path + "': " + std::strerror(err));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return IoError("cannot stat private key file '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument("private key file '" + path + "' is not a regular file");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument("private key file '" + path + "' has mode " + mode +
                           ": group or others can access it; fix: chmod 600 " + ShellQuoted(path));
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxKeyFileBytes) {
    return InvalidArgument("private key file '" + path + "' is " + std::to_string(st.st_size) +
                           " bytes, too large for a PEM private key");
  }
  PrivateKeyBytes key;
  key.bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < key.bytes.size()) {
    const ssize_t n = ::read(fd, key.bytes.data() + got, key.bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return IoError("cannot read private key file '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  key.bytes.resize(got);
  return key;
}

// The bytes of an ASN.1 string as they are (an embedded NUL stays in, so that
// "mpcache-party-1\0.example" never equals "mpcache-party-1").
std::string AsnText(const ASN1_STRING* s) {
  if (s == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<std::size_t>(ASN1_STRING_length(s)));
}

// DNS names compare without regard to ASCII case (RFC 4343).
bool EqualsIgnoringAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
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

namespace {

// A key that is not the certificate's: both files and fields named, and the fix.
Error KeyMismatch(const TlsFiles& files) {
  return InvalidArgument("private key '" + files.key_file +
                         "' (tls.key) does not match certificate '" + files.cert_file +
                         "' (tls.cert); fix: point tls.key at the key made with that certificate "
                         "(deploy/gen-certs.sh writes <name>.crt and <name>.key as a pair)");
}

}  // namespace

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
  {
    MPCACHE_ASSIGN_OR_RETURN(PrivateKeyBytes key, ReadPrivateKeyFile(files.key_file));
    ctx->use_private_key(asio::buffer(key.bytes), asio::ssl::context::pem, ec);
  }
  if (ec && ec.message().find("mismatch") != std::string::npos) return KeyMismatch(files);
  if (ec) return FileError("private key", files.key_file, ec);
  if (SSL_CTX_check_private_key(handle) != 1) {
    ERR_clear_error();
    return KeyMismatch(files);
  }
  ctx->load_verify_file(files.ca_file, ec);
  if (ec) return FileError("CA", files.ca_file, ec);
  ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  if (ec) return Internal("cannot set the TLS verify mode: " + DescribeError(ec));
  return ctx;
}

std::vector<std::string> CertificateIdentities(X509* cert) {
  std::vector<std::string> names;
  if (cert == nullptr) return names;
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  bool has_san_id = false;
  if (sans != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans, i);
      if (gn->type == GEN_URI) has_san_id = true;
      if (gn->type != GEN_DNS) continue;
      has_san_id = true;
      names.push_back(AsnText(gn->d.dNSName));
    }
    GENERAL_NAMES_free(sans);
  }
  if (has_san_id) return names;  // RFC 6125 6.4.4: the CN is not consulted
  // No DNS or URI subjectAltName: the most specific (last) subject CN.
  X509_NAME* subject = X509_get_subject_name(cert);
  int last = -1;
  for (int at = -1; (at = X509_NAME_get_index_by_NID(subject, NID_commonName, at)) >= 0;) {
    last = at;
  }
  if (last >= 0) {
    names.push_back(AsnText(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, last))));
  }
  return names;
}

Result<std::vector<std::string>> CertificateFileIdentities(const std::string& pem_file) {
  std::FILE* f = std::fopen(pem_file.c_str(), "r");
  if (f == nullptr) {
    return IoError("cannot read certificate '" + pem_file + "': " + std::strerror(errno));
  }
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) {
    ERR_clear_error();
    return InvalidArgument("'" + pem_file + "' holds no PEM certificate");
  }
  std::vector<std::string> names = CertificateIdentities(cert);
  X509_free(cert);
  return names;
}

bool IdentitiesInclude(const std::vector<std::string>& identities, std::string_view name) {
  if (name.empty()) return false;
  for (const auto& id : identities) {
    if (id.find('*') == std::string::npos && EqualsIgnoringAsciiCase(id, name)) return true;
  }
  return false;
}

bool CertificateHasName(X509* cert, std::string_view name) {
  return cert != nullptr && IdentitiesInclude(CertificateIdentities(cert), name);
}

bool PeerCertificateHasName(SSL* ssl, std::string_view name) {
  if (ssl == nullptr) return false;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return false;
  return CertificateHasName(cert, name);
}

std::string DescribePeerCertificate(SSL* ssl) {
  X509* cert = ssl ? SSL_get0_peer_certificate(ssl) : nullptr;
  if (cert == nullptr) return "no certificate";
  X509_NAME* subject = X509_get_subject_name(cert);
  std::string cn;
  for (int at = -1; (at = X509_NAME_get_index_by_NID(subject, NID_commonName, at)) >= 0;) {
    cn = AsnText(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at)));
  }
  std::string out = "CN=" + PrintableText(cn);
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans != nullptr) {
    out += " SAN=";
    bool first = true;
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans, i);
      if (gn->type != GEN_DNS) continue;
      if (!first) out += ",";
      out += PrintableText(AsnText(gn->d.dNSName));
      first = false;
    }
    GENERAL_NAMES_free(sans);
  }
  const auto ids = CertificateIdentities(cert);
  if (!cn.empty() && std::find(ids.begin(), ids.end(), cn) == ids.end()) {
    out +=
        " (its CN is ignored: a certificate with DNS or URI subjectAltNames is identified by "
        "them alone)";
  }
  return out;
}

}  // namespace mpcache::net
