// The fixed_math kernels run securely on SecureBackend: the same op counts as PlainBackend,
// results within a few LSB of PlainBackend (probabilistic truncation noise only) and within
// the documented error bound of float over each kernel's input domain, in both modes; the
// measured rounds and bytes equal the backend's theory exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "cmp_harness.h"
#include "common/fixed_math.h"
#include "mpc/compare/secure_backend.h"

namespace mpcache::mpc {
namespace {

using testing::AllOk;
using testing::CmpHarness;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;

constexpr int kF = 18;
const FixedPoint kFp{kF};

template <typename P>
class KernelTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(KernelTest, Modes);

// A kernel written once over any backend B: f(be, params, x, g) -> out.
template <typename B>
using KernelFn = std::function<typename B::Vec(B&, const FixedMathParams&, const typename B::Vec&,
                                               const typename B::Vec&)>;

struct SecureRun {
  Vec out;
  FixedOpCounts counts;
  std::uint64_t rounds = 0, bytes = 0, theory_rounds = 0, theory_bytes = 0;
};

template <typename P>
SecureRun RunKernel(const Vec& x, const Vec& g, const KernelFn<SecureBackend<P>>& fn) {
  CmpHarness<P> h(17);
  const FixedMathParams params{};
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<SecureRun> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
    Shares<P> gs;
    if (!g.empty()) {
      MPCACHE_ASSIGN_OR_RETURN(gs, ShareVec(ctx.arith(), g));
    }
    const auto before = ctx.arith().stats().Total();
    SecureBackend<P> be(ctx);
    Shares<P> out = be.Materialize(fn(be, params, xs, gs));
    if (!be.status().ok()) return be.status().error();
    const auto after = ctx.arith().stats().Total();
    SecureRun r;
    r.counts = be.counts();
    r.rounds = after.rounds - before.rounds;
    r.bytes = after.bytes_sent - before.bytes_sent;
    r.theory_rounds = be.theory().rounds;
    r.theory_bytes = be.theory().bytes_sent;
    MPCACHE_ASSIGN_OR_RETURN(r.out, RevealChecked(ctx, out));
    return r;
  });
  if (!AllOk(res)) return {};
  for (const auto& r : res) {
    EXPECT_EQ(r->rounds, r->theory_rounds);
    EXPECT_EQ(r->bytes, r->theory_bytes);
  }
  return res[0].value();
}

// Runs the kernel securely and in plaintext; checks op counts, |secure - plain| <= lsb_tol
// units, and |secure - float| <= float_tol (absolute, or relative to |want| + abs_tol).
// What a kernel run must cost party 0, as literals (measured once and written here: the
// theory check in RunKernel is computed by the same backend whose sends it checks, so it
// cannot catch a kernel that does more or less than it should). Rounds are the same in
// both modes (docs/comparison-benchmarks.md's tables); malicious openings are wider (14 B per value
// against 8, 11 against 5 for a 40-bit comparison's).
struct KernelCost {
  std::uint64_t rounds, semi_bytes, malicious_bytes;
};

template <typename P>
void CheckKernel(const Vec& x, const Vec& g, const KernelFn<SecureBackend<P>>& sfn,
                 const KernelFn<PlainBackend>& pfn, const std::vector<double>& want, int out_frac,
                 double lsb_tol, const std::function<double(double)>& float_tol,
                 const KernelCost& cost) {
  SecureRun s = RunKernel<P>(x, g, sfn);
  EXPECT_EQ(s.rounds, cost.rounds);
  EXPECT_EQ(s.bytes, std::string(P::kName) == "malicious" ? cost.malicious_bytes : cost.semi_bytes);
  PlainBackend pb;
  const FixedMathParams params{};
  const Vec plain = pfn(pb, params, x, g);
  ASSERT_EQ(s.out.size(), plain.size());
  ASSERT_EQ(s.out.size(), want.size());
  EXPECT_EQ(s.counts.mul_batches, pb.counts().mul_batches);
  EXPECT_EQ(s.counts.mul_elems, pb.counts().mul_elems);
  EXPECT_EQ(s.counts.cmp_batches, pb.counts().cmp_batches);
  EXPECT_EQ(s.counts.cmp_elems, pb.counts().cmp_elems);
  EXPECT_EQ(s.counts.trunc_batches, pb.counts().trunc_batches);
  const FixedPoint out_fp{out_frac};
  double max_lsb = 0, max_err = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const double d = std::fabs(static_cast<double>(static_cast<std::int64_t>(s.out[i] - plain[i])));
    max_lsb = std::max(max_lsb, d);
    const double err = std::fabs(out_fp.Decode(s.out[i]) - want[i]);
    max_err = std::max(max_err, err);
    EXPECT_LE(err, float_tol(want[i])) << "i = " << i << " want " << want[i];
  }
  EXPECT_LE(max_lsb, lsb_tol);
  std::printf(
      "  %s: max |secure - plain| = %.0f LSB, max |secure - float| = %.3g, %llu rounds, "
      "%llu bytes sent by party 0\n",
      std::string(P::kName).c_str(), max_lsb, max_err, static_cast<unsigned long long>(s.rounds),
      static_cast<unsigned long long>(s.bytes));
}

Vec Encode(const std::vector<double>& v) {
  Vec out;
  for (double d : v) out.push_back(kFp.Encode(d));
  return out;
}

std::vector<double> Grid(double lo, double hi, std::size_t n) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i)
    v.push_back(lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1));
  return v;
}

const double kUlp = kFp.Ulp();

TYPED_TEST(KernelTest, Exp) {
  using P = TypeParam;
  auto xs = Grid(-40, 0, 161);
  xs.push_back(-193.7);  // the most negative exp input seen on stories260K
  std::vector<double> want;
  for (double v : xs) want.push_back(std::exp(kFp.Decode(kFp.Encode(v))));
  CheckKernel<P>(
      Encode(xs), {},
      [](auto& be, const auto& p, const auto& x, const auto&) { return Exp(be, p, x); },
      [](auto& be, const auto& p, const auto& x, const auto&) { return Exp(be, p, x); }, want, kF,
      4, [](double w) { return 1e-5 * w + 3 * kUlp; },  // relative: small outputs too
      {10, 31106, 54434});
}

TYPED_TEST(KernelTest, Reciprocal) {
  using P = TypeParam;
  auto xs = Grid(1, 512, 200);
  std::vector<double> want;
  for (double v : xs) want.push_back(1.0 / kFp.Decode(kFp.Encode(v)));
  CheckKernel<P>(
      Encode(xs), {},
      [](auto& be, const auto& p, const auto& x, const auto&) { return Reciprocal(be, p, x, 9); },
      [](auto& be, const auto& p, const auto& x, const auto&) { return Reciprocal(be, p, x, 9); },
      want, kF, 4, [](double) { return 2e-5 + 2 * kUlp; }, {7, 196000, 385600});
}

TYPED_TEST(KernelTest, Rsqrt) {
  using P = TypeParam;
  std::vector<double> xs;
  for (int i = 0; i <= 192; ++i) xs.push_back(std::ldexp(1.0, -10 + i / 8) * (1.0 + (i % 8) / 8.0));
  xs.push_back(std::ldexp(1.0, 14) - 1);
  std::vector<double> want;
  for (double v : xs) want.push_back(1.0 / std::sqrt(kFp.Decode(kFp.Encode(v))));
  CheckKernel<P>(
      Encode(xs), {},
      [](auto& be, const auto& p, const auto& x, const auto&) { return Rsqrt(be, p, x); },
      [](auto& be, const auto& p, const auto& x, const auto&) { return Rsqrt(be, p, x); }, want, kF,
      // 8 LSB from the twin: the secure side's probabilistic truncations (+-1 each) now
      // compose lazily (T_b of T_f) and the one Newton step y (3 - x y^2) / 2 multiplies the
      // bucket constant's difference by up to ~3; the float bound is unchanged.
      8, [](double) { return 2e-6 * 32 + 2 * kUlp; }, {8, 653490, 1158666});
}

TYPED_TEST(KernelTest, SiluAndSigmoid) {
  using P = TypeParam;
  auto xs = Grid(-30, 30, 241);
  std::vector<double> silu, sig;
  for (double v : xs) {
    const double d = kFp.Decode(kFp.Encode(v));
    sig.push_back(1.0 / (1.0 + std::exp(-d)));
    silu.push_back(d / (1.0 + std::exp(-d)));
  }
  CheckKernel<P>(
      Encode(xs), {},
      [](auto& be, const auto& p, const auto& x, const auto&) { return Silu(be, p, x); },
      [](auto& be, const auto& p, const auto& x, const auto&) { return Silu(be, p, x); }, silu, kF,
      4, [](double) { return 1e-4 + 8 * kUlp; }, {15, 107970, 188946});
  CheckKernel<P>(
      Encode(xs), {},
      [](auto& be, const auto& p, const auto& x, const auto&) { return Sigmoid(be, p, x); },
      [](auto& be, const auto& p, const auto& x, const auto&) { return Sigmoid(be, p, x); }, sig,
      kF, 4, [](double) { return 4e-5 + 3 * kUlp; }, {16, 107970, 188946});
  // The sign first, then the clip from |x| (silu_round_cost 1: 241 > 3): one comparison per
  // element fewer (241 x 16 B semi-honest, 241 x 28 B malicious), 3 rounds more.
  const auto sign_first = [](const FixedMathParams& p) {
    FixedMathParams q = p;
    q.silu_round_cost = 1;
    return q;
  };
  // One generic lambda serves as both the secure kernel and its plaintext twin.
  const auto silu_sf = [&](auto& be, const auto& p, const auto& x, const auto&) {
    return Silu(be, sign_first(p), x);
  };
  const auto sigmoid_sf = [&](auto& be, const auto& p, const auto& x, const auto&) {
    return Sigmoid(be, sign_first(p), x);
  };
  CheckKernel<P>(Encode(xs), {}, silu_sf, silu_sf, silu, kF, 4,
                 [](double) { return 1e-4 + 8 * kUlp; }, {18, 104116, 182200});
  CheckKernel<P>(Encode(xs), {}, sigmoid_sf, sigmoid_sf, sig, kF, 4,
                 [](double) { return 4e-5 + 3 * kUlp; }, {19, 104116, 182200});
}

TYPED_TEST(KernelTest, Softmax) {
  using P = TypeParam;
  const std::size_t rows = 3, cols = 37;
  Prg prg(TestSeed(9));
  std::vector<double> xs;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    // Row 0: scores in [-20, 20]; row 1: the stories260K range [-193, 24]; row 2: flat.
    const double u = prg.NextDouble();
    xs.push_back(i < cols ? 40 * u - 20 : i < 2 * cols ? 217 * u - 193 : 3.0 + 1e-3 * u);
  }
  std::vector<double> want(xs.size());
  for (std::size_t r = 0; r < rows; ++r) {
    double mx = -1e300, sum = 0;
    for (std::size_t c = 0; c < cols; ++c)
      mx = std::max(mx, kFp.Decode(kFp.Encode(xs[r * cols + c])));
    for (std::size_t c = 0; c < cols; ++c)
      sum += std::exp(kFp.Decode(kFp.Encode(xs[r * cols + c])) - mx);
    for (std::size_t c = 0; c < cols; ++c) {
      want[r * cols + c] = std::exp(kFp.Decode(kFp.Encode(xs[r * cols + c])) - mx) / sum;
    }
  }
  // 37 columns ranked in groups of up to 24 (RankGroup: two groups of 19 and 18, then the
  // pair, whose max is one product x_i - c (x_i - x_j): 6 + 4 rounds), exp 10, the
  // reciprocal 7: 27 rounds.
  CheckKernel<P>(
      Encode(xs), {},
      [&](auto& be, const auto& p, const auto& x, const auto&) {
        return Softmax(be, p, x, rows, cols);
      },
      [&](auto& be, const auto& p, const auto& x, const auto&) {
        return Softmax(be, p, x, rows, cols);
      },
      want, kF, 4, [](double) { return 6e-5 + 3 * kUlp; }, {27, 53462, 95078});
}

// Softmax's ranked row max on its own: exact (0 LSB from the twin and from the true max).
TYPED_TEST(KernelTest, RowMaxRank) {
  using P = TypeParam;
  const std::size_t rows = 3, cols = 24;
  Prg prg(TestSeed(19));
  std::vector<double> xs;
  for (std::size_t i = 0; i < rows * cols; ++i) xs.push_back(400 * prg.NextDouble() - 200);
  xs[cols + 7] = xs[cols + 3];                                    // a tie in row 1
  for (std::size_t c = 0; c < cols; ++c) xs[2 * cols + c] = 1.5;  // row 2 flat
  std::vector<double> want(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double mx = -1e300;
    for (std::size_t c = 0; c < cols; ++c) {
      mx = std::max(mx, kFp.Decode(kFp.Encode(xs[r * cols + c])));
    }
    want[r] = mx;
  }
  // Two groups of 12 (66 pairs each), then the pair (one product: x_i - c (x_i - x_j)):
  // (3 + 2 + 1) + (3 + 1) rounds.
  CheckKernel<P>(
      Encode(xs), {},
      [&](auto& be, const auto&, const auto& x, const auto&) {
        return RowMaxRank(be, x, rows, cols, 40, 16);
      },
      [&](auto& be, const auto&, const auto& x, const auto&) {
        return RowMaxRank(be, x, rows, cols, 40, 16);
      },
      want, kF, 0, [](double) { return 0.0; }, {10, 8986, 16438});
}

// RowArgMaxRank of rows x cols small integers (many ties) in groups of `group`, securely and
// in plaintext, against a first-maximum scan. Output: the row maxima, then the one-hots
// scaled to 1.0.
template <typename P>
void CheckArgMaxRank(std::size_t rows, std::size_t cols, std::size_t group, std::uint64_t seed,
                     const KernelCost& cost) {
  Prg prg(TestSeed(seed));
  std::vector<double> xs;
  for (std::size_t i = 0; i < rows * cols; ++i) xs.push_back(std::round(8 * prg.NextDouble()));
  std::vector<double> want(rows + rows * cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < cols; ++c) {
      if (xs[r * cols + c] > xs[r * cols + best]) best = c;  // ties: the first stays
    }
    want[r] = xs[r * cols + best];
    want[rows + r * cols + best] = 1.0;
  }
  auto fn = [&](auto& be, const auto&, const auto& x, const auto&) {
    const auto am = RowArgMaxRank(be, x, rows, cols, 40, group);
    return be.Concat(am.max, be.MulConst(am.one_hot, Ring64{1} << kF));
  };
  CheckKernel<P>(
      Encode(xs), {}, fn, fn, want, kF, 0, [](double) { return 0.0; }, cost);
}

// The classifier's argmax (RowArgMaxRank): the first maximum's one-hot, exact, in the rounds
// of the ranked max alone. 40 columns in groups of up to 16: three groups of 14, 13, 13 (91 +
// 78 + 78 pairs), then the three winners: (3 + 2 + 1) twice.
TYPED_TEST(KernelTest, RowArgMaxRank) {
  CheckArgMaxRank<TypeParam>(2, 40, 16, 23, {12, 13554, 24570});
}

// The same argmax in pairs (group 2, the wide vocabulary's choice): the maxima as
// x_i - c (x_i - x_j) and the one-hot top down, exact like the twin. 37 columns: 6 levels
// (19, 10, 5, 3, 2 members after the first), 6 x (3 + 1) rounds, then 5 product rounds for
// the one-hot.
TYPED_TEST(KernelTest, RowArgMaxRankInPairsTopDown) {
  CheckArgMaxRank<TypeParam>(2, 37, 2, 29, {29, 7948, 13900});
}

// RMSNorm in double of the encoded inputs (rows x cols values, cols gains).
std::vector<double> RmsNormWant(const std::vector<double>& xs, const std::vector<double>& gs,
                                std::size_t rows, std::size_t cols, double eps) {
  std::vector<double> want(xs.size());
  for (std::size_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (std::size_t c = 0; c < cols; ++c)
      ss += std::pow(kFp.Decode(kFp.Encode(xs[r * cols + c])), 2);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(cols) + eps);
    for (std::size_t c = 0; c < cols; ++c) {
      want[r * cols + c] =
          kFp.Decode(kFp.Encode(xs[r * cols + c])) * inv * kFp.Decode(kFp.Encode(gs[c]));
    }
  }
  return want;
}

// Two rows of 64 (mean squares ~0.013 and ~1.8), gains in [0.5, 1.5), and the float result.
struct RmsNormCase {
  static constexpr std::size_t rows = 2, cols = 64;
  static constexpr double eps = 1e-5;
  std::vector<double> xs, gs, want;
  RmsNormCase() {
    Prg prg(TestSeed(10));
    for (std::size_t i = 0; i < rows * cols; ++i) {
      const double scale = i < cols ? 0.2 : 2.3;
      xs.push_back(scale * (2 * prg.NextDouble() - 1));
    }
    for (std::size_t c = 0; c < cols; ++c) gs.push_back(0.5 + prg.NextDouble());
    want = RmsNormWant(xs, gs, rows, cols, eps);
  }
};

// MulPairs: [a b | a2 b] with b's second half declared to be its first: a fused pair per
// element, b (here a pending truncation) opened once for both products — the plaintext
// twin's values, exactly n - 1 opened values fewer than the same products unpaired (element
// 0's a2 is a public zero: its a b goes alone, its a2 b is local).
TYPED_TEST(KernelTest, MulPairsOpensTheSharedFactorOnce) {
  using P = TypeParam;
  const std::size_t n = 40;
  const Vec x = Encode(Grid(-3, 3, n)), g = Encode(Grid(-2, 5, n));
  const auto fn = [n](bool pairs) {
    return [n, pairs](auto& be, const auto& p, const auto& xs, const auto& gs) {
      const int f = p.frac_bits;
      const auto b = be.Trunc(be.Square(xs), f);  // pending: opened by the product itself
      const auto g1 = be.AddConst(gs, Ring64{1} << f);
      const auto a2 = be.Concat(be.MulConst(fixed_detail::Slice(be, g1, 0, 1), 0),
                                fixed_detail::Slice(be, g1, 1, n - 1));
      const auto left = be.Concat(gs, a2), right = be.Concat(b, b);
      return pairs ? be.MulPairs(left, right, 0, n, f) : be.MulTrunc(left, right, f);
    };
  };
  const SecureRun paired = RunKernel<P>(x, g, fn(true));
  const SecureRun single = RunKernel<P>(x, g, fn(false));
  EXPECT_EQ(paired.rounds, single.rounds);
  EXPECT_EQ(single.bytes - paired.bytes, 2 * OpenBytes<P>() * (n - 1));
  PlainBackend pb;
  const FixedMathParams params{};
  const Vec plain = fn(true)(pb, params, x, g);
  ASSERT_EQ(paired.out.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const auto d = static_cast<std::int64_t>(paired.out[i] - plain[i]);
    EXPECT_LE(std::llabs(d), 8) << "i = " << i;  // b's truncation (+-1) times |a| < 6, +-1
  }
  EXPECT_EQ(paired.counts.mul_batches, pb.counts().mul_batches);
  EXPECT_EQ(paired.counts.mul_elems, pb.counts().mul_elems);
}

TYPED_TEST(KernelTest, RmsNorm) {
  using P = TypeParam;
  const RmsNormCase k;
  const std::size_t rows = k.rows, cols = k.cols;
  const double eps = k.eps;
  const auto fn = [&](auto& be, const auto& p, const auto& x, const auto& g) {
    return RmsNorm(be, p, x, g, rows, cols, eps);
  };
  CheckKernel<P>(Encode(k.xs), Encode(k.gs), fn, fn, k.want, kF, 4,
                 [](double w) { return 1e-4 * std::fabs(w) + 4 * kUlp; }, {10, 22524, 38484});
}

// Public gains (the engine's norms with public weights): the same outputs from Square(x) and
// a local x g — x opened once per element instead of x twice and g once: 3 openings per
// element fewer (5 when x carries a pending truncation, as in the model); the same rounds.
TYPED_TEST(KernelTest, RmsNormWithPublicGains) {
  using P = TypeParam;
  const RmsNormCase k;
  const std::size_t rows = k.rows, cols = k.cols;
  const double eps = k.eps;
  const Vec gains = Encode(k.gs);
  const auto fn = [&](auto& be, const auto& p, const auto& x, const auto&) {
    return RmsNorm(be, p, x, std::span<const Ring64>(gains), rows, cols, eps);
  };
  CheckKernel<P>(Encode(k.xs), Vec{}, fn, fn, k.want, kF, 4,
                 [](double w) { return 1e-4 * std::fabs(w) + 4 * kUlp; }, {10, 18428, 31316});
}

// The 7B width: C = 4096 at f = 18 is where rsqrt's bucket comparison gives up its bit of
// headroom above 2^hi so that it can take the squares' truncations in (fixed_math.h):
// 9 rounds like the narrow norms, not 10, and still exact at the top of the domain — one row's
// mean square is 16 000 (2^hi = 16 384), one ~1, one ~1.3e-3 (near 2^lo's end).
TYPED_TEST(KernelTest, RmsNormAtTheSevenBWidthTakesTheTruncationsInAndStaysExactAtTheTop) {
  using P = TypeParam;
  const std::size_t rows = 3, cols = 4096;
  ASSERT_EQ(FixedMathParams{}.rsqrt_log2_max, 14);
  Prg prg(TestSeed(11));
  std::vector<double> xs, gs;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const double sign = prg.NextDouble() < 0.5 ? -1.0 : 1.0;
    if (i < cols) {
      xs.push_back(sign * std::sqrt(16000.0));
    } else {
      xs.push_back((i < 2 * cols ? 1.7 : 0.062) * (2 * prg.NextDouble() - 1));
    }
  }
  for (std::size_t c = 0; c < cols; ++c) gs.push_back(0.5 + prg.NextDouble());
  const double eps = 1e-5;
  const std::vector<double> want = RmsNormWant(xs, gs, rows, cols, eps);
  const auto fn = [&](auto& be, const auto& p, const auto& x, const auto& g) {
    return RmsNorm(be, p, x, g, rows, cols, eps);
  };
  // Secure vs plain: 4096 probabilistic truncations (+-1 each) summed into every mean square
  // move the outputs by up to 6 LSB (measured 5-6), not 4 as at 64 columns.
  CheckKernel<P>(Encode(xs), Encode(gs), fn, fn, want, kF, 8,
                 [](double w) { return 1e-4 * std::fabs(w) + 4 * kUlp; }, {10, 1390090, 2430094});
}

}  // namespace
}  // namespace mpcache::mpc
