// Certificates made inside a test with OpenSSL (EC P-256, signed by a test CA), for the
// identity rules that deploy/gen-certs.sh never produces: a CN and SAN that disagree, SANs
// naming two roles, an embedded NUL, a wildcard, no SAN at all.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "net/tls/tls_context.h"

namespace mpcache::net::testing {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// One subjectAltName entry: a DNS name (may hold any bytes, NUL included) or an IPv4
// address.
struct San {
  enum Type { kDns, kIp } type = kDns;
  std::string value;  // DNS name, or 4 address bytes
};
inline San Dns(std::string name) {
  return {San::kDns, std::move(name)};
}
inline San Ip127() {
  return {San::kIp, std::string("\x7f\x00\x00\x01", 4)};
}

struct KeyAndCert {
  PkeyPtr key;
  X509Ptr cert;
};

inline bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

inline bool AddSans(X509* cert, const std::vector<San>& sans) {
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  for (const auto& s : sans) {
    GENERAL_NAME* gn = GENERAL_NAME_new();
    ASN1_STRING* str = s.type == San::kDns ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new();
    ASN1_STRING_set(str, s.value.data(), static_cast<int>(s.value.size()));
    GENERAL_NAME_set0_value(gn, s.type == San::kDns ? GEN_DNS : GEN_IPADD, str);
    sk_GENERAL_NAME_push(names, gn);
  }
  const bool ok = X509_add1_ext_i2d(cert, NID_subject_alt_name, names, 0, 0) == 1;
  GENERAL_NAMES_free(names);
  return ok;
}

// A certificate for `cns` (one subject CN entry each, in order; none if empty) with the
// given subjectAltNames (no SAN extension if empty), signed by `ca` (self-signed CA
// certificate when `ca` is null).
inline KeyAndCert MakeCert(const std::vector<std::string>& cns, const std::vector<San>& sans,
                           const KeyAndCert* ca) {
  KeyAndCert out;
  out.key.reset(EVP_EC_gen("P-256"));
  out.cert.reset(X509_new());
  X509* x = out.cert.get();
  if (!out.key || !x) return {};
  X509_set_version(x, 2);
  std::uint32_t serial = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&serial), sizeof(serial));
  ASN1_INTEGER_set(X509_get_serialNumber(x), static_cast<long>(serial >> 1) + 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
  X509_NAME* name = X509_get_subject_name(x);
  for (const auto& cn : cns) {
    X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  }
  X509_set_issuer_name(x, ca ? X509_get_subject_name(ca->cert.get()) : name);
  X509_set_pubkey(x, out.key.get());
  X509* issuer = ca ? ca->cert.get() : x;
  bool ok = true;
  if (ca == nullptr) {
    ok = AddExtension(x, issuer, NID_basic_constraints, "critical,CA:TRUE") &&
         AddExtension(x, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    ok = AddExtension(x, issuer, NID_basic_constraints, "critical,CA:FALSE") &&
         AddExtension(x, issuer, NID_key_usage, "critical,digitalSignature") &&
         AddExtension(x, issuer, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  if (ok && !sans.empty()) ok = AddSans(x, sans);
  EVP_PKEY* signer = ca ? ca->key.get() : out.key.get();
  if (!ok || X509_sign(x, signer, EVP_sha256()) == 0) return {};
  return out;
}

// Writes `kc` as <dir>/<name>.crt and <dir>/<name>.key (mode 0600); the TlsFiles that
// use them with `ca_file`.
inline TlsFiles WritePem(const KeyAndCert& kc, const std::string& dir, const std::string& name,
                         const std::string& ca_file) {
  TlsFiles f{dir + "/" + name + ".crt", dir + "/" + name + ".key", ca_file};
  if (FILE* c = std::fopen(f.cert_file.c_str(), "w")) {
    PEM_write_X509(c, kc.cert.get());
    std::fclose(c);
  }
  if (FILE* k = std::fopen(f.key_file.c_str(), "w")) {
    ::chmod(f.key_file.c_str(), 0600);
    PEM_write_PrivateKey(k, kc.key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(k);
  }
  return f;
}

}  // namespace mpcache::net::testing
