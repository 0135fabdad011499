#include "model/generate.h"

#include <chrono>

#include "model/utf8_text.h"

namespace mpcache::model {

std::string PromptOverStepsNote(int prompt_tokens, int steps) {
  return "the prompt has " + std::to_string(prompt_tokens) + " tokens (BOS included), more than " +
         std::to_string(steps) + " positions asked for: all " + std::to_string(prompt_tokens) +
         " run and one token is generated (positions count the prompt's)";
}

Result<GenerateResult> Generate(const ForwardFn& forward, const Tokenizer& tokenizer,
                                Sampler& sampler, const GenerateOptions& options,
                                const PieceFn& on_piece) {
  const PickFn pick = [&sampler](std::span<const float> logits) -> Result<int> {
    return sampler.Sample(logits);
  };
  return Generate(forward, tokenizer, pick, options, on_piece);
}

Result<GenerateResult> Generate(const ForwardFn& forward, const Tokenizer& tokenizer,
                                const PickFn& pick, const GenerateOptions& options,
                                const PieceFn& on_piece) {
  if (options.steps < 0) return InvalidArgument("steps must be >= 0");
  GenerateResult result;
  int steps = options.steps;
  if (options.max_seq_len > 0 && (steps == 0 || steps > options.max_seq_len)) {
    if (steps > options.max_seq_len) {
      result.notes.push_back("steps " + std::to_string(steps) +
                             " is more than the model's context of " +
                             std::to_string(options.max_seq_len) +
                             " positions: " + std::to_string(options.max_seq_len) + " run");
    }
    steps = options.max_seq_len;
  }
  if (steps == 0) return InvalidArgument("steps is 0 and no context length is known");
  MPCACHE_ASSIGN_OR_RETURN(std::vector<int> prompt, tokenizer.Encode(options.prompt, true, false));
  result.prompt_tokens = static_cast<int>(prompt.size());
  // One rule with the private generation (mpcache-client, the parties): the prompt always
  // runs whole; steps below its length generate one token, and say so.
  if (options.max_seq_len > 0 && result.prompt_tokens > options.max_seq_len) {
    return InvalidArgument("the prompt has " + std::to_string(result.prompt_tokens) +
                           " tokens (BOS included), more than the model's context of " +
                           std::to_string(options.max_seq_len) +
                           " positions; fix: a shorter prompt");
  }
  if (steps < result.prompt_tokens) {
    result.notes.push_back(PromptOverStepsNote(result.prompt_tokens, steps));
    steps = result.prompt_tokens;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto decode_start = t0;
  Utf8Text text;  // byte-fallback tokens reassembled into characters
  int token = prompt[0];
  result.tokens.push_back(token);
  int pos = 0;
  while (pos < steps) {
    Result<std::span<const float>> logits = forward(token, pos);
    if (!logits.ok()) {
      return logits.error().WithContext("forward pass at position " + std::to_string(pos));
    }
    int next;
    if (pos + 1 < static_cast<int>(prompt.size())) {
      next = prompt[static_cast<std::size_t>(pos) + 1];
    } else {
      MPCACHE_ASSIGN_OR_RETURN(next, pick(logits.value()));
    }
    ++pos;
    result.positions = pos;
    if (pos == 1) decode_start = Clock::now();
    if (next == tokenizer.bos_id()) break;
    const std::string piece = text.Add(tokenizer.Decode(token, next));
    if (!piece.empty()) {
      result.text += piece;
      if (on_piece) on_piece(piece);
    }
    result.tokens.push_back(next);
    token = next;
  }
  if (const std::string rest = text.Finish(); !rest.empty()) {
    result.text += rest;
    if (on_piece) on_piece(rest);
  }
  const auto t1 = Clock::now();
  result.seconds = std::chrono::duration<double>(t1 - t0).count();
  result.decode_seconds = std::chrono::duration<double>(t1 - decode_start).count();
  return result;
}

Result<GenerateResult> Generate(FloatEngine& engine, const Tokenizer& tokenizer, Sampler& sampler,
                                GenerateOptions options, const PieceFn& on_piece) {
  if (options.max_seq_len <= 0 || options.max_seq_len > engine.max_seq_len()) {
    options.max_seq_len = engine.max_seq_len();
  }
  ForwardFn forward = [&engine](int token, int pos) { return engine.Forward(token, pos); };
  return Generate(forward, tokenizer, sampler, options, on_piece);
}

}  // namespace mpcache::model
