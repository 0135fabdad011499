// Test helpers for multi-process runs: a RAII process guard (SIGKILL + reap on scope exit,
// whatever happens in the test) and a loopback cluster of three parties and the dealer
// with fresh certificates, configs and free ports in a temporary folder.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mpcache::e2e {

class Process {
 public:
  // Starts argv[0] with stdout/stderr to files (stdout_path may be "/dev/null").
  Process(std::vector<std::string> argv, const std::string& stdout_path,
          const std::string& stderr_path);
  ~Process();  // SIGKILL and reap if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int sig);
  // Waits for the exit; the exit code (128 + signal if killed), or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

std::string ReadFile(const std::string& path);
// The lines of `text` that start with "error: " (what the CLIs print on failure).
std::vector<std::string> ErrorLines(const std::string& text);
// A TCP port nobody listens on right now.
int FreePort();
// GET http://127.0.0.1:port/path; the whole response ("" if unreachable).
std::string HttpGet(int port, const std::string& path);
// GET http://host:port/path (host an IPv4 address).
std::string HttpGet(const std::string& host, int port, const std::string& path);
// The value of an unlabelled sample `name` in a Prometheus text page (-1 if absent).
double MetricValue(const std::string& page, const std::string& name);

struct ClusterOptions {
  // 20 s: a session's first positions wait for the dealer's first batches (since issue 19
  // about 50 MB of comparison corrections per position to the correcting party for
  // stories260K), and the suite runs two tests at once on 2 cores. Tests of stalls and
  // timeouts name their own, shorter, value.
  int recv_ms = 20000;
  int connect_ms = 15000;
  bool private_weights = false;  // share files from mpcache-model share
  // With private weights: this party's file comes from a second `mpcache-model share` run.
  int other_split_party = -1;
  // The parties' `mpcache:` section body (indented two spaces); default: the full cache.
  std::string mpcache = "  cache: full\n";
  // More top-level sections of every party's YAML (e.g. "limits:\n  max_queued_clients: 1\n").
  std::string party_yaml = {};
  // More of party i's YAML alone (index = party; missing: nothing), after party_yaml.
  std::vector<std::string> party_yaml_of = {};
  // A deploy/netns/netns.sh topology (e2e/netns.h): every daemon runs in its own namespace
  // (`ip netns exec <netns>-party0 ...`) at its own address on `subnet`; the test process
  // must have joined <netns>-client. Empty: everything on 127.0.0.1.
  std::string netns = {};
  std::string subnet = "10.77.0";
};

class Cluster {
 public:
  explicit Cluster(const ClusterOptions& options = {});
  ~Cluster();  // processes killed first, then the folder removed

  // Starts (or restarts: a running one is killed first) the dealer / party i and waits
  // until it logs "ready".
  bool StartDealer();
  bool StartParty(int i);
  // Party i from another executable taking the same --config (a test-only party such as
  // mpcache-party-liar), with `extra_args` after the config.
  bool StartPartyFrom(int i, const std::string& binary, std::vector<std::string> extra_args);
  // The dealer from another executable taking the same --config (mpcache-dealer-faulty).
  bool StartDealerFrom(const std::string& binary, std::vector<std::string> extra_args);
  bool StartAll();
  Process* party(int i) { return parties_[static_cast<std::size_t>(i)].get(); }
  Process* dealer() { return dealer_.get(); }
  void KillParty(int i);

  std::string dir() const { return dir_; }
  std::string Log(const std::string& name) const { return ReadFile(dir_ + "/" + name + ".log"); }
  int metrics_port(int i) const { return metrics_[static_cast<std::size_t>(i)]; }  // 3 = dealer
  int client_port(int i) const { return client_[static_cast<std::size_t>(i)]; }
  int dealer_port() const { return dealer_port_; }  // where the dealer listens
  // The address daemon i (3 = dealer) listens on, and GET of its metrics port.
  std::string host(int i) const { return hosts_[static_cast<std::size_t>(i)]; }
  std::string Http(int i, const std::string& path) const {
    return HttpGet(host(i), metrics_port(i), path);
  }
  std::string cert_dir() const { return dir_ + "/certs"; }
  std::string client_config() const { return dir_ + "/client.yaml"; }
  bool ok() const { return ok_; }

 private:
  bool WaitReady(const std::string& log, std::size_t from);
  // argv run in daemon i's namespace when the cluster has one.
  std::vector<std::string> InNetns(int i, std::vector<std::string> argv) const;
  std::string dir_;
  std::string netns_;
  std::vector<std::string> hosts_;
  bool ok_ = false;
  std::vector<int> mesh_, client_, metrics_;
  int dealer_port_ = 0;
  std::unique_ptr<Process> dealer_;
  std::vector<std::unique_ptr<Process>> parties_;
  std::vector<std::size_t> log_offset_;
};

}  // namespace mpcache::e2e
