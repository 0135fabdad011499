// What a policy costs per decoded token on a workload, from the secure step's cost model
// (infer/step_cost.h: exact bytes and rounds per phase as a function of the context and the
// knobs) and a time model calibrated on this machine by measured decode steps.
//
// Per reference of the workload (prompt of p tokens, T tokens in all), the decoding steps are
// those at positions p .. T - 2 (each feeds one generated token and produces the next); the
// step at position pos attends a context of pos cached rows — after a static eviction
// (policy static_keep_ratio < 1) of kept(p) + (pos - p) rows, the eviction's public shape
// (model::EvictionFor), costed as the same policy without eviction on that many rows. The
// clusters that become candidates while a reference is decoded (once the policy selects) are
// each made once: infer::PredictNewClusterCost per cluster, added to the steps' total (a
// model: decode-step makes its context's clusters before the step, so this part is not in
// what it measures). The one-off work at the end of the prompt (the eviction's ranking, the
// prompt's representatives) is prefill, not counted per token.
//
// Time of a step: the phases that depend neither on the context nor on the knobs take what the
// calibration measured them to take (their mean); the others (attention, scores, select,
// softmax, mix, ...) per_round x rounds + per_byte x bytes + per_compared_bit x the width of
// their comparisons (infer::PhaseCost::compared_bits: in process a comparison's dealer tuple
// and check cost far more than its bytes say; bytes alone mispredict the softmax of some
// widths by 1.7x, with the comparisons within 25%), fitted by non-negative least squares on the
// calibration's measured steps.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/fixed_backend.h"
#include "common/result.h"
#include "infer/decode_step.h"
#include "infer/step_cost.h"
#include "model/agreement.h"
#include "model/mpcache_policy.h"

namespace mpcache::tune {

using PhaseCosts = std::map<std::string, infer::PhaseCost>;

// The phases a step pays whatever the context and the knobs.
bool IsFixedPhase(const std::string& phase);

struct TimeModel {
  double fixed_seconds = 0;     // the fixed phases of one step
  double per_round = 0;         // seconds per round of the other phases
  double per_byte = 0;          // seconds per byte sent (busiest party) of the other phases
  double per_compared_bit = 0;  // seconds per bit of width of their secure comparisons
  bool calibrated = false;
  double Seconds(const PhaseCosts& step) const;
};

// Per decoded token (means over the workload's decoding steps).
struct TokenCost {
  double bytes = 0, rounds = 0, seconds = 0;
};

struct CostSetting {
  model::ModelConfig config;
  bool malicious = true;
  FixedMathParams math;
  int block = model::KvLayout::kDefaultBlockTokens;
};

class CostModel {
 public:
  explicit CostModel(const CostSetting& s) : s_(s) {}
  const CostSetting& setting() const { return s_; }
  void set_time(const TimeModel& t) { time_ = t; }
  const TimeModel& time() const { return time_; }

  // One step at `context` cached rows (exactly what infer::RunDecodeStep measures).
  Result<PhaseCosts> Step(const std::optional<model::MpcachePolicy>& policy, int context) const;
  Result<TokenCost> PerToken(const std::optional<model::MpcachePolicy>& policy,
                             const model::Workload& wl) const;

 private:
  infer::StepCostQuery Query(const std::optional<model::MpcachePolicy>& policy, int context) const;

  CostSetting s_;
  TimeModel time_;
};

std::uint64_t TotalBytes(const PhaseCosts& step);
std::uint64_t TotalRounds(const PhaseCosts& step);

// One measured decode step beside its prediction.
struct Measurement {
  std::optional<model::MpcachePolicy> policy;
  int context = 0;
  infer::DecodeStepReport measured;
  PhaseCosts predicted;
};
// Runs infer::RunDecodeStep for each (policy, context) on `model_path` (the checkpoint the
// setting describes), `repeats` times keeping the fastest run (a step's time is noisy on a
// shared machine; its bytes and rounds are not), and pairs it with the cost model's
// prediction.
Result<std::vector<Measurement>> MeasureSteps(
    const CostModel& model, const std::string& model_path,
    const std::vector<std::pair<std::optional<model::MpcachePolicy>, int>>& points, int threads,
    int repeats = 1);
// The steps mpcache-tune measures to fit the time model, up to `context`: the full cache
// short and long, and one- and two-level selections of several cluster sizes at the longest
// context and below it, so that rounds, bytes and comparisons vary apart.
std::vector<std::pair<std::optional<model::MpcachePolicy>, int>> CalibrationPoints(int context);
// The time model that fits the measurements best (least squares, coefficients >= 0).
Result<TimeModel> FitTimeModel(const std::vector<Measurement>& m);

}  // namespace mpcache::tune
