// The ranked row max and argmax (RankTournament: every pair of a group compared in one batch)
// over a fixed-point backend (common/fixed_backend.h), and the costs by which callers choose
// its group size (RankTournamentCost, RankGroup, ArgMaxGroup). Softmax (common/fixed_math.h)
// and the classifier's argmax use it; docs/fixed-point.md and docs/secure-llama.md give the
// figures.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/fixed_backend.h"

namespace mpcache {

// Row-wise max of rows x cols values by ranking, for wide rows in few rounds: each level
// splits a row of width w into ceil(w / group) groups of balanced sizes (g and g - 1) and
// ranks every group at once. ONE comparison batch of every pair i < j of every group gives
// c_ij = [x_i < x_j]; member i's wins w_i = sum_{j > i} (1 - c_ij) + sum_{j < i} c_ji count the
// members it beats (ties go to the lower index: a strict total order), so exactly one member
// of a group of g, its first maximum, has w_i = g - 1. A smaller group's members are credited
// the missing members (w_i + gmax - g), so ONE 8-bit comparison batch gives every
// is_max_i = 1 - [w_i - (gmax - 1) < 0] (levels whose groups hold at most 2 members use the
// pair's bit instead), and ONE product batch the groups' maxima sum_i is_max_i x_i. Rounds
// per level: LtzRounds(bits) + LtzRounds(8) + 1, or LtzRounds(bits) + 1 for pairs. Exact. A
// level of pairs takes its maxima as x_i - c_ij (x_i - x_j), the comparison's own input: one
// product per pair instead of one per member.
//
// RowArgMaxRank also returns the one-hot of each row's first maximum (rows x cols). With groups
// of more than 2: after the first level it is that level's is_max; every later level
// multiplies each column's entry by the is_max of the member whose range holds the column,
// in the same product batch as the maxima (cols more products per row per level after the
// first, no extra round). With pairs (group 2, log2(cols) levels) top down once the maximum
// is known instead: the top level's is_max, then for every level below one product batch
// q_m = q_(m's group) is_max_m (a member of a group of one takes its group's q as it is):
// L - 1 product rounds more than the max for about two products per column (the sum of
// the level widths), not L - 1.
template <typename B>
struct RankArgMax {
  typename B::Vec max;      // rows
  typename B::Vec one_hot;  // rows x cols (empty unless asked for)
};

namespace fixed_detail {

template <typename B>
RankArgMax<B> RankTournament(B& be, const typename B::Vec& x, std::size_t rows, std::size_t cols,
                             int bits, std::size_t group, bool with_one_hot) {
  group = std::clamp<std::size_t>(group, 2, 64);
  const bool top_down = with_one_hot && group == 2;
  RankArgMax<B> out;
  auto cur = x;
  std::size_t width = cols;
  bool have_one_hot = false;  // bottom up: from the first level's is_max on
  // owner[col]: the current level's member (within its row) whose range holds column col.
  std::vector<std::size_t> owner(with_one_hot && !top_down ? cols : 0);
  for (std::size_t c = 0; c < owner.size(); ++c) owner[c] = c;
  // Top down: every level's is_max (rows x width, row-major) and each member's group.
  struct Level {
    typename B::Vec is_max;
    std::vector<std::size_t> group_of;
    std::size_t next = 0;
  };
  std::vector<Level> levels;
  while (width > 1) {
    const std::size_t next = (width + group - 1) / group;
    // Balanced groups: the first `width % next` hold gmax members, the rest gmax - 1 (or
    // all gmax when next divides width).
    const std::size_t gmax = (width + next - 1) / next;
    const std::size_t big = width % next == 0 ? next : width % next;
    auto gsize = [&](std::size_t k) { return k < big ? gmax : gmax - 1; };
    auto gbase = [&](std::size_t k) {
      return k < big ? k * gmax : big * gmax + (k - big) * (gmax - 1);
    };
    // Pairs of the level, every row: sum over the groups of g (g - 1) / 2.
    std::size_t row_pairs = 0;
    for (std::size_t k = 0; k < next; ++k) row_pairs += gsize(k) * (gsize(k) - 1) / 2;
    SparseRows pairs;  // x_i - x_j for every pair i < j of every group
    pairs.Reserve(rows * row_pairs, 2 * rows * row_pairs);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t k = 0; k < next; ++k) {
        const std::size_t g = gsize(k), base = r * width + gbase(k);
        for (std::size_t i = 0; i < g; ++i) {
          for (std::size_t j = i + 1; j < g; ++j) {
            pairs.Add(base + i, 1);
            pairs.Add(base + j, Neg(1));
            pairs.EndRow();
          }
        }
      }
    }
    const std::size_t npairs = pairs.rows();
    const auto diff = be.GatherSum(cur, pairs);
    auto c = be.IsNegative(diff, bits);
    typename B::Vec is_max;
    if (gmax > 2) {
      // w_i - (gmax - 1) = -i + sum_{j < i} c_ji - sum_{j > i} c_ij (the credited members and
      // the pairs i wins cancel the rest): 0 for the group's first maximum, < 0 otherwise.
      // The terms in the order of the pool [1 - c | c | 0 | 1] this replaced.
      auto one = be.AddConst(be.MulConst(be.Gather(c, std::vector<std::size_t>{0}), 0), 1);
      const auto pool = be.Concat(c, one);
      SparseRows wins;  // each member: its g - 1 pairs and, but the first, a constant
      wins.Reserve(rows * width, rows * (2 * row_pairs + width - next));
      std::size_t first = 0;  // the group's first pair
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < next; ++k) {
          const std::size_t g = gsize(k);
          // Pair (i, j), i < j, of the group: first + i g - i (i + 1) / 2 + j - i - 1.
          const auto pair = [&](std::size_t i, std::size_t j) {
            return first + i * g - i * (i + 1) / 2 + j - i - 1;
          };
          for (std::size_t i = 0; i < g; ++i) {
            for (std::size_t h = 0; h < i; ++h) wins.Add(pair(h, i), 1);
            for (std::size_t j = i + 1; j < g; ++j) wins.Add(pair(i, j), Neg(1));
            if (i > 0) wins.Add(npairs, Neg(i));
            wins.EndRow();
          }
          first += g * (g - 1) / 2;
        }
      }
      is_max = OneMinus(be, be.IsNegative(be.GatherSum(pool, wins), 8));
    } else if (with_one_hot) {
      // pool = [1 - c (x_i beats x_j, i < j) | c (x_j beats x_i) | 0 | 1].
      auto zero = be.MulConst(be.Gather(c, std::vector<std::size_t>{0}), 0);
      auto pool = be.Concat(be.Concat(OneMinus(be, c), c), be.Concat(zero, be.AddConst(zero, 1)));
      const std::size_t one_at = 2 * npairs + 1;
      // Each member's gmax - 1 entries: the pairs it wins, then ones for a smaller group's
      // missing members.
      std::vector<std::size_t> win_idx;
      std::size_t pair = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < next; ++k) {
          const std::size_t g = gsize(k);
          std::vector<std::vector<std::size_t>> e(g);
          for (std::size_t i = 0; i < g; ++i) {
            for (std::size_t j = i + 1; j < g; ++j, ++pair) {
              e[i].push_back(pair);           // i < j beats j: x_i >= x_j
              e[j].push_back(npairs + pair);  // j beats i: x_j > x_i
            }
          }
          for (std::size_t i = 0; i < g; ++i) {
            e[i].resize(gmax - 1, one_at);
            win_idx.insert(win_idx.end(), e[i].begin(), e[i].end());
          }
        }
      }
      is_max = be.Gather(pool, win_idx);  // one entry per member: its pair's bit, or 1
    }
    // Bottom up: each column's entry and its owner's is_max, as factors of the level's batch.
    const auto owner_idx = [&] {
      std::vector<std::size_t> oidx(rows * cols);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t col = 0; col < cols; ++col) oidx[r * cols + col] = r * width + owner[col];
      }
      return oidx;
    };
    // The level's product batch l * r; bottom up (after the first level), the one-hot's
    // columns times their owners' is_max ride in it.
    const auto level_product = [&](const typename B::Vec& l, const typename B::Vec& r) {
      if (!(with_one_hot && have_one_hot)) return be.Mul(l, r);
      const std::size_t n = B::Size(l);
      auto prod = be.Mul(be.Concat(l, be.Gather(is_max, owner_idx())), be.Concat(r, out.one_hot));
      out.one_hot = Slice(be, prod, n, rows * cols);
      return Slice(be, prod, 0, n);
    };
    if (gmax <= 2) {
      // Pairs: max = x_i - c (x_i - x_j), one product per pair; a group of one keeps x_i.
      const auto cd = level_product(c, diff);
      auto cdz = be.Concat(cd, be.MulConst(be.Gather(cd, std::vector<std::size_t>{0}), 0));
      std::vector<std::size_t> first_idx, cd_idx;
      std::size_t pair = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < next; ++k) {
          first_idx.push_back(r * width + gbase(k));
          cd_idx.push_back(gsize(k) == 2 ? pair++ : npairs);
        }
      }
      cur = be.Sub(be.Gather(cur, first_idx), be.Gather(cdz, cd_idx));
    } else {
      // The groups' maxima: sum of is_max_i x_i over each group.
      const auto terms = level_product(is_max, cur);
      SparseRows sums;
      sums.Reserve(rows * next, rows * width);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < next; ++k) {
          const std::size_t g = gsize(k), base = r * width + gbase(k);
          for (std::size_t i = 0; i < g; ++i) sums.Add(base + i, 1);
          sums.EndRow();
        }
      }
      cur = be.GatherSum(terms, sums);
    }
    if (with_one_hot && !top_down) {
      if (!have_one_hot) {
        out.one_hot = is_max;  // the first level: one member per column
        have_one_hot = true;
      }
      std::vector<std::size_t> group_of(width);
      for (std::size_t k = 0; k < next; ++k) {
        for (std::size_t i = 0; i < gsize(k); ++i) group_of[gbase(k) + i] = k;
      }
      for (std::size_t& o : owner) o = group_of[o];
    }
    if (top_down) {
      Level level;
      level.is_max = std::move(is_max);
      level.next = next;
      level.group_of.resize(width);
      for (std::size_t k = 0; k < next; ++k) {
        for (std::size_t i = 0; i < gsize(k); ++i) level.group_of[gbase(k) + i] = k;
      }
      levels.push_back(std::move(level));
    }
    width = next;
  }
  if (with_one_hot && cols <= 1) {
    out.one_hot = be.AddConst(be.MulConst(x, 0), 1);  // one column: it is the maximum
  } else if (top_down) {
    // The top level's is_max, then q_m = q_(group of m) is_max_m per level below.
    auto q = std::move(levels.back().is_max);
    for (std::size_t l = levels.size() - 1; l-- > 0;) {
      const Level& level = levels[l];
      const std::size_t w = level.group_of.size();
      std::vector<std::size_t> idx(rows * w);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t m = 0; m < w; ++m) idx[r * w + m] = r * level.next + level.group_of[m];
      }
      q = be.Mul(be.Gather(q, idx), level.is_max);
    }
    out.one_hot = std::move(q);
  }
  out.max = std::move(cur);
  return out;
}

}  // namespace fixed_detail

// Rounds and pairs compared of a ranked max of a row `cols` wide in groups of up to `group`
// (the balanced levels of RankTournament): a level whose groups hold 3 members or more costs
// LtzRounds(bits) + LtzRounds(8) + 1 = 6 rounds (three-round comparisons of the values, two of
// the 8-bit win counts, one product), a level of pairs 3 + 1 = 4.
struct RankCost {
  std::uint64_t rounds = 0;
  std::uint64_t pairs = 0;
};
inline RankCost RankTournamentCost(std::size_t cols, std::size_t group) {
  RankCost c;
  for (std::size_t w = cols; w > 1;) {
    const std::size_t next = (w + group - 1) / group, gmax = (w + next - 1) / next;
    const std::size_t big = w % next == 0 ? next : w % next;
    for (std::size_t k = 0; k < next; ++k) {
      const std::size_t g = k < big ? gmax : gmax - 1;
      c.pairs += g * (g - 1) / 2;
    }
    c.rounds += gmax > 2 ? 6 : 4;
    w = next;
  }
  return c;
}

// The group size a ranked max of rows `cols` wide uses: of the groups of up to `max_group`
// members, the one with the fewest rounds and, among those, the fewest pairs compared (each
// pair is a comparison tuple from the dealer: the rounds saved by larger groups are paid in
// dealer traffic, so max_group bounds that). At 24: up to 24 columns rank in one level, 25 to
// 48 in two ending in a pair level (10 rounds), 49 to 576 in two (12 rounds).
//
// With `round_cost` > 0 (softmax: FixedMathParams::rank_round_cost) the choice weighs the two
// instead: the fewest `round_cost` x rounds + rows x pairs (ties: the fewer rounds), i.e. a
// round of the batch is worth `round_cost` comparisons, and a batch of `rows` rows pays every
// row's pairs. Short rows still take the fewest rounds; long ones stop paying ~g/2 pairs per
// element for a level less (1 024 columns: groups of 23 compare 11 628 pairs per row in 16
// rounds, groups of 8 4 089 in 24).
inline std::size_t RankGroup(std::size_t cols, std::size_t max_group, std::size_t rows = 1,
                             std::uint64_t round_cost = 0) {
  max_group = std::clamp<std::size_t>(max_group, 2, 64);
  if (cols <= 2) return 2;
  const auto better = [&](const RankCost& c, const RankCost& best) {
    if (round_cost == 0) {
      return c.rounds < best.rounds || (c.rounds == best.rounds && c.pairs < best.pairs);
    }
    const std::uint64_t a = round_cost * c.rounds + rows * c.pairs;
    const std::uint64_t b = round_cost * best.rounds + rows * best.pairs;
    return a < b || (a == b && c.rounds < best.rounds);
  };
  std::size_t best = 2;
  RankCost best_cost = RankTournamentCost(cols, 2);
  for (std::size_t g = 3; g <= max_group; ++g) {
    const RankCost c = RankTournamentCost(cols, g);
    if (better(c, best_cost)) {
      best = g;
      best_cost = c;
    }
  }
  return best;
}

// The classifier argmax's group (RowArgMaxRank with its one-hot, one row): of two
// tournaments, the fewest rounds (RankGroup(cols, max_group): wide groups, the one-hot in
// the max's batches) or pairs (group 2: the fewest comparisons, the one-hot top down, one
// round per level but the top on top of the max's), the one with the fewest round_cost x
// rounds + pairs compared (ties: the fewer rounds). round_cost 0: always the fewest rounds.
// (Groups of 3 .. max_group - 1 are not weighed: they pay 8-bit comparisons and a one-hot
// product per column per level that the pairs' count alone would not show.)
inline RankCost ArgMaxRankCost(std::size_t cols, std::size_t group) {
  RankCost c = RankTournamentCost(cols, group);
  if (group == 2) {
    for (std::size_t w = (cols + 1) / 2; w > 1; w = (w + 1) / 2) c.rounds += 1;
  }
  return c;
}
inline std::size_t ArgMaxGroup(std::size_t cols, std::size_t max_group, std::uint64_t round_cost) {
  const std::size_t fewest = RankGroup(cols, max_group);
  if (round_cost == 0 || fewest == 2) return fewest;
  const RankCost a = ArgMaxRankCost(cols, fewest), b = ArgMaxRankCost(cols, 2);
  const std::uint64_t wa = round_cost * a.rounds + a.pairs, wb = round_cost * b.rounds + b.pairs;
  return wb < wa ? 2 : fewest;
}

template <typename B>
typename B::Vec RowMaxRank(B& be, const typename B::Vec& x, std::size_t rows, std::size_t cols,
                           int bits, std::size_t group) {
  return fixed_detail::RankTournament(be, x, rows, cols, bits, group, false).max;
}

template <typename B>
RankArgMax<B> RowArgMaxRank(B& be, const typename B::Vec& x, std::size_t rows, std::size_t cols,
                            int bits, std::size_t group) {
  return fixed_detail::RankTournament(be, x, rows, cols, bits, group, true);
}

}  // namespace mpcache
