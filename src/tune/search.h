// mpcache-tune's search: MPCache's knobs (SPEC §6.7) over a grid of candidates, each
// measured for accuracy in the plaintext fixed-point engine on the calibration workload
// (model/agreement.h) and costed per decoded token (tune/workload_cost.h); the chosen one is
// the cheapest that keeps the floor — the full cache when none does (it keeps every floor).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/agreement.h"
#include "model/mpcache_policy.h"
#include "tune/workload_cost.h"

namespace mpcache::tune {

// agreement:X (greedy agreement with the full cache >= X) or loss:X (mean log-likelihood
// loss <= X nats per token), kept with a one-sided confidence: the measured figure's bound z
// standard errors on the wrong side (Fidelity's, between prompts) must keep it. Choosing the
// cheapest candidate whose point estimate just keeps the floor favours the lucky ones: on
// stories260K one at 0.9506 on the calibration prompts read 0.9423 on held-out ones.
struct Floor {
  enum class Kind { kAgreement, kLoss };
  Kind kind = Kind::kAgreement;
  double value = 0.99;
  double z = 0;  // standard errors of margin (ZForConfidence)
  bool Keeps(const model::Fidelity& f) const;
  std::string ToString() const;
};
Result<Floor> ParseFloor(std::string_view text);
// The one-sided normal quantile of `confidence` in [0.5, 1) (0.95: 1.645); an error otherwise.
Result<double> ZForConfidence(double confidence);

enum class Objective { kBytes, kRounds, kSeconds };
Result<Objective> ParseObjective(std::string_view text);
std::string_view ToString(Objective o);
double Value(const TokenCost& c, Objective o);

// quick: 8 candidates (tests, a first look); standard: ~30 (cluster sizes, keep ratios, level
// 2, representative, alpha, layer sharing and decay, residual path, static eviction and
// impact re-weighting); wide: the standard grid crossed with more keep ratios.
enum class Grid { kQuick, kStandard, kWide };
Result<Grid> ParseGrid(std::string_view text);
// Candidates valid for a model whose context is `seq_len` positions.
std::vector<model::MpcachePolicy> CandidateGrid(Grid g, int seq_len);

// A short label of a policy's knobs ("c32 k0.25 l2:16@0.1 mean share0.9 resid evict0.8").
std::string Label(const std::optional<model::MpcachePolicy>& p);

struct Evaluated {
  std::optional<model::MpcachePolicy> policy;  // none: the full cache
  model::Fidelity fidelity;
  TokenCost cost;
  bool keeps = false;
};

struct SearchResult {
  std::vector<Evaluated> evaluated;   // [0]: the full cache
  std::vector<std::size_t> frontier;  // Pareto-optimal (cost, accuracy), by increasing cost
  std::size_t chosen = 0;
};

// Fills r.frontier and r.chosen from r.evaluated (keeps set): the frontier by increasing
// cost, each member strictly more accurate than every cheaper candidate (ties in cost: the
// more accurate first); chosen the cheapest that keeps the floor, else 0 (the full cache).
void Rank(SearchResult& r, const Floor& floor, Objective objective);

// Called before each candidate is measured (done of total) and once at the end.
using Progress = std::function<void(std::size_t done, std::size_t total, const std::string& what)>;

Result<SearchResult> Search(const model::ModelWeights& w, const model::Workload& wl,
                            const std::vector<model::MpcachePolicy>& grid, const CostModel& cost,
                            const Floor& floor, Objective objective,
                            const model::FixedEngineOptions& engine, const Progress& progress);

}  // namespace mpcache::tune
