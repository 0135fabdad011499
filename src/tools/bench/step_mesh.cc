#include "tools/bench/step_mesh.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <thread>

#include "common/config.h"

namespace mpcache::tools {
namespace {

constexpr int kParties = 3;

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string ErrnoText(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// This thread (only) moves into the network namespace `name` (ip netns's /run/netns/<name>):
// the sockets it makes from now on live there.
Status EnterNetns(const std::string& name) {
  const std::string path = "/run/netns/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return InvalidArgument("--mesh-netns: no network namespace '" + name + "' (" + path + ": " +
                           ErrnoText(errno) +
                           "); make the namespaces first, e.g. deploy/netns/netns.sh up "
                           "--prefix P, then --mesh-netns P-party0,P-party1,P-party2");
  }
  const int rc = ::setns(fd, CLONE_NEWNET);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    return InvalidArgument("--mesh-netns: cannot enter network namespace '" + name +
                           "': " + ErrnoText(err) + " (needs root or CAP_SYS_ADMIN)");
  }
  return Status::Ok();
}

}  // namespace

Result<StepMeshPlan> ParseStepMeshFlags(const StepMeshFlags& f) {
  StepMeshPlan p;
  if (!f.enabled()) {
    if (!f.certs.empty() || !f.netns.empty()) {
      return InvalidArgument(
          "--mesh-certs and --mesh-netns go with --mesh-addresses H:P,H:P,H:P (the parties' "
          "TLS mesh); without it the parties share an in-memory mesh");
    }
    return p;
  }
  const std::vector<std::string> addrs = SplitCommas(f.addresses);
  if (addrs.size() != kParties) {
    return InvalidArgument("--mesh-addresses '" + f.addresses + "': give " +
                           std::to_string(kParties) +
                           " comma-separated host:port, one per "
                           "party (port 0: a free one), not " +
                           std::to_string(addrs.size()));
  }
  for (const std::string& a : addrs) {
    Result<config::HostPort> hp = config::ParseHostPort(a, /*allow_zero=*/true);
    if (!hp.ok()) return hp.error().WithContext("--mesh-addresses: party address '" + a + "'");
    p.addresses.push_back(net::Endpoint{hp->host, hp->port});
  }
  if (f.certs.empty()) {
    return InvalidArgument(
        "--mesh-addresses needs --mesh-certs DIR: the parties' certificates (write them with "
        "deploy/gen-certs.sh DIR)");
  }
  p.certs = f.certs;
  for (int i = 0; i < kParties; ++i) {
    for (const std::string& file : {"party" + std::to_string(i) + ".crt",
                                    "party" + std::to_string(i) + ".key", std::string("ca.crt")}) {
      const std::filesystem::path path = std::filesystem::path(f.certs) / file;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec)) {
        return InvalidArgument("--mesh-certs '" + f.certs + "': no " + path.string() +
                               " (write the folder with deploy/gen-certs.sh " + f.certs + ")");
      }
    }
  }
  if (!f.netns.empty()) {
    p.netns = SplitCommas(f.netns);
    if (p.netns.size() != kParties) {
      return InvalidArgument("--mesh-netns '" + f.netns + "': give " + std::to_string(kParties) +
                             " comma-separated namespace names, one per party, not " +
                             std::to_string(p.netns.size()));
    }
    for (const std::string& n : p.netns) {
      if (n.empty() || n.find('/') != std::string::npos || n == "." || n == "..") {
        return InvalidArgument("--mesh-netns '" + f.netns + "': '" + n +
                               "' is not a namespace name (as `ip netns list` shows them)");
      }
    }
  }
  return p;
}

namespace {

// f(party) in one thread per party, each first moved into its namespace (if any).
template <typename F>
std::vector<Status> InPartyThreads(const StepMeshPlan& p, F f) {
  std::vector<Status> status(kParties, Status::Ok());
  {
    std::vector<std::jthread> threads;
    threads.reserve(kParties);
    for (int i = 0; i < kParties; ++i) {
      threads.emplace_back([&, i] {
        const auto u = static_cast<std::size_t>(i);
        if (!p.netns.empty()) {
          if (Status s = EnterNetns(p.netns[u]); !s.ok()) {
            status[u] = s;
            return;
          }
        }
        status[u] = f(i);
      });
    }
  }
  return status;
}

}  // namespace

std::string StepMeshFlags::Describe() const {
  if (!enabled()) return "in-memory";
  std::string d = "TLS 1.3 between " + addresses;
  if (!netns.empty()) d += " in network namespaces " + netns;
  return d;
}

void AddStepMeshFlags(CLI::App& cmd, StepMeshFlags& f) {
  cmd.add_option("--mesh-addresses", f.addresses,
                 "The parties talk over a TLS mesh at these host:port (one per party, port 0: "
                 "free) instead of in memory");
  cmd.add_option("--mesh-certs", f.certs,
                 "With --mesh-addresses: the folder deploy/gen-certs.sh wrote");
  cmd.add_option("--mesh-netns", f.netns,
                 "With --mesh-addresses: each party's end of the mesh made in this network "
                 "namespace (N0,N1,N2; e.g. deploy/netns/netns.sh's P-party0,P-party1,P-party2)");
}

Result<std::vector<std::unique_ptr<net::TlsMesh>>> StartStepMeshes(
    StepMeshPlan p, std::uint64_t session_id, std::chrono::milliseconds recv_timeout) {
  if (p.addresses.size() != kParties) {
    return InvalidArgument("step mesh: " + std::to_string(p.addresses.size()) +
                           " addresses; one per party (3)");
  }
  std::vector<std::unique_ptr<net::TlsMesh>> meshes(kParties);
  // Listen first everywhere (port 0 is then known), then connect.
  std::vector<Status> listened = InPartyThreads(p, [&](int i) -> Status {
    net::TlsMeshOptions o;
    o.self = i;
    o.num_parties = kParties;
    o.addresses = p.addresses;
    const std::string name = "party" + std::to_string(i);
    const std::filesystem::path d(p.certs);
    o.tls = {(d / (name + ".crt")).string(), (d / (name + ".key")).string(),
             (d / "ca.crt").string()};
    o.session_id = session_id;
    o.connect_timeout = std::chrono::seconds(60);
    o.handshake_timeout = std::chrono::seconds(30);
    o.recv_timeout = recv_timeout;
    MPCACHE_ASSIGN_OR_RETURN(meshes[static_cast<std::size_t>(i)],
                             net::TlsMesh::Listen(std::move(o)));
    return Status::Ok();
  });
  for (int i = 0; i < kParties; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (!listened[u].ok()) {
      return listened[u].error().WithContext("party " + std::to_string(i) + "'s mesh at " +
                                             p.addresses[u].ToString());
    }
    if (p.addresses[u].port == 0) p.addresses[u].port = meshes[u]->listen_port();
  }
  std::vector<Status> connected = InPartyThreads(
      p, [&](int i) { return meshes[static_cast<std::size_t>(i)]->Connect(p.addresses); });
  for (int i = 0; i < kParties; ++i) {
    if (!connected[static_cast<std::size_t>(i)].ok()) {
      CloseStepMeshes(meshes);
      return connected[static_cast<std::size_t>(i)].error().WithContext(
          "party " + std::to_string(i) + "'s mesh");
    }
  }
  return meshes;
}

void CloseStepMeshes(std::vector<std::unique_ptr<net::TlsMesh>>& meshes) {
  std::vector<std::jthread> closers;
  closers.reserve(meshes.size());
  for (auto& m : meshes) {
    if (m) closers.emplace_back([&m] { (void)m->Close(); });
  }
}

}  // namespace mpcache::tools
