// `mpcache-bench ops` for the comparison-based and nonlinear operations (issue 4):
//   lt      n comparisons x < y (attention-score range)
//   max     max of one row of n logits          argmax  its secret one-hot
//   topk    top-8 (or n if smaller) of one row of n scores, as a secret one-hot 8 x n
//   topk-rank  the same by ranks (rank_select.h: constant rounds, n (n - 1) / 2 comparisons)
//   exp recip rsqrt silu   n values from the stories260K ranges (docs/fixed-point.md)
//   softmax one row of n scores                 rmsnorm one row of n residual values
// Same JSON fields as the arithmetic ops (op, n, security, seconds, bytes_per_party, rounds,
// max_abs_error, offline/setup figures) plus the theory's rounds and bytes and the MAC
// check's share. The op's preprocessing demand is measured by a first (untimed) run, made
// by the dealers offline, then the timed run consumes it: the online figures contain no
// dealer work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mpcache::tools {

inline constexpr const char* kCompareOps =
    "lt, max, argmax, topk, topk-rank, exp, recip, rsqrt, silu, softmax, rmsnorm";

struct CompareOpsArgs {
  std::string op;
  std::size_t n = 0;
  std::string security = "malicious";
  std::optional<std::uint64_t> seed;
  int threads = 1;
  bool json = false;
  // Comparison width (lt, max, argmax, topk, and the kernels' compare_bits): exact while
  // |x| < 2^(bits - 1); 0 = the kernels' default (FixedMathParams::compare_bits).
  int bits = 0;
  // FixedMathParams::rank_round_cost (the row max's round price in comparisons); -1 = default.
  int rank_round_cost = -1;
  // How values are opened: mpc::OpenStyle by name ("all-to-all" or "split-king").
  std::string open = "all-to-all";
  // Timed runs, each with fresh preprocessing made offline first; the median run's figures.
  int repeat = 1;
};

bool IsCompareOp(std::string_view op);

// Runs the benchmark and prints the result; returns the exit code (errors: one line on stderr).
int RunCompareOps(const CompareOpsArgs& args);

}  // namespace mpcache::tools
