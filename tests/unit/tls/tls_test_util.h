// Helpers for the TLS tests: certificates made once per test binary by
// deploy/gen-certs.sh in a temporary folder, and meshes on loopback with free ports.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/tls/tls_mesh.h"

namespace mpcache::net::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mpcache-tls-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Folder with ca.crt and party{0,1,2}, dealer, client certificates and keys.
inline const std::string& CertDir() {
  static TempDir dir;
  static const bool made = [] {
    const std::string cmd =
        std::string(MPCACHE_GEN_CERTS) + " '" + dir.path() + "/certs' 2>/dev/null";
    return !dir.path().empty() && std::system(cmd.c_str()) == 0;
  }();
  static const std::string certs = made ? dir.path() + "/certs" : std::string();
  return certs;
}

// Adds CertDir()/rogue/: the same names signed by a second CA (made on first use only,
// to keep the tests that do not need it fast).
inline bool EnsureRogueCerts() {
  static const bool made = [] {
    const std::string cmd =
        std::string(MPCACHE_GEN_CERTS) + " --rogue '" + CertDir() + "' 2>/dev/null";
    return !CertDir().empty() && std::system(cmd.c_str()) == 0;
  }();
  return made;
}

// Identity `file` (e.g. "party1", "rogue/party1") trusting `ca` (e.g. "ca", "rogue/ca").
inline TlsFiles Files(const std::string& file, const std::string& ca = "ca") {
  if (file.rfind("rogue/", 0) == 0 || ca.rfind("rogue/", 0) == 0) EnsureRogueCerts();
  const std::string& d = CertDir();
  return {d + "/" + file + ".crt", d + "/" + file + ".key", d + "/" + ca + ".crt"};
}

inline TlsMeshOptions Options(PartyId self, int n) {
  TlsMeshOptions o;
  o.self = self;
  o.num_parties = n;
  o.addresses.assign(static_cast<std::size_t>(n), Endpoint{"127.0.0.1", 0});
  o.tls = Files("party" + std::to_string(self));
  o.session_id = 42;
  o.connect_timeout = std::chrono::milliseconds(5000);
  o.handshake_timeout = std::chrono::milliseconds(2000);
  o.recv_timeout = std::chrono::milliseconds(10000);
  o.close_timeout = std::chrono::milliseconds(300);
  return o;
}

struct Started {
  std::vector<std::unique_ptr<TlsMesh>> meshes;
  std::vector<Status> connect;  // Connect() result per party
  bool all_ok() const {
    for (const auto& s : connect) {
      if (!s.ok()) return false;
    }
    return true;
  }
};

// Listen() every party on a free port, then Connect() them all concurrently.
inline Started StartMeshes(std::vector<TlsMeshOptions> opts) {
  Started out;
  std::vector<Endpoint> addrs;
  for (auto& o : opts) {
    auto m = TlsMesh::Listen(o);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().ToString());
    if (!m.ok()) return out;
    addrs.push_back({"127.0.0.1", (*m)->listen_port()});
    out.meshes.push_back(std::move(m).value());
  }
  out.connect.resize(opts.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < opts.size(); ++i) {
      threads.emplace_back([&, i] { out.connect[i] = out.meshes[i]->Connect(addrs); });
    }
  }
  return out;
}

inline std::string Msg(const Status& s) {
  return s.ok() ? "ok" : s.error().ToString();
}

}  // namespace mpcache::net::testing
