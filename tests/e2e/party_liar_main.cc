// mpcache-party-liar: TEST ONLY. mpcache-party with one deviation, for the lying-party
// end-to-end test (tests/e2e/lying_party_test.cc, issue 10 §1). Built only with the tests;
// the production binary has no such mode (daemon/test_hooks.h is its only seam).
//
// In the first generation request that reaches position --lie-after-position, once that
// position's forward pass ran, this party lies in the --lie-opening-th opening of the
// chosen domain counted from there (arithmetic: of those of --lie-width bytes per value, if
// given): arithmetic, it adds 2^--lie-bit to the share it sends for value --lie-element (mod
// the opening's size); binary, it flips opened bit --lie-element. The lie is consistent (the same
// bytes go to both peers, and this party's own view includes it), and the liar then runs every
// check honestly with that view — the strongest single-opening attack the MAC check must catch
// (docs/mpc-core.md, "MAC check soundness"). Every later request is served honestly. Each step is
// logged to stderr with the prefix "TEST LIAR:".
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <span>
#include <string>

#include "common/config.h"
#include "common/guarded_main.h"
#include "daemon/daemon_main.h"
#include "daemon/party_service.h"
#include "mpc/adversary.h"
#include "unit/mpc/lie.h"

namespace {

using mpcache::mpc::Domain;

struct Lie {
  Domain domain = Domain::kArith;
  int after_position = 0;
  int opening = 0;
  std::uint64_t element = 0;
  int bit = 63;
  std::size_t width = 0;  // arithmetic: count only openings of this many bytes a value (0: any)
};

class Liar final : public mpcache::mpc::Adversary {
 public:
  explicit Liar(Lie lie) : lie_(lie) {}

  void OnOpen(Domain d, std::uint64_t index, std::size_t n, std::span<std::uint8_t> out) override {
    if (lied_ || d != lie_.domain || n == 0) return;
    if (d == Domain::kArith && lie_.width != 0 && out.size() != n * lie_.width) return;
    if (seen_++ != lie_.opening) return;
    const std::size_t e = static_cast<std::size_t>(lie_.element % n);
    if (d == Domain::kBinary) {
      out[e / 8] ^= static_cast<std::uint8_t>(1u << (e % 8));
      std::fprintf(stderr,
                   "TEST LIAR: lied in binary opening %llu of the request (%zu bits): flipped "
                   "opened bit %zu\n",
                   static_cast<unsigned long long>(index), n, e);
    } else {
      // Add 2^bit to value e's little-endian share (width bytes), with carry.
      const std::size_t width = out.size() / n;
      const int bit = mpcache::mpc::AddPowerOfTwo(out.subspan(e * width, width), lie_.bit);
      std::fprintf(stderr,
                   "TEST LIAR: lied in arithmetic opening %llu of the request (%zu values of %zu "
                   "bytes): added 2^%d to value %zu\n",
                   static_cast<unsigned long long>(index), n, width, bit, e);
    }
    std::fflush(stderr);
    lied_ = true;
  }

 private:
  Lie lie_;
  int seen_ = 0;
  bool lied_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    CLI::App app{
        "mpcache-party-liar: TEST ONLY. mpcache-party that lies consistently in one opening of "
        "its first generation request (tests/e2e/lying_party_test.cc)."};
    std::string config_path, domain = "arith";
    Lie lie;
    app.add_option("--config", config_path, "Party YAML")->required();
    app.add_option("--lie-after-position", lie.after_position,
                   "Arm the lie once this position's forward pass ran (0 = first position)")
        ->required()
        ->check(CLI::NonNegativeNumber);
    app.add_option("--lie-domain", domain, "arith or binary")
        ->check(CLI::IsMember({"arith", "binary"}));
    app.add_option("--lie-opening", lie.opening,
                   "Lie in this opening of the domain after arming (0 = the first)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--lie-element", lie.element, "The value (bit) of that opening lied about");
    app.add_option("--lie-bit", lie.bit, "Arithmetic: add 2^bit to the share sent")
        ->check(CLI::Range(0, 127));
    app.add_option("--lie-width", lie.width,
                   "Arithmetic: count only openings of this many bytes per value (14: whole-value "
                   "malicious openings; 0: any)");
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    lie.domain = domain == "binary" ? Domain::kBinary : Domain::kArith;
    Liar liar(lie);
    bool armed = false;
    mpcache::daemon::AdversaryHook hook = [&](std::uint64_t session,
                                              int pos) -> mpcache::mpc::Adversary* {
      if (armed || pos != lie.after_position) return nullptr;
      armed = true;  // this request only: later requests are served honestly
      std::fprintf(stderr, "TEST LIAR: armed in session %016llx after position %d\n",
                   static_cast<unsigned long long>(session), pos);
      std::fflush(stderr);
      return &liar;
    };
    return mpcache::daemon::RunDaemon<mpcache::daemon::PartyService>(
        mpcache::config::LoadPartyConfig(config_path),
        [](const mpcache::config::PartyConfig& c) {
          return "party" + std::to_string(c.party_id) + "-liar";
        },
        std::move(hook));
  });
}
