// The generation loop of llama2.c's generate(): the prompt is encoded with BOS, every
// prompt token counts as a step (forced, not sampled), generation stops after `steps`
// positions (a prompt longer than that still runs whole and one token is generated, with a
// note: llama2.c would cut the prompt) or when BOS (id 1) is produced, and each token's piece is
// emitted as it is known (prompt included) — as valid UTF-8, byte-fallback tokens reassembled into
// their characters (model/utf8_text.h; llama2.c's safe_printf drops them). llama2.c then prints a
// final
// "\n"; the returned text does not contain it (the CLI prints it).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/float_engine.h"
#include "model/sampler.h"
#include "model/tokenizer.h"

namespace mpcache::model {

// Any engine: logits for `token` at `pos`.
using ForwardFn = std::function<Result<std::span<const float>>(int token, int pos)>;
// Called with each printable piece as soon as it is known (may be empty to ignore).
using PieceFn = std::function<void(std::string_view piece)>;

struct GenerateOptions {
  std::string prompt;   // "" = BOS only
  int steps = 256;      // total positions incl. prompt; 0 = the context length
  int max_seq_len = 0;  // the engine's context length (steps are clamped to it)
};

struct GenerateResult {
  std::string text;             // everything printed (without llama2.c's final "\n")
  std::vector<int> tokens;      // token at each position: BOS, prompt..., generated...
  int prompt_tokens = 0;        // incl. BOS
  int positions = 0;            // forward passes run
  double seconds = 0.0;         // wall time of the whole loop
  double decode_seconds = 0.0;  // wall time after the first forward pass (llama2.c's tok/s)
  // Where a limit changed what ran (steps beyond the context, a prompt longer than steps):
  // one sentence each, for the CLI to print.
  std::vector<std::string> notes;
  double TokensPerSecond() const {
    return positions > 1 && decode_seconds > 0 ? (positions - 1) / decode_seconds : 0.0;
  }
};

// The note when a prompt of `prompt_tokens` is longer than the `steps` asked for: it runs
// whole, one token is generated (the rule of mpcache-model run and of private generation).
std::string PromptOverStepsNote(int prompt_tokens, int steps);

// Picks the next token from the last forward's logits (a sampler, or private sampling's
// plaintext twin reading the engine's ring logits).
using PickFn = std::function<Result<int>(std::span<const float> logits)>;

Result<GenerateResult> Generate(const ForwardFn& forward, const Tokenizer& tokenizer,
                                const PickFn& pick, const GenerateOptions& options,
                                const PieceFn& on_piece = {});
Result<GenerateResult> Generate(const ForwardFn& forward, const Tokenizer& tokenizer,
                                Sampler& sampler, const GenerateOptions& options,
                                const PieceFn& on_piece = {});

// Convenience for the float engine.
Result<GenerateResult> Generate(FloatEngine& engine, const Tokenizer& tokenizer, Sampler& sampler,
                                GenerateOptions options, const PieceFn& on_piece = {});

}  // namespace mpcache::model
