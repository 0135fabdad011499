// Shares of bits in the binary domain (one party's view), and local operations on them.
//
//   SemiHonest: XOR sharing, bitsliced: bit i of the vector is bit (i % 64) of word
//               w[i / 64]; the value is the XOR of the three parties' words.
//   Spdz2k:     XOR sharing with MACs in the field GF(2^64) (mpc/gf2_64.h): a bit x is
//               held as XOR shares (one word per bit, only bit 0 used, the rest zero) plus
//               XOR shares of its MAC beta * x in GF(2^64) under a separate binary MAC key
//               beta (XOR-shared). An opened bit is still one bit, and a flipped opened
//               bit passes the MAC check with probability <= 2^-63 (docs/comparison.md);
//               with MACs over Z_2^64 (k = 1) a consistent flip passed half the time.
//               XOR, XOR with a public bit and AND with a public bit are local and need no
//               field multiplication (a public bit selects beta or 0).
// Layout is structure-of-arrays so the kernels are tight loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mpc/share.h"

namespace mpcache::mpc {

inline std::size_t WordsFor(std::size_t bits) {
  return (bits + 63) / 64;
}

// A public vector of bits, packed 64 per word (bit i = bit i%64 of word i/64).
struct PublicBits {
  std::size_t n = 0;
  std::vector<std::uint64_t> w;
  PublicBits() = default;
  explicit PublicBits(std::size_t bits) : n(bits), w(WordsFor(bits)) {}
  bool Get(std::size_t i) const { return ((w[i / 64] >> (i % 64)) & 1) != 0; }
  void Set(std::size_t i, bool b) {
    if (b) w[i / 64] |= std::uint64_t{1} << (i % 64);
  }
};

template <typename P>
struct BitShares {
  std::size_t n = 0;
  std::vector<std::uint64_t> v;  // SemiHonest: packed words; Spdz2k: one word (0/1) per bit
  std::vector<std::uint64_t> m;  // Spdz2k only: MAC shares in GF(2^64)

  BitShares() = default;
  explicit BitShares(std::size_t bits) : n(bits) {
    if constexpr (P::kMalicious) {
      v.resize(bits);
      m.resize(bits);
    } else {
      v.resize(WordsFor(bits));
    }
  }
  std::size_t size() const { return n; }
};

// What a party needs for public constants in the binary domain.
struct BitKey {
  PartyId party = 0;
  std::uint64_t beta = 0;  // binary MAC key share in GF(2^64) (0 in semi-honest mode)
};

// a ^= b
template <typename P>
void XorInPlace(BitShares<P>& a, const BitShares<P>& b) {
  const std::size_t len = a.v.size();
  for (std::size_t i = 0; i < len; ++i) a.v[i] ^= b.v[i];
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < len; ++i) a.m[i] ^= b.m[i];
  }
}

template <typename P>
BitShares<P> Xor(BitShares<P> a, const BitShares<P>& b) {
  XorInPlace(a, b);
  return a;
}

// a ^= c for a public bit vector c.
template <typename P>
void XorPublicInPlace(const BitKey& key, BitShares<P>& a, const PublicBits& c) {
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < a.n; ++i) {
      const std::uint64_t ci = (c.w[i / 64] >> (i % 64)) & 1;
      if (key.party == 0) a.v[i] ^= ci;
      a.m[i] ^= key.beta & (0 - ci);
    }
  } else {
    if (key.party != 0) return;
    for (std::size_t i = 0; i < a.v.size(); ++i) a.v[i] ^= c.w[i];
  }
}

// a ^= 1 (every bit).
template <typename P>
void NotInPlace(const BitKey& key, BitShares<P>& a) {
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < a.n; ++i) {
      if (key.party == 0) a.v[i] ^= 1;
      a.m[i] ^= key.beta;
    }
  } else {
    if (key.party != 0) return;
    for (auto& x : a.v) x = ~x;
  }
}

// a &= c for a public bit vector c (local: multiplication by a public bit).
template <typename P>
void AndPublicInPlace(BitShares<P>& a, const PublicBits& c) {
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < a.n; ++i) {
      const std::uint64_t mask = 0 - ((c.w[i / 64] >> (i % 64)) & 1);
      a.v[i] &= mask;
      a.m[i] &= mask;
    }
  } else {
    for (std::size_t i = 0; i < a.v.size(); ++i) a.v[i] &= c.w[i];
  }
}

// In-place transpose of a 64 x 64 bit matrix: afterwards bit i of a[j] is what bit j of
// a[i] was (recursive swap of off-diagonal blocks, 6 steps).
inline void Transpose64(std::uint64_t* a) {
  std::uint64_t m = 0x00000000FFFFFFFFull;
  for (unsigned j = 32; j != 0; j >>= 1, m ^= (m << j)) {
    for (unsigned k = 0; k < 64; k = ((k | j) + 1) & ~j) {
      const std::uint64_t t = ((a[k] >> j) ^ a[k | j]) & m;
      a[k] ^= t << j;
      a[k | j] ^= t;
    }
  }
}

// The first `bits` bits of a packed word array as bytes (little-endian), for the wire.
inline std::span<const std::uint8_t> PackedBytes(const std::vector<std::uint64_t>& words,
                                                 std::size_t bits) {
  return {reinterpret_cast<const std::uint8_t*>(words.data()), (bits + 7) / 8};
}

}  // namespace mpcache::mpc
