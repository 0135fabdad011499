// Arithmetic in GF(2^64) = GF(2)[X] / (X^64 + X^4 + X^3 + X + 1), the field of the binary
// domain's MACs (mpc/compare/bit_share.h): addition is XOR; a product is a carry-less
// multiplication (PCLMULQDQ where the CPU has it, checked at run time; a portable shift-
// and-xor loop otherwise) followed by a reduction. Sums of many products are accumulated
// unreduced (128-bit XOR) and reduced once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mpcache::mpc::gf64 {

using u128 = unsigned __int128;

// The 127-bit carry-less product of a and b (portable reference).
u128 ClMulPortable(std::uint64_t a, std::uint64_t b);
// The same, with PCLMULQDQ when available.
u128 ClMul(std::uint64_t a, std::uint64_t b);
// x mod (X^64 + X^4 + X^3 + X + 1).
std::uint64_t Reduce(u128 x);
inline std::uint64_t Mul(std::uint64_t a, std::uint64_t b) {
  return Reduce(ClMul(a, b));
}
// XOR over j of chi[j] * m[j] (unreduced), for chi.size() == m.size().
u128 DotUnreduced(std::span<const std::uint64_t> chi, std::span<const std::uint64_t> m);
// XOR of chi[j] over the j whose bit j of `bits` (packed 64 per word, from bit `bit_off`)
// is set: the public side of a binary MAC check.
std::uint64_t SelectXor(std::span<const std::uint64_t> chi, const std::uint64_t* bits,
                        std::size_t bit_off);

}  // namespace mpcache::mpc::gf64
