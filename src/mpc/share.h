// Share types and local (communication-free) linear algebra on shares.
//
// A "protocol type" P says how a value of Z_2^64 is shared (MP-SPDZ habit: the share type
// carries its protocol, and generic code is templated on it):
//   SemiHonest: additive shares in Z_2^64, no MACs.
//   Spdz2k:     SPDZ2k with k = 64, s = 64. A value x in Z_2^64 is held as additive shares
//               of a lift x' in Z_2^128 (x' = x mod 2^64) plus additive shares of its MAC
//               alpha * x' mod 2^128, where the global key alpha is additively shared.
// Vectors are structure-of-arrays (values v[], MAC shares m[]) so kernels are tight loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace mpcache::mpc {

using u128 = unsigned __int128;
using PartyId = int;

struct SemiHonest {
  static constexpr bool kMalicious = false;
  using Word = std::uint64_t;
  static constexpr std::string_view kName = "semi-honest";
};

struct Spdz2k {
  static constexpr bool kMalicious = true;
  using Word = u128;
  static constexpr int kK = 64;  // values live in Z_2^k
  static constexpr int kS = 64;  // statistical security parameter
  static constexpr std::string_view kName = "malicious";
};

inline std::uint64_t Low64(u128 x) {
  return static_cast<std::uint64_t>(x);
}
inline std::uint64_t Low64(std::uint64_t x) {
  return x;
}

// A vector of shared values of Z_2^64 (one party's view).
template <typename P>
struct Shares {
  using Word = typename P::Word;
  std::vector<Word> v;  // value shares
  std::vector<u128> m;  // MAC shares (Spdz2k only; empty for SemiHonest)

  Shares() = default;
  explicit Shares(std::size_t n) : v(n) {
    if constexpr (P::kMalicious) m.resize(n);
  }
  std::size_t size() const { return v.size(); }
  bool empty() const { return v.empty(); }

  Shares Slice(std::size_t offset, std::size_t n) const {
    Shares out;
    out.v.assign(v.begin() + static_cast<std::ptrdiff_t>(offset),
                 v.begin() + static_cast<std::ptrdiff_t>(offset + n));
    if constexpr (P::kMalicious) {
      out.m.assign(m.begin() + static_cast<std::ptrdiff_t>(offset),
                   m.begin() + static_cast<std::ptrdiff_t>(offset + n));
    }
    return out;
  }
  // Element i := from's element j (value and MAC).
  void CopyFrom(std::size_t i, const Shares& from, std::size_t j) {
    v[i] = from.v[j];
    if constexpr (P::kMalicious) m[i] = from.m[j];
  }
  // Element i += from's element j.
  void AddFrom(std::size_t i, const Shares& from, std::size_t j) {
    v[i] += from.v[j];
    if constexpr (P::kMalicious) m[i] += from.m[j];
  }
  void Append(const Shares& o) {
    v.insert(v.end(), o.v.begin(), o.v.end());
    if constexpr (P::kMalicious) m.insert(m.end(), o.m.begin(), o.m.end());
  }
};

// What a party needs to add a public constant to a sharing: its id (party 0 adds the
// value) and its MAC key share (every party adds alpha_i * c to its MAC share).
struct ShareKey {
  PartyId party = 0;
  u128 alpha = 0;  // 0 in semi-honest mode
};

// ---- local linear operations (no communication) ----

template <typename P>
void AddInPlace(Shares<P>& a, const Shares<P>& b) {
  const std::size_t n = a.size();
  for (std::size_t i = 0; i < n; ++i) a.v[i] += b.v[i];
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < n; ++i) a.m[i] += b.m[i];
  }
}

template <typename P>
void SubInPlace(Shares<P>& a, const Shares<P>& b) {
  const std::size_t n = a.size();
  for (std::size_t i = 0; i < n; ++i) a.v[i] -= b.v[i];
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < n; ++i) a.m[i] -= b.m[i];
  }
}

template <typename P>
Shares<P> Add(Shares<P> a, const Shares<P>& b) {
  AddInPlace(a, b);
  return a;
}

template <typename P>
Shares<P> Sub(Shares<P> a, const Shares<P>& b) {
  SubInPlace(a, b);
  return a;
}

template <typename P>
Shares<P> Neg(Shares<P> a) {
  for (auto& x : a.v) x = 0 - x;
  if constexpr (P::kMalicious) {
    for (auto& x : a.m) x = 0 - x;
  }
  return a;
}

// a[i] += c[i] for public c (c.size() == a.size()) or a[i] += c[0] (c.size() == 1).
template <typename P>
void AddPublicInPlace(const ShareKey& key, Shares<P>& a, std::span<const std::uint64_t> c) {
  const std::size_t n = a.size();
  const bool scalar = c.size() == 1;
  if (key.party == 0) {
    for (std::size_t i = 0; i < n; ++i) a.v[i] += c[scalar ? 0 : i];
  }
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < n; ++i) a.m[i] += key.alpha * c[scalar ? 0 : i];
  }
}

template <typename P>
Shares<P> AddPublic(const ShareKey& key, Shares<P> a, std::span<const std::uint64_t> c) {
  AddPublicInPlace(key, a, c);
  return a;
}

// a[i] *= c[i] for public c (or the scalar c[0] when c.size() == 1).
template <typename P>
void MulPublicInPlace(Shares<P>& a, std::span<const std::uint64_t> c) {
  const std::size_t n = a.size();
  const bool scalar = c.size() == 1;
  for (std::size_t i = 0; i < n; ++i) a.v[i] *= c[scalar ? 0 : i];
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < n; ++i) a.m[i] *= c[scalar ? 0 : i];
  }
}

template <typename P>
Shares<P> MulPublic(Shares<P> a, std::span<const std::uint64_t> c) {
  MulPublicInPlace(a, c);
  return a;
}

// Shares of public values (party 0 holds them; everyone holds the MAC alpha_i * c).
template <typename P>
Shares<P> PublicShares(const ShareKey& key, std::span<const std::uint64_t> c) {
  Shares<P> out(c.size());
  AddPublicInPlace(key, out, c);
  return out;
}

}  // namespace mpcache::mpc
