// mpcache-model info: format, dimensions and parameter count of a checkpoint.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "model/checkpoint.h"
#include "model/compact_model.h"
#include "tools/model/commands.h"

namespace mpcache::tools {

namespace {

struct InfoArgs {
  std::string model;
  bool json = false;
};

// A GGUF of Q8_0/F16 matrices is described from its header and memory map: a 7B file is
// never decoded to float (27 GB) just to be described.
Result<model::Checkpoint> Describe(const std::string& path) {
  MPCACHE_ASSIGN_OR_RETURN(bool compact, model::CompactModel::IsCompactCheckpoint(path));
  if (!compact) return model::OpenCheckpoint(path);
  model::CompactOpenOptions o;
  o.check = false;
  MPCACHE_ASSIGN_OR_RETURN(auto m, model::CompactModel::Open(path, o));
  model::Checkpoint ckpt;
  MPCACHE_ASSIGN_OR_RETURN(ckpt.format, model::DetectCheckpointFormat(path));
  ckpt.weight_type = m->weight_type;
  ckpt.file_size = m->file_size();
  ckpt.weights.config = m->config;
  ckpt.vocabulary = m->vocabulary;
  ckpt.version = m->gguf_version;
  return ckpt;
}

Status Info(const InfoArgs& args) {
  MPCACHE_ASSIGN_OR_RETURN(model::Checkpoint ckpt, Describe(args.model));
  const model::ModelConfig& c = ckpt.weights.config;
  const std::string format(model::FormatName(ckpt.format));
  if (args.json) {
    nlohmann::json j;
    j["model"] = args.model;
    j["format"] = format;
    j["version"] = ckpt.version;
    j["weight_type"] = ckpt.weight_type;
    j["file_bytes"] = ckpt.file_size;
    j["dim"] = c.dim;
    j["hidden_dim"] = c.hidden_dim;
    j["n_layers"] = c.n_layers;
    j["n_heads"] = c.n_heads;
    j["n_kv_heads"] = c.n_kv_heads;
    j["head_size"] = c.head_size();
    j["vocab_size"] = c.vocab_size;
    j["seq_len"] = c.seq_len;
    j["shared_classifier"] = c.shared_classifier;
    j["rope_theta"] = c.rope_theta;
    j["norm_eps"] = c.norm_eps;
    j["parameters"] = c.ParameterCount();
    j["embedded_vocabulary"] = ckpt.vocabulary.has_value();
    std::cout << j.dump() << "\n";
    return Status::Ok();
  }
  std::cout << "model:       " << args.model << "\n"
            << "format:      " << format
            << (ckpt.version ? " version " + std::to_string(ckpt.version) : std::string()) << ", "
            << ckpt.weight_type << " weights, " << ckpt.file_size << " bytes\n"
            << "dimensions:  " << c.Describe() << "\n"
            << "head size:   " << c.head_size() << ", rope theta " << c.rope_theta << ", rms eps "
            << c.norm_eps << "\n"
            << "parameters:  " << c.ParameterCount() << "\n"
            << "vocabulary:  "
            << (ckpt.vocabulary
                    ? "embedded (" + std::to_string(ckpt.vocabulary->tokens.size()) + " tokens)"
                    : std::string("none embedded (use --tokenizer with run)"))
            << "\n";
  return Status::Ok();
}

}  // namespace

void AddInfoCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<InfoArgs>();
  auto* cmd = app.add_subcommand("info", "Show a checkpoint's format, dimensions, parameters");
  cmd->add_option("--model", args->model, "Checkpoint (llama2.c .bin, ak42, or GGUF)")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->callback([args, exit_code] {
    const Status s = Info(*args);
    if (!s.ok()) {
      std::cerr << "mpcache-model info: " << s.error().ToString() << "\n";
      *exit_code = 1;
    }
  });
}

}  // namespace mpcache::tools
