// mpcache-party-faulty and mpcache-dealer-faulty: TEST ONLY. mpcache-party / mpcache-dealer
// that fail once, at a chosen point of their first request, for the fault-injection harness
// (tests/e2e/fault_test.cc, issue 15). Built only with the tests; the production binaries
// have no such mode (daemon/test_hooks.h is their only seam).
//
// The point is chosen by protocol position, not by time, so a failing case reproduces:
//   party:  --after-position P  armed once position P's forward pass (and, from the last
//                               prompt position on, its classifier) ran;
//           --at open|check     then the --index-th opening of --domain (0 = the first), or
//                               round --index of the first MAC check of --domain;
//   dealer: --party Q --answer N  before the dealer sends its N-th answer (from 1) to party Q.
// The failure (--fault): kill (SIGKILL to itself), crash (abort(), no core file) or stall
// (SIGSTOP to itself: the test resumes it with SIGCONT). A process fails at most once; a
// stalled one that was resumed serves every later request honestly. Each step is logged to
// stderr with the prefix "TEST FAULT:".
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "common/config.h"
#include "common/guarded_main.h"
#include "daemon/daemon_main.h"
#include "mpc/adversary.h"

#if MPCACHE_FAULTY_DEALER
#include "daemon/dealer_service.h"
#else
#include "daemon/party_service.h"
#endif

namespace {

enum class Fault { kKill, kCrash, kStall };

// Logs the point, then fails as asked. Returns only after a stall was resumed.
void Fail(Fault fault, const std::string& where) {
  const char* what = fault == Fault::kKill ? "kill" : fault == Fault::kCrash ? "crash" : "stall";
  std::fprintf(stderr, "TEST FAULT: %s %s\n", what, where.c_str());
  std::fflush(stderr);
  switch (fault) {
    case Fault::kKill:
      std::raise(SIGKILL);
      break;
    case Fault::kCrash:
      prctl(PR_SET_DUMPABLE, 0);  // no core file in the test's folder
      std::abort();
    case Fault::kStall:
      std::raise(SIGSTOP);
      std::fprintf(stderr, "TEST FAULT: resumed\n");
      std::fflush(stderr);
      break;
  }
}

#if !MPCACHE_FAULTY_DEALER
using mpcache::mpc::Domain;

struct PartyPoint {
  int after_position = 0;
  bool at_check = false;
  Domain domain = Domain::kArith;
  int index = 0;
};

class PartyFault final : public mpcache::mpc::Adversary {
 public:
  PartyFault(PartyPoint point, Fault fault) : point_(point), fault_(fault) {}

  void OnOpen(Domain d, std::uint64_t index, std::size_t n,
              std::span<std::uint8_t> /*outgoing*/) override {
    if (done_ || point_.at_check || d != point_.domain) return;
    if (seen_++ != point_.index) return;
    done_ = true;
    Fail(fault_, std::string(d == Domain::kArith ? "arithmetic" : "binary") + " opening " +
                     std::to_string(index) + " (" + std::to_string(n) + " values)");
  }
  void OnCheckMessage(Domain d, int round, std::span<std::uint8_t> /*msg*/) override {
    if (done_ || !point_.at_check || d != point_.domain || round != point_.index) return;
    done_ = true;
    Fail(fault_, std::string(d == Domain::kArith ? "arithmetic" : "binary") + " MAC check round " +
                     std::to_string(round));
  }

 private:
  PartyPoint point_;
  Fault fault_;
  int seen_ = 0;
  bool done_ = false;
};
#endif

}  // namespace

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
#if MPCACHE_FAULTY_DEALER
    CLI::App app{
        "mpcache-dealer-faulty: TEST ONLY. mpcache-dealer that fails once, before a "
        "chosen answer (tests/e2e/fault_test.cc)."};
#else
    CLI::App app{
        "mpcache-party-faulty: TEST ONLY. mpcache-party that fails once, at a chosen "
        "opening or MAC-check round (tests/e2e/fault_test.cc)."};
#endif
    std::string config_path, fault_name;
    app.add_option("--config", config_path, "The daemon's YAML")->required();
    app.add_option("--fault", fault_name, "kill, crash or stall")
        ->required()
        ->check(CLI::IsMember({"kill", "crash", "stall"}));
#if MPCACHE_FAULTY_DEALER
    int party = 0;
    std::uint64_t answer = 1;
    app.add_option("--party", party, "Fail on the connection of this party")
        ->required()
        ->check(CLI::Range(0, 2));
    app.add_option("--answer", answer, "Before this answer to it (1 = the first)")
        ->required()
        ->check(CLI::PositiveNumber);
#else
    PartyPoint point;
    std::string at = "open", domain = "arith";
    app.add_option("--after-position", point.after_position, "Arm once this position ran")
        ->required()
        ->check(CLI::NonNegativeNumber);
    app.add_option("--at", at, "open or check")->check(CLI::IsMember({"open", "check"}));
    app.add_option("--domain", domain, "arith or binary")
        ->check(CLI::IsMember({"arith", "binary"}));
    app.add_option("--index", point.index, "Which opening, or which MAC-check round")
        ->check(CLI::NonNegativeNumber);
#endif
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    const Fault fault = fault_name == "kill"    ? Fault::kKill
                        : fault_name == "crash" ? Fault::kCrash
                                                : Fault::kStall;
#if MPCACHE_FAULTY_DEALER
    std::atomic<bool> fired{false};  // the hook runs on every party connection's thread
    mpcache::daemon::DealerHook hook = [&, party, answer](std::uint64_t session, int p,
                                                          std::uint64_t n) {
      if (p != party || n != answer || fired.exchange(true)) return;
      Fail(fault, "before answer " + std::to_string(n) + " to party " + std::to_string(p) +
                      " in session " + std::to_string(session));
    };
    return mpcache::daemon::RunDaemon<mpcache::daemon::DealerService>(
        mpcache::config::LoadDealerConfig(config_path),
        [](const mpcache::config::DealerConfig&) { return std::string("dealer-faulty"); },
        std::move(hook));
#else
    point.at_check = at == "check";
    point.domain = domain == "binary" ? Domain::kBinary : Domain::kArith;
    PartyFault adversary(point, fault);
    bool armed = false;
    mpcache::daemon::AdversaryHook hook = [&](std::uint64_t session,
                                              int pos) -> mpcache::mpc::Adversary* {
      if (armed || pos != point.after_position) return nullptr;
      armed = true;  // the first request that gets here only
      std::fprintf(stderr, "TEST FAULT: armed in session %016llx after position %d\n",
                   static_cast<unsigned long long>(session), pos);
      std::fflush(stderr);
      return &adversary;
    };
    return mpcache::daemon::RunDaemon<mpcache::daemon::PartyService>(
        mpcache::config::LoadPartyConfig(config_path),
        [](const mpcache::config::PartyConfig& c) {
          return "party" + std::to_string(c.party_id) + "-faulty";
        },
        std::move(hook));
#endif
  });
}
