#include "tune/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace mpcache::tune {

bool Floor::Keeps(const model::Fidelity& f) const {
  return kind == Kind::kAgreement ? f.agreement - z * f.agreement_se >= value
                                  : f.ll_loss + z * f.ll_loss_se <= value;
}

Result<double> ZForConfidence(double confidence) {
  if (!(confidence >= 0.5 && confidence < 1)) {
    return InvalidArgument("--confidence " + std::to_string(confidence) +
                           ": a one-sided confidence in [0.5, 1), e.g. 0.95 (0.5: the point "
                           "estimate alone)");
  }
  // Phi(z) = erfc(-z / sqrt 2) / 2 is increasing: bisect on [0, 10].
  double lo = 0, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < confidence ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::string Floor::ToString() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s:%g", kind == Kind::kAgreement ? "agreement" : "loss", value);
  return buf;
}

Result<Floor> ParseFloor(std::string_view text) {
  const auto colon = text.find(':');
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("--floor " + std::string(text) + ": " + why +
                           "; write agreement:X (X in (0, 1], e.g. agreement:0.99) or loss:X "
                           "(nats per token >= 0, e.g. loss:0.02)");
  };
  if (colon == std::string_view::npos) return bad("no ':'");
  const std::string kind(text.substr(0, colon)), num(text.substr(colon + 1));
  Floor f;
  if (kind == "agreement") {
    f.kind = Floor::Kind::kAgreement;
  } else if (kind == "loss") {
    f.kind = Floor::Kind::kLoss;
  } else {
    return bad("unknown kind '" + kind + "'");
  }
  char* end = nullptr;
  f.value = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(f.value)) {
    return bad("'" + num + "' is not a number");
  }
  if (f.kind == Floor::Kind::kAgreement && (f.value <= 0 || f.value > 1)) {
    return bad("an agreement floor lies in (0, 1]");
  }
  if (f.kind == Floor::Kind::kLoss && f.value < 0) return bad("a loss floor is >= 0");
  return f;
}

Result<Objective> ParseObjective(std::string_view text) {
  if (text == "bytes") return Objective::kBytes;
  if (text == "rounds") return Objective::kRounds;
  if (text == "time") return Objective::kSeconds;
  return InvalidArgument("--objective " + std::string(text) + ": use bytes, rounds or time");
}

std::string_view ToString(Objective o) {
  return o == Objective::kBytes ? "bytes" : o == Objective::kRounds ? "rounds" : "time";
}

double Value(const TokenCost& c, Objective o) {
  return o == Objective::kBytes ? c.bytes : o == Objective::kRounds ? c.rounds : c.seconds;
}

Result<Grid> ParseGrid(std::string_view text) {
  if (text == "quick") return Grid::kQuick;
  if (text == "standard") return Grid::kStandard;
  if (text == "wide") return Grid::kWide;
  return InvalidArgument("--grid " + std::string(text) + ": use quick, standard or wide");
}

std::vector<model::MpcachePolicy> CandidateGrid(Grid g, int seq_len) {
  std::vector<model::MpcachePolicy> out;
  const auto base = [](int cs, double keep) {
    model::MpcachePolicy p;
    p.cluster_tokens = cs;
    p.keep_ratio = keep;
    return p;
  };
  const std::vector<int> clusters =
      g == Grid::kQuick ? std::vector<int>{16, 32} : std::vector<int>{8, 16, 32};
  std::vector<double> keeps = g == Grid::kQuick ? std::vector<double>{0.15, 0.25, 0.5}
                                                : std::vector<double>{0.15, 0.2, 0.25, 0.35, 0.5};
  if (g == Grid::kWide) keeps = {0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.65};
  for (int cs : clusters) {
    for (double k : keeps) out.push_back(base(cs, k));
  }
  // Level 2: half-size sub-clusters inside generously kept clusters.
  for (int cs : {16, 32}) {
    for (double k2 :
         g == Grid::kQuick ? std::vector<double>{0.15} : std::vector<double>{0.1, 0.2}) {
      auto p = base(cs, 0.5);
      p.level2_tokens = cs / 2;
      p.level2_keep_ratio = k2;
      out.push_back(p);
    }
  }
  if (g != Grid::kQuick) {
    for (int cs : {16, 32}) {
      for (double k : {0.25, 0.5}) {
        auto p = base(cs, k);
        p.representative = model::Representative::kMean;
        out.push_back(p);
      }
    }
    for (double a : {0.5, 0.7}) {
      auto p = base(32, 0.25);
      p.alpha = a;
      out.push_back(p);
    }
    for (double d : {0.0, 0.9, 0.95}) {
      auto p = base(32, 0.25);
      p.share_layers = true;
      p.layer_share_decay = d;
      out.push_back(p);
    }
    for (int cs : {16, 32}) {
      auto p = base(cs, 0.15);
      p.residual = true;
      out.push_back(p);
    }
    for (double sk : {0.8, 0.6}) {
      auto p = base(32, 0.25);
      p.static_keep_ratio = sk;
      out.push_back(p);
    }
    auto p = base(32, 0.25);
    p.static_keep_ratio = 0.6;
    p.impact_weight = 1.0;
    out.push_back(p);
  } else {
    auto p = base(16, 0.15);
    p.residual = true;
    out.push_back(p);
  }
  // Only what the model's context can hold (a cluster no longer than a quarter of it).
  std::erase_if(out, [&](const model::MpcachePolicy& p) {
    return p.cluster_tokens * 4 > seq_len || !p.Validate().ok();
  });
  return out;
}

std::string Label(const std::optional<model::MpcachePolicy>& p) {
  if (!p) return "full cache";
  char buf[160];
  std::string s;
  std::snprintf(buf, sizeof buf, "c%d k%g", p->cluster_tokens, p->keep_ratio);
  s = buf;
  if (p->two_levels()) {
    std::snprintf(buf, sizeof buf, " l2:%d@%g", p->level2_tokens, p->level2_keep_ratio);
    s += buf;
  }
  if (p->representative == model::Representative::kMean) s += " mean";
  if (p->representative == model::Representative::kMinMax && p->alpha != 0.6) {
    std::snprintf(buf, sizeof buf, " a%g", p->alpha);
    s += buf;
  }
  if (p->share_layers) {
    std::snprintf(buf, sizeof buf, " share%g", p->layer_share_decay);
    s += buf;
  }
  if (p->residual) s += " resid";
  if (p->evicts()) {
    std::snprintf(buf, sizeof buf, " evict%g", p->static_keep_ratio);
    s += buf;
    if (p->impact_weight > 0) {
      std::snprintf(buf, sizeof buf, " iw%g", p->impact_weight);
      s += buf;
    }
  }
  return s;
}

void Rank(SearchResult& r, const Floor& floor, Objective objective) {
  r.frontier.clear();
  // The frontier: by increasing cost, each strictly more accurate than every cheaper one.
  std::vector<std::size_t> order(r.evaluated.size());
  std::iota(order.begin(), order.end(), 0);
  const auto accuracy = [&](std::size_t i) {
    const auto& f = r.evaluated[i].fidelity;
    return floor.kind == Floor::Kind::kAgreement ? f.agreement : -f.ll_loss;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double ca = Value(r.evaluated[a].cost, objective),
                 cb = Value(r.evaluated[b].cost, objective);
    return ca != cb ? ca < cb : accuracy(a) > accuracy(b);
  });
  double best = -1e300;
  for (std::size_t i : order) {
    if (accuracy(i) > best) {
      r.frontier.push_back(i);
      best = accuracy(i);
    }
  }
  r.chosen = 0;  // the full cache keeps every floor
  for (std::size_t i : order) {
    if (r.evaluated[i].keeps) {
      r.chosen = i;
      break;
    }
  }
}

Result<SearchResult> Search(const model::ModelWeights& w, const model::Workload& wl,
                            const std::vector<model::MpcachePolicy>& grid, const CostModel& cost,
                            const Floor& floor, Objective objective,
                            const model::FixedEngineOptions& engine, const Progress& progress) {
  SearchResult r;
  std::vector<std::optional<model::MpcachePolicy>> all{std::nullopt};
  all.insert(all.end(), grid.begin(), grid.end());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (progress) progress(i, all.size(), Label(all[i]));
    Evaluated e;
    e.policy = all[i];
    MPCACHE_ASSIGN_OR_RETURN(e.cost, cost.PerToken(e.policy, wl));
    if (e.policy) {
      MPCACHE_ASSIGN_OR_RETURN(e.fidelity, model::MeasureFidelity(w, wl, e.policy, engine));
    } else {
      e.fidelity.positions = e.fidelity.agreeing = wl.positions;  // the reference itself
    }
    e.keeps = floor.Keeps(e.fidelity);
    r.evaluated.push_back(e);
  }
  if (progress) progress(all.size(), all.size(), "done");
  Rank(r, floor, objective);
  return r;
}

}  // namespace mpcache::tune
