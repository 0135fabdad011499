#include "infer/input_check.h"

#include <cstring>
#include <string>
#include <vector>

#include "common/prg.h"

namespace mpcache::infer {

using mpc::Shares;

template <typename P>
Status CheckOneHotRows(mpc::BinaryContext<P>& bctx, const Shares<P>& x, std::size_t width,
                       int first_pos) {
  mpc::Context<P>& ctx = bctx.arith();
  const std::size_t n = x.size();
  if (width == 0 || n % width != 0) {
    return Internal("one-hot check: " + std::to_string(n) + " values are not rows of " +
                    std::to_string(width));
  }
  const std::size_t rows = n / width;
  if (rows == 0) return Status::Ok();
  constexpr std::size_t kChecks = kOneHotChecks;

  // Round 1: x - a (square pairs) and the coin, in one opening.
  MPCACHE_ASSIGN_OR_RETURN(mpc::SquarePairs<P> sq, ctx.prep().GetSquares(n));
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> coin, ctx.prep().GetRandoms(2));
  Shares<P> masked = mpc::Sub(x, sq.a);
  masked.Append(coin);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, ctx.OpenOwned(std::move(masked)));

  // e = x^2 - x = [a^2] + 2 d [a] + d^2 - [x].
  std::vector<std::uint64_t> two_d(n), d2(n);
  for (std::size_t i = 0; i < n; ++i) {
    two_d[i] = 2 * d[i];
    d2[i] = d[i] * d[i];
  }
  Shares<P> e = std::move(sq.aa);
  mpc::AddInPlace(e, mpc::MulPublic<P>(std::move(sq.a), two_d));
  mpc::AddPublicInPlace(ctx.key(), e, d2);
  mpc::SubInPlace(e, x);

  // rho: kChecks x width coefficients from the opened coin.
  Seed seed{};
  std::memcpy(seed.data(), &d[n], 8);
  std::memcpy(seed.data() + 8, &d[n + 1], 8);
  Prg prg(seed);
  std::vector<std::uint64_t> rho(kChecks * width);
  prg.FillValues(std::span<std::uint64_t>(rho));

  // Per row: sum_i x_i - 1, then sum_i rho_{k,i} e_i for every k.
  const std::size_t stride = 1 + kChecks;
  Shares<P> checks(rows * stride);
  std::vector<std::uint64_t> minus_one(rows * stride, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t at = r * stride, base = r * width;
    minus_one[at] = ~std::uint64_t{0};
    for (std::size_t i = 0; i < width; ++i) checks.v[at] += x.v[base + i];
    if constexpr (P::kMalicious) {
      for (std::size_t i = 0; i < width; ++i) checks.m[at] += x.m[base + i];
    }
    for (std::size_t k = 0; k < kChecks; ++k) {
      const std::uint64_t* rk = rho.data() + k * width;
      auto& v = checks.v[at + 1 + k];
      for (std::size_t i = 0; i < width; ++i) v += rk[i] * e.v[base + i];
      if constexpr (P::kMalicious) {
        auto& m = checks.m[at + 1 + k];
        for (std::size_t i = 0; i < width; ++i) m += rk[i] * e.m[base + i];
      }
    }
  }
  mpc::AddPublicInPlace(ctx.key(), checks, minus_one);

  // Round 2: every check value is 0 for an honest client.
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> z, ctx.OpenOwned(std::move(checks)));
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint64_t* zr = z.data() + r * stride;
    bool squares_ok = true;
    for (std::size_t k = 0; k < kChecks; ++k) squares_ok = squares_ok && zr[1 + k] == 0;
    if (zr[0] == 0 && squares_ok) continue;
    // Blame the client only once every opening (and the d every party received) is
    // known to be genuine.
    MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs<P>(bctx));
    return InvalidArgument(
        "the client's input for prompt position " +
        std::to_string(first_pos + static_cast<int>(r)) + " is not a one-hot vector (" +
        (squares_ok ? std::string("its entries do not add up to 1")
                    : std::string("an entry is neither 0 nor 1")) +
        "): refusing the request; a client must send d = onehot(token) - r for its masks r");
  }
  return Status::Ok();
}

template Status CheckOneHotRows<mpc::SemiHonest>(mpc::BinaryContext<mpc::SemiHonest>&,
                                                 const Shares<mpc::SemiHonest>&, std::size_t, int);
template Status CheckOneHotRows<mpc::Spdz2k>(mpc::BinaryContext<mpc::Spdz2k>&,
                                             const Shares<mpc::Spdz2k>&, std::size_t, int);

}  // namespace mpcache::infer
