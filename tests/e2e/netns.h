// A deploy/netns/netns.sh topology for one test: five network namespaces (three parties,
// the dealer, the client) on a bridge, made in the constructor under a prefix unique to
// this process, and the calling thread moved into the client's namespace (so the test and
// every process it starts from this thread after that are the fifth host). The destructor
// moves the thread back and removes every namespace, whatever happened in the test.
#pragma once

#include <string>

namespace mpcache::e2e {

class Netns {
 public:
  Netns();
  ~Netns();
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& prefix() const { return prefix_; }
  // Cut (false) or restore (true) the link of host "party0".."party2", "dealer", "client".
  bool Link(const std::string& host, bool up);
  // Rate-limit a host's link (tc tbf), e.g. "20mbit"; "none" removes the limit.
  bool Shape(const std::string& host, const std::string& rate);

 private:
  bool Run(const std::string& args);
  std::string prefix_;
  int home_ = -1;  // the namespace this thread came from
  bool ok_ = false;
  std::string error_;
};

}  // namespace mpcache::e2e
