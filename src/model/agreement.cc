#include "model/agreement.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

namespace mpcache::model {

Result<std::vector<std::string>> ReadPromptLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read the prompts file " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  if (out.empty()) return InvalidArgument(path + " holds no prompt (one per line; # comments)");
  return out;
}

Result<std::vector<int>> TeacherForced(FixedEngine& e, const std::vector<int>& tokens,
                                       std::size_t prompt_len, double* ll) {
  std::vector<int> greedy;
  MPCACHE_RETURN_IF_ERROR(e.BeginPrompt(static_cast<int>(prompt_len)));
  for (std::size_t pos = 0; pos + 1 < tokens.size(); ++pos) {
    MPCACHE_ASSIGN_OR_RETURN(auto logits, e.Forward(tokens[pos], static_cast<int>(pos)));
    if (pos + 1 == prompt_len) MPCACHE_RETURN_IF_ERROR(e.EndPrefill(0));
    greedy.push_back(e.Argmax());
    if (ll != nullptr && pos + 1 >= prompt_len) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (double v : logits) mx = std::max(mx, v);
      for (double v : logits) sum += std::exp(v - mx);
      *ll += logits[static_cast<std::size_t>(tokens[pos + 1])] - mx - std::log(sum);
    }
  }
  return greedy;
}

Result<std::vector<int>> GreedyGeneration(FixedEngine& e, const std::vector<int>& prompt,
                                          int steps) {
  std::vector<int> tokens = prompt;
  MPCACHE_RETURN_IF_ERROR(e.BeginPrompt(static_cast<int>(prompt.size())));
  for (int pos = 0; pos + 1 < steps; ++pos) {
    if (auto r = e.Forward(tokens[static_cast<std::size_t>(pos)], pos); !r.ok()) return r.error();
    if (pos + 1 == static_cast<int>(prompt.size())) MPCACHE_RETURN_IF_ERROR(e.EndPrefill(0));
    if (pos + 1 < static_cast<int>(prompt.size())) continue;
    tokens.push_back(e.Argmax());
    if (tokens.back() == 1) break;
  }
  return tokens;
}

Result<Workload> MakeWorkload(const ModelWeights& w, const Tokenizer& tok,
                              const std::vector<std::string>& prompts, int steps,
                              const FixedEngineOptions& base) {
  Workload wl;
  wl.steps = std::min(steps, w.config.seq_len);
  FixedEngineOptions fo = base;
  fo.max_seq_len = wl.steps;
  fo.mpcache.reset();
  for (const std::string& text : prompts) {
    MPCACHE_ASSIGN_OR_RETURN(std::vector<int> prompt, tok.Encode(text, true, false));
    if (static_cast<int>(prompt.size()) >= wl.steps) {
      return InvalidArgument("the prompt \"" + text + "\" is " + std::to_string(prompt.size()) +
                             " tokens, not shorter than the " + std::to_string(wl.steps) +
                             " positions per generation; raise the steps or shorten it");
    }
    MPCACHE_ASSIGN_OR_RETURN(FixedEngine full, FixedEngine::Create(w, fo));
    MPCACHE_ASSIGN_OR_RETURN(std::vector<int> ref, GreedyGeneration(full, prompt, wl.steps));
    MPCACHE_ASSIGN_OR_RETURN(FixedEngine forced, FixedEngine::Create(w, fo));
    double ll = 0;
    if (auto r = TeacherForced(forced, ref, prompt.size(), &ll); !r.ok()) return r.error();
    wl.positions += ref.size() - prompt.size();
    wl.prompt_len.push_back(prompt.size());
    wl.full_ll.push_back(ll);
    wl.tokens.push_back(std::move(ref));
  }
  return wl;
}

Result<Fidelity> MeasureFidelity(const ModelWeights& w, const Workload& wl,
                                 const std::optional<MpcachePolicy>& policy,
                                 const FixedEngineOptions& base) {
  FixedEngineOptions fo = base;
  fo.max_seq_len = wl.steps;
  fo.mpcache = policy;
  if (policy) MPCACHE_RETURN_IF_ERROR(policy->Validate());
  Fidelity f;
  double loss = 0;
  std::vector<double> n_i, agree_i, loss_i;
  for (std::size_t i = 0; i < wl.tokens.size(); ++i) {
    const std::vector<int>& ref = wl.tokens[i];
    MPCACHE_ASSIGN_OR_RETURN(FixedEngine e, FixedEngine::Create(w, fo));
    double ll = 0;
    MPCACHE_ASSIGN_OR_RETURN(std::vector<int> greedy, TeacherForced(e, ref, wl.prompt_len[i], &ll));
    std::size_t n = 0, agree = 0;
    for (std::size_t pos = wl.prompt_len[i] - 1; pos < greedy.size(); ++pos) {
      agree += greedy[pos] == ref[pos + 1];
      ++n;
    }
    f.agreeing += agree;
    f.positions += n;
    loss += wl.full_ll[i] - ll;
    n_i.push_back(static_cast<double>(n));
    agree_i.push_back(static_cast<double>(agree));
    loss_i.push_back(wl.full_ll[i] - ll);
  }
  if (f.positions > 0) {
    const auto total = static_cast<double>(f.positions);
    f.agreement = static_cast<double>(f.agreeing) / total;
    f.ll_loss = loss / total;
    const std::size_t k = n_i.size();
    if (k > 1) {
      double va = 0, vl = 0;
      for (std::size_t i = 0; i < k; ++i) {
        va += std::pow(agree_i[i] - f.agreement * n_i[i], 2);
        vl += std::pow(loss_i[i] - f.ll_loss * n_i[i], 2);
      }
      const double scale = static_cast<double>(k) / static_cast<double>(k - 1) / (total * total);
      f.agreement_se = std::sqrt(va * scale);
      f.ll_loss_se = std::sqrt(vl * scale);
    }
  }
  return f;
}

}  // namespace mpcache::model
