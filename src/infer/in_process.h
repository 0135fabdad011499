// Three parties, the dealer and the client in one process (tests, `mpcache-bench
// generate`): the parties run GenerationSession<P> over a MemMesh, each in its own thread,
// fed on demand by the in-process dealers (arithmetic and binary); the client is simulated
// by InProcessClient, which alone knows the prompt and sees the generated tokens.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "infer/client_link.h"
#include "infer/session.h"
#include "mpc/context.h"
#include "net/channel.h"
#include "net/comm_stats.h"
#include "preproc/bit_dealer.h"
#include "preproc/in_process_dealer.h"

namespace mpcache::infer {

// The simulated client: shares the prompt tokens as masked one-hots and unmasks released
// tokens. Thread-safe; every party talks to it through its own view (Link(p)).
class InProcessClient {
 public:
  using MaskSource = std::function<Result<std::vector<std::uint64_t>>()>;  // next batch
  // Optional: edits the vector x the client enters at prompt position pos (it sends
  // d = x - r): tests that play a malicious client. Unset: x = onehot(prompt[pos]).
  using InputEdit = std::function<void(int pos, std::vector<std::uint64_t>& x)>;
  InProcessClient(std::vector<int> prompt, int vocab_size, int bos_id, MaskSource masks,
                  int parties = 3, InputEdit edit = {});

  // Sampling: the client's noise, n values at a time (e.g. SamplingNoise::Next per
  // position). Unset: a NoiseInput is refused.
  using NoiseSource = std::function<std::vector<std::uint64_t>(std::size_t n)>;
  void SetNoise(NoiseSource noise) { noise_ = std::move(noise); }

  ClientLink& Link(int party) { return *links_[static_cast<std::size_t>(party)]; }
  // BOS, prompt..., then every released token, in order.
  std::vector<int> Tokens() const;

 private:
  class View;
  Result<std::vector<std::uint64_t>> Masks(std::uint64_t seq);  // under mu_
  Result<std::vector<std::uint64_t>> PromptInput(int pos, std::uint64_t seq, std::size_t n);
  Result<std::vector<std::uint64_t>> NoiseInput(std::uint64_t seq, std::size_t n);
  Result<bool> TokenOutput(int party, int pos, std::uint64_t seq, std::uint64_t masked);

  mutable std::mutex mu_;
  std::vector<int> prompt_;
  int vocab_size_, bos_id_;
  MaskSource source_;
  InputEdit edit_;
  NoiseSource noise_;
  std::map<std::uint64_t, std::vector<std::uint64_t>> noise_inputs_;  // seq -> broadcast d
  std::vector<std::vector<std::uint64_t>> masks_;     // client batches fetched so far
  std::map<int, std::vector<std::uint64_t>> inputs_;  // pos -> broadcast d
  std::map<int, std::uint64_t> outputs_;              // pos -> masked value seen first
  std::map<int, int> released_;                       // pos -> token
  std::vector<std::unique_ptr<ClientLink>> links_;
};

struct InProcessOptions {
  bool private_weights = false;
  // Private weights from `mpcache-model share` files (DIR/party<i>.mpcw) instead of
  // splitting `model` in memory (then `model` only gives the config check).
  std::string share_dir;
  SessionOptions session;
  // Sampling (session.sampling not greedy): the client's --seed for its noise.
  std::uint64_t sampling_seed = 1;
  std::uint64_t seed = 1;  // dealer and local seeds (reproducible runs)
  int threads = 1;         // worker threads per party for local matrix products
  mpc::OpenStyle open_style = mpc::OpenStyle::kAllToAll;  // ContextOptions::open_style
  // Offline first: run once recording every party's preprocessing requests, then run again
  // with fresh dealers (same seeds) that produce ALL of it before the online phase starts,
  // so the reported online figures contain no dealer work (twice the total run time).
  bool preprocess_first = false;
  // Optional: wraps each party's channel (e.g. to record what it receives).
  std::function<net::Channel&(net::Channel& inner, int party)> wrap_channel;
  // Optional: see every batch and comparison item the dealers hand each party (tests that
  // pin the traffic: tests/unit/balancer/transcript_test.cc).
  preproc::BatchObserver observe_batches;
  preproc::BitWordsObserver observe_bits;
  // Optional: the simulated client enters other vectors than one-hots (InProcessClient).
  InProcessClient::InputEdit client_input;
};

struct InProcessResult {
  std::vector<int> tokens;  // BOS, prompt..., generated (what the client reconstructed)
  SessionReport report;     // party 0's
  std::vector<std::map<std::string, net::PhaseCounters>> phases;  // per party
  double load_seconds = 0;             // private weights: input + masking (party 0)
  net::PhaseCounters load;             // its traffic (party 0)
  preproc::OfflineStats offline;       // arithmetic dealer
  std::uint64_t bit_dealer_bytes = 0;  // binary dealer, all parties
  double bit_dealer_seconds = 0;
  double prefetch_seconds = 0;  // preprocess_first: the slowest party's prefetch (offline)
};

template <typename P>
using InProcessHook = std::function<Status(int party, int pos, SecureLlama<P>& engine)>;

// Runs a whole private generation. `model` holds the clear encodings (public weights are
// read from it directly; private weights are split into three shares first).
template <typename P>
Result<InProcessResult> RunInProcess(std::shared_ptr<const RingModel> model,
                                     const std::vector<int>& prompt, int bos_id, int steps,
                                     const InProcessOptions& options,
                                     const InProcessHook<P>& hook = {});

}  // namespace mpcache::infer
