#include "e2e/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>

namespace mpcache::e2e {

bool Netns::Run(const std::string& args) {
  const std::string cmd =
      std::string(MPCACHE_NETNS_SH) + " " + args + " --prefix " + prefix_ + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

Netns::Netns() {
  prefix_ = std::to_string(getpid() % 10000000);
  prefix_.insert(0, 1, 't');  // (not "t" + ...: GCC 12's -Wrestrict false positive)
  if (getuid() != 0) {
    error_ = "network namespaces need root (CAP_NET_ADMIN)";
    return;
  }
  if (!Run("up")) {
    error_ = std::string(MPCACHE_NETNS_SH) + " up --prefix " + prefix_ + " failed";
    return;
  }
  home_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  const int client = open(("/run/netns/" + prefix_ + "-client").c_str(), O_RDONLY | O_CLOEXEC);
  if (home_ < 0 || client < 0 || setns(client, CLONE_NEWNET) != 0) {
    error_ = "could not join the namespace " + prefix_ + "-client";
    if (client >= 0) close(client);
    return;
  }
  close(client);
  ok_ = true;
}

Netns::~Netns() {
  if (home_ >= 0) {
    (void)setns(home_, CLONE_NEWNET);
    close(home_);
  }
  Run("down");
}

bool Netns::Link(const std::string& host, bool up) {
  return Run("link " + host + (up ? " up" : " down"));
}

bool Netns::Shape(const std::string& host, const std::string& rate) {
  return Run("shape " + host + " " + rate);
}

}  // namespace mpcache::e2e
