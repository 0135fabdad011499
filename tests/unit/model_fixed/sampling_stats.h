// Statistics shared by the private-sampling tests: Pearson's chi-square of draw counts, its
// critical value at significance 0.001, and llama2.c's nucleus on fixed-point probabilities.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "common/fixed_point.h"

namespace mpcache::sampling_test {

// Pearson's chi-square of `counts` against `probs` over the cells with probability > 0;
// cells expected below 5 draws are pooled into one (the usual validity rule). `df` receives
// the degrees of freedom (cells - 1).
inline double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int draws,
                        int* df = nullptr) {
  double chi = 0, pooled_e = 0, pooled_o = 0;
  int cells = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] <= 0) continue;
    const double e = probs[i] * draws;
    if (e < 5) {
      pooled_e += e;
      pooled_o += counts[i];
      continue;
    }
    chi += (counts[i] - e) * (counts[i] - e) / e;
    ++cells;
  }
  if (pooled_e > 0) {
    chi += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++cells;
  }
  if (df != nullptr) *df = cells - 1;
  return chi;
}

// The chi-square quantile at 1 - 0.001 for `df` degrees of freedom (Wilson-Hilferty, within
// 1% of the exact value for df >= 3; exact table below that). A correct sampler exceeds it
// once in a thousand seeds; the tests' seeds are fixed, so they are stable.
inline double ChiSquareCritical001(int df) {
  static constexpr double kTable[] = {0, 10.83, 13.82, 16.27};
  if (df < 4) return kTable[std::max(df, 1)];
  const double z = 3.0902, k = df;
  const double t = 1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k));
  return k * t * t * t;
}

// llama2.c's nucleus on fixed-point probabilities: the smallest prefix of the probabilities
// sorted in decreasing order whose mass exceeds top_p.
inline std::set<int> Nucleus(const std::vector<Ring64>& q, double top_p, int frac_bits) {
  std::vector<int> idx(q.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    return static_cast<std::int64_t>(q[static_cast<std::size_t>(a)]) >
           static_cast<std::int64_t>(q[static_cast<std::size_t>(b)]);
  });
  std::set<int> out;
  std::int64_t mass = 0;
  const std::int64_t limit = static_cast<std::int64_t>(FixedPoint{frac_bits}.Encode(top_p));
  for (int i : idx) {
    out.insert(i);
    mass += static_cast<std::int64_t>(q[static_cast<std::size_t>(i)]);
    if (mass > limit) break;
  }
  return out;
}

}  // namespace mpcache::sampling_test
