#include "mpc/gf2_64.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mpcache::mpc::gf64 {

u128 ClMulPortable(std::uint64_t a, std::uint64_t b) {
  u128 out = 0;
  const u128 wide = a;
  for (int i = 0; i < 64; ++i) {
    out ^= (wide << i) & (0 - static_cast<u128>((b >> i) & 1));
  }
  return out;
}

std::uint64_t Reduce(u128 x) {
  // X^64 = X^4 + X^3 + X + 1: fold the high half twice (the second fold has <= 4 bits).
  auto fold = [](std::uint64_t h) -> u128 {
    const u128 w = h;
    return w ^ (w << 1) ^ (w << 3) ^ (w << 4);
  };
  const auto lo = static_cast<std::uint64_t>(x);
  const u128 once = lo ^ fold(static_cast<std::uint64_t>(x >> 64));
  return static_cast<std::uint64_t>(once) ^
         static_cast<std::uint64_t>(fold(static_cast<std::uint64_t>(once >> 64)));
}

namespace {

#if defined(__x86_64__)
__attribute__((target("pclmul,sse4.1"))) u128 ClMulHw(std::uint64_t a, std::uint64_t b) {
  const __m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128(static_cast<long long>(a)),
                                         _mm_cvtsi64_si128(static_cast<long long>(b)), 0x00);
  const auto lo = static_cast<std::uint64_t>(_mm_cvtsi128_si64(p));
  const auto hi = static_cast<std::uint64_t>(_mm_extract_epi64(p, 1));
  return (static_cast<u128>(hi) << 64) | lo;
}

__attribute__((target("pclmul,sse4.1"))) u128 DotHw(std::span<const std::uint64_t> chi,
                                                    std::span<const std::uint64_t> m) {
  __m128i acc0 = _mm_setzero_si128(), acc1 = _mm_setzero_si128();
  std::size_t j = 0;
  for (; j + 2 <= chi.size(); j += 2) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(chi.data() + j));
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m.data() + j));
    acc0 = _mm_xor_si128(acc0, _mm_clmulepi64_si128(c, v, 0x00));
    acc1 = _mm_xor_si128(acc1, _mm_clmulepi64_si128(c, v, 0x11));
  }
  acc0 = _mm_xor_si128(acc0, acc1);
  const auto lo = static_cast<std::uint64_t>(_mm_cvtsi128_si64(acc0));
  const auto hi = static_cast<std::uint64_t>(_mm_extract_epi64(acc0, 1));
  u128 out = (static_cast<u128>(hi) << 64) | lo;
  for (; j < chi.size(); ++j) out ^= ClMulHw(chi[j], m[j]);
  return out;
}

bool HasClMul() {
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}
#else
bool HasClMul() {
  return false;
}
#endif

}  // namespace

u128 ClMul(std::uint64_t a, std::uint64_t b) {
#if defined(__x86_64__)
  if (HasClMul()) return ClMulHw(a, b);
#endif
  return ClMulPortable(a, b);
}

u128 DotUnreduced(std::span<const std::uint64_t> chi, std::span<const std::uint64_t> m) {
#if defined(__x86_64__)
  if (HasClMul()) return DotHw(chi, m);
#endif
  u128 out = 0;
  for (std::size_t j = 0; j < chi.size(); ++j) out ^= ClMulPortable(chi[j], m[j]);
  return out;
}

std::uint64_t SelectXor(std::span<const std::uint64_t> chi, const std::uint64_t* bits,
                        std::size_t bit_off) {
  std::uint64_t out = 0;
  for (std::size_t j = 0; j < chi.size(); ++j) {
    const std::size_t b = bit_off + j;
    out ^= chi[j] & (0 - ((bits[b / 64] >> (b % 64)) & 1));
  }
  return out;
}

}  // namespace mpcache::mpc::gf64
