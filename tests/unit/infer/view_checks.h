// The checkers of the view tests (view_test.cc) over runs recorded by view_harness.h.
//
// CheckExact ("family 1"): runs of the SAME prompt that differ only in the dealer masks of
//   the items that never change a secret (Beaver triples and squares, matrix masks and
//   triples, client masks, bit triples, root tuples, daBits: the harness "burns" k batches
//   of each before run k; the comparison tuples' masks: moved by a public shift in run k,
//   view_ltz.h), while truncation pairs, edaBits and the comparison tuples' r — whose masks
//   decide the truncations' rounding and the comparison trees' inner bits — stay the same.
//   Then every secret is identical in every run (asserted: each opening masked by a
//   truncation pair, an edaBit or a tuple's r opens the same value in every run, the
//   control), so for every other opened
//   element d = opened(run k) - opened(run 0) = mask(run k) - mask(run 0) exactly:
//     unmasked element   -> d = 0 in every run;
//     mask reused (i, j) -> d_i = d_j (or -d_j) in every run.
//   Arithmetic: d is 64 bits, so both are exact tests (false positives 2^-64 per element,
//   2^-128 per pair for two runs' d). Bits: d is one bit per run, so each opened bit
//   position gets the vector of its d over K-1 runs: all zero = unmasked (false positive
//   2^-(K-1) per position), two equal vectors = reused (2^-(K-1) per pair, every pair is
//   compared through a hash map), and a count of ones far from (K-1)/2 = a biased mask
//   (binomial tail, Bonferroni over the positions).
// CheckNoisy ("family 2"): runs of the same prompt with every seed different. Secrets then
//   differ between runs by the truncations' rounding (and what it propagates), so an
//   unmasked value gives a SMALL d, |d| < 2^(w - slack) for the w-bit opened values (d = 0 when w
//   <= slack), and a reused mask a small d_i -/+ d_j, in every run; a uniform d is that small with
//   probability 2^-(slack - 1). This is the test for the truncation and comparison
//   openings, whose masks CheckExact keeps fixed.
// CompareViews: two prompts, many runs each with every seed different: per position of
//   each party's view (message x 8-byte word, messages from the peers and from / to the
//   client), a Kolmogorov-Smirnov two-sample test of prompt A's values against prompt B's,
//   Bonferroni-corrected over all positions; and the exact same message shapes.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "unit/infer/view_harness.h"

namespace mpcache::infer::viewtest {

inline constexpr std::size_t kNone = ~std::size_t{0};

struct Finding {
  std::size_t opening = kNone, elem = 0;      // RunRecord::openings index, element
  std::size_t other = kNone, other_elem = 0;  // the other use of a reused mask
  std::string what;
  int party = -1;               // CompareViews, message positions: the party,
  std::size_t message = kNone;  // its message index
  int from = 0;                 // and where the message came from (peer, kFromClient, kToClient)
};

struct Report {
  std::vector<Finding> findings;
  std::string stats;  // what was checked and the false-positive bound
  bool Has(std::size_t opening, std::size_t elem) const {
    for (const auto& f : findings) {
      if ((f.opening == opening && f.elem == elem) ||
          (f.other == opening && f.other_elem == elem)) {
        return true;
      }
    }
    return false;
  }
  std::string Text(std::size_t max = 12) const {
    std::string s = stats + "\n" + std::to_string(findings.size()) + " finding(s)";
    for (std::size_t i = 0; i < findings.size() && i < max; ++i) s += "\n  " + findings[i].what;
    return s;
  }
};

inline std::string Hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}
inline std::string Sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2g", v);
  return b;
}

// The openings' public shape: kind, size, width and the dealer requests before each, in
// order. Empty when a and b agree.
inline std::string OpeningShapeDiff(const RunRecord& a, const RunRecord& b) {
  if (a.openings.size() != b.openings.size()) {
    return std::to_string(a.openings.size()) + " vs " + std::to_string(b.openings.size()) +
           " openings";
  }
  for (std::size_t i = 0; i < a.openings.size(); ++i) {
    const Opening &x = a.openings[i], &y = b.openings[i];
    if (x.kind != y.kind || x.index != y.index || x.n != y.n || x.width != y.width ||
        x.requests != y.requests) {
      return "opening " + std::to_string(i) + ": " + x.Name() + " vs " + y.Name();
    }
  }
  return "";
}

// Every run's openings have run 0's shape; otherwise a finding naming the first run that
// differs, and false.
inline bool OpeningShapesAgree(const std::vector<RunRecord>& runs, Report& rep) {
  for (std::size_t k = 1; k < runs.size(); ++k) {
    if (std::string d = OpeningShapeDiff(runs[0], runs[k]); !d.empty()) {
      rep.findings.push_back({kNone, 0, kNone, 0, "run " + std::to_string(k) + " shape: " + d});
      return false;
    }
  }
  return true;
}

// Message shapes of every party: who sent, how many bytes, in which order; rounds.
inline std::string MessageShapeDiff(const RunRecord& a, const RunRecord& b) {
  for (std::size_t p = 0; p < 3; ++p) {
    const std::string party = "party " + std::to_string(p) + ": ";
    if (a.rounds[p] != b.rounds[p]) {
      return party + std::to_string(a.rounds[p]) + " vs " + std::to_string(b.rounds[p]) + " rounds";
    }
    if (a.sent[p] != b.sent[p]) return party + "different sends";
    const auto &x = a.messages[p], &y = b.messages[p];
    if (x.size() != y.size()) {
      return party + std::to_string(x.size()) + " vs " + std::to_string(y.size()) + " messages";
    }
    for (std::size_t m = 0; m < x.size(); ++m) {
      if (x[m].from != y[m].from || x[m].bytes.size() != y[m].bytes.size()) {
        return party + "message " + std::to_string(m) + " differs in origin or size";
      }
    }
  }
  return "";
}

inline std::uint64_t Low(u128 v, int w) {
  const auto x = static_cast<std::uint64_t>(v);
  return w >= 64 ? x : x & ((std::uint64_t{1} << w) - 1);
}
// Bits of an opened value that are masked: the low 64 of the wire width.
inline int Bits(const Opening& o) {
  return static_cast<int>(std::min<std::size_t>(64, 8 * o.width));
}
// (A comparison tuple's r stays fixed in the exact family; only its masks move.)
inline bool MaskedByFixedItems(const Opening& o) {
  return (o.sources &
          (Bit(Item::kTrunc) | Bit(Item::kFused) | Bit(Item::kEdaBit) | Bit(Item::kLtzTuple))) != 0;
}
inline std::string Where(const RunRecord& r, std::size_t o, std::size_t e) {
  return r.openings[o].Name() + " element " + std::to_string(e);
}

// The one-hot check of the client's prompt rows (infer/input_check.cc) opens, with its first
// round, a coin of two dealer randoms (fresh, checked like any mask), and with its second the
// check values, which are 0 for an honest client and masked by nothing: a simulator outputs
// 0 for them. Such a zero test is an arithmetic opening with no dealer item requested since
// the opening just before it, which opened randoms; it must open exactly 0 in every run,
// and anything else there is a leak.
inline bool IsZeroTest(const RunRecord& r, std::size_t o) {
  const Opening& op = r.openings[o];
  if (o == 0 || op.kind != Kind::kArith || op.sources != 0) return false;
  const Opening& before = r.openings[o - 1];
  return before.kind == Kind::kArith && (before.sources & Bit(Item::kRandom)) != 0;
}
// Findings for a zero test's elements that are not 0 in some run; adds the elements checked.
inline void CheckZeroTest(const std::vector<RunRecord>& runs, std::size_t o, Report& rep,
                          std::size_t& n_zero) {
  const Opening& op = runs[0].openings[o];
  for (std::size_t e = 0; e < op.n; ++e, ++n_zero) {
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (Low(runs[k].openings[o].values[e], Bits(op)) != 0) {
        rep.findings.push_back({o, e, kNone, 0,
                                Where(runs[0], o, e) + ": a zero test opened " +
                                    Hex(Low(runs[k].openings[o].values[e], 64)) + " in run " +
                                    std::to_string(k) + ": an unmasked value"});
        break;
      }
    }
  }
}

// Largest t with P(Bin(n, 1/2) <= t) <= p (-1 if none).
inline int BinomialLowTail(int n, double p) {
  double cdf = 0;
  for (int t = 0; t <= n; ++t) {
    cdf += std::exp(std::lgamma(n + 1.0) - std::lgamma(t + 1.0) - std::lgamma(n - t + 1.0) -
                    n * std::log(2.0));
    if (cdf > p) return t - 1;
  }
  return n;
}

inline Report CheckExact(const std::vector<RunRecord>& runs, double alpha = 1e-6) {
  Report rep;
  const std::size_t K = runs.size();
  if (K < 3 || K > 129) {
    rep.findings.push_back({kNone, 0, kNone, 0, "CheckExact needs 3..129 runs"});
    return rep;
  }
  const RunRecord& r0 = runs[0];
  if (!OpeningShapesAgree(runs, rep)) return rep;
  auto diff = [&](std::size_t k, std::size_t o, std::size_t e) {
    return Low(runs[k].openings[o].values[e] - r0.openings[o].values[e], 64);
  };
  std::size_t n_fixed = 0, n_arith = 0, n_bits = 0, n_zero = 0;
  // Arithmetic and client values: key = (d run 1, d run 2); -key for a mask used with the
  // other sign.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::size_t, std::size_t>> seen;
  // Bits: the vector of d over runs 1..K-1.
  struct H {
    std::size_t operator()(u128 v) const {
      return std::hash<std::uint64_t>()(Low(v, 64) ^ Low(v >> 64, 64));
    }
  };
  std::unordered_map<u128, std::pair<std::size_t, std::size_t>, H> vecs;
  std::size_t positions = 0;
  for (const auto& o : r0.openings) positions += o.kind == Kind::kBinary ? o.n : 0;
  const int t_lo =
      BinomialLowTail(static_cast<int>(K - 1), alpha / 2 / std::max<std::size_t>(positions, 1));
  for (std::size_t o = 0; o < r0.openings.size(); ++o) {
    const Opening& op = r0.openings[o];
    if (op.kind == Kind::kBinary) {
      for (std::size_t e = 0; e < op.n; ++e, ++n_bits) {
        u128 v = 0;
        for (std::size_t k = 1; k < K; ++k) {
          v |= u128{static_cast<unsigned>(runs[k].openings[o].bits[e] ^ op.bits[e])} << (k - 1);
        }
        const int ones = std::popcount(Low(v, 64)) + std::popcount(Low(v >> 64, 64));
        if (v == 0) {
          rep.findings.push_back({o, e, kNone, 0,
                                  Where(r0, o, e) + ": opened the same bit in all " +
                                      std::to_string(K) + " runs with different masks: unmasked"});
          continue;
        }
        if (t_lo >= 0 && (ones <= t_lo || ones >= static_cast<int>(K - 1) - t_lo)) {
          rep.findings.push_back({o, e, kNone, 0,
                                  Where(r0, o, e) + ": the bit changed in " + std::to_string(ones) +
                                      " of " + std::to_string(K - 1) + " runs: a biased mask"});
        }
        auto [it, fresh] = vecs.emplace(v, std::make_pair(o, e));
        if (!fresh) {
          const auto [po, pe] = it->second;
          rep.findings.push_back({o, e, po, pe,
                                  Where(r0, o, e) + " and " + Where(r0, po, pe) +
                                      ": their XOR is the same in all runs: one mask used twice"});
        }
      }
      continue;
    }
    if (IsZeroTest(r0, o)) {
      CheckZeroTest(runs, o, rep, n_zero);
      continue;
    }
    if (MaskedByFixedItems(op)) {  // the control: same secret, same mask, same value
      for (std::size_t e = 0; e < op.n; ++e, ++n_fixed) {
        for (std::size_t k = 1; k < K; ++k) {
          if (diff(k, o, e) != 0) {
            rep.findings.push_back({o, e, kNone, 0,
                                    "control: " + Where(r0, o, e) + " differs in run " +
                                        std::to_string(k) +
                                        ": the runs do not compute the same secrets"});
            break;
          }
        }
      }
      continue;
    }
    for (std::size_t e = 0; e < op.n; ++e, ++n_arith) {
      bool zero = true;
      for (std::size_t k = 1; k < K && zero; ++k) zero = diff(k, o, e) == 0;
      if (zero) {
        rep.findings.push_back({o, e, kNone, 0,
                                Where(r0, o, e) + ": opened " + Hex(Low(op.values[e], 64)) +
                                    " in all " + std::to_string(K) +
                                    " runs with different masks: unmasked (opened - secret = 0)"});
        continue;
      }
      const std::pair<std::uint64_t, std::uint64_t> key{diff(1, o, e), diff(2, o, e)};
      for (const auto& probe : {key, std::make_pair(0 - key.first, 0 - key.second)}) {
        if (auto it = seen.find(probe); it != seen.end()) {
          const auto [po, pe] = it->second;
          rep.findings.push_back({o, e, po, pe,
                                  Where(r0, o, e) + " and " + Where(r0, po, pe) +
                                      ": opened - secret moves by the same " + Hex(probe.first) +
                                      " between runs: one mask used twice"});
        }
      }
      seen.emplace(key, std::make_pair(o, e));
    }
  }
  const double bits_fp = (static_cast<double>(n_bits) + 0.5 * n_bits * n_bits) *
                         std::ldexp(1.0, -static_cast<int>(K - 1));
  rep.stats =
      "exact check over " + std::to_string(K) + " runs: " + std::to_string(n_arith) +
      " masked values (false positives <= " + Sci(0.5 * n_arith * n_arith * std::ldexp(1.0, -127)) +
      "), " + std::to_string(n_bits) + " opened bits (unmasked / reused: <= " + Sci(bits_fp) +
      (t_lo >= 0 ? ", biased: <= " + Sci(alpha) : std::string()) + "), " + std::to_string(n_fixed) +
      " control values, " + std::to_string(n_zero) + " zero-test values";
  return rep;
}

inline Report CheckNoisy(const std::vector<RunRecord>& runs, int slack = 16) {
  Report rep;
  const std::size_t K = runs.size();
  if (K < 3) {
    rep.findings.push_back({kNone, 0, kNone, 0, "CheckNoisy needs 3 runs or more"});
    return rep;
  }
  const RunRecord& r0 = runs[0];
  if (!OpeningShapesAgree(runs, rep)) return rep;
  auto diff = [&](std::size_t k, std::size_t o, std::size_t e, int w) {
    return Low(runs[k].openings[o].values[e] - r0.openings[o].values[e], w);
  };
  // Openings narrower than the slack (an 8-bit comparison's c, opened with nothing riding)
  // carry no truncation noise: there "small" is d = 0, "near" a gap below 2.
  auto room = [&](int w) { return std::max(0, w - slack); };
  int narrowest = 64;
  auto small = [&](std::uint64_t d, int w) {  // |d| < 2^room(w), d read mod 2^w
    const std::uint64_t lim = std::uint64_t{1} << room(w);
    return d < lim || Low(0 - d, w) < lim;
  };
  struct Entry {
    std::uint64_t key;
    std::size_t o, e;
    bool neg;
  };
  struct Elem {
    std::size_t o, e;
    int w;
  };
  std::vector<Elem> masked;
  std::set<int> widths;
  std::size_t n = 0, n_zero = 0;  // values checked; of them in zero tests
  for (std::size_t o = 0; o < r0.openings.size(); ++o) {
    const Opening& op = r0.openings[o];
    if (op.kind == Kind::kBinary) continue;
    if (IsZeroTest(r0, o)) {
      CheckZeroTest(runs, o, rep, n_zero);
      n += op.n;
      continue;
    }
    const int w = Bits(op);
    narrowest = std::min(narrowest, w);
    for (std::size_t e = 0; e < op.n; ++e, ++n) {
      bool all_small = true;
      for (std::size_t k = 1; k < K && all_small; ++k) all_small = small(diff(k, o, e, w), w);
      if (all_small) {
        rep.findings.push_back({o, e, kNone, 0,
                                Where(r0, o, e) + ": opened value moved by less than 2^" +
                                    std::to_string(room(w)) + " in all " + std::to_string(K) +
                                    " runs with different masks: unmasked"});
        continue;
      }
      masked.push_back({o, e, w});
      widths.insert(w);
    }
  }
  // Pairs: for each width w, every value opened at w bits or more, read mod 2^w (a mask
  // may be reused across widths), sorted by its d in run 1 (and -d: a mask added once and
  // subtracted once); neighbours closer than 2^(w - slack + 1) are compared in every run.
  using Pos = std::pair<std::size_t, std::size_t>;
  std::set<std::pair<Pos, Pos>> pairs;
  for (int w : widths) {
    std::vector<Entry> list;
    for (const Elem& x : masked) {
      if (x.w < w) continue;
      const std::uint64_t d1 = diff(1, x.o, x.e, w);
      list.push_back({d1, x.o, x.e, false});
      list.push_back({Low(0 - d1, w), x.o, x.e, true});
    }
    std::sort(list.begin(), list.end(),
              [](const Entry& a, const Entry& b) { return a.key < b.key; });
    const std::uint64_t near = std::uint64_t{1} << (room(w) + 1);
    for (std::size_t i = 0; i < list.size(); ++i) {
      for (std::size_t step = 1; step < list.size(); ++step) {
        const Entry &a = list[i], &b = list[(i + step) % list.size()];
        if (Low(b.key - a.key, w) >= near) break;
        if (a.neg || (a.o == b.o && a.e == b.e)) continue;  // (+,+) and (+,-) pairs only
        bool close = true;
        for (std::size_t k = 1; k < K && close; ++k) {
          const std::uint64_t db = diff(k, b.o, b.e, w);
          const std::uint64_t gap = Low(diff(k, a.o, a.e, w) - (b.neg ? Low(0 - db, w) : db), w);
          close = gap < near || Low(0 - gap, w) < near;
        }
        const Pos pa{a.o, a.e}, pb{b.o, b.e};
        if (!close || !pairs.insert(pa < pb ? std::pair(pa, pb) : std::pair(pb, pa)).second) {
          continue;
        }
        rep.findings.push_back({a.o, a.e, b.o, b.e,
                                Where(r0, a.o, a.e) + " and " + Where(r0, b.o, b.e) +
                                    ": opened values moved together (within 2^" +
                                    std::to_string(room(w) + 1) + " mod 2^" + std::to_string(w) +
                                    ") in all " + std::to_string(K) +
                                    " runs: one mask used twice"});
      }
    }
  }
  // A uniform d is small with probability 2^-(s - 1) per run, a uniform gap near with
  // 2^-(s - 2), s = min(slack, w) at the narrowest width; pairs are compared once per width.
  const int s_min = std::min(slack, narrowest);
  const double fp_one = std::ldexp(1.0, -static_cast<int>((s_min - 1) * (K - 1)));
  const double fp_pair = std::ldexp(1.0, -static_cast<int>((s_min - 2) * (K - 1)));
  const double nn = static_cast<double>(n);
  rep.stats = "noisy check over " + std::to_string(K) + " runs: " + std::to_string(n) +
              " values, slack 2^" + std::to_string(slack) + ", " + std::to_string(widths.size()) +
              " widths (false positives <= " +
              Sci(nn * fp_one + 0.5 * nn * nn * static_cast<double>(widths.size()) * fp_pair) +
              "), " + std::to_string(n_zero) + " of them in zero tests";
  return rep;
}

// P(D >= h/K) for the two-sample Kolmogorov-Smirnov statistic of two samples of K
// (Gnedenko-Korolyuk; exact for continuous data, conservative with ties).
inline double KsPValue(int K, int h) {
  if (h <= 0) return 1;
  long double sum = 0;
  for (int j = 1; j * h <= K; ++j) {
    const long double t = std::exp(2 * std::lgamma(K + 1.0L) - std::lgamma(K - j * h + 1.0L) -
                                   std::lgamma(K + j * h + 1.0L));
    sum += (j % 2 == 1) ? t : -t;
  }
  return std::min(1.0, static_cast<double>(2 * sum));
}

inline Report CompareViews(const std::vector<RunRecord>& a, const std::vector<RunRecord>& b,
                           double alpha = 1e-6) {
  Report rep;
  const std::size_t K = a.size();
  if (K < 2 || b.size() != K) {
    rep.findings.push_back({kNone, 0, kNone, 0, "CompareViews needs two equal sets of runs"});
    return rep;
  }
  for (const auto* set : {&a, &b}) {
    for (const RunRecord& r : *set) {
      std::string d = MessageShapeDiff(a[0], r);
      if (d.empty()) d = OpeningShapeDiff(a[0], r);
      if (!d.empty()) {
        rep.findings.push_back(
            {kNone, 0, kNone, 0, "the public shape depends on the prompt: " + d});
        return rep;
      }
    }
  }
  // Positions: every 8-byte word of every message of every party, and every opened value
  // (what each party learns from an opening: its own share plus the ones it received).
  std::size_t tests = 0;
  for (const auto& msgs : a[0].messages) {
    for (const auto& m : msgs) tests += (m.bytes.size() + 7) / 8;
  }
  for (const auto& o : a[0].openings) tests += o.n;
  const double limit = alpha / static_cast<double>(std::max<std::size_t>(tests, 1));
  int h_min = static_cast<int>(K) + 1;  // smallest K * D that is flagged
  for (int h = static_cast<int>(K); h >= 1 && KsPValue(static_cast<int>(K), h) < limit; --h)
    h_min = h;
  if (h_min > static_cast<int>(K)) {
    rep.findings.push_back({kNone, 0, kNone, 0,
                            std::to_string(K) + " runs per prompt cannot reach p < " + Sci(limit) +
                                ": this comparison could never fail"});
  }
  std::vector<std::pair<std::uint64_t, int>> v(2 * K);
  // K * D for the values get(run) of prompt A's runs against prompt B's.
  auto ks = [&](auto get) {
    for (std::size_t k = 0; k < 2 * K; ++k) v[k] = {get(k < K ? a[k] : b[k - K]), k < K ? 1 : -1};
    std::sort(v.begin(), v.end());
    int run = 0, h = 0;
    for (std::size_t k = 0; k < v.size(); ++k) {
      run += v[k].second;
      if (k + 1 == v.size() || v[k + 1].first != v[k].first) h = std::max(h, std::abs(run));
    }
    return h;
  };
  auto verdict = [&](int h) {
    return ": KS D = " + std::to_string(h) + "/" + std::to_string(K) +
           " between the prompts (p = " + Sci(KsPValue(static_cast<int>(K), h)) +
           "): the prompt shows";
  };
  for (std::size_t p = 0; p < 3; ++p) {
    const auto& msgs = a[0].messages[p];
    for (std::size_t m = 0; m < msgs.size(); ++m) {
      const std::size_t size = msgs[m].bytes.size();
      for (std::size_t off = 0; off < size; off += 8) {
        const int h = ks([&](const RunRecord& r) {
          std::uint64_t w = 0;
          std::memcpy(&w, r.messages[p][m].bytes.data() + off,
                      std::min<std::size_t>(8, size - off));
          return w;
        });
        if (h < h_min) continue;
        const int from = msgs[m].from;
        Finding f{kNone, 0, kNone, 0,
                  "party " + std::to_string(p) + ", message #" + std::to_string(m) + " (" +
                      (from == kFromClient ? std::string("from the client")
                       : from == kToClient ? std::string("to the client")
                                           : "from party " + std::to_string(from)) +
                      ", " + std::to_string(size) + " B), bytes " + std::to_string(off) + ".." +
                      std::to_string(std::min<std::size_t>(off + 8, size) - 1) + verdict(h)};
        f.party = static_cast<int>(p);
        f.message = m;
        f.from = from;
        rep.findings.push_back(std::move(f));
      }
    }
  }
  for (std::size_t o = 0; o < a[0].openings.size(); ++o) {
    const Opening& op = a[0].openings[o];
    for (std::size_t e = 0; e < op.n; ++e) {
      const int h = ks([&](const RunRecord& r) -> std::uint64_t {
        const Opening& x = r.openings[o];
        return x.kind == Kind::kBinary ? x.bits[e] : Low(x.values[e], 64);
      });
      if (h >= h_min)
        rep.findings.push_back(
            {o, e, kNone, 0, Where(a[0], o, e) + " (opened value)" + verdict(h)});
    }
  }
  rep.stats = "view comparison: " + std::to_string(K) + " runs per prompt, " +
              std::to_string(tests) + " positions, flagged at KS D >= " + std::to_string(h_min) +
              "/" + std::to_string(K) + " (p < " + Sci(alpha) + " / " + std::to_string(tests) +
              "; false positives <= " + Sci(alpha) + ")";
  return rep;
}

}  // namespace mpcache::infer::viewtest
