#include "mpc/compare/secure_backend.h"

#include <bit>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "mpc/fused_product.h"
#include "mpc/trunc.h"

namespace mpcache::mpc {

namespace {

// Truncations a comparison opens in its own exchange: the masked values are made (and the
// trunc pairs drawn) before the comparison, so that its input can already subtract the
// pairs' r_shift; the opened values come back in the comparison's first exchange.
template <typename P>
class ClaimedTruncs final : public DeferredSource<P> {
 public:
  // Element k: z_k truncated by bits_k.
  Status Draw(Context<P>& ctx, const Shares<P>& z, const std::vector<int>& bits) {
    const std::size_t n = z.size();
    bits_ = bits;
    r_top_ = Shares<P>(n);
    r_shift_ = Shares<P>(n);
    masked_ = z;
    std::map<int, std::vector<std::size_t>> by_bits;
    for (std::size_t k = 0; k < n; ++k) by_bits[bits[k]].push_back(k);
    for (const auto& [b, idx] : by_bits) {
      MPCACHE_ASSIGN_OR_RETURN(TruncPairs<P> pair, ctx.prep().GetTruncPairs(idx.size(), b));
      for (std::size_t t = 0; t < idx.size(); ++t) {
        masked_.AddFrom(idx[t], pair.r, t);
        r_top_.CopyFrom(idx[t], pair.r_top, t);
        r_shift_.CopyFrom(idx[t], pair.r_shift, t);
      }
    }
    AddPublicInPlace<P>(ctx.key(), masked_, std::span<const std::uint64_t>(&kTruncBias, 1));
    return Status::Ok();
  }
  const Shares<P>& r_shift() const { return r_shift_; }
  // After the exchange: the public part of each truncation, and the truncations.
  const std::vector<std::uint64_t>& pub() const { return pub_; }
  const Shares<P>& values() const { return values_; }

  Result<Shares<P>> Prepare(Context<P>& /*ctx*/) override {
    Shares<P> out = std::move(masked_);
    masked_ = Shares<P>();
    return out;
  }
  Status Finish(Context<P>& ctx, std::span<const std::uint64_t> opened) override {
    const std::size_t n = opened.size();
    if (n != bits_.size()) return Internal("claimed truncations: size mismatch");
    pub_.assign(n, 0);
    values_ = Shares<P>(n);
    const bool p0 = ctx.self() == 0;
    for (std::size_t k = 0; k < n; ++k) {
      const TruncOpened t = TruncFromOpened(opened[k], bits_[k]);
      pub_[k] = t.pub;
      values_.v[k] = r_top_.v[k] * t.coef - r_shift_.v[k];
      if (p0) values_.v[k] += t.pub;
      if constexpr (P::kMalicious) {
        values_.m[k] = r_top_.m[k] * t.coef - r_shift_.m[k] + ctx.key().alpha * t.pub;
      }
    }
    return Status::Ok();
  }

 private:
  std::vector<int> bits_;
  Shares<P> masked_, r_top_, r_shift_, values_;
  std::vector<std::uint64_t> pub_;
};

template <typename P>
using Term = typename LazyShares<P>::Term;

// Drops the sources no term refers to (so that finished ones can be freed).
template <typename P>
void Compact(LazyShares<P>& v) {
  std::vector<std::int32_t> remap(v.src.size(), -1);
  for (const auto& t : v.terms) remap[static_cast<std::size_t>(t.src)] = 0;
  std::vector<std::shared_ptr<PendingTrunc<P>>> kept;
  for (std::size_t k = 0; k < v.src.size(); ++k) {
    if (remap[k] < 0) continue;
    remap[k] = static_cast<std::int32_t>(kept.size());
    kept.push_back(std::move(v.src[k]));
  }
  for (auto& t : v.terms) t.src = remap[static_cast<std::size_t>(t.src)];
  v.src = std::move(kept);
}

// A vector of n elements with no terms yet: fill s/has_s/pub at i and call EndElement in
// order i = 0, 1, ...
template <typename P>
LazyShares<P> Building(std::size_t n) {
  LazyShares<P> out = LazyShares<P>::Zeros(n);
  out.off.assign(1, 0);
  out.off.reserve(n + 1);
  return out;
}
template <typename P>
void EndElement(LazyShares<P>& v) {
  v.off.push_back(static_cast<std::uint32_t>(v.terms.size()));
}

// Element j of `from` as the next element i of `to` (from's sources at src_offset in to's).
template <typename P>
void AppendElement(LazyShares<P>& to, std::size_t i, const LazyShares<P>& from, std::size_t j,
                   std::int32_t src_offset, std::uint64_t scale = 1) {
  to.s.CopyFrom(i, from.s, j);
  to.has_s[i] = from.has_s[j];
  to.pub[i] = from.pub[j];
  if (scale != 1) {
    to.s.v[i] *= scale;
    if constexpr (P::kMalicious) to.s.m[i] *= scale;
    to.pub[i] *= scale;
    if (scale == 0) to.has_s[i] = 0;
  }
  for (const auto& t : from.terms_of(j)) {
    if (t.coef * scale != 0) to.terms.push_back({t.src + src_offset, t.at, t.coef * scale});
  }
  EndElement(to);
}

template <typename P>
std::uint8_t Comps(const LazyShares<P>& v, std::size_t i) {
  return static_cast<std::uint8_t>((v.has_s[i] != 0 ? FusedShape::kS : 0) |
                                   (v.pending(i) ? FusedShape::kT : 0));
}

}  // namespace

template <typename P>
bool SecureBackend<P>::AnyPending(const Vec& v) {
  return !v.terms.empty();
}

template <typename P>
void SecureBackend<P>::Normalize(Vec& v) const {
  if (v.terms.empty()) return;
  bool changed = false;
  std::vector<Term<P>> kept;
  std::vector<std::uint32_t> off(1, 0);
  off.reserve(v.size() + 1);
  for (std::size_t i = 0; i < v.size(); ++i) {
    for (const auto& t : v.terms_of(i)) {
      const PendingTrunc<P>& src = v.source(t);
      if (!src.done(t.at)) {
        kept.push_back(t);
        continue;
      }
      const Shares<P>& val = src.values();
      v.s.v[i] += val.v[t.at] * t.coef;
      if constexpr (P::kMalicious) v.s.m[i] += val.m[t.at] * t.coef;
      v.has_s[i] = 1;
      changed = true;
    }
    off.push_back(static_cast<std::uint32_t>(kept.size()));
  }
  if (!changed) return;
  v.terms = std::move(kept);
  v.off = std::move(off);
  Compact(v);
}

template <typename P>
void SecureBackend<P>::Flush(std::initializer_list<Vec*> vs) {
  if (!status_.ok()) return;
  // Held sources open only what is asked for: every pending term of these vectors.
  for (Vec* v : vs) {
    for (const auto& t : v->terms) v->source(t).Want(t.at);
  }
  const std::uint64_t before = BroadcastDeferred();
  const std::uint64_t split_before = ctx_.arith().deferred_in_split();
  Status st = ctx_.arith().FlushDeferred();
  if (!st.ok()) {
    Fail(st);
    return;
  }
  if (const std::uint64_t split = ctx_.arith().deferred_in_split() - split_before; split > 0) {
    // Split kings: a split opening of the deferred values alone.
    const auto cost = ctx_.arith().CostOf(ctx_.arith().last_open(), split);
    Charge(cost.rounds, cost.bytes);
    ++flushes_;
  } else if (BroadcastDeferred() > before) {
    Charge(1, 0);
    ChargeDeferred(before);
    ++flushes_;
  }
  for (Vec* v : vs) Normalize(*v);
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Add(const Vec& a, const Vec& b) {
  if (a.size() != b.size()) {
    Fail(InvalidArgument("Add of vectors of sizes " + std::to_string(a.size()) + " and " +
                         std::to_string(b.size())));
    return Vec::Zeros(a.size());
  }
  const std::size_t n = a.size();
  Vec out = Building<P>(n);
  out.src = a.src;
  const auto off = static_cast<std::int32_t>(a.src.size());
  out.src.insert(out.src.end(), b.src.begin(), b.src.end());
  out.terms.reserve(a.terms.size() + b.terms.size());
  for (std::size_t i = 0; i < n; ++i) {
    out.s.CopyFrom(i, a.s, i);
    out.s.AddFrom(i, b.s, i);
    out.has_s[i] = static_cast<std::uint8_t>(a.has_s[i] | b.has_s[i]);
    out.pub[i] = a.pub[i] + b.pub[i];
    const std::size_t first = out.terms.size();
    for (const auto& t : a.terms_of(i)) out.terms.push_back(t);
    for (const auto& t : b.terms_of(i)) {
      // The same pending value on both sides adds up into one term.
      bool merged = false;
      for (std::size_t k = first; k < out.terms.size() && !merged; ++k) {
        Term<P>& u = out.terms[k];
        if (out.src[static_cast<std::size_t>(u.src)] == b.src[static_cast<std::size_t>(t.src)] &&
            u.at == t.at) {
          u.coef += t.coef;
          merged = true;
        }
      }
      if (!merged) out.terms.push_back({t.src + off, t.at, t.coef});
    }
    EndElement(out);
  }
  Compact(out);
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Sub(const Vec& a, const Vec& b) {
  return Add(a, MulConst(b, ~Ring64{0}));
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::AddConst(const Vec& a, Ring64 c) const {
  Vec out = a;
  for (auto& p : out.pub) p += c;
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::MulConst(const Vec& a, Ring64 c) const {
  if (c == 0) return Vec::Zeros(a.size());
  Vec out = a;
  MulPublicInPlace(out.s, std::span<const std::uint64_t>(&c, 1));
  for (auto& p : out.pub) p *= c;
  for (auto& t : out.terms) t.coef *= c;
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::MulPublic(const Vec& a,
                                                           std::span<const Ring64> c) const {
  Vec out = a;
  Normalize(out);
  MulPublicInPlace(out.s, c);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out.pub[i] *= c[i];
    for (std::uint32_t k = out.off[i]; k < out.off[i + 1]; ++k) out.terms[k].coef *= c[i];
  }
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Gather(const Vec& a,
                                                        std::span<const std::size_t> idx) const {
  if (a.terms.empty()) {  // nothing pending: plain copies (most gathers)
    const std::size_t n = idx.size();
    Vec out = Vec::Zeros(n);
    for (std::size_t i = 0; i < n; ++i) {
      out.s.CopyFrom(i, a.s, idx[i]);
      out.has_s[i] = a.has_s[idx[i]];
      out.pub[i] = a.pub[idx[i]];
    }
    return out;
  }
  Vec out = Building<P>(idx.size());
  out.src = a.src;
  std::size_t terms = 0;
  for (const std::size_t j : idx) terms += a.term_count(j);
  out.terms.reserve(terms);
  for (std::size_t i = 0; i < idx.size(); ++i) AppendElement(out, i, a, idx[i], 0);
  Compact(out);
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Concat(const Vec& a, const Vec& b) const {
  const std::size_t na = a.size(), nb = b.size();
  if (a.terms.empty() && b.terms.empty()) {  // nothing pending: append the parts
    Vec out;
    out.s.v.reserve(na + nb);
    if constexpr (P::kMalicious) out.s.m.reserve(na + nb);
    out.has_s.reserve(na + nb);
    out.pub.reserve(na + nb);
    for (const Vec* part : {&a, &b}) {
      out.s.Append(part->s);
      out.has_s.insert(out.has_s.end(), part->has_s.begin(), part->has_s.end());
      out.pub.insert(out.pub.end(), part->pub.begin(), part->pub.end());
    }
    out.off.assign(na + nb + 1, 0);
    return out;
  }
  Vec out = Building<P>(na + nb);
  out.src = a.src;
  out.src.insert(out.src.end(), b.src.begin(), b.src.end());
  const auto off = static_cast<std::int32_t>(a.src.size());
  out.terms.reserve(a.terms.size() + b.terms.size());
  for (std::size_t i = 0; i < na; ++i) AppendElement(out, i, a, i, 0);
  for (std::size_t i = 0; i < nb; ++i) AppendElement(out, na + i, b, i, off);
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::RowSum(const Vec& a, std::size_t cols) {
  const std::size_t rows = cols == 0 ? 0 : a.size() / cols;
  Vec out = Building<P>(rows);
  out.src = a.src;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      out.s.AddFrom(r, a.s, i);
      out.has_s[r] = static_cast<std::uint8_t>(out.has_s[r] | a.has_s[i]);
      out.pub[r] += a.pub[i];
      for (const auto& t : a.terms_of(i)) out.terms.push_back(t);
    }
    EndElement(out);
  }
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::Trunc(const Vec& a, int bits) {
  counts_.trunc_batches += 1;
  counts_.trunc_elems += a.size();
  if (bits <= 0) return a;
  const std::size_t n = a.size();
  if (!status_.ok()) return Vec::Zeros(n);
  if (bits > 61) {
    Fail(InvalidArgument("truncation by " + std::to_string(bits) + " bits: need 1..61"));
    return Vec::Zeros(n);
  }
  Vec x = a;
  Normalize(x);
  // A pending term composes with this truncation when it is the element (T_b(T_f(z)) is
  // taken as T_(f+b)(z)); anything else pending is opened first.
  const auto composes = [&](std::size_t i) {
    if (x.term_count(i) != 1 || x.has_s[i] != 0 || x.pub[i] != 0) return false;
    const Term<P>& t = x.terms[x.off[i]];
    return t.coef == 1 && x.source(t).bits() + bits <= 61;
  };
  bool flush = false;
  for (std::size_t i = 0; i < n && !flush; ++i) flush = x.pending(i) && !composes(i);
  if (flush) Flush({&x});
  if (!status_.ok()) return Vec::Zeros(n);
  std::map<int, std::vector<std::size_t>> by_bits;  // new sources by their total width
  Vec out = Vec::Zeros(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (x.pending(i)) {
      by_bits[x.source(x.terms[x.off[i]]).bits() + bits].push_back(i);
    } else if (x.has_s[i] == 0) {
      // A public value: its exact shift, here (the twin's truncation may add one LSB).
      out.pub[i] = static_cast<Ring64>(static_cast<std::int64_t>(x.pub[i]) >> bits);
    } else {
      by_bits[bits].push_back(i);
    }
  }
  // Each element gets at most one term: build the terms in element order.
  std::vector<Term<P>> term_of(n);
  std::vector<std::uint8_t> has_term(n, 0);
  const ShareKey& key = ctx_.arith().key();
  for (const auto& [total, idx] : by_bits) {
    Shares<P> z(idx.size());
    std::vector<std::uint64_t> pub(idx.size(), 0);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const std::size_t i = idx[k];
      if (x.pending(i)) {
        const Term<P>& t = x.terms[x.off[i]];
        z.CopyFrom(k, x.source(t).z(), t.at);
      } else {
        z.CopyFrom(k, x.s, i);
        pub[k] = x.pub[i];
      }
    }
    AddPublicInPlace<P>(key, z, pub);
    auto src = std::make_shared<PendingTrunc<P>>(std::move(z), total);
    src->Hold();
    ctx_.arith().Defer(src);
    const auto s = static_cast<std::int32_t>(out.src.size());
    out.src.push_back(std::move(src));
    for (std::size_t k = 0; k < idx.size(); ++k) {
      term_of[idx[k]] = {s, static_cast<std::uint32_t>(k), 1};
      has_term[idx[k]] = 1;
    }
  }
  out.off.assign(1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (has_term[i] != 0) out.terms.push_back(term_of[i]);
    EndElement(out);
  }
  return out;
}

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
  Vec x = a, y;
  Normalize(x);
  if (b != nullptr) {
    y = *b;
    Normalize(y);
  }
  // A fused product takes one pending term per operand element; a sum of several is opened
  // first.
  bool flush = false;
  for (std::size_t i = 0; i < n && !flush; ++i) {
    flush = x.term_count(i) > 1 || (b != nullptr && y.term_count(i) > 1);
  }
  if (flush) Flush({&x, &y});
  if (!status_.ok()) return Vec::Zeros(n);
  const Vec& w = b != nullptr ? y : x;
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
  const std::uint64_t before = BroadcastDeferred();
  Status st = batch.Exchange();
  if (!st.ok()) {
    Fail(st);
    return Vec::Zeros(n);
  }
  // All-to-all: 1 round, 2 B per opened value; split kings: SplitKingBytes of the openings
  // and the deferred values that rode in front of them.
  const auto& how = ctx_.arith().last_open();
  const auto cost = ctx_.arith().CostOf(how, openings + how.merged_deferred);
  Charge(cost.rounds, cost.bytes);
  ChargeDeferred(before);
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

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::IsNegative(const Vec& a, int bits) {
  const std::size_t n = a.size();
  counts_.cmp_batches += 1;
  counts_.cmp_elems += n;
  if (!status_.ok()) return Vec::Zeros(n);
  if (Status st = CheckCompareBits(bits); !st.ok()) {
    Fail(st);
    return Vec::Zeros(n);
  }
  Vec x = a;
  Normalize(x);
  // The comparison opens x + r mod 2^bits: each pending term k T_f(z), T_f(z) = pub +
  // coef [r_top] - [r_shift], enters with its r_shift now and its public part right after
  // the exchange; its k coef [r_top] is a multiple of 2^(63 - f + v2(k)), which vanishes
  // mod 2^bits when 63 - f + v2(k) >= bits. Otherwise the terms are opened first.
  bool flush = false;
  for (const auto& t : x.terms) {
    const int shift = x.source(t).bits() - std::countr_zero(t.coef);
    if (!ComparisonTakesInTruncation(shift, bits)) flush = true;
  }
  if (flush) Flush({&x});
  if (!status_.ok()) return Vec::Zeros(n);
  Shares<P> in = x.s;
  AddPublicInPlace<P>(ctx_.arith().key(), in, x.pub);
  // Every distinct pending value, opened once by the comparison's own exchange (elements
  // that hold the same one — a value compared against many thresholds — share its
  // truncation); uses[k]: (element, coefficient) of each use of value k.
  std::vector<std::pair<PendingTrunc<P>*, std::uint32_t>> values;
  std::vector<std::vector<std::pair<std::size_t, std::uint64_t>>> uses;
  {
    // Keyed by (the source's first index in x.src, element): a hash lookup per use (a
    // 4096-wide norm's mean square carries 4096 terms into each of rsqrt's comparisons);
    // values keep the order of their first use.
    std::vector<std::uint32_t> canon(x.src.size());
    for (std::size_t k = 0; k < x.src.size(); ++k) {
      canon[k] = static_cast<std::uint32_t>(k);
      for (std::size_t j = 0; j < k; ++j) {
        if (x.src[j] == x.src[k]) {
          canon[k] = static_cast<std::uint32_t>(j);
          break;
        }
      }
    }
    std::unordered_map<std::uint64_t, std::size_t> index;
    index.reserve(std::min<std::size_t>(x.terms.size(), std::size_t{1} << 24));
    for (std::size_t i = 0; i < n; ++i) {
      for (const auto& t : x.terms_of(i)) {
        const std::uint64_t key =
            (std::uint64_t{canon[static_cast<std::size_t>(t.src)]} << 32) | t.at;
        auto [it, fresh] = index.try_emplace(key, values.size());
        if (fresh) {
          values.emplace_back(&x.source(t), t.at);
          uses.emplace_back();
        }
        uses[it->second].emplace_back(i, t.coef);
      }
    }
  }
  auto claimed = std::make_shared<ClaimedTruncs<P>>();
  LatePublic late;
  if (!values.empty()) {
    Shares<P> z(values.size());
    std::vector<int> widths(values.size());
    for (std::size_t k = 0; k < values.size(); ++k) {
      PendingTrunc<P>& src = *values[k].first;
      z.CopyFrom(k, src.z(), values[k].second);
      widths[k] = src.bits();
      src.Claim(values[k].second);
    }
    if (Status st = claimed->Draw(ctx_.arith(), z, widths); !st.ok()) {
      Fail(st);
      return Vec::Zeros(n);
    }
    for (std::size_t k = 0; k < values.size(); ++k) {
      for (const auto& [i, coef] : uses[k]) {
        in.v[i] -= claimed->r_shift().v[k] * coef;
        if constexpr (P::kMalicious) in.m[i] -= claimed->r_shift().m[k] * coef;
      }
    }
    ctx_.arith().Defer(claimed);
    late = [&](std::vector<std::uint64_t>& c) -> Status {
      const std::vector<std::uint64_t>& pub = claimed->pub();
      if (pub.size() != values.size()) return Internal("claimed truncations were not opened");
      for (std::size_t k = 0; k < values.size(); ++k) {
        for (const auto& [i, coef] : uses[k]) c[i] += coef * pub[k];
      }
      return Status::Ok();
    };
  }
  const std::uint64_t before = BroadcastDeferred();
  // The masked value's opening goes by the open style; the binary rounds after it do not
  // (a narrow opening: deferred values go all-to-all before it).
  const auto open = ctx_.arith().NextOpenCost(n, bits);
  Result<Shares<P>> r = LessThanZero(ctx_, in, bits, late);
  if (!r.ok()) {
    Fail(r.error());
    return Vec::Zeros(n);
  }
  Charge(static_cast<std::uint64_t>(LtzRounds(bits)) - 1 + open.rounds,
         2 * LtzBytesPerPeer(n, bits, 0) + open.bytes);
  ChargeDeferred(before);
  for (std::size_t k = 0; k < values.size(); ++k) {
    values[k].first->Resolve(values[k].second, claimed->values(), k);
  }
  return Vec(std::move(r).value());
}

template <typename P>
Shares<P> SecureBackend<P>::Materialize(const Vec& v) {
  if (!status_.ok()) return Shares<P>(v.size());
  Vec x = v;
  Normalize(x);
  if (AnyPending(x)) Flush({&x});
  if (!status_.ok()) return Shares<P>(v.size());
  Shares<P> out = std::move(x.s);
  AddPublicInPlace<P>(ctx_.arith().key(), out, x.pub);
  return out;
}

template class SecureBackend<SemiHonest>;
template class SecureBackend<Spdz2k>;

}  // namespace mpcache::mpc
