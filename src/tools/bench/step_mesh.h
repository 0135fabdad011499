// The parties' mesh of `mpcache-bench decode-step --mesh-addresses A0,A1,A2 --mesh-certs DIR
// [--mesh-netns N0,N1,N2]`: instead of the in-memory mesh, the three parties talk over real
// mutually authenticated TLS 1.3 connections (net/tls/tls_mesh.h, as the daemons do), each
// party's end made in a thread that first entered that party's network namespace. With the
// namespaces of deploy/netns/netns.sh (one host each, links shaped `lan` or `wan`), one
// process measures a decoding step between three "hosts" — SPEC §10's LAN/WAN profiles —
// while the step's setup (a prefilled context of thousands of positions) stays a library
// call. The dealers stay in process: their material arrives without a network, like
// MP-SPDZ's online-only figures.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "net/tls/tls_mesh.h"

namespace mpcache::tools {

struct StepMeshFlags {
  std::string addresses;  // "host:port,host:port,host:port" (port 0: a free one)
  std::string certs;      // a folder deploy/gen-certs.sh wrote
  std::string netns;      // "ns0,ns1,ns2" (optional)
  bool enabled() const { return !addresses.empty(); }
  // What the JSON report says of the mesh.
  std::string Describe() const;
};
void AddStepMeshFlags(CLI::App& cmd, StepMeshFlags& flags);

// The flags, checked (counts, addresses, the certificate files, namespace names) without
// touching the network: every mistake named with how to fix it.
struct StepMeshPlan {
  std::vector<net::Endpoint> addresses;
  std::string certs;
  std::vector<std::string> netns;  // empty: this process's namespace
  bool enabled() const { return !addresses.empty(); }
};
Result<StepMeshPlan> ParseStepMeshFlags(const StepMeshFlags& f);

// The three parties' meshes, connected (each Listen and Connect made inside the party's
// namespace). `recv_timeout` bounds one receive of the step.
Result<std::vector<std::unique_ptr<net::TlsMesh>>> StartStepMeshes(
    StepMeshPlan plan, std::uint64_t session_id, std::chrono::milliseconds recv_timeout);

// Close() every mesh at once (each waits for its peers' CLOSE).
void CloseStepMeshes(std::vector<std::unique_ptr<net::TlsMesh>>& meshes);

}  // namespace mpcache::tools
