#include "mpc/compare/secure_backend.h"

#include <bit>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "mpc/compare/lazy_build.h"
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

}  // namespace

using lazy_build::AppendElement;
using lazy_build::Building;
using lazy_build::Compact;
using lazy_build::EndElement;
using lazy_build::Term;

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
  if (a.terms.empty() && b.terms.empty()) return PlainSum(a, b, false);
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
  if (a.size() == b.size() && a.terms.empty() && b.terms.empty()) return PlainSum(a, b, true);
  return Add(a, MulConst(b, ~Ring64{0}));
}

// a + b (a - b when `minus`) of same-sized vectors with no pending term: part by part. The
// difference is a + (2^64 - 1) b, what Add(a, MulConst(b, -1)) makes: the same values mod
// 2^64, and the same share words above them (malicious shares are wider), so the traffic
// does not depend on which path a subtraction took.
template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::PlainSum(const Vec& a, const Vec& b, bool minus) {
  const std::size_t n = a.size();
  Vec out;
  if (minus) {
    out.s = a.s;
    constexpr Ring64 kMinusOne = ~Ring64{0};
    for (std::size_t i = 0; i < n; ++i) out.s.v[i] += b.s.v[i] * kMinusOne;
    if constexpr (P::kMalicious) {
      for (std::size_t i = 0; i < n; ++i) out.s.m[i] += b.s.m[i] * kMinusOne;
    }
  } else {
    out.s = mpc::Add(a.s, b.s);
  }
  out.has_s.resize(n);
  out.pub.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.has_s[i] = static_cast<std::uint8_t>(a.has_s[i] | b.has_s[i]);
    out.pub[i] = minus ? a.pub[i] - b.pub[i] : a.pub[i] + b.pub[i];
  }
  out.off.assign(n + 1, 0);
  return out;
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

// The words Gather, MulConst / MulPublic and RowSum (or Sub) would make of the same terms: each
// share part times its coefficient, the public parts likewise mod 2^64, has_s the OR of the
// rows' share parts, the pending terms scaled and kept in row order.
template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::GatherSum(const Vec& a,
                                                           const SparseRows& m) const {
  const std::size_t rows = m.rows();
  if (a.terms.empty()) return PlainGatherSum(a, m);
  Vec out = Building<P>(rows);
  out.src = a.src;
  for (std::size_t r = 0; r < rows; ++r) {
    typename P::Word v = 0;
    u128 mac = 0;
    std::uint8_t has_s = 0;
    std::uint64_t pub = 0;
    for (std::size_t k = m.off[r]; k < m.off[r + 1]; ++k) {
      const std::size_t j = m.idx[k];
      const Ring64 c = m.coef[k];
      if (c == 0) continue;
      v += a.s.v[j] * c;
      if constexpr (P::kMalicious) mac += a.s.m[j] * c;
      has_s = static_cast<std::uint8_t>(has_s | a.has_s[j]);
      pub += a.pub[j] * c;
      for (const auto& t : a.terms_of(j)) {
        if (t.coef * c != 0) out.terms.push_back({t.src, t.at, t.coef * c});
      }
    }
    out.s.v[r] = v;
    if constexpr (P::kMalicious) out.s.m[r] = mac;
    out.has_s[r] = has_s;
    out.pub[r] = pub;
    EndElement(out);
  }
  Compact(out);
  return out;
}

// GatherSum of a vector with no pending term (the row max's pairs and wins): no terms to
// carry, so one pass over the rows' entries through raw pointers (the general loop's
// term appends make the compiler reload every vector's data pointer per entry).
template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::PlainGatherSum(const Vec& a, const SparseRows& m) {
  const std::size_t rows = m.rows();
  Vec out;
  out.s = Shares<P>(rows);
  out.has_s.resize(rows);
  out.pub.resize(rows);
  out.off.assign(rows + 1, 0);
  const auto* sv = a.s.v.data();
  const std::uint8_t* hs = a.has_s.data();
  const std::uint64_t* pb = a.pub.data();
  const std::size_t* idx = m.idx.data();
  const Ring64* coef = m.coef.data();
  for (std::size_t r = 0; r < rows; ++r) {
    typename P::Word v = 0;
    u128 mac = 0;
    std::uint8_t has_s = 0;
    std::uint64_t pub = 0;
    for (std::size_t k = m.off[r], end = m.off[r + 1]; k < end; ++k) {
      const std::size_t j = idx[k];
      const Ring64 c = coef[k];
      if (c == 0) continue;
      v += sv[j] * c;
      if constexpr (P::kMalicious) mac += a.s.m[j] * c;
      has_s = static_cast<std::uint8_t>(has_s | hs[j]);
      pub += pb[j] * c;
    }
    out.s.v[r] = v;
    if constexpr (P::kMalicious) out.s.m[r] = mac;
    out.has_s[r] = has_s;
    out.pub[r] = pub;
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
  if (auto one = OneSourceTrunc(x, bits)) return std::move(*one);
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

// Trunc of a vector (normalized, flushed) whose elements all make one new source: plain
// shares (every element a share part, nothing pending), or every element exactly one
// pending term of one source with coefficient 1 and nothing else (it composes). The same
// source, z and terms the element-by-element path builds, in whole-vector passes; nullopt
// for anything else.
template <typename P>
std::optional<typename SecureBackend<P>::Vec> SecureBackend<P>::OneSourceTrunc(Vec& x, int bits) {
  const std::size_t n = x.size();
  if (n == 0) return std::nullopt;
  Shares<P> z;
  int total = bits;
  if (x.terms.empty()) {
    for (std::size_t i = 0; i < n; ++i) {
      if (x.has_s[i] == 0) return std::nullopt;
    }
    z = std::move(x.s);
    AddPublicInPlace<P>(ctx_.arith().key(), z, x.pub);
  } else {
    if (x.terms.size() != n) return std::nullopt;
    const std::int32_t s0 = x.terms[0].src;
    for (std::size_t i = 0; i < n; ++i) {
      const Term<P>& t = x.terms[i];
      if (x.off[i] != i || t.src != s0 || t.coef != 1 || x.has_s[i] != 0 || x.pub[i] != 0) {
        return std::nullopt;
      }
    }
    const PendingTrunc<P>& from = x.source(x.terms[0]);
    total = from.bits() + bits;
    if (total > 61) return std::nullopt;
    z = Shares<P>(n);
    for (std::size_t i = 0; i < n; ++i) z.CopyFrom(i, from.z(), x.terms[i].at);
  }
  auto src = std::make_shared<PendingTrunc<P>>(std::move(z), total);
  src->Hold();
  ctx_.arith().Defer(src);
  Vec out = Vec::Zeros(n);
  out.src.push_back(std::move(src));
  out.terms.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.terms[i] = {0, static_cast<std::uint32_t>(i), 1};
    out.off[i] = static_cast<std::uint32_t>(i);
  }
  out.off[n] = static_cast<std::uint32_t>(n);
  return out;
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::IsNegative(const Vec& a, int bits) {
  return CompareEach(a, {}, bits);
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::IsNegativeEach(const Vec& a,
                                                                std::span<const Ring64> c,
                                                                int bits) {
  if (c.empty()) return Vec::Zeros(0);
  return CompareEach(a, c, bits);
}

template <typename P>
typename SecureBackend<P>::Vec SecureBackend<P>::CompareEach(const Vec& a,
                                                             std::span<const Ring64> c, int bits) {
  // Element i n + r compares a_r + c_i (c empty: a_r itself). a's pending terms are
  // handled once per element of a, not once per offset: a value compared against many
  // thresholds (a norm's mean square, 4 096 terms, against rsqrt's buckets) costs its terms
  // once.
  const std::size_t n = a.size(), reps = c.empty() ? 1 : c.size(), total = n * reps;
  counts_.cmp_batches += 1;
  counts_.cmp_elems += total;
  if (!status_.ok()) return Vec::Zeros(total);
  if (Status st = CheckCompareBits(bits); !st.ok()) {
    Fail(st);
    return Vec::Zeros(total);
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
  if (!status_.ok()) return Vec::Zeros(total);
  Shares<P> base = std::move(x.s);  // a's shares, less the pending terms' r_shift below
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
      return Vec::Zeros(total);
    }
    for (std::size_t k = 0; k < values.size(); ++k) {
      for (const auto& [i, coef] : uses[k]) {
        base.v[i] -= claimed->r_shift().v[k] * coef;
        if constexpr (P::kMalicious) base.m[i] -= claimed->r_shift().m[k] * coef;
      }
    }
    ctx_.arith().Defer(claimed);
    late = [&](std::vector<std::uint64_t>& opened) -> Status {
      const std::vector<std::uint64_t>& pub = claimed->pub();
      if (pub.size() != values.size()) return Internal("claimed truncations were not opened");
      std::vector<std::uint64_t> sum(n, 0);  // per element of a, then added to its copies
      for (std::size_t k = 0; k < values.size(); ++k) {
        for (const auto& [i, coef] : uses[k]) sum[i] += coef * pub[k];
      }
      for (std::size_t e = 0; e < total; ++e) opened[e] += sum[e % n];
      return Status::Ok();
    };
  }
  // The comparison's input: a's element r (public part and offset added) for every offset
  // (no offset: base and x.pub themselves).
  Shares<P> in;
  std::vector<std::uint64_t> pub;
  if (c.empty()) {
    in = std::move(base);
    pub = std::move(x.pub);
  } else {
    in = Shares<P>(total);
    pub.resize(total);
    for (std::size_t i = 0; i < reps; ++i) {
      for (std::size_t r = 0; r < n; ++r) {
        in.CopyFrom(i * n + r, base, r);
        pub[i * n + r] = x.pub[r] + c[i];
      }
    }
  }
  AddPublicInPlace<P>(ctx_.arith().key(), in, pub);
  const std::uint64_t before = BroadcastDeferred();
  // The masked value's opening goes by the open style; the binary rounds after it do not
  // (a narrow opening: deferred values go all-to-all before it).
  const auto open = ctx_.arith().NextOpenCost(total, bits);
  Result<Shares<P>> r = LessThanZero(ctx_, in, bits, late);
  if (!r.ok()) {
    Fail(r.error());
    return Vec::Zeros(total);
  }
  Charge(static_cast<std::uint64_t>(LtzRounds(bits)) - 1 + open.rounds,
         2 * LtzBytesPerPeer(total, bits, 0) + open.bytes);
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
