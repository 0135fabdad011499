// mpcache-model run: plaintext generation with the float reference engine (or, --engine
// fixed, the fixed-point twin of the secure engine), printing exactly what llama2.c's `run`
// prints (prompt included, final newline); statistics go to stderr, or with --json one
// JSON object goes to stdout instead.
//
// Sampling (--temperature > 0) is private sampling's plaintext twin by default
// (common/fixed_sampling.h: the same client noise from --seed, the same fixed-point
// procedure), so one seed gives the tokens mpcache-client and mpcache-bench generate give
// under MPC (exactly so with --engine fixed, whose logits are the secure engine's);
// --sampler llama2c draws as llama2.c's `run -t -p -s` does instead.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fixed_sampling.h"
#include "model/checkpoint.h"
#include "model/compact_model.h"
#include "model/fixed_engine.h"
#include "model/float_engine.h"
#include "model/generate.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "tools/common/sampling_flags.h"
#include "tools/model/commands.h"

namespace mpcache::tools {

namespace {

struct RunArgs {
  std::string model;
  std::string tokenizer;
  std::string prompt;
  int steps = 256;
  SamplingFlags sampling;
  std::string engine = "float";      // float | fixed
  std::string sampler = "private";   // private | llama2c
  int frac_bits = kDefaultFracBits;  // the fixed engine's and the sampling's precision
  int threads = 1;
  bool json = false;
};

Result<model::Tokenizer> OpenTokenizer(const RunArgs& args, const std::string& format,
                                       const std::optional<model::Vocabulary>& vocabulary,
                                       const std::string& problem, int vocab_size) {
  if (!args.tokenizer.empty()) return model::Tokenizer::LoadLlama2c(args.tokenizer, vocab_size);
  if (!vocabulary) {
    const std::string why = problem.empty() ? "" : " (" + problem + ")";
    return InvalidArgument(args.model + " (" + format + ") has no usable embedded vocabulary" +
                           why + ": pass --tokenizer <tokenizer.bin>");
  }
  if (static_cast<int>(vocabulary->tokens.size()) != vocab_size) {
    return CorruptData(args.model + ": embedded vocabulary has " +
                       std::to_string(vocabulary->tokens.size()) +
                       " tokens, the model's vocab_size is " + std::to_string(vocab_size));
  }
  return model::Tokenizer::FromVocabulary(*vocabulary);
}

Status Run(const RunArgs& args) {
  // --engine fixed on a GGUF of Q8_0/F16 matrices is the compact twin (mapped, exact: what
  // the secure engine computes from the same file); everything else decodes to float.
  MPCACHE_ASSIGN_OR_RETURN(const bool is_compact,
                           model::CompactModel::IsCompactCheckpoint(args.model));
  std::shared_ptr<const model::CompactModel> compact;
  model::Checkpoint ckpt;
  if (args.engine == "fixed" && is_compact) {
    MPCACHE_ASSIGN_OR_RETURN(compact, model::CompactModel::Open(args.model));
    ckpt.weights.config = compact->config;
    ckpt.vocabulary = compact->vocabulary;
    ckpt.vocabulary_problem = compact->vocabulary_problem;
    ckpt.format = model::CheckpointFormat::kGguf;
  } else {
    MPCACHE_ASSIGN_OR_RETURN(ckpt, model::OpenCheckpoint(args.model));
  }
  MPCACHE_ASSIGN_OR_RETURN(
      model::Tokenizer tokenizer,
      OpenTokenizer(args, std::string(model::FormatName(ckpt.format)), ckpt.vocabulary,
                    ckpt.vocabulary_problem, ckpt.weights.config.vocab_size));
  const model::ModelConfig& config = ckpt.weights.config;
  const SamplingParams& sp = args.sampling.params;
  MPCACHE_RETURN_IF_ERROR(sp.Validate(config.vocab_size));
  if (args.sampler == "llama2c" && sp.top_k > 0) {
    return InvalidArgument("--top-k needs --sampler private (llama2.c's sampler has no top-k)");
  }
  MPCACHE_ASSIGN_OR_RETURN(const std::uint64_t seed, args.sampling.SeedOrRandom());
  // The KV cache only needs the positions we will run (llama2.c: steps 0 = whole context),
  // the whole prompt at least.
  MPCACHE_ASSIGN_OR_RETURN(const std::vector<int> prompt_tokens,
                           tokenizer.Encode(args.prompt, true, false));
  const int wanted = std::max(args.steps, static_cast<int>(prompt_tokens.size()));
  const int max_seq = args.steps > 0 && wanted < config.seq_len ? wanted : 0;
  std::optional<model::FloatEngine> float_engine;
  std::optional<model::FixedEngine> fixed_engine;
  std::vector<float> fixed_logits;
  model::ForwardFn forward;
  if (args.engine == "fixed") {
    model::FixedEngineOptions fo;
    fo.max_seq_len = max_seq;
    fo.math.frac_bits = args.frac_bits;
    fo.threads = args.threads;
    if (compact) {
      MPCACHE_ASSIGN_OR_RETURN(fixed_engine, model::FixedEngine::Create(compact, fo));
    } else {
      MPCACHE_ASSIGN_OR_RETURN(fixed_engine, model::FixedEngine::Create(ckpt.weights, fo));
    }
    forward = [&](int token, int pos) -> Result<std::span<const float>> {
      MPCACHE_ASSIGN_OR_RETURN(std::span<const double> l, fixed_engine->Forward(token, pos));
      fixed_logits.assign(l.begin(), l.end());
      return std::span<const float>(fixed_logits);
    };
  } else {
    model::FloatEngineOptions eopts;
    eopts.threads = args.threads;
    eopts.max_seq_len = max_seq;
    MPCACHE_ASSIGN_OR_RETURN(float_engine, model::FloatEngine::Create(ckpt.weights, eopts));
    forward = [&](int token, int pos) { return float_engine->Forward(token, pos); };
  }
  FixedMathParams math;
  math.frac_bits = args.frac_bits;
  MPCACHE_RETURN_IF_ERROR(math.Validate());
  const FixedPoint fp{math.frac_bits};
  SamplingNoise noise(seed, sp.temperature, math.frac_bits);
  model::SamplerOptions sopts{static_cast<float>(sp.temperature), static_cast<float>(sp.top_p),
                              seed == 0 ? 1 : seed};
  MPCACHE_ASSIGN_OR_RETURN(model::Sampler sampler,
                           model::Sampler::Create(config.vocab_size, sopts));
  model::PickFn pick = [&](std::span<const float> logits) -> Result<int> {
    if (args.sampler == "llama2c") return sampler.Sample(logits);
    // The fixed engine's ring logits are the secure engine's; the float logits are encoded.
    std::vector<Ring64> ring;
    if (fixed_engine) {
      ring.assign(fixed_engine->RingLogits().begin(), fixed_engine->RingLogits().end());
    } else {
      for (float v : logits) ring.push_back(fp.Encode(v));
    }
    return PlainSample(math, ring, noise, sp);
  };
  model::GenerateOptions gopts;
  gopts.prompt = args.prompt;
  gopts.steps = args.steps;
  gopts.max_seq_len = max_seq > 0 ? max_seq : config.seq_len;
  model::PieceFn stream;
  if (!args.json) {
    stream = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
  }
  MPCACHE_ASSIGN_OR_RETURN(model::GenerateResult result,
                           model::Generate(forward, tokenizer, pick, gopts, stream));
  for (const std::string& note : result.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (args.json) {
    nlohmann::json j;
    j["notes"] = result.notes;
    j["text"] = result.text;
    j["tokens"] = result.tokens;
    j["prompt_tokens"] = result.prompt_tokens;
    j["positions"] = result.positions;
    j["seconds"] = result.seconds;
    j["tokens_per_second"] = result.TokensPerSecond();
    j["engine"] = args.engine;
    j["compact_weights"] = compact != nullptr;
    j["sampling"] = sp.Describe();
    if (!sp.Greedy()) {
      j["sampler"] = args.sampler;
      j["seed"] = seed;
    }
    // Pieces may split a UTF-8 character; replace invalid sequences rather than throw.
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::fputs("\n", stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "achieved tok/s: %.1f (%d positions, %.3f s)\n", result.TokensPerSecond(),
                 result.positions, result.seconds);
  }
  return Status::Ok();
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand(
      "run", "Plaintext generation (float reference or fixed-point twin), greedy or sampled");
  cmd->add_option("--model", args->model, "Checkpoint (llama2.c .bin, ak42, or GGUF)")->required();
  cmd->add_option("--tokenizer", args->tokenizer,
                  "llama2.c tokenizer.bin (default: the GGUF's embedded vocabulary)");
  cmd->add_option("--prompt", args->prompt, "Prompt text (default: empty, BOS only)");
  cmd->add_option("--steps", args->steps, "Positions to run, prompt included (0 = context)")
      ->check(CLI::Range(0, 1 << 22))
      ->capture_default_str();
  args->sampling.Add(cmd);
  cmd->add_option("--engine", args->engine,
                  "float (the reference, llama2.c's arithmetic) or fixed (the secure engine's "
                  "fixed-point twin)")
      ->check(CLI::IsMember({"float", "fixed"}))
      ->capture_default_str();
  cmd->add_option("--frac-bits", args->frac_bits,
                  "Fixed-point fractional bits of --engine fixed and of private sampling (the "
                  "parties' model.frac_bits)")
      ->capture_default_str();
  cmd->add_option("--sampler", args->sampler,
                  "private (private sampling's twin: the tokens MPC gives for the same --seed) "
                  "or llama2c (llama2.c's run -t -p -s)")
      ->check(CLI::IsMember({"private", "llama2c"}))
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "Threads for the matrix products")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object (text, tokens, timing) on stdout");
  cmd->callback([args, exit_code] {
    const Status s = Run(*args);
    if (!s.ok()) {
      std::fflush(stdout);
      std::cerr << "mpcache-model run: " << s.error().ToString() << "\n";
      *exit_code = 1;
    }
  });
}

}  // namespace mpcache::tools
