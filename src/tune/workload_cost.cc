#include "tune/workload_cost.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace mpcache::tune {

bool IsFixedPhase(const std::string& phase) {
  static constexpr std::string_view kFixed[] = {
      "embedding", "projections", "norms", "ffn", "kv_append", "mac_check", "classifier_argmax"};
  return std::find(std::begin(kFixed), std::end(kFixed), phase) != std::end(kFixed);
}

double TimeModel::Seconds(const PhaseCosts& step) const {
  double s = fixed_seconds;
  for (const auto& [name, c] : step) {
    if (IsFixedPhase(name)) continue;
    s += per_round * static_cast<double>(c.rounds) + per_byte * static_cast<double>(c.bytes) +
         per_compared_bit * static_cast<double>(c.compared_bits);
  }
  return s;
}

std::uint64_t TotalBytes(const PhaseCosts& step) {
  std::uint64_t b = 0;
  for (const auto& [name, c] : step) b += c.bytes;
  return b;
}
std::uint64_t TotalRounds(const PhaseCosts& step) {
  std::uint64_t r = 0;
  for (const auto& [name, c] : step) r += c.rounds;
  return r;
}

infer::StepCostQuery CostModel::Query(const std::optional<model::MpcachePolicy>& policy,
                                      int context) const {
  infer::StepCostQuery q;
  q.config = s_.config;
  q.malicious = s_.malicious;
  q.policy = policy;
  q.context = context;
  q.block = s_.block;
  q.math = s_.math;
  return q;
}

Result<PhaseCosts> CostModel::Step(const std::optional<model::MpcachePolicy>& policy,
                                   int context) const {
  return infer::PredictStepCost(Query(policy, context));
}

Result<TokenCost> CostModel::PerToken(const std::optional<model::MpcachePolicy>& policy,
                                      const model::Workload& wl) const {
  std::optional<model::MpcachePolicy> stepping = policy;
  if (stepping) stepping->static_keep_ratio = 1.0;  // eviction: fewer rows, costed as such
  std::map<int, PhaseCosts> by_context;
  TokenCost sum;
  std::size_t steps = 0;
  // The clusters whose representatives the generations make after their prompts: those that
  // are candidates at a reference's last step, once the policy selects, less those made at
  // the prompt's end (when its first decoding step already selects).
  std::uint64_t clusters = 0;
  for (std::size_t i = 0; i < wl.tokens.size(); ++i) {
    const int p = static_cast<int>(wl.prompt_len[i]);
    const int total = static_cast<int>(wl.tokens[i].size());
    const int kept = policy && policy->evicts() ? model::EvictionFor(*policy, p).kept() : p;
    for (int pos = p; pos + 1 < total; ++pos) {
      const int context = kept + (pos - p);
      auto it = by_context.find(context);
      if (it == by_context.end()) {
        MPCACHE_ASSIGN_OR_RETURN(PhaseCosts c, Step(stepping, context));
        it = by_context.emplace(context, std::move(c)).first;
      }
      sum.bytes += static_cast<double>(TotalBytes(it->second));
      sum.rounds += static_cast<double>(TotalRounds(it->second));
      sum.seconds += time_.Seconds(it->second);
      ++steps;
    }
    if (!stepping || total < p + 2) continue;
    const model::SelectionShape end = model::ShapeFor(*stepping, kept + (total - 2 - p) + 1);
    if (!end.selects()) continue;
    const model::SelectionShape start = model::ShapeFor(*stepping, kept + 1);
    clusters +=
        static_cast<std::uint64_t>(end.candidates - (start.selects() ? start.candidates : 0));
  }
  if (clusters > 0) {
    MPCACHE_ASSIGN_OR_RETURN(const infer::PhaseCost one,
                             infer::PredictNewClusterCost(Query(stepping, 1)));
    const auto n = static_cast<double>(clusters);
    sum.bytes += n * static_cast<double>(one.bytes);
    sum.rounds += n * static_cast<double>(one.rounds);
    sum.seconds += n * (time_.Seconds({{"representatives", one}}) - time_.fixed_seconds);
  }
  if (steps == 0) {
    return InvalidArgument(
        "the workload has no decoding step (every reference ends at its prompt); raise the "
        "steps per generation");
  }
  const auto n = static_cast<double>(steps);
  return TokenCost{sum.bytes / n, sum.rounds / n, sum.seconds / n};
}

Result<std::vector<Measurement>> MeasureSteps(
    const CostModel& model, const std::string& model_path,
    const std::vector<std::pair<std::optional<model::MpcachePolicy>, int>>& points, int threads,
    int repeats) {
  std::vector<Measurement> out;
  for (const auto& [policy, context] : points) {
    infer::DecodeStepOptions o;
    o.model = model_path;
    o.context = context;
    o.policy = policy;
    o.malicious = model.setting().malicious;
    o.block = model.setting().block;
    o.threads = threads;
    o.frac_bits = model.setting().math.frac_bits;
    Measurement m;
    m.policy = policy;
    m.context = context;
    for (int r = 0; r < std::max(1, repeats); ++r) {
      MPCACHE_ASSIGN_OR_RETURN(infer::DecodeStepReport run, infer::RunDecodeStep(o));
      if (r == 0 || run.seconds < m.measured.seconds) m.measured = std::move(run);
    }
    MPCACHE_ASSIGN_OR_RETURN(m.predicted, model.Step(policy, context));
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::pair<std::optional<model::MpcachePolicy>, int>> CalibrationPoints(int context) {
  const auto policy = [](int cs, double keep, int cs2, double keep2) {
    model::MpcachePolicy p;
    p.cluster_tokens = cs;
    p.keep_ratio = keep;
    p.level2_tokens = cs2;
    p.level2_keep_ratio = keep2;
    return p;
  };
  const auto at = [&](int num, int den) { return std::max(1, context * num / den); };
  return {{std::nullopt, at(1, 8)},
          {std::nullopt, at(1, 2)},
          {std::nullopt, context},
          {policy(16, 0.25, 0, 0.2), context},
          {policy(32, 0.25, 0, 0.2), at(3, 4)},
          {policy(8, 0.5, 0, 0.2), at(3, 4)},
          {policy(16, 0.5, 8, 0.15), at(1, 2)},
          {policy(8, 0.25, 4, 0.1), context}};
}

namespace {

// Least squares of y over the features in `use` (the others fixed at 0): the coefficients and
// the residual sum of squares.
std::pair<std::array<double, 3>, double> Fit(const std::vector<std::array<double, 3>>& x,
                                             const std::vector<double>& y,
                                             const std::array<bool, 3>& use) {
  std::vector<int> idx;
  for (int i = 0; i < 3; ++i) {
    if (use[static_cast<std::size_t>(i)]) idx.push_back(i);
  }
  const std::size_t n = idx.size();
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0));
  for (std::size_t k = 0; k < x.size(); ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        a[i][j] += x[k][static_cast<std::size_t>(idx[i])] * x[k][static_cast<std::size_t>(idx[j])];
      }
      a[i][n] += x[k][static_cast<std::size_t>(idx[i])] * y[k];
    }
  }
  std::array<double, 3> c{0, 0, 0};
  // Gaussian elimination with partial pivoting; a singular system leaves its coefficient 0.
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t piv = i;
    for (std::size_t r = i + 1; r < n; ++r) {
      if (std::abs(a[r][i]) > std::abs(a[piv][i])) piv = r;
    }
    std::swap(a[i], a[piv]);
    if (std::abs(a[i][i]) < 1e-300) continue;
    for (std::size_t r = 0; r < n; ++r) {
      if (r == i) continue;
      const double f = a[r][i] / a[i][i];
      for (std::size_t col = i; col <= n; ++col) a[r][col] -= f * a[i][col];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    c[static_cast<std::size_t>(idx[i])] = std::abs(a[i][i]) < 1e-300 ? 0 : a[i][n] / a[i][i];
  }
  double rss = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    double e = y[k];
    for (std::size_t i = 0; i < 3; ++i) e -= c[i] * x[k][i];
    rss += e * e;
  }
  return {c, rss};
}

}  // namespace

Result<TimeModel> FitTimeModel(const std::vector<Measurement>& ms) {
  if (ms.size() < 3) return InvalidArgument("a time model needs at least 3 measured steps");
  TimeModel t;
  t.calibrated = true;
  // The fixed phases: their mean measured time. The others: y = a R + b B + c bits compared.
  std::vector<std::array<double, 3>> x;
  std::vector<double> y;
  for (const Measurement& m : ms) {
    double fixed = 0, var = 0;
    for (const auto& [name, c] : m.measured.phases) (IsFixedPhase(name) ? fixed : var) += c.seconds;
    t.fixed_seconds += fixed / static_cast<double>(ms.size());
    std::array<double, 3> f{0, 0, 0};
    for (const auto& [name, c] : m.predicted) {
      if (IsFixedPhase(name)) continue;
      f[0] += static_cast<double>(c.rounds);
      f[1] += static_cast<double>(c.bytes);
      f[2] += static_cast<double>(c.compared_bits);
    }
    x.push_back(f);
    y.push_back(var);
  }
  // Non-negative least squares over 3 features: the best fit among the subsets of features
  // whose coefficients all come out >= 0.
  double best = std::numeric_limits<double>::infinity();
  std::array<double, 3> coef{0, 0, 0};
  for (int mask = 1; mask < 8; ++mask) {
    const std::array<bool, 3> use{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    const auto [c, rss] = Fit(x, y, use);
    if (c[0] < 0 || c[1] < 0 || c[2] < 0 || !std::isfinite(rss)) continue;
    if (rss < best) {
      best = rss;
      coef = c;
    }
  }
  t.per_round = coef[0];
  t.per_byte = coef[1];
  t.per_compared_bit = coef[2];
  return t;
}

}  // namespace mpcache::tune
