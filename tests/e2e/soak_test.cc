// The soak (issue 15): MPCACHE_SOAK_RUNS (default 1000) sequential private generations
// against one set of running daemons, with every daemon's resident memory (VmRSS) and open
// descriptors (/proc/PID/fd) sampled every MPCACHE_SOAK_EVERY runs (default 50). Every
// generation must succeed and continue the golden story; after the warm-up (the first
// sample), memory must stay flat — it may not grow by more than 16 MB or 10% of the
// warm-up figure, whichever is larger, in any daemon — and the descriptor count of every
// daemon must come back to its warm-up value. Prints the samples as a Markdown table
// (docs/reliability.md records a run). Label heavy: a thousand runs take minutes.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/cluster.h"
#include "golden/golden_texts.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// VmRSS of a process in KiB (-1 if unreadable).
long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// Open descriptors of a process (-1 if unreadable).
int OpenFds(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

struct Sample {
  int run = 0;
  double seconds = 0;
  long rss[4] = {};
  int fds[4] = {};
};

TEST(Soak, ThousandGenerationsWithFlatMemoryAndNoDescriptorLeak) {
  const int runs = EnvInt("MPCACHE_SOAK_RUNS", 1000);
  const int every = EnvInt("MPCACHE_SOAK_EVERY", 50);
  Cluster c(ClusterOptions{.recv_ms = 8000});
  ASSERT_TRUE(c.StartAll()) << c.dir();
  const auto pid = [&](int d) { return d == 3 ? c.dealer()->pid() : c.party(d)->pid(); };
  std::vector<Sample> samples;
  const auto t0 = std::chrono::steady_clock::now();
  int failed = 0;
  for (int run = 1; run <= runs; ++run) {
    const std::string out = c.dir() + "/soak.out", err = c.dir() + "/soak.err";
    Process client({MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(), "--prompt",
                    "Once", "--max-tokens", "2"},
                   out, err);
    const std::optional<int> code = client.Wait(60s);
    if (code != 0 || !golden::ContinuesTheGoldenStory(ReadFile(out), "Once")) {
      ADD_FAILURE() << "run " << run << ": exit " << (code ? *code : -1) << ": " << ReadFile(err)
                    << ReadFile(out);
      if (++failed >= 3) break;
    }
    if (run == 1 || run % every == 0 || run == runs) {
      std::this_thread::sleep_for(300ms);  // the daemons close the request's links behind it
      Sample s;
      s.run = run;
      s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (int d = 0; d < 4; ++d) {
        s.rss[d] = RssKiB(pid(d));
        s.fds[d] = OpenFds(pid(d));
      }
      samples.push_back(s);
    }
  }
  ASSERT_GE(samples.size(), 2u);
  std::printf(
      "| run | elapsed (s) | RSS party0/1/2/dealer (MB) | open fds party0/1/2/dealer |\n"
      "|---|---|---|---|\n");
  for (const Sample& s : samples) {
    std::printf("| %d | %.0f | %.1f / %.1f / %.1f / %.1f | %d / %d / %d / %d |\n", s.run, s.seconds,
                s.rss[0] / 1024.0, s.rss[1] / 1024.0, s.rss[2] / 1024.0, s.rss[3] / 1024.0,
                s.fds[0], s.fds[1], s.fds[2], s.fds[3]);
  }
  // Warm-up: the sample after the first `every` runs (allocator pools and caches filled).
  const Sample& warm = samples[std::min<std::size_t>(1, samples.size() - 1)];
  const Sample& last = samples.back();
  for (int d = 0; d < 4; ++d) {
    const long allowed = std::max<long>(16L * 1024, warm.rss[d] / 10);
    long peak = 0;
    for (const Sample& s : samples) {
      if (s.run >= warm.run) peak = std::max(peak, s.rss[d]);
    }
    EXPECT_LE(peak - warm.rss[d], allowed)
        << "daemon " << d << " grew from " << warm.rss[d] << " KiB to " << peak << " KiB";
    int fds = last.fds[d];
    for (int i = 0; i < 50 && fds != warm.fds[d]; ++i) {  // a close may still be under way
      std::this_thread::sleep_for(100ms);
      fds = OpenFds(pid(d));
    }
    EXPECT_EQ(fds, warm.fds[d]) << "daemon " << d << " leaks descriptors";
  }
  std::printf("soak: %d generations, %d failed, %.1f s per generation\n", runs, failed,
              last.seconds / runs);
}

}  // namespace
}  // namespace mpcache::e2e
