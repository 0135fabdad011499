// mpcache-model run: plaintext generation with the float reference engine, printing exactly
// what llama2.c's `run` prints (prompt included, final newline); statistics go to stderr,
// or with --json one JSON object goes to stdout instead.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "model/checkpoint.h"
#include "model/float_engine.h"
#include "model/generate.h"
#include "model/sampler.h"
#include "model/tokenizer.h"
#include "tools/model/commands.h"

namespace mpcache::tools {

namespace {

struct RunArgs {
  std::string model;
  std::string tokenizer;
  std::string prompt;
  int steps = 256;
  float temperature = 0.0f;
  float top_p = 0.9f;
  std::uint64_t seed = 42;
  int threads = 1;
  bool json = false;
};

Result<model::Tokenizer> OpenTokenizer(const RunArgs& args, const model::Checkpoint& ckpt) {
  const int vocab_size = ckpt.weights.config.vocab_size;
  if (!args.tokenizer.empty()) return model::Tokenizer::LoadLlama2c(args.tokenizer, vocab_size);
  if (!ckpt.vocabulary) {
    const std::string why =
        ckpt.vocabulary_problem.empty() ? "" : " (" + ckpt.vocabulary_problem + ")";
    return InvalidArgument(args.model + " (" + std::string(model::FormatName(ckpt.format)) +
                           ") has no usable embedded vocabulary" + why +
                           ": pass --tokenizer <tokenizer.bin>");
  }
  if (static_cast<int>(ckpt.vocabulary->tokens.size()) != vocab_size) {
    return CorruptData(args.model + ": embedded vocabulary has " +
                       std::to_string(ckpt.vocabulary->tokens.size()) +
                       " tokens, the model's vocab_size is " + std::to_string(vocab_size));
  }
  return model::Tokenizer::FromVocabulary(*ckpt.vocabulary);
}

Status Run(const RunArgs& args) {
  MPCACHE_ASSIGN_OR_RETURN(model::Checkpoint ckpt, model::OpenCheckpoint(args.model));
  MPCACHE_ASSIGN_OR_RETURN(model::Tokenizer tokenizer, OpenTokenizer(args, ckpt));
  // The KV cache only needs the positions we will run (llama2.c: steps 0 = whole context).
  model::FloatEngineOptions eopts;
  eopts.threads = args.threads;
  if (args.steps > 0 && args.steps < ckpt.weights.config.seq_len) eopts.max_seq_len = args.steps;
  MPCACHE_ASSIGN_OR_RETURN(model::FloatEngine engine,
                           model::FloatEngine::Create(ckpt.weights, eopts));
  model::SamplerOptions sopts{args.temperature, args.top_p, args.seed};
  MPCACHE_ASSIGN_OR_RETURN(model::Sampler sampler,
                           model::Sampler::Create(ckpt.weights.config.vocab_size, sopts));
  model::GenerateOptions gopts;
  gopts.prompt = args.prompt;
  gopts.steps = args.steps;
  model::PieceFn stream;
  if (!args.json) {
    stream = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
  }
  MPCACHE_ASSIGN_OR_RETURN(model::GenerateResult result,
                           model::Generate(engine, tokenizer, sampler, gopts, stream));
  if (args.json) {
    nlohmann::json j;
    j["text"] = result.text;
    j["tokens"] = result.tokens;
    j["prompt_tokens"] = result.prompt_tokens;
    j["positions"] = result.positions;
    j["seconds"] = result.seconds;
    j["tokens_per_second"] = result.TokensPerSecond();
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
  auto* cmd = app.add_subcommand("run", "Plaintext generation with the float reference engine");
  cmd->add_option("--model", args->model, "Checkpoint (llama2.c .bin, ak42, or GGUF)")->required();
  cmd->add_option("--tokenizer", args->tokenizer,
                  "llama2.c tokenizer.bin (default: the GGUF's embedded vocabulary)");
  cmd->add_option("--prompt", args->prompt, "Prompt text (default: empty, BOS only)");
  cmd->add_option("--steps", args->steps, "Positions to run, prompt included (0 = context)")
      ->check(CLI::Range(0, 1 << 22))
      ->capture_default_str();
  cmd->add_option("--temperature", args->temperature, "0 = greedy")
      ->check(CLI::Range(0.0f, 100.0f))
      ->capture_default_str();
  cmd->add_option("--topp", args->top_p, "Nucleus sampling threshold (used when temperature > 0)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Sampling seed (non-zero)")
      ->check(CLI::Range(std::uint64_t{1}, ~std::uint64_t{0}))
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
