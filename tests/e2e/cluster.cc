#include "e2e/cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace mpcache::e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

Process::Process(std::vector<std::string> argv, const std::string& stdout_path,
                 const std::string& stderr_path) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    // Dies with the test: a test killed by CTest's timeout (or crashed) leaves no daemon
    // behind. (Kept across exec, also through `ip netns exec`.)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    execv(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() {
  if (running()) {
    kill(pid_, SIGKILL);
    Wait(5s);
  }
}

bool Process::running() {
  if (pid_ <= 0 || status_) return false;
  int st = 0;
  const pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return r == 0;
}

void Process::Signal(int sig) {
  if (running()) kill(pid_, sig);
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() > end) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
  return status_;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A port below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768..60999
// here), so that no outgoing connection of a concurrently running test can be given it
// between this check and the daemon's bind (that race failed CI-like runs with "Address
// already in use" and "connection refused"). Random in [12000, 32000), bindable now, and
// never handed out twice by this process.
int FreePort() {
  static std::mutex mu;
  static std::set<int> given;
  static std::mt19937 gen(std::random_device{}());
  std::lock_guard lock(mu);
  std::uniform_int_distribution<int> pick(12000, 31999);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = pick(gen);
    if (given.count(port) != 0) continue;
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) break;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(s);
    if (ok) {
      given.insert(port);
      return port;
    }
  }
  return 0;  // the daemon then fails to start, naming the address
}

std::vector<std::string> ErrorLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("error: ", 0) == 0) lines.push_back(line);
  }
  return lines;
}

double MetricValue(const std::string& page, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const std::size_t at = page.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(page.c_str() + at + key.size(), nullptr);
}

std::string HttpGet(int port, const std::string& path) {
  return HttpGet("127.0.0.1", port, path);
}

std::string HttpGet(const std::string& host, int port, const std::string& path) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    close(s);
    return "";
  }
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(s);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  (void)!write(s, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(s, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(s);
  return out;
}

Cluster::Cluster(const ClusterOptions& options) {
  char tmpl[] = "/tmp/mpcache-e2e-XXXXXX";
  if (!mkdtemp(tmpl)) return;
  dir_ = tmpl;
  const std::string certs = dir_ + "/certs";
  if (std::system(
          (std::string(MPCACHE_GEN_CERTS) + " --rogue " + certs + " >/dev/null 2>&1").c_str()) !=
      0) {
    return;
  }
  const char* env = std::getenv("MPCACHE_MODEL_DIR");
  const std::string models = env ? env : "../shared/models";
  for (int i = 0; i < 3; ++i) {
    mesh_.push_back(FreePort());
    client_.push_back(FreePort());
    metrics_.push_back(FreePort());
  }
  dealer_port_ = FreePort();
  metrics_.push_back(FreePort());
  netns_ = options.netns;
  for (int i = 0; i < 4; ++i) {
    hosts_.push_back(netns_.empty() ? "127.0.0.1" : options.subnet + "." + std::to_string(i + 1));
  }
  const auto on = [&](int d, int p) {
    return hosts_[static_cast<std::size_t>(d)] + ":" + std::to_string(p);
  };
  const std::string timeouts =
      "timeouts:\n  connect_ms: " + std::to_string(options.connect_ms) +
      "\n  handshake_ms: 5000\n  recv_ms: " + std::to_string(options.recv_ms) + "\n";
  if (options.private_weights &&
      std::system((std::string(MPCACHE_MODEL_BIN) + " share --model " + models +
                   "/stories260K.bin --parties 3 --out " + dir_ + "/shares >/dev/null 2>&1")
                      .c_str()) != 0) {
    return;
  }
  if (options.private_weights && options.other_split_party >= 0 &&
      std::system((std::string(MPCACHE_MODEL_BIN) + " share --model " + models +
                   "/stories260K.bin --parties 3 --out " + dir_ + "/shares2 >/dev/null 2>&1")
                      .c_str()) != 0) {
    return;
  }
  for (int i = 0; i < 3; ++i) {
    const std::string shares = i == options.other_split_party ? "/shares2" : "/shares";
    const std::string checkpoint = options.private_weights
                                       ? dir_ + shares + "/party" + std::to_string(i) + ".mpcw"
                                       : models + "/stories260K.bin";
    std::ofstream f(dir_ + "/party" + std::to_string(i) + ".yaml");
    f << "party_id: " << i
      << "\nsecurity: malicious\nweights: " << (options.private_weights ? "private" : "public")
      << "\n"
      << "network:\n  parties: [" << on(0, mesh_[0]) << ", " << on(1, mesh_[1]) << ", "
      << on(2, mesh_[2]) << "]\n  dealer: " << on(3, dealer_port_)
      << "\n  client_listen: " << on(i, client_[static_cast<std::size_t>(i)]) << "\n"
      << timeouts << "tls:\n  cert: certs/party" << i << ".crt\n  key: certs/party" << i
      << ".key\n  ca: certs/ca.crt\n"
      << "model:\n  checkpoint: " << checkpoint << "\n  tokenizer: " << models
      << "/tok512.bin\n  frac_bits: " << (options.private_weights ? 18 : 16) << "\nmpcache:\n"
      << options.mpcache
      << "logging:\n  level: info\nmetrics:\n  port: " << metrics_[static_cast<std::size_t>(i)]
      << "\n"
      << options.party_yaml
      << (static_cast<std::size_t>(i) < options.party_yaml_of.size()
              ? options.party_yaml_of[static_cast<std::size_t>(i)]
              : std::string());
  }
  {
    std::ofstream f(dir_ + "/dealer.yaml");
    f << "security: malicious\nnetwork:\n  listen: " << on(3, dealer_port_) << "\n"
      << timeouts << "tls:\n  cert: certs/dealer.crt\n  key: certs/dealer.key\n  ca: certs/ca.crt\n"
      << "logging:\n  level: info\nmetrics:\n  port: " << metrics_[3] << "\n";
  }
  {
    std::ofstream f(dir_ + "/client.yaml");
    f << "network:\n  parties: [" << on(0, client_[0]) << ", " << on(1, client_[1]) << ", "
      << on(2, client_[2]) << "]\n"
      << timeouts << "tls:\n  cert: certs/client.crt\n  key: certs/client.key\n  ca: certs/ca.crt\n"
      << "model:\n  tokenizer: " << models << "/tok512.bin\n";
  }
  parties_.resize(3);
  log_offset_.assign(4, 0);
  ok_ = true;
}

Cluster::~Cluster() {
  for (auto& p : parties_) p.reset();
  dealer_.reset();
  if (!dir_.empty() && !std::getenv("MPCACHE_E2E_KEEP")) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

bool Cluster::WaitReady(const std::string& name, std::size_t from) {
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end) {
    const std::string log = Log(name);
    if (log.size() > from && log.find("ready", from) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

bool Cluster::StartDealer() {
  return StartDealerFrom(MPCACHE_DEALER_BIN, {});
}

bool Cluster::StartDealerFrom(const std::string& binary, std::vector<std::string> extra_args) {
  dealer_.reset();  // a running one first: its port must be free for the new one
  const std::size_t from = Log("dealer").size();
  std::vector<std::string> argv{binary, "--config", dir_ + "/dealer.yaml"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  dealer_ =
      std::make_unique<Process>(InNetns(3, std::move(argv)), "/dev/null", dir_ + "/dealer.log");
  return WaitReady("dealer", from);
}

bool Cluster::StartParty(int i) {
  return StartPartyFrom(i, MPCACHE_PARTY_BIN, {});
}

bool Cluster::StartPartyFrom(int i, const std::string& binary,
                             std::vector<std::string> extra_args) {
  const std::string name = "party" + std::to_string(i);
  auto& slot = parties_[static_cast<std::size_t>(i)];
  slot.reset();  // a running one first: its ports must be free for the new one
  const std::size_t from = Log(name).size();
  std::vector<std::string> argv{binary, "--config", dir_ + "/" + name + ".yaml"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  slot = std::make_unique<Process>(InNetns(i, std::move(argv)), "/dev/null",
                                   dir_ + "/" + name + ".log");
  return WaitReady(name, from);
}

std::vector<std::string> Cluster::InNetns(int i, std::vector<std::string> argv) const {
  if (netns_.empty()) return argv;
  const std::string ns =
      netns_ + "-" + (i == 3 ? std::string("dealer") : "party" + std::to_string(i));
  std::vector<std::string> out{"/usr/sbin/ip", "netns", "exec", ns};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool Cluster::StartAll() {
  if (!ok_ || !StartDealer()) return false;
  for (int i = 0; i < 3; ++i) {
    if (!StartParty(i)) return false;
  }
  return true;
}

void Cluster::KillParty(int i) {
  auto& p = parties_[static_cast<std::size_t>(i)];
  if (p) {
    p->Signal(SIGKILL);
    p->Wait(5s);
  }
}

}  // namespace mpcache::e2e
