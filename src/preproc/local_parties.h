// Three parties in one process: an in-memory mesh, the in-process arithmetic and binary
// dealers (on demand), and per run each party's contexts. The one harness of every
// in-process run: the in-process generation (infer/in_process.h), the bench commands, the
// Google benchmarks and the unit tests.
//
// Seeds: the arithmetic dealer's master is `dealer_seed`, the binary dealer's `bit_seed`;
// party p's arithmetic context takes DeriveSeed(local_seed, 100 + p) and its binary context
// DeriveSeed(local_seed, 200 + p) (OsSeed() in production; tests and benchmarks fix them).
// Per run, any party's preprocessing (either domain) or channel may be replaced (a tamper
// test's wrapper, a recording one).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "mpc/compare/binary_context.h"
#include "mpc/context.h"
#include "net/mem_mesh.h"
#include "net/run_parties.h"
#include "preproc/bit_dealer.h"
#include "preproc/in_process_dealer.h"

namespace mpcache::preproc {

struct LocalPartiesOptions {
  Seed dealer_seed = TestSeed(1);
  Seed bit_seed = TestSeed(2);
  Seed local_seed = TestSeed(3);
  int threads = 1;  // worker threads per party for local products
  mpc::OpenStyle open_style = mpc::OpenStyle::kAllToAll;  // ContextOptions::open_style
  std::chrono::milliseconds recv_timeout{std::chrono::seconds(600)};
  bool on_demand = true;  // the dealers make batches when a party's pool runs short
  BatchLimits limits;
  // Optional: see what the dealers hand out (tests pinning the traffic).
  BatchObserver observe_batches;
  BitWordsObserver observe_bits;
};

// The seeds every in-process run derives from one number (reproducible runs).
inline LocalPartiesOptions LocalPartiesFromSeed(std::uint64_t seed) {
  LocalPartiesOptions o;
  o.dealer_seed = DeriveSeed(TestSeed(seed), 1);
  o.bit_seed = DeriveSeed(TestSeed(seed), 2);
  o.local_seed = TestSeed(seed);
  return o;
}

template <typename P>
class LocalParties {
 public:
  static constexpr int kParties = 3;

  static Result<std::unique_ptr<LocalParties>> Create(const LocalPartiesOptions& o = {}) {
    std::unique_ptr<LocalParties> lp(new LocalParties(o));
    MPCACHE_ASSIGN_OR_RETURN(lp->mesh_,
                             net::MemMesh::Create(kParties, {.recv_timeout = o.recv_timeout}));
    MPCACHE_ASSIGN_OR_RETURN(
        lp->dealer_, InProcessDealer<P>::Create(o.dealer_seed, kParties, o.on_demand, o.limits));
    MPCACHE_ASSIGN_OR_RETURN(lp->bits_, InProcessBitDealer<P>::Create(
                                            o.bit_seed, lp->dealer_->dealer().mac_key(), kParties));
    if (o.observe_batches) lp->dealer_->set_observer(o.observe_batches);
    if (o.observe_bits) lp->bits_->set_observer(o.observe_bits);
    return lp;
  }

  net::MemMesh& mesh() { return *mesh_; }
  InProcessDealer<P>& dealer() { return *dealer_; }
  InProcessBitDealer<P>& bit_dealer() { return *bits_; }
  const LocalPartiesOptions& options() const { return options_; }

  // Replacements for one run, indexed by party (null or missing: the dealer's store, the
  // mesh's channel).
  struct Overrides {
    std::vector<mpc::Preprocessing<P>*> prep{};
    std::vector<mpc::BitPreprocessing<P>*> bits{};
    std::vector<net::Channel*> channel{};
    // Run first in each party's thread, before its contexts exist (e.g. a replayed
    // preprocessing script fetched up front); an error stops that party.
    std::function<Status(int party)> before{};
  };

  // f(mpc::Context<P>&) at every party, each in its own thread; the results in party order.
  template <typename F>
  auto RunArith(F f, const Overrides& o = {}) {
    using R = decltype(f(std::declval<mpc::Context<P>&>()));
    return net::RunParties(*mesh_, [&](net::Channel& inner) -> R {
      const int p = inner.self();
      auto ctx = MakeContext(inner, p, o);
      if (!ctx.ok()) return ctx.error();
      return f(**ctx);
    });
  }

  // f(mpc::BinaryContext<P>&) at every party (its arithmetic context is bctx.arith()).
  template <typename F>
  auto Run(F f, const Overrides& o = {}) {
    using R = decltype(f(std::declval<mpc::BinaryContext<P>&>()));
    return net::RunParties(*mesh_, [&](net::Channel& inner) -> R {
      const int p = inner.self();
      auto ctx = MakeContext(inner, p, o);
      if (!ctx.ok()) return ctx.error();
      const auto i = static_cast<std::size_t>(p);
      mpc::BitPreprocessing<P>& bp =
          i < o.bits.size() && o.bits[i] != nullptr ? *o.bits[i] : bits_->store(p);
      auto bctx = mpc::BinaryContext<P>::Create(
          **ctx, bp, DeriveSeed(options_.local_seed, 200 + static_cast<std::uint64_t>(p)));
      if (!bctx.ok()) return bctx.error();
      return f(**bctx);
    });
  }

 private:
  explicit LocalParties(const LocalPartiesOptions& o) : options_(o) {}

  Result<std::unique_ptr<mpc::Context<P>>> MakeContext(net::Channel& inner, int p,
                                                       const Overrides& o) {
    if (o.before) MPCACHE_RETURN_IF_ERROR(o.before(p));
    const auto i = static_cast<std::size_t>(p);
    net::Channel& ch = i < o.channel.size() && o.channel[i] != nullptr ? *o.channel[i] : inner;
    mpc::Preprocessing<P>& prep =
        i < o.prep.size() && o.prep[i] != nullptr ? *o.prep[i] : dealer_->store(p);
    mpc::ContextOptions copts;
    copts.threads = options_.threads;
    copts.open_style = options_.open_style;
    return mpc::Context<P>::Create(
        ch, prep, DeriveSeed(options_.local_seed, 100 + static_cast<std::uint64_t>(p)), copts);
  }

  LocalPartiesOptions options_;
  std::unique_ptr<net::MemMesh> mesh_;
  std::unique_ptr<InProcessDealer<P>> dealer_;
  std::unique_ptr<InProcessBitDealer<P>> bits_;
};

}  // namespace mpcache::preproc
