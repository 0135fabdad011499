// Latency of the TLS mesh (net/tls/tls_mesh.h) on loopback: three parties in three threads
// of this process, real TLS 1.3 connections with mutual authentication, as the daemons run
// them. The figure issue 16 asks for is BM_MeshRound/8: one MPC round, every party sends a
// small message to both peers and waits for both, reported as real time per round.
//
//   ./bench/bench_mesh --benchmark_repetitions=5 --benchmark_min_time=2
//
// BM_MeshPingPong is two parties, one message there and back (two one-way hops). Larger
// sizes show the bandwidth side (bytes_per_second: payload one party sends per second).
// Certificates are made once by deploy/gen-certs.sh in a temporary folder, or read from
// $MPCACHE_BENCH_CERTS (a folder gen-certs.sh wrote). docs/PERFORMANCE.md "The TLS mesh on
// loopback" records the figures (scripts/bench.sh mesh runs it).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/tls/tls_mesh.h"

namespace {

using namespace mpcache;       // NOLINT: benchmark file
using namespace mpcache::net;  // NOLINT: benchmark file

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "mpcache-bench-mesh-XXXXXX").string();
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

const std::string& CertDir() {
  static TempDir dir;
  static const std::string certs = [] {
    if (const char* given = std::getenv("MPCACHE_BENCH_CERTS")) return std::string(given);
    const std::string out = dir.path() + "/certs";
    const std::string cmd = std::string(MPCACHE_GEN_CERTS) + " '" + out + "' >/dev/null 2>&1";
    return !dir.path().empty() && std::system(cmd.c_str()) == 0 ? out : std::string();
  }();
  return certs;
}

TlsMeshOptions Options(PartyId self, int n) {
  TlsMeshOptions o;
  o.self = self;
  o.num_parties = n;
  o.addresses.assign(static_cast<std::size_t>(n), Endpoint{"127.0.0.1", 0});
  const std::string& d = CertDir();
  const std::string name = "party" + std::to_string(self);
  o.tls = {d + "/" + name + ".crt", d + "/" + name + ".key", d + "/ca.crt"};
  o.session_id = 7;
  return o;
}

// n meshes on loopback, connected (Listen on free ports, then Connect concurrently).
Result<std::vector<std::unique_ptr<TlsMesh>>> StartMeshes(int n) {
  if (CertDir().empty()) return Internal("deploy/gen-certs.sh failed");
  std::vector<std::unique_ptr<TlsMesh>> meshes;
  std::vector<Endpoint> addrs;
  for (PartyId p = 0; p < n; ++p) {
    MPCACHE_ASSIGN_OR_RETURN(auto m, TlsMesh::Listen(Options(p, n)));
    addrs.push_back({"127.0.0.1", m->listen_port()});
    meshes.push_back(std::move(m));
  }
  std::vector<Status> connected(static_cast<std::size_t>(n));
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    for (PartyId p = 0; p < n; ++p) {
      threads.emplace_back([&, p] {
        connected[static_cast<std::size_t>(p)] =
            meshes[static_cast<std::size_t>(p)]->Connect(addrs);
      });
    }
  }
  for (const Status& s : connected) MPCACHE_RETURN_IF_ERROR(s);
  return meshes;
}

// CPU seconds used so far by every thread of this process (the parties and their threads).
double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Close() waits for the peers' CLOSE: all at once.
void CloseAll(std::vector<std::unique_ptr<TlsMesh>>& meshes) {
  std::vector<std::jthread> closers;
  closers.reserve(meshes.size());
  for (auto& m : meshes) closers.emplace_back([&m] { (void)m->Close(); });
}

// One round at party `self`: send `out` to every peer, then receive as much from each.
Status Round(TlsMesh& m, std::vector<std::uint8_t>& out, std::vector<std::uint8_t>& in) {
  for (PartyId q = 0; q < m.num_parties(); ++q) {
    if (q != m.self()) MPCACHE_RETURN_IF_ERROR(m.Send(q, out));
  }
  MPCACHE_RETURN_IF_ERROR(m.Flush());
  for (PartyId q = 0; q < m.num_parties(); ++q) {
    if (q != m.self()) MPCACHE_RETURN_IF_ERROR(m.Recv(q, in));
  }
  out[0] = static_cast<std::uint8_t>(out[0] + in[0]);  // each round depends on the last
  return Status::Ok();
}

void BM_MeshRound(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto meshes = StartMeshes(3);
  if (!meshes.ok()) return state.SkipWithError(meshes.error().ToString().c_str());
  // The peers run exactly as many rounds as the timed loop below.
  const auto rounds = static_cast<std::int64_t>(state.max_iterations);
  std::vector<Status> peer_status(3);
  std::vector<std::jthread> peers;
  for (PartyId p = 1; p < 3; ++p) {
    peers.emplace_back([&, p] {
      auto& m = *(*meshes)[static_cast<std::size_t>(p)];
      std::vector<std::uint8_t> out(bytes, 1), in(bytes);
      for (std::int64_t i = 0; i < rounds; ++i) {
        if (Status s = Round(m, out, in); !s.ok()) {
          peer_status[static_cast<std::size_t>(p)] = s;
          return;
        }
      }
    });
  }
  auto& m0 = *(*meshes)[0];
  std::vector<std::uint8_t> out(bytes, 1), in(bytes);
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    if (Status s = Round(m0, out, in); !s.ok()) {
      state.SkipWithError(s.error().ToString().c_str());
      break;
    }
  }
  peers.clear();  // joined
  // CPU of all three parties per round: what the round costs the machine, whatever its load.
  state.counters["cpu_us_per_round"] =
      1e6 * (ProcessCpuSeconds() - cpu0) / static_cast<double>(std::max<std::int64_t>(rounds, 1));
  for (const Status& s : peer_status) {
    if (!s.ok()) state.SkipWithError(s.error().ToString().c_str());
  }
  CloseAll(*meshes);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(2 * bytes));
}
BENCHMARK(BM_MeshRound)
    ->Arg(8)
    ->Arg(4096)
    ->Arg(65536)
    ->Arg(1 << 20)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_MeshPingPong(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto meshes = StartMeshes(2);
  if (!meshes.ok()) return state.SkipWithError(meshes.error().ToString().c_str());
  const auto rounds = static_cast<std::int64_t>(state.max_iterations);
  Status echo_status;
  std::jthread echo([&] {
    auto& m = *(*meshes)[1];
    std::vector<std::uint8_t> buf(bytes);
    for (std::int64_t i = 0; i < rounds; ++i) {
      echo_status = m.Recv(0, buf);
      if (echo_status.ok()) echo_status = m.Send(0, buf);
      if (echo_status.ok()) echo_status = m.Flush();
      if (!echo_status.ok()) return;
    }
  });
  auto& m0 = *(*meshes)[0];
  std::vector<std::uint8_t> buf(bytes, 3);
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    Status s = m0.Send(1, buf);
    if (s.ok()) s = m0.Recv(1, buf);
    if (!s.ok()) {
      state.SkipWithError(s.error().ToString().c_str());
      break;
    }
  }
  echo.join();
  state.counters["cpu_us_per_round"] =
      1e6 * (ProcessCpuSeconds() - cpu0) / static_cast<double>(std::max<std::int64_t>(rounds, 1));
  if (!echo_status.ok()) state.SkipWithError(echo_status.error().ToString().c_str());
  CloseAll(*meshes);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_MeshPingPong)->Arg(8)->Arg(65536)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
