#include "mpc/fused_product.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

// An operand after the opening, element by element: value_i = u0_i + sum_k lam[k]_i
// atom[k]_i, the atoms [a] (kS; lam 1), then [r_shift] and [r_top] (kT) — the same for every
// element of a job, so the products go atom by atom over whole columns.
template <typename P>
struct OpenedColumns {
  std::vector<std::uint64_t> u0;
  std::array<std::vector<std::uint64_t>, 3> lam;
  std::array<const Shares<P>*, 3> atom{};
  int count = 0;
  int top = -1;  // the index of r_top among the atoms (kT), else -1
};

// out_i += atom_i coef(i) (value and MAC shares).
template <typename P, typename F>
void Accumulate(Shares<P>& out, const Shares<P>& atom, F coef) {
  const std::size_t n = out.size();
  for (std::size_t i = 0; i < n; ++i) out.v[i] += atom.v[i] * coef(i);
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < n; ++i) out.m[i] += atom.m[i] * coef(i);
  }
}

// out_i := the public constant c_i: party 0's value share, alpha_i c_i in every MAC share.
template <typename P, typename F>
void StartWith(Shares<P>& out, bool p0, u128 alpha, F c) {
  const std::size_t n = out.size();
  if (p0) {
    for (std::size_t i = 0; i < n; ++i) out.v[i] = c(i);
  }
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < n; ++i) out.m[i] = alpha * c(i);
  }
}

// One side of a job after the opening: its columns, and the truncation of its kT part
// (pub + coef [r_top] - [r_shift]) into *trunc.
template <typename P>
OpenedColumns<P> OpenSide(const FusedOperand<P>& o, const FusedSide<P>& m, const std::uint64_t* e_s,
                          const std::uint64_t* e_t, bool p0, u128 alpha, Shares<P>* trunc) {
  const std::size_t n = o.size();
  OpenedColumns<P> u;
  if (o.pub.empty()) {
    u.u0.assign(n, 0);
  } else {
    u.u0 = o.pub;
  }
  if ((o.comps & FusedShape::kS) != 0) {
    for (std::size_t i = 0; i < n; ++i) u.u0[i] += e_s[i];
    u.lam[static_cast<std::size_t>(u.count)].assign(n, 1);
    u.atom[static_cast<std::size_t>(u.count++)] = &m.a;
  }
  if ((o.comps & FusedShape::kT) != 0) {
    std::vector<std::uint64_t>& shift = u.lam[static_cast<std::size_t>(u.count)];
    u.atom[static_cast<std::size_t>(u.count++)] = &m.r_shift;
    u.top = u.count;
    std::vector<std::uint64_t>& top = u.lam[static_cast<std::size_t>(u.count)];
    u.atom[static_cast<std::size_t>(u.count++)] = &m.r_top;
    shift.resize(n);
    top.resize(n);
    *trunc = Shares<P>(n);
    Shares<P>& tv = *trunc;
    for (std::size_t i = 0; i < n; ++i) {
      const TruncOpened tr = TruncFromOpened(e_t[i], o.bits);
      const std::uint64_t c = o.coef[i];
      u.u0[i] += c * tr.pub;
      shift[i] = 0 - c;
      top[i] = c * tr.coef;
      tv.v[i] = m.r_top.v[i] * tr.coef - m.r_shift.v[i];
      if (p0) tv.v[i] += tr.pub;
      if constexpr (P::kMalicious) {
        tv.m[i] = m.r_top.m[i] * tr.coef - m.r_shift.m[i] + alpha * tr.pub;
      }
    }
  }
  return u;
}

// out = u w from the opened operands and the atom products t.products[prod...] (prod
// advanced past them).
template <typename P>
void ProductColumns(const OpenedColumns<P>& u, const OpenedColumns<P>& w, const FusedTriples<P>& t,
                    std::size_t& prod, Shares<P>& out, bool p0, u128 alpha) {
  StartWith<P>(out, p0, alpha, [&](std::size_t i) { return u.u0[i] * w.u0[i]; });
  for (std::size_t a = 0; a < static_cast<std::size_t>(u.count); ++a) {
    const std::uint64_t* la = u.lam[a].data();
    Accumulate(out, *u.atom[a], [&](std::size_t i) { return w.u0[i] * la[i]; });
  }
  for (std::size_t b = 0; b < static_cast<std::size_t>(w.count); ++b) {
    const std::uint64_t* lb = w.lam[b].data();
    Accumulate(out, *w.atom[b], [&](std::size_t i) { return u.u0[i] * lb[i]; });
  }
  for (std::size_t a = 0; a < static_cast<std::size_t>(u.count); ++a) {
    for (std::size_t b = 0; b < static_cast<std::size_t>(w.count); ++b) {
      const std::uint64_t* la = u.lam[a].data();
      const std::uint64_t* lb = w.lam[b].data();
      Accumulate(out, t.products[prod++], [&](std::size_t i) { return la[i] * lb[i]; });
    }
  }
}

// out = u^2: 2 u0 times each atom, and the atom products (r_top^2 = r_top).
template <typename P>
void SquareColumns(const OpenedColumns<P>& u, const FusedTriples<P>& t, Shares<P>& out, bool p0,
                   u128 alpha) {
  StartWith<P>(out, p0, alpha, [&](std::size_t i) { return u.u0[i] * u.u0[i]; });
  for (std::size_t a = 0; a < static_cast<std::size_t>(u.count); ++a) {
    const std::uint64_t* la = u.lam[a].data();
    Accumulate(out, *u.atom[a], [&](std::size_t i) { return 2 * u.u0[i] * la[i]; });
  }
  std::size_t prod = 0;
  for (int a = 0; a < u.count; ++a) {
    for (int b = a; b < u.count; ++b) {
      const std::uint64_t* la = u.lam[static_cast<std::size_t>(a)].data();
      const std::uint64_t* lb = u.lam[static_cast<std::size_t>(b)].data();
      const std::uint64_t twice = a == b ? 1 : 2;
      const auto coef = [&](std::size_t i) { return la[i] * lb[i] * twice; };
      if (a == u.top && b == u.top) {
        Accumulate(out, *u.atom[static_cast<std::size_t>(a)], coef);
      } else {
        Accumulate(out, t.products[prod++], coef);
      }
    }
  }
}

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
  std::vector<std::size_t> at(jobs_.size());
  std::size_t total = 0;
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
    at[k] = total;
    total += FusedOpenings(j.shape, n);
  }
  // The masked values, job by job and side by side: [s - a], then [z + 2^62 + r].
  const ShareKey& key = ctx_.key();
  const bool p0 = ctx_.self() == 0;
  const u128 alpha = key.alpha;
  // Every word is written below: semi-honest, the buffer of an earlier batch's opened values.
  Shares<P> masked = ctx_.MaskedBuffer(total);
  for (std::size_t k = 0; k < jobs_.size(); ++k) {
    const Job& j = jobs_[k];
    const std::size_t n = j.op[0].size();
    std::size_t off = at[k];
    for (int side = 0; side < Sides(j.shape); ++side) {
      const FusedOperand<P>& o = j.op[side];
      const FusedSide<P>& m = Side(masks[k], side);
      if ((o.comps & FusedShape::kS) != 0) {
        for (std::size_t i = 0; i < n; ++i) masked.v[off + i] = o.s.v[i] - m.a.v[i];
        if constexpr (P::kMalicious) {
          for (std::size_t i = 0; i < n; ++i) masked.m[off + i] = o.s.m[i] - m.a.m[i];
        }
        off += n;
      }
      if ((o.comps & FusedShape::kT) != 0) {
        const std::uint64_t bias = p0 ? kTruncBias : 0;
        for (std::size_t i = 0; i < n; ++i) masked.v[off + i] = o.z.v[i] + m.r.v[i] + bias;
        if constexpr (P::kMalicious) {
          const u128 mac_bias = alpha * kTruncBias;
          for (std::size_t i = 0; i < n; ++i) {
            masked.m[off + i] = o.z.m[i] + m.r.m[i] + mac_bias;
          }
        }
        off += n;
      }
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened, ctx_.OpenOwned(std::move(masked)));

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
    j.out[0] = Shares<P>(n);
    if (j.shape.pair()) j.out[1] = Shares<P>(n);
    if (PlainJob(j)) {
      PlainProducts(j, t, e_s, p0, alpha);
      continue;
    }
    std::array<OpenedColumns<P>, 3> x;
    for (int side = 0; side < sides; ++side) {
      const auto sd = static_cast<std::size_t>(side);
      x[sd] = OpenSide(j.op[side], Side(t, side), e_s[sd], e_t[sd], p0, alpha, &j.trunc[side]);
    }
    if (j.shape.square()) {
      SquareColumns(x[0], t, j.out[0], p0, alpha);
    } else {
      std::size_t prod = 0;
      ProductColumns(x[0], x[1], t, prod, j.out[0], p0, alpha);
      if (j.shape.pair()) ProductColumns(x[2], x[1], t, prod, j.out[1], p0, alpha);
    }
  }
  ctx_.GiveSpare(std::move(opened));
  return Status::Ok();
}

template class FusedBatch<SemiHonest>;
template class FusedBatch<Spdz2k>;

}  // namespace mpcache::mpc
