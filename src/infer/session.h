// GenerationSession<P>: one party's side of a private greedy generation — the llama2.c
// generate() loop on secret shares. Prompt tokens come from the client as secret one-hots;
// after the prompt, each position's next token is the secure argmax of the logits (a secret
// one-hot fed straight back as the next input: never opened to any party); its index is
// released to the client alone, after the MAC checks of everything opened so far.
//
// The prompt's one-hots are entered a chunk of rows at a time (kInputChunkValues values)
// and checked to be one-hot under MPC before any is used (infer/input_check.h).
//
// Loop (steps = positions, prompt included, as llama2.c):
//   one_hot = client input of prompt[0]
//   for pos in 0 .. steps-1:
//     Forward(one_hot, pos)
//     if pos + 1 < prompt_len: one_hot = client input of prompt[pos + 1]   (no classifier)
//     else: one_hot = argmax(Logits()); release its index to the client (stop if asked)
// Sampling (options.sampling): at the first generated position the client enters its noise
// for every position left (ClientLink::NoiseInput) and argmax(Logits()) becomes
// SampleOneHot(Logits(), noise of this position).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "infer/client_link.h"
#include "infer/secure_llama.h"
#include "net/comm_stats.h"

namespace mpcache::infer {

struct SessionReport {
  int positions = 0;          // forward passes run
  int released = 0;           // tokens released to the client
  double seconds = 0;         // wall time of the loop
  double decode_seconds = 0;  // wall time of the positions after the prompt
  int decode_positions = 0;   // positions whose forward ran after the prompt (>= prompt_len)
  // Traffic, rounds and time of the decode positions alone (prefill excluded), per phase.
  std::map<std::string, net::PhaseCounters> decode_phases;
  int cached_rows = 0;                    // rows layer 0 holds at the end (after any eviction)
  std::uint64_t revealed_selections = 0;  // MPCache reveal: plain | dp
  double epsilon_spent = 0;               // reveal: dp, basic composition
};

template <typename P>
class GenerationSession {
 public:
  // The engine is built inside (see SecureLlama::Create); `weights` must outlive the session.
  static Result<std::unique_ptr<GenerationSession>> Create(mpc::BinaryContext<P>& ctx,
                                                           const SecureWeights<P>& weights,
                                                           SessionOptions options);

  // prompt_len >= 1 (BOS counts), steps >= 1 (clamped to the context length).
  // `after_position` (optional) runs at every party after each position's forward (and
  // classifier, when one ran), e.g. to compare a debug trace with the plaintext engine.
  using PositionHook = std::function<Status(int pos, SecureLlama<P>& engine)>;
  Result<SessionReport> Generate(ClientLink& client, int prompt_len, int steps,
                                 const PositionHook& after_position = {});

  // Lower-level pieces (debug comparisons, tests).
  // The client's inputs for prompt positions first .. first + count - 1 (count x vocab
  // shares, row-major), checked to be one-hot vectors (CheckOneHotRows).
  Result<mpc::Shares<P>> InputPromptRows(ClientLink& client, int first, int count);
  // The client's sampling noise for `positions` positions (positions x vocab shares).
  Result<mpc::Shares<P>> InputNoise(ClientLink& client, int positions);
  // Opens index + r' (r' a client mask), checks every MAC, hands it to the client.
  Result<bool> ReleaseToken(ClientLink& client, const mpc::Shares<P>& one_hot, int pos);

  SecureLlama<P>& engine() { return *engine_; }

  // Prompt rows entered and checked together: at most this many values (at least one row).
  static constexpr std::size_t kInputChunkValues = std::size_t{1} << 20;

 private:
  explicit GenerationSession(std::unique_ptr<SecureLlama<P>> engine) : engine_(std::move(engine)) {}
  std::unique_ptr<SecureLlama<P>> engine_;
  std::uint64_t client_mask_seq_ = 0;
};

}  // namespace mpcache::infer
