// The closed forms of the fixed_math kernels' costs on mpc::SecureBackend (infer/step_cost.h
// says what each public function prices; step_cost_ledger.h the account they charge).
#include <algorithm>
#include <string>
#include <vector>

#include "common/fixed_math.h"
#include "infer/step_cost.h"
#include "infer/step_cost_ledger.h"
#include "mpc/compare/binary_context.h"
#include "mpc/compare/compare.h"
#include "mpc/compare/rank_select.h"
#include "mpc/compare/select.h"

namespace mpcache::infer {
namespace step_cost_detail {

u64 CeilDiv(u64 a, u64 b) {
  return (a + b - 1) / b;
}

// ---------------------------------------------------------------------------------------
// Ranked row max / argmax (fixed_math.h RankTournament) on SecureBackend.
//
// Per level of width w > 1: next = ceil(w / group) balanced groups, gmax = ceil(w / next)
// members in the first `big` (w mod next, or all) and gmax - 1 in the rest; pairs =
// big gmax (gmax - 1) / 2 + (next - big) (gmax - 1) (gmax - 2) / 2 per row.
//   1. ONE comparison of every pair (x_i - x_j at `bits`): Ltz(rows pairs, bits). At the first
//      level an input whose every element is a pending truncation by `in_shift` is opened
//      there: riding the comparison (claimed by it, or deferred for members of a group of
//      one) when ComparisonTakesInTruncation(in_shift, bits), else flushed in a round of its
//      own first; rows cols values either way.
//   2. gmax > 2: the 8-bit test of the win counts, Ltz(rows w, 8); gmax <= 2: the pair's bit
//      itself (a group of one, which exists only when w is odd, then as the last member:
//      next = ceil(w / 2), gets the public constant 1).
//   3. ONE product batch for the maxima: gmax > 2, is_max_i x_i, 2 openings per member (both
//      operands plain shares: kS); gmax <= 2, c (x_i - x_j), 2 openings per pair (a group of
//      one keeps its value). The one-hot bottom up (group > 2; after the first level, which
//      takes is_max itself) multiplies each column by its owner's is_max in the same batch: 2
//      openings per column where both factors are secret. A column's one-hot entry is public
//      only while every owner it had was a group of one: those columns are a suffix (the
//      last member's range), `public_cols` of them.
// Rounds per level: LtzRounds(bits) + (gmax > 2 ? LtzRounds(8) : 0) + 1 (RankTournamentCost's
// 6 or 4 at bits = 31 or 40).
// The one-hot top down (group 2), after the last level: for every level below the top one
// product batch q_m = q_(group of m) is_max_m, 2 openings per member but a group of one's (its
// is_max is the public 1; every q is secret: the top level has no group of one).
void RankTournament(Ledger& g, u64 rows, u64 cols, int bits, u64 group, bool one_hot,
                    bool in_pending, int in_shift) {
  group = std::clamp<u64>(group, 2, 64);
  const bool top_down = one_hot && group == 2;
  u64 w = cols;
  std::vector<u64> range(cols, 1);  // columns each member of the level stands for
  u64 public_cols = 0;
  bool first = true;
  std::vector<u64> secret_members;  // top down, per level: members whose is_max is secret
  while (w > 1) {
    const u64 next = CeilDiv(w, group), gmax = CeilDiv(w, next);
    const u64 big = w % next == 0 ? next : w % next;
    const u64 pairs = big * gmax * (gmax - 1) / 2 + (next - big) * (gmax - 1) * (gmax - 2) / 2;
    if (first && in_pending) {
      if (ComparisonTakesInTruncation(in_shift, bits)) {
        g.Ltz(rows * pairs, bits);
        g.Ride(rows * cols);
      } else {
        g.Exchange(rows * cols);
        g.Ltz(rows * pairs, bits);
      }
    } else {
      g.Ltz(rows * pairs, bits);
    }
    if (gmax > 2) g.Ltz(rows * w, 8);
    const bool singleton = gmax == 2 && next - big == 1;
    u64 openings = gmax > 2 ? 2 * rows * w : 2 * rows * big;
    if (one_hot && !top_down) {
      const u64 owner_public = singleton ? range[w - 1] : 0;
      if (first) {
        public_cols = owner_public;
      } else {
        openings += 2 * rows * (cols - std::max(owner_public, public_cols));
        public_cols = std::min(owner_public, public_cols);
      }
    }
    g.Exchange(openings);
    secret_members.push_back(w - (singleton ? 1 : 0));
    // The next level's members stand for their group's columns.
    std::vector<u64> merged(next, 0);
    for (u64 k = 0, at = 0; k < next; ++k) {
      const u64 size = k < big ? gmax : gmax - 1;
      for (u64 i = 0; i < size; ++i) merged[k] += range[at++];
    }
    range = std::move(merged);
    w = next;
    first = false;
  }
  if (top_down) {
    for (std::size_t l = secret_members.size(); l-- > 1;) {
      g.Exchange(2 * rows * secret_members[l - 1]);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Exp's clipped core (fixed_activations.h ExpClipped, n = exp_squarings >= 1) on `count`
// elements whose input x is plain, after the clip bit is known. Openings per element:
//   z^2 = Trunc(Square(z)): 1 (z plain; skipped when x_sq is given);
//   z^2 w: z^2 is a pending truncation (1: kT), w = c1 z + c2 z^2 + const holds a share part
//          and that truncation (2: kS + kT): 3 (with x_sq: z^2 = Trunc(x_sq, s) is pending only
//          when s > 0, plain otherwise: 1 + 1);
//   squarings: the first squares z + T(z^2 w) (kS + kT: 2), the others a pure truncation (1);
//   base (1 - below): 1 + 1.
// Rounds: n + 3 (n + 2 with x_sq; extras ride in the z^2 w batch).
struct ExpShape {
  u64 count = 0;
  bool x_sq = false;       // z^2 from the caller's x^2 (SigmoidCore)
  bool z2_pending = true;  // with x_sq: Trunc(x_sq, 2f + 2n - fe) with a positive shift
  u64 extra = 0;           // products riding the z^2 w batch (one opened value per operand)
  u64 extra_pairs = 0;     // of them, pairs sharing their right operand (opened once)
};
void ExpCore(Ledger& g, const FixedMathParams& p, const ExpShape& s) {
  const u64 n = s.count;
  if (!s.x_sq) g.Exchange(n);  // Square(z)
  // z^2 (1: pending or plain) times w (its share part, and z^2's truncation when pending).
  const u64 w = s.x_sq && !s.z2_pending ? 1 : 2;
  g.Exchange(n * (1 + w) + 2 * s.extra - s.extra_pairs);  // z^2 w (+ the extras)
  for (int i = 0; i < p.exp_squarings; ++i) {
    g.Exchange(n * (i == 0 ? 2 : 1));
  }
  g.Exchange(2 * n);  // base (1 - below)
}

// Reciprocal start buckets: k S of them, k = max(1, log2_max); one comparison batch of the
// k S - 1 thresholds per row when k S >= 2 (fixed_inverse.h StartBits).
u64 Buckets(int log2_max, int sub_buckets) {
  return static_cast<u64>(std::max(1, log2_max)) * static_cast<u64>(sub_buckets);
}

// ---------------------------------------------------------------------------------------
// Softmax (fixed_math.h) of rows x cols, x = Trunc(plain, in_shift), max at max_bits:
//   row max   RankTournament(rows, cols, max_bits, RankGroup(cols, softmax_max_group, rows,
//             rank_round_cost)), x's
//             truncations opened in its first comparison (above);
//   exp       the clip test Ltz(rows cols, compare_bits) (x - max: plain) and ExpCore;
//   1/sum     ReciprocalTimes(sum, f, k = ceil(log2 cols), S = recip_sub_buckets, it =
//             recip_iterations, m = e): the start: Ltz(rows (kS - 1), min(64, k + f + 2)) when
//             kS >= 2, then B_i (v - a_i): 2 openings per row (both plain) — the start y then
//             holds a share part and a pending truncation (yc = 2 openings wherever it is
//             taken in; kS = 1: no comparison, y a pure truncation, yc = 1);
//             it - 1 plain steps: d y (1 + yc, then 1 + 1 once y is a pure truncation) and
//             y (2 - d y) (2: y's truncation is known by then, 2 - d y pending), per row;
//             the last step folded with m: [d | m] x [y | bcast(y)]: (rows + rows cols) (1 +
//             y's openings; cols = 1: pairs, rows (2 + y's)), then (m y) x bcast(2 - d y): 2
//             per element (both pure truncations of that batch); it = 0: m x bcast(y) alone
//             (1 + yc per element);
//   output    rows cols pending truncations, opened by the caller's Materialize (1 round).
// Rounds (defaults, f = 18): rank levels (6 or 4 each) + 3 + 7 + LtzRounds(k + 20) + 4.
void SoftmaxCore(Ledger& g, const FixedMathParams& p, u64 rows, u64 cols, int in_shift,
                 int max_bits) {
  const u64 n = rows * cols;
  RankTournament(g, rows, cols, max_bits > 0 ? max_bits : p.compare_bits,
                 RankGroup(cols, static_cast<std::size_t>(p.softmax_max_group), rows,
                           static_cast<std::uint64_t>(p.rank_round_cost)),
                 false, true, in_shift);
  g.Ltz(n, p.compare_bits);  // exp's clip bit
  ExpCore(g, p, {.count = n});
  const int k = std::max(1, fixed_detail::CeilLog2(cols));
  const u64 buckets = Buckets(k, p.recip_sub_buckets);
  u64 y = 1;  // openings of the start y wherever it is taken in
  if (buckets >= 2) {
    g.Ltz(rows * (buckets - 1), std::min(64, k + p.frac_bits + 2));
    g.Exchange(2 * rows);  // B_i x (v - a_i)
    y = 2;
  }
  if (p.recip_iterations == 0) {
    g.Exchange(n * (1 + y));  // m x bcast(y)
  } else {
    for (int i = 0; i + 1 < p.recip_iterations; ++i) {
      g.Exchange(rows * (1 + y));  // d y
      g.Exchange(2 * rows);        // y (2 - d y)
      y = 1;
    }
    if (cols == 1) {
      g.Exchange(rows * (2 + y));  // [d | m] x [y | y]: pairs, y opened once
    } else {
      g.Exchange(rows * (1 + y) + n * (1 + y));  // [d | m] x [y | bcast(y)]
    }
    g.Exchange(2 * n);  // (m y) x bcast(2 - d y)
  }
  g.Exchange(n);  // the caller's Materialize
}

// ---------------------------------------------------------------------------------------
// RmsNorm (fixed_math.h) of rows x cols (f, fm = f + 8, hi = rsqrt_log2_max, lo =
// rsqrt_log2_min, S = rsqrt_sub_buckets, nb = (hi - lo) S buckets, it = rsqrt_iterations):
//   [x g | x^2] (MulAndSquare): 3 openings per element (x plain), 5 when x carries a pending
//     truncation (x g: 2 + 1, the square x^2: 2); with public gains (the model's public weights)
//     Square(x) alone: 1 per element (x plain), 2 with x's pending truncation, x g local;
//     squares and x g truncated by 2f - fm = f - 8 (then pending and held, rows cols each:
//     x g's are opened only by the product that takes x g in; plain when f = 8).
//   cols a power of two (2^c): v = ss + eps, compared at cf = fm + c bits of precision with
//     cmp = min(64, hi + cf + 1 + headroom) (headroom unless the squares' truncations could
//     not ride it), nb - 1 tests per row: the squares' truncations ride them (rows cols
//     claimed) when ComparisonTakesInTruncation(f - 8, cmp), else a flush of them first; then
//     B_i (v' - a_i) with v' = Trunc(v, c) pending (1 + 2 per row); the Newton steps read
//     RsqrtTimes' own Trunc(v, c), pending (1 opening; never opened when it = 0).
//   otherwise: ss >> (c - 1) cannot compose with the squares' pending truncations: a flush
//     of them (rows cols; nothing when f = 8), and times K, >> kb cannot compose with that one
//     (its coefficient is K): a flush of rows; then the nb - 1 tests per row at min(64, hi +
//     fm + 2) take v's truncation by kb = 59 - hi - fm in (rows ride) or flush it first; B_i
//     (v - a_i) 2 per row (v plain by then); the Newton steps read v plain (1 opening).
//   Newton: the start y holds a share part and a pending truncation (2 openings) until a step
//     makes it a pure truncation (1). With cols > 1 (m = x g broadcast over a row) every step
//     is the row's own: v y (1 + y), (v y) y (2), y (3 - v y^2) (2), per row; then m x
//     bcast(y) (2 per element: both pure truncations). With cols = 1 the last step folds m:
//     [v | m] x [y | bcast(y)] ((rows + rows cols) (1 + y)), (v y) y (2 per row), (m y) x
//     bcast(3 - v y^2) (2 per element). it = 0: m x bcast(y) alone (1 + 2 per element).
//   output: rows cols pending truncations, opened by the caller's Materialize (1 round).
// Rounds (defaults): 1 + LtzRounds(cmp) + 5 (+2 without a power of two) + 1.
void RmsNormCore(Ledger& g, const FixedMathParams& p, u64 rows, u64 cols, bool in_pending,
                 bool public_gain) {
  const u64 n = rows * cols;
  const int f = p.frac_bits, fm = f + kRmsExtraBits, hi = p.rsqrt_log2_max;
  const bool sq_pending = 2 * f - fm > 0;
  const u64 nb = static_cast<u64>(hi - p.rsqrt_log2_min) * static_cast<u64>(p.rsqrt_sub_buckets);
  g.Exchange(n * (public_gain ? (in_pending ? 2 : 1) : (in_pending ? 5 : 3)));
  const int c = fixed_detail::CeilLog2(cols);
  const bool pow2 = (u64{1} << c) == cols;
  if (pow2) {
    const int cf = fm + c;
    const int pend = 2 * f - fm;
    const bool headroom = pend <= 0 || ComparisonTakesInTruncation(pend, hi + cf + 2);
    const int cmp = std::min(64, hi + cf + 1 + (headroom ? 1 : 0));
    const u64 pending = sq_pending ? n : 0;  // the squares' (x g's are held)
    if (pending > 0 && !ComparisonTakesInTruncation(pend, cmp)) {
      g.Exchange(pending);
      g.Ltz(rows * (nb - 1), cmp);
    } else {
      g.Ltz(rows * (nb - 1), cmp);
      g.Ride(pending);
    }
    g.Exchange(3 * rows);  // B_i x (Trunc(v, c) - a_i)
  } else {
    const int kb = 59 - hi - fm;
    const int cmp = std::min(64, hi + fm + 2);
    if (sq_pending) g.Exchange(n);  // Trunc(ss, c - 1) opens the squares first
    g.Exchange(rows);               // Trunc(K ms', kb) opens ms' first
    if (ComparisonTakesInTruncation(kb, cmp)) {
      g.Ltz(rows * (nb - 1), cmp);
      g.Ride(rows);
    } else {
      g.Exchange(rows);
      g.Ltz(rows * (nb - 1), cmp);
    }
    g.Exchange(2 * rows);  // B_i x (v - a_i)
  }
  // The Newton steps (v: 1 opening wherever it is taken in — RsqrtTimes' own pending Trunc(v,
  // c) the first time, plain after; y: 2 until the first step makes it a pure truncation).
  u64 y = 2;
  if (p.rsqrt_iterations == 0) {
    g.Exchange(n * (1 + y));  // m x bcast(y)
  } else {
    const bool fold = cols == 1;  // m elementwise: folded into the last step
    for (int i = 0; i + (fold ? 1 : 0) < p.rsqrt_iterations; ++i) {
      g.Exchange(rows * (1 + y));  // v y
      g.Exchange(2 * rows);        // (v y) x y
      g.Exchange(2 * rows);        // y (3 - v y^2)
      y = 1;
    }
    if (fold) {
      g.Exchange((rows + n) * (1 + y));  // [v | m] x [y | bcast(y)]
      g.Exchange(2 * rows);              // (v y) x y
      g.Exchange(2 * n);                 // (m y) x bcast(3 - v y^2)
    } else {
      g.Exchange(2 * n);  // m x bcast(y)
    }
  }
  g.Exchange(n);  // the caller's Materialize
}

// ---------------------------------------------------------------------------------------
// SiluTimes (fixed_activations.h) of n elements, x and h the halves of Trunc(plain 2n, f)
// (held truncations: each opened only where it is taken in or asked for):
//   ONE test of [x | x + clip | clip - x] at compare_bits: Ltz(3n), or with SigmoidSignFirst
//     (n > 3 silu_round_cost) of [x] alone: Ltz(n); the n distinct x truncations are claimed
//     by it when ComparisonTakesInTruncation(f, compare_bits), else n flushed first; h's stay
//     pending;
//   [s x | x^2] (MulAndSquare): 3 per element (all plain; the square opens x once);
//   SigmoidSignFirst: the clip bit [clip - |x| < 0], -|x| = 2 s x - x (plain): Ltz(n);
//   ExpCore with x_sq (z^2 = Trunc(x^2, 2f + 2n_sq - fe)), relu(x) h and |x| h riding the z^2
//     w batch (n pairs, 3 each: the two plain factors, h's truncation once);
//   1/(1 + e) on [1, 2]: one bucket (no comparison), the start y a pure truncation (1);
//     sigmoid_recip_iterations = it steps, the multiplier |x| h e a product of the kernel
//     (|x| h pending: 1):
//     it >= 2: [d | m_a] x [y | m_b] (2 + 2), y x (2 - d y) (2), it - 2 plain steps (2, 2),
//     then [d | m] x [y | y] (a pair: d, m pending, y once: 3), (m y) x (2 - d y) (2);
//     it < 2: m_a m_b first (2), then it = 1: [d | m] x [y | y] (3), (m y)(2 - d y) (2);
//     it = 0: m x y (2);
//   output: relu h - q, 2n pending truncations (relu h's and q's) opened by the caller's
//     Materialize (1 round).
// Rounds (defaults): 3 + 1 + 1 + 4 + 1 + 4 + 1 = 15; 18 with SigmoidSignFirst.
void SiluTimesCore(Ledger& g, const FixedMathParams& p, u64 n) {
  const int f = p.frac_bits;
  const bool sign_first = SigmoidSignFirst(p, n);
  const u64 first = sign_first ? n : 3 * n;
  if (ComparisonTakesInTruncation(f, p.compare_bits)) {
    g.Ltz(first, p.compare_bits);
    g.Ride(n);
  } else {
    g.Exchange(n);
    g.Ltz(first, p.compare_bits);
  }
  g.Exchange(3 * n);                         // [s x | x^2]
  if (sign_first) g.Ltz(n, p.compare_bits);  // [clip - |x| < 0]
  ExpCore(g, p,
          {.count = n,
           .x_sq = true,
           .z2_pending = 2 * f + 2 * p.exp_squarings - p.exp_frac_bits > 0,
           .extra = 2 * n,
           .extra_pairs = n});
  const int it = p.sigmoid_recip_iterations;
  if (it >= 2) {
    g.Exchange(4 * n);  // [d | m_a] x [y | m_b]
    g.Exchange(2 * n);  // y (2 - d y)
    for (int i = 1; i + 1 < it; ++i) {
      g.Exchange(2 * n);
      g.Exchange(2 * n);
    }
    g.Exchange(3 * n);  // [d | m] x [y | y]: pairs, y opened once
    g.Exchange(2 * n);  // (m y) x (2 - d y)
  } else {
    g.Exchange(2 * n);               // m = m_a m_b
    if (it == 1) g.Exchange(3 * n);  // [d | m] x [y | y]: pairs
    g.Exchange(2 * n);               // (m y) x (2 - d y), or m y
  }
  g.Exchange(2 * n);  // the caller's Materialize: relu h's and q's truncations
}

// RowArgMaxRank of plain logits with its one-hot (SecureLlama::ArgmaxOneHot): the tournament
// above with the one-hot, nothing pending, nothing left to open.
void ArgMaxCore(Ledger& g, const FixedMathParams& p, u64 cols) {
  RankTournament(g, 1, cols, p.compare_bits,
                 ArgMaxGroup(cols, static_cast<std::size_t>(p.argmax_group),
                             static_cast<std::uint64_t>(p.argmax_round_cost)),
                 true, false, 0);
}

// mpc::RowMax (fixed_math.h RowMax, groups of 4, plain input, fresh backend): per level of
// width w, next = ceil(w / 4) groups (the last of w - 4 (next - 1)): Ltz(rows pairs, bits);
// stage 1, one product per member with 2+ factors (g - 1 beat bits and its value: f0 f1,
// and f2 f3 with 4): 2, 3, 8 products for a group of 2, 3, 4; stage 2 (any group of 3+): one
// per member of such a group; 2 openings per product (all plain). Rounds ArgMaxRounds.
void RowMaxCore(Ledger& g, u64 rows, u64 cols, int bits) {
  for (u64 w = cols; w > 1; w = CeilDiv(w, 4)) {
    const u64 next = CeilDiv(w, 4);
    u64 pairs = 0, stage1 = 0, stage2 = 0;
    for (u64 k = 0; k < next; ++k) {
      const u64 size = std::min<u64>(4, w - 4 * k);
      pairs += size * (size - 1) / 2;
      stage1 += size == 2 ? 2 : size == 3 ? 3 : size == 4 ? 8 : 0;
      stage2 += size >= 3 ? size : 0;
    }
    g.Ltz(rows * pairs, bits);
    g.Exchange(2 * rows * stage1);
    if (stage2 > 0) g.Exchange(2 * rows * stage2);
  }
}

Status CheckMath(const FixedMathParams& p) {
  return p.Validate();
}

}  // namespace step_cost_detail

namespace {

using step_cost_detail::ArgMaxCore;
using step_cost_detail::Ledger;
using step_cost_detail::RmsNormCore;
using step_cost_detail::RowMaxCore;
using step_cost_detail::SiluTimesCore;
using step_cost_detail::SoftmaxCore;

Result<KernelCost> Kernel(bool malicious, const FixedMathParams& p, auto&& run) {
  MPCACHE_RETURN_IF_ERROR(step_cost_detail::CheckMath(p));
  Ledger g(malicious);
  PhaseCost c;
  g.Into(&c);
  MPCACHE_RETURN_IF_ERROR(run(g));
  return KernelCost{c.rounds, c.bytes};
}

}  // namespace

Result<KernelCost> SoftmaxKernelCost(bool malicious, const FixedMathParams& p, std::size_t rows,
                                     std::size_t cols, int input_shift, int max_bits) {
  if (rows < 1 || cols < 2) return InvalidArgument("softmax cost: rows >= 1 and cols >= 2");
  return Kernel(malicious, p, [&](Ledger& g) {
    SoftmaxCore(g, p, rows, cols, input_shift, max_bits);
    return Status::Ok();
  });
}

Result<KernelCost> RmsNormKernelCost(bool malicious, const FixedMathParams& p, std::size_t rows,
                                     std::size_t cols, bool input_pending, bool public_gain) {
  if (rows < 1 || cols < 2) return InvalidArgument("rmsnorm cost: rows >= 1 and cols >= 2");
  return Kernel(malicious, p, [&](Ledger& g) {
    RmsNormCore(g, p, rows, cols, input_pending, public_gain);
    return Status::Ok();
  });
}

Result<KernelCost> SiluTimesKernelCost(bool malicious, const FixedMathParams& p, std::size_t n) {
  if (n < 1) return InvalidArgument("silu cost: n >= 1");
  return Kernel(malicious, p, [&](Ledger& g) {
    SiluTimesCore(g, p, n);
    return Status::Ok();
  });
}

Result<KernelCost> ArgMaxKernelCost(bool malicious, const FixedMathParams& p, std::size_t cols) {
  if (cols < 1) return InvalidArgument("argmax cost: cols >= 1");
  return Kernel(malicious, p, [&](Ledger& g) {
    ArgMaxCore(g, p, cols);
    return Status::Ok();
  });
}

Result<KernelCost> RowMaxKernelCost(bool malicious, std::size_t rows, std::size_t cols, int bits) {
  MPCACHE_RETURN_IF_ERROR(mpc::CheckCompareBits(bits));
  Ledger g(malicious);
  PhaseCost c;
  g.Into(&c);
  RowMaxCore(g, rows, cols, bits);
  return KernelCost{c.rounds, c.bytes};
}

}  // namespace mpcache::infer
