// SecureBackend's products: one fused batch per call (mpc/fused_product.h), squares and
// pairs declared by the caller, each product's truncation held for a later opening.
#include <cstdint>
#include <string>
#include <vector>

#include "mpc/compare/lazy_build.h"
#include "mpc/compare/secure_backend.h"
#include "mpc/fused_product.h"

namespace mpcache::mpc {

using lazy_build::AppendElement;
using lazy_build::Building;
using lazy_build::Compact;
using lazy_build::Comps;
using lazy_build::EndElement;
using lazy_build::Term;

namespace {

// The components every element of v has, when they are the same for all and not public: a
// share part (kS) and/or exactly one pending term (kT), every term from the same source.
// 0 otherwise (then Product goes element by element).
template <typename P>
std::uint8_t UniformComps(const LazyShares<P>& v) {
  const std::size_t n = v.size();
  if (n == 0) return 0;
  const std::uint8_t h = v.has_s[0];
  for (std::size_t i = 1; i < n; ++i) {
    if (v.has_s[i] != h) return 0;
  }
  const std::uint8_t s = h != 0 ? FusedShape::kS : 0;
  if (v.terms.empty()) return s;
  if (v.terms.size() != n) return 0;
  const std::int32_t src = v.terms[0].src;
  for (std::size_t i = 0; i < n; ++i) {
    if (v.off[i] != i || v.terms[i].src != src) return 0;
  }
  return static_cast<std::uint8_t>(s | FusedShape::kT);
}

// Product's operand of such a vector: what its element-by-element `operand` makes of the
// indices 0..n-1, the pending terms claimed.
template <typename P>
FusedOperand<P> UniformOperand(const LazyShares<P>& v, std::uint8_t comps) {
  const std::size_t n = v.size();
  FusedOperand<P> o;
  o.comps = comps;
  o.pub = v.pub;
  if ((comps & FusedShape::kS) != 0) o.s = v.s;
  if ((comps & FusedShape::kT) != 0) {
    PendingTrunc<P>& src = v.source(v.terms[0]);
    o.z = Shares<P>(n);
    o.coef.resize(n);
    o.bits = src.bits();
    for (std::size_t i = 0; i < n; ++i) {
      const Term<P>& term = v.terms[i];
      o.z.CopyFrom(i, src.z(), term.at);
      o.coef[i] = term.coef;
      src.Claim(term.at);
    }
  }
  return o;
}

}  // namespace

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Product(const Vec& a, const Vec* b,
                                                         std::size_t squares_from,
                                                         std::size_t pair_from,
                                                         std::size_t pair_count) {
  const std::size_t n = a.size();
  counts_.mul_batches += 1;
  counts_.mul_elems += n;
  if (!status_.ok()) return Vec::Zeros(n);
  if (b != nullptr && b->size() != n) {
    Fail(InvalidArgument("product of vectors of sizes " + std::to_string(n) + " and " +
                         std::to_string(b->size())));
    return Vec::Zeros(n);
  }
  // The operands as they are, or normalized copies when they hold pending terms (an operand
  // without any is its own normal form: no copy).
  Vec x_own, y_own;
  const Vec* xp = &a;
  const Vec* yp = b != nullptr ? b : &y_own;
  const auto own = [this](const Vec& v, Vec& copy, const Vec*& at) {
    if (at == &copy) return;
    copy = v;
    Normalize(copy);
    at = &copy;
  };
  if (!a.terms.empty()) own(a, x_own, xp);
  if (b != nullptr && !b->terms.empty()) own(*b, y_own, yp);
  // A fused product takes one pending term per operand element; a sum of several is opened
  // first.
  bool flush = false;
  for (std::size_t i = 0; i < n && !flush; ++i) {
    flush = xp->term_count(i) > 1 || (b != nullptr && yp->term_count(i) > 1);
  }
  if (flush) {
    own(a, x_own, xp);
    if (b != nullptr) own(*b, y_own, yp);
    Flush({&x_own, &y_own});
  }
  if (!status_.ok()) return Vec::Zeros(n);
  const Vec& x = *xp;
  const Vec& y = *yp;
  const Vec& w = b != nullptr ? y : x;
  if (pair_count == 0 && (b == nullptr || squares_from >= n)) {
    const std::uint8_t lc = UniformComps(x);
    const std::uint8_t rc = b != nullptr ? UniformComps(y) : lc;
    if (lc != 0 && rc != 0) return UniformProduct(x, b != nullptr ? &y : nullptr, lc, rc);
  }
  Vec out = Building<P>(n);
  // Sources of the local (public-factor) elements: x's, then y's.
  out.src = x.src;
  const auto y_off = static_cast<std::int32_t>(x.src.size());
  if (b != nullptr) out.src.insert(out.src.end(), y.src.begin(), y.src.end());
  std::map<std::int32_t, std::vector<std::size_t>> groups;  // by FusedShape code
  // Declared pairs (MulPairs): element i + pair_count takes element i's right operand when
  // no factor of either is public and both right elements have the same public structure
  // (the same pending term, the same public part); second[i + pair_count] then marks the
  // element whose product the pair job yields.
  std::vector<std::uint8_t> second(n, 0);
  const auto pairs_with = [&](std::size_t i) {
    if (b == nullptr || pair_count == 0 || i < pair_from || i >= pair_from + pair_count) {
      return false;
    }
    const std::size_t k = i + pair_count;
    if (k >= n || k >= squares_from || i >= squares_from) return false;
    if (Comps(x, i) == 0 || Comps(x, k) == 0 || Comps(y, i) == 0) return false;
    if (y.has_s[i] != y.has_s[k] || y.pub[i] != y.pub[k] || y.term_count(i) != y.term_count(k)) {
      return false;
    }
    if (y.pending(i)) {
      const Term<P>& t = y.terms[y.off[i]];
      const Term<P>& u = y.terms[y.off[k]];
      if (&y.source(t) != &y.source(u) || t.at != u.at || t.coef != u.coef) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (second[i] != 0) {
      EndElement(out);  // a pair's second product: filled after the exchange
      continue;
    }
    const std::uint8_t lc = Comps(x, i), rc = Comps(w, i);
    if (lc == 0 || rc == 0) {
      // A public factor: a local multiple of the other operand.
      const bool left_public = lc == 0;
      AppendElement(out, i, left_public ? w : x, i, left_public && b != nullptr ? y_off : 0,
                    left_public ? x.pub[i] : w.pub[i]);
      continue;
    }
    EndElement(out);  // filled after the exchange
    FusedShape shape;
    shape.left = lc;
    shape.right = b != nullptr && i < squares_from ? rc : 0;
    if (x.pending(i))
      shape.left_bits = static_cast<std::uint8_t>(x.source(x.terms[x.off[i]]).bits());
    if (!shape.square() && y.pending(i)) {
      shape.right_bits = static_cast<std::uint8_t>(y.source(y.terms[y.off[i]]).bits());
    }
    if (pairs_with(i)) {
      const std::size_t k = i + pair_count;
      second[k] = 1;
      shape.left2 = Comps(x, k);
      if (x.pending(k)) {
        shape.left2_bits = static_cast<std::uint8_t>(x.source(x.terms[x.off[k]]).bits());
      }
    }
    groups[shape.Code()].push_back(i);
  }
  // Elements with a public factor and no share part are public or pending: zero products
  // drop their terms.
  Compact(out);
  if (groups.empty()) return out;

  FusedBatch<P> batch(ctx_.arith());
  std::uint64_t openings = 0;
  const auto operand = [&](const Vec& v, std::uint8_t comps, const std::vector<std::size_t>& idx) {
    FusedOperand<P> o;
    o.comps = comps;
    const std::size_t k = idx.size();
    o.pub.resize(k);
    if ((comps & FusedShape::kS) != 0) o.s = Shares<P>(k);
    if ((comps & FusedShape::kT) != 0) {
      o.z = Shares<P>(k);
      o.coef.resize(k);
      o.bits = v.source(v.terms[v.off[idx[0]]]).bits();
    }
    for (std::size_t t = 0; t < k; ++t) {
      const std::size_t i = idx[t];
      o.pub[t] = v.pub[i];
      if ((comps & FusedShape::kS) != 0) o.s.CopyFrom(t, v.s, i);
      if ((comps & FusedShape::kT) != 0) {
        const Term<P>& term = v.terms[v.off[i]];
        o.z.CopyFrom(t, v.source(term).z(), term.at);
        o.coef[t] = term.coef;
        v.source(term).Claim(term.at);
      }
    }
    return o;
  };
  struct Handle {
    std::size_t h;
    const std::vector<std::size_t>* idx;
    std::vector<std::size_t> idx2;  // a pair's second products
  };
  std::vector<Handle> handles;
  for (const auto& [code, idx] : groups) {
    const FusedShape shape = FusedShape::FromCode(code);
    openings += FusedOpenings(shape, idx.size());
    FusedOperand<P> left = operand(x, shape.left, idx);
    FusedOperand<P> right;
    if (!shape.square()) right = operand(y, shape.right, idx);
    if (shape.pair()) {
      std::vector<std::size_t> idx2(idx.size());
      for (std::size_t t = 0; t < idx.size(); ++t) idx2[t] = idx[t] + pair_count;
      FusedOperand<P> left2 = operand(x, shape.left2, idx2);
      handles.push_back(
          {batch.AddPair(std::move(left), std::move(left2), std::move(right)), &idx, idx2});
    } else {
      handles.push_back({batch.Add(std::move(left), std::move(right)), &idx, {}});
    }
  }
  if (!ExchangeBatch(batch, openings)) return Vec::Zeros(n);
  for (const Handle& hd : handles) {
    const std::vector<std::size_t>& idx = *hd.idx;
    const bool pair = !hd.idx2.empty();
    for (int side = 0; side < (b != nullptr ? (pair ? 3 : 2) : 1); ++side) {
      const Vec& v = side == 1 ? y : x;
      const std::vector<std::size_t>& at = side == 2 ? hd.idx2 : idx;
      Shares<P> t = batch.TakeTrunc(hd.h, side);
      if (t.empty()) continue;
      for (std::size_t k = 0; k < at.size(); ++k) {
        const Term<P>& term = v.terms[v.off[at[k]]];
        v.source(term).Resolve(term.at, t, k);
      }
    }
    for (int which = 0; which < (pair ? 2 : 1); ++which) {
      const std::vector<std::size_t>& at = which == 0 ? idx : hd.idx2;
      Shares<P> prod = batch.TakeProduct(hd.h, which);
      for (std::size_t k = 0; k < at.size(); ++k) {
        out.s.CopyFrom(at[k], prod, k);
        out.has_s[at[k]] = 1;
        out.pub[at[k]] = 0;
      }
    }
  }
  return out;
}

template <typename P>
bool SecureBackend<P>::ExchangeBatch(FusedBatch<P>& batch, std::uint64_t openings) {
  const std::uint64_t before = BroadcastDeferred();
  Status st = batch.Exchange();
  if (!st.ok()) {
    Fail(st);
    return false;
  }
  // All-to-all: 1 round, 2 B per opened value; split kings: SplitKingBytes of the openings
  // and the deferred values that rode in front of them.
  const auto& how = ctx_.arith().last_open();
  const auto cost = ctx_.arith().CostOf(how, openings + how.merged_deferred);
  Charge(cost.rounds, cost.bytes);
  ChargeDeferred(before);
  return true;
}

// Product of operands whose every element has the same shape: one fused job over the whole
// vectors, the same job (and so the same share words) the element-by-element path makes of
// them, without its per-element groups, copies and term lists.
template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::UniformProduct(const Vec& x, const Vec* y,
                                                                std::uint8_t lc, std::uint8_t rc) {
  const std::size_t n = x.size();
  FusedShape shape;
  shape.left = lc;
  shape.right = y != nullptr ? rc : 0;
  FusedBatch<P> batch(ctx_.arith());
  const std::size_t h =
      batch.Add(UniformOperand(x, lc), y != nullptr ? UniformOperand(*y, rc) : FusedOperand<P>{});
  if (!ExchangeBatch(batch, FusedOpenings(shape, n))) return Vec::Zeros(n);
  for (int side = 0; side < (y != nullptr ? 2 : 1); ++side) {
    const Vec& v = side == 1 ? *y : x;
    Shares<P> t = batch.TakeTrunc(h, side);
    if (t.empty()) continue;
    PendingTrunc<P>& src = v.source(v.terms[0]);
    for (std::size_t k = 0; k < n; ++k) src.Resolve(v.terms[k].at, t, k);
  }
  return Vec(batch.TakeProduct(h, 0));
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Mul(const Vec& a, const Vec& b) {
  return Product(a, &b);
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Square(const Vec& a) {
  return Product(a, nullptr);
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::MulAndSquare(const Vec& a, const Vec& b,
                                                              const Vec& c) {
  const Vec left = Concat(a, c), right = Concat(b, c);
  return Product(left, &right, a.size());
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::MulPairs(const Vec& a, const Vec& b,
                                                          std::size_t from, std::size_t count,
                                                          int bits) {
  Vec prod = Product(a, &b, SIZE_MAX, from, count);
  if (bits <= 0) return prod;
  // With bits, one product batch and no standalone truncation, as PlainBackend counts it.
  const FixedOpCounts keep = counts_;
  Vec out = Trunc(prod, bits);
  counts_ = keep;
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::MulTrunc(const Vec& a, const Vec& b, int bits) {
  return MulPairs(a, b, 0, 0, bits);  // no pairs declared
}

// The members defined here, for both protocols (the class itself is instantiated in
// secure_backend.cc, and an explicit instantiation of a class may appear only once).
#define MPCACHE_SECURE_PRODUCTS(P)                                                               \
  template SecureBackend<P>::Vec SecureBackend<P>::Product(const Vec&, const Vec*, std::size_t,  \
                                                           std::size_t, std::size_t);            \
  template SecureBackend<P>::Vec SecureBackend<P>::Mul(const Vec&, const Vec&);                  \
  template SecureBackend<P>::Vec SecureBackend<P>::Square(const Vec&);                           \
  template SecureBackend<P>::Vec SecureBackend<P>::MulAndSquare(const Vec&, const Vec&,          \
                                                                const Vec&);                     \
  template SecureBackend<P>::Vec SecureBackend<P>::MulPairs(const Vec&, const Vec&, std::size_t, \
                                                            std::size_t, int);                   \
  template SecureBackend<P>::Vec SecureBackend<P>::MulTrunc(const Vec&, const Vec&, int);
MPCACHE_SECURE_PRODUCTS(SemiHonest)
MPCACHE_SECURE_PRODUCTS(Spdz2k)
#undef MPCACHE_SECURE_PRODUCTS

}  // namespace mpcache::mpc
