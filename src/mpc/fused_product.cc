#include "mpc/fused_product.h"

#include <array>
#include <string>
#include <utility>

#include "mpc/trunc.h"

namespace mpcache::mpc {

template <typename P>
std::size_t FusedBatch<P>::Add(FusedOperand<P> left, FusedOperand<P> right) {
  Job j;
  j.shape.left = left.comps;
  j.shape.right = right.comps;
  j.shape.left_bits = static_cast<std::uint8_t>((left.comps & FusedShape::kT) != 0 ? left.bits : 0);
  j.shape.right_bits =
      static_cast<std::uint8_t>((right.comps & FusedShape::kT) != 0 ? right.bits : 0);
  j.op[0] = std::move(left);
  j.op[1] = std::move(right);
  jobs_.push_back(std::move(j));
  return jobs_.size() - 1;
}

template <typename P>
std::size_t FusedBatch<P>::AddPair(FusedOperand<P> left, FusedOperand<P> left2,
                                   FusedOperand<P> right) {
  const std::size_t h = Add(std::move(left), std::move(right));
  Job& j = jobs_[h];
  j.shape.left2 = left2.comps;
  j.shape.left2_bits =
      static_cast<std::uint8_t>((left2.comps & FusedShape::kT) != 0 ? left2.bits : 0);
  j.op[2] = std::move(left2);
  return h;
}

namespace {

// Checks one operand's parts against n elements.
template <typename P>
Status CheckOperand(const FusedOperand<P>& o, std::size_t n, const char* which) {
  const auto bad = [&](const std::string& what) {
    return InvalidArgument(std::string("fused product, ") + which + " operand: " + what);
  };
  if (!o.pub.empty() && o.pub.size() != n) return bad("public part of the wrong size");
  if ((o.comps & FusedShape::kS) != 0 && o.s.size() != n) return bad("shares of the wrong size");
  if ((o.comps & FusedShape::kT) != 0) {
    if (o.z.size() != n || o.coef.size() != n) return bad("truncation part of the wrong size");
    if (o.bits < 1 || o.bits > 61) return bad("truncation by " + std::to_string(o.bits) + " bits");
  }
  return Status::Ok();
}

// Operands of a job: left (0), right (1, not for a square), a pair's second left (2).
int Sides(const FusedShape& shape) {
  return shape.square() ? 1 : shape.pair() ? 3 : 2;
}

template <typename P>
const FusedSide<P>& Side(const FusedTriples<P>& t, int side) {
  return side == 0 ? t.left : side == 1 ? t.right : t.left2;
}

// An operand after the opening: value = u0 + sum_k lam[k] atom[k].
template <typename P>
struct Opened {
  std::uint64_t u0 = 0;
  std::array<std::uint64_t, 3> lam{};
  std::array<const Shares<P>*, 3> atom{};
  int count = 0;
  int top = -1;  // the index of r_top among the atoms (kT), else -1
};

}  // namespace

template <typename P>
bool FusedBatch<P>::PlainJob(const Job& j) {
  const auto plain = [](const FusedOperand<P>& o) { return o.comps == FusedShape::kS; };
  return !j.shape.pair() && plain(j.op[0]) && (j.shape.square() || plain(j.op[1]));
}

// What the generic loop of Exchange makes of a job of plain operands (one atom each, [a]
// and [b], and one triple product [ab] — [a^2] for a square): [ab] + w0 [a] + u0 [b] + u0 w0
// (party 0's constant; u0 w0 alpha in the MAC), element by element without the atom lists.
template <typename P>
void FusedBatch<P>::PlainProducts(Job& j, const FusedTriples<P>& t,
                                  const std::array<const std::uint64_t*, 3>& e_s, bool p0,
                                  u128 alpha) {
  using W = typename P::Word;
  const std::size_t n = j.op[0].size();
  const bool square = j.shape.square();
  const Shares<P>& a = t.left.a;
  const Shares<P>& b = square ? t.left.a : t.right.a;
  const Shares<P>& ab = t.products[0];
  const std::vector<std::uint64_t>& pub0 = j.op[0].pub;
  const std::vector<std::uint64_t>& pub1 = square ? pub0 : j.op[1].pub;
  const std::uint64_t* e1 = square ? e_s[0] : e_s[1];
  Shares<P>& out = j.out[0];
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t u0 = e_s[0][i] + (pub0.empty() ? 0 : pub0[i]);
    const std::uint64_t w0 = e1[i] + (pub1.empty() ? 0 : pub1[i]);
    const std::uint64_t constant = u0 * w0;
    // A square's [a] takes 2 u0 as one coefficient mod 2^64, as the atom list gives it (the
    // same value mod 2^64 either way, but the shares' upper bits, and so the traffic the
    // transcripts pin, follow the coefficient).
    W v = ab.v[i];
    if (square) {
      v += a.v[i] * (2 * u0);
    } else {
      v += a.v[i] * w0 + b.v[i] * u0;
    }
    if (p0) v += constant;
    out.v[i] = v;
    if constexpr (P::kMalicious) {
      u128 mac = ab.m[i] + alpha * constant;
      if (square) {
        mac += a.m[i] * (2 * u0);
      } else {
        mac += a.m[i] * w0 + b.m[i] * u0;
      }
      out.m[i] = mac;
    }
  }
}

template <typename P>
Status FusedBatch<P>::Exchange() {
  if (done_) return Internal("FusedBatch::Exchange called twice");
  done_ = true;
  std::vector<FusedTriples<P>> masks(jobs_.size());
  Shares<P> masked;
  std::vector<std::size_t> at(jobs_.size());
  const ShareKey& key = ctx_.key();
  for (std::size_t k = 0; k < jobs_.size(); ++k) {
    Job& j = jobs_[k];
    const std::size_t n = j.op[0].size();
    if (!j.shape.Valid()) {
      return InvalidArgument("fused product of shape " + std::to_string(j.shape.Code()) +
                             ": the left operand needs a part, every kT part 1..61 bits");
    }
    MPCACHE_RETURN_IF_ERROR(CheckOperand(j.op[0], n, "left"));
    if (!j.shape.square()) MPCACHE_RETURN_IF_ERROR(CheckOperand(j.op[1], n, "right"));
    if (j.shape.pair()) MPCACHE_RETURN_IF_ERROR(CheckOperand(j.op[2], n, "second left"));
    MPCACHE_ASSIGN_OR_RETURN(masks[k], ctx_.prep().GetFusedTriples(n, j.shape));
    at[k] = masked.size();
    for (int side = 0; side < Sides(j.shape); ++side) {
      const FusedOperand<P>& o = j.op[side];
      const FusedSide<P>& m = Side(masks[k], side);
      if ((o.comps & FusedShape::kS) != 0) masked.Append(mpc::Sub(o.s, m.a));
      if ((o.comps & FusedShape::kT) != 0) {
        Shares<P> c = mpc::Add(o.z, m.r);
        AddPublicInPlace<P>(key, c, std::span<const std::uint64_t>(&kTruncBias, 1));
        masked.Append(c);
      }
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened, ctx_.OpenOwned(std::move(masked)));

  using W = typename P::Word;
  const bool p0 = ctx_.self() == 0;
  const u128 alpha = key.alpha;
  for (std::size_t k = 0; k < jobs_.size(); ++k) {
    Job& j = jobs_[k];
    const FusedTriples<P>& t = masks[k];
    const std::size_t n = j.op[0].size();
    const int sides = Sides(j.shape);
    // Where each side's openings are: [s - a] then [z + 2^62 + r], n values each.
    std::array<const std::uint64_t*, 3> e_s{}, e_t{};
    {
      std::size_t off = at[k];
      for (int side = 0; side < sides; ++side) {
        if ((j.op[side].comps & FusedShape::kS) != 0) {
          e_s[static_cast<std::size_t>(side)] = opened.data() + off;
          off += n;
        }
        if ((j.op[side].comps & FusedShape::kT) != 0) {
          e_t[static_cast<std::size_t>(side)] = opened.data() + off;
          off += n;
        }
      }
    }
    for (int side = 0; side < sides; ++side) {
      if ((j.op[side].comps & FusedShape::kT) != 0) j.trunc[side] = Shares<P>(n);
    }
    j.out[0] = Shares<P>(n);
    if (j.shape.pair()) j.out[1] = Shares<P>(n);
    if (PlainJob(j)) {
      PlainProducts(j, t, e_s, p0, alpha);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::array<Opened<P>, 3> x{};
      for (int side = 0; side < sides; ++side) {
        const auto sd = static_cast<std::size_t>(side);
        const FusedOperand<P>& o = j.op[side];
        const FusedSide<P>& m = Side(t, side);
        Opened<P>& u = x[sd];
        u.u0 = o.pub.empty() ? 0 : o.pub[i];
        if ((o.comps & FusedShape::kS) != 0) {
          u.u0 += e_s[sd][i];
          u.lam[static_cast<std::size_t>(u.count)] = 1;
          u.atom[static_cast<std::size_t>(u.count++)] = &m.a;
        }
        if ((o.comps & FusedShape::kT) != 0) {
          const TruncOpened tr = TruncFromOpened(e_t[sd][i], o.bits);
          const std::uint64_t c = o.coef[i];
          u.u0 += c * tr.pub;
          u.lam[static_cast<std::size_t>(u.count)] = 0 - c;
          u.atom[static_cast<std::size_t>(u.count++)] = &m.r_shift;
          u.top = u.count;
          u.lam[static_cast<std::size_t>(u.count)] = c * tr.coef;
          u.atom[static_cast<std::size_t>(u.count++)] = &m.r_top;
          // The truncation itself: pub + coef [r_top] - [r_shift].
          Shares<P>& tv = j.trunc[side];
          tv.v[i] = m.r_top.v[i] * tr.coef - m.r_shift.v[i];
          if (p0) tv.v[i] += tr.pub;
          if constexpr (P::kMalicious) {
            tv.m[i] = m.r_top.m[i] * tr.coef - m.r_shift.m[i] + alpha * tr.pub;
          }
        }
      }
      W v = 0;
      u128 mac = 0;
      const auto add = [&](std::uint64_t coef, const Shares<P>& sh) {
        v += sh.v[i] * coef;
        if constexpr (P::kMalicious) mac += sh.m[i] * coef;
      };
      std::uint64_t constant = 0;
      std::size_t prod = 0;
      // u w from the opened operands and the atom products from t.products[prod...].
      const auto product = [&](const Opened<P>& u, const Opened<P>& w) {
        constant = u.u0 * w.u0;
        for (int a = 0; a < u.count; ++a)
          add(w.u0 * u.lam[static_cast<std::size_t>(a)], *u.atom[static_cast<std::size_t>(a)]);
        for (int b = 0; b < w.count; ++b)
          add(u.u0 * w.lam[static_cast<std::size_t>(b)], *w.atom[static_cast<std::size_t>(b)]);
        for (int a = 0; a < u.count; ++a) {
          for (int b = 0; b < w.count; ++b) {
            add(u.lam[static_cast<std::size_t>(a)] * w.lam[static_cast<std::size_t>(b)],
                t.products[prod++]);
          }
        }
      };
      if (j.shape.square()) {
        const Opened<P>& u = x[0];
        constant = u.u0 * u.u0;
        for (int a = 0; a < u.count; ++a)
          add(2 * u.u0 * u.lam[static_cast<std::size_t>(a)], *u.atom[static_cast<std::size_t>(a)]);
        for (int a = 0; a < u.count; ++a) {
          for (int b = a; b < u.count; ++b) {
            const std::uint64_t c = u.lam[static_cast<std::size_t>(a)] *
                                    u.lam[static_cast<std::size_t>(b)] * (a == b ? 1 : 2);
            if (a == u.top && b == u.top) {
              add(c, *u.atom[static_cast<std::size_t>(a)]);  // r_top^2 = r_top
            } else {
              add(c, t.products[prod++]);
            }
          }
        }
      } else {
        product(x[0], x[1]);
      }
      if (p0) v += constant;
      j.out[0].v[i] = v;
      if constexpr (P::kMalicious) j.out[0].m[i] = mac + alpha * constant;
      if (j.shape.pair()) {  // the second left times the same opened right operand
        v = 0;
        mac = 0;
        product(x[2], x[1]);
        if (p0) v += constant;
        j.out[1].v[i] = v;
        if constexpr (P::kMalicious) j.out[1].m[i] = mac + alpha * constant;
      }
    }
  }
  return Status::Ok();
}

template class FusedBatch<SemiHonest>;
template class FusedBatch<Spdz2k>;

}  // namespace mpcache::mpc
