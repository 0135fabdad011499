// ClientLink: what a party's generation session exchanges with the client (the user), who
// is the only one to know the prompt and to see the generated tokens.
//
// Inputs: the client holds the clear values r of dealer-made client input masks (one mask
// batch per prompt token, vocab entries each) and broadcasts d = onehot(token) - r; every
// party sets [onehot] = [r] + d (mpc::InputFromClient), and the next MAC check compares the
// d each party received. Outputs: the parties open token + r' under a client mask r' only
// AFTER every MAC check (arithmetic and binary) passed, and hand it to the client, who
// subtracts r'. No party ever sees a token id.
//
// Sampling (SessionOptions::sampling not greedy): at the first generated position the
// parties take one more client mask batch, `decode positions x vocab` values, right after
// the prompt's, and the client enters its T x Gumbel noise for every position it may sample
// (common/fixed_sampling.h) through it, in the same way: d = noise - r.
//
// mask_seq numbers the client-owned mask batches of the session in the order the parties
// take them from the dealer (0, 1, ...): the client's clear values of batch mask_seq.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"

namespace mpcache::infer {

class ClientLink {
 public:
  virtual ~ClientLink() = default;
  // d = onehot(prompt[pos]) - r for client mask batch `mask_seq` (n = vocab entries).
  virtual Result<std::vector<std::uint64_t>> PromptInput(int pos, std::uint64_t mask_seq,
                                                         std::size_t n) = 0;
  // d = noise - r for client mask batch `mask_seq` (n = positions x vocab noise values, the
  // positions in generation order). Only called when sampling.
  virtual Result<std::vector<std::uint64_t>> NoiseInput(std::uint64_t mask_seq, std::size_t n) = 0;
  // The token at position `pos`, masked with client mask batch `mask_seq` (one value).
  // Returns whether the client wants the session to go on (it stops on BOS, as llama2.c).
  virtual Result<bool> TokenOutput(int pos, std::uint64_t mask_seq, std::uint64_t masked) = 0;
  // Prompt position `pos` (not the last) ran: a heartbeat that says nothing secret (the
  // prompt length is public), so that the client's receive timeout measures a party's
  // silence rather than the prompt's length. Nothing to do in process.
  virtual Status Progress(int /*pos*/) { return Status::Ok(); }
};

}  // namespace mpcache::infer
