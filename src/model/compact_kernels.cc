#include "model/compact_kernels.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace mpcache::model {
namespace {

using i128 = __int128;

// fn(begin, end) on up to `threads` contiguous parts of [0, n), the first in this thread.
template <typename F>
void Split(int threads, std::size_t n, const F& fn) {
  const std::size_t parts = std::min<std::size_t>(threads < 1 ? 1 : threads, n);
  if (parts <= 1) {
    fn(std::size_t{0}, n);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(parts - 1);
  for (std::size_t i = 1; i < parts; ++i) {
    workers.emplace_back([&fn, b = n * i / parts, e = n * (i + 1) / parts] { fn(b, e); });
  }
  fn(std::size_t{0}, n / parts);
  for (auto& t : workers) t.join();
}

std::uint16_t Half(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// The vectors a kernel multiplies: one of 64-bit words, or two of 128-bit words (a
// malicious party's value and MAC shares). kPlanes: balanced base-2^16 digit planes.
struct One64 {
  using Word = std::uint64_t;
  static constexpr std::size_t kVectors = 1;
  static constexpr std::size_t kPlanes = 4;
  const Word* x[1];
  Word* y[1];
};
struct Two128 {
  using Word = u128;
  static constexpr std::size_t kVectors = 2;
  static constexpr std::size_t kPlanes = 16;
  const Word* x[2];
  Word* y[2];
};

template <typename W>
W Wrap(std::int64_t v) {
  return static_cast<W>(v);  // modular: the least W congruent to v
}

// ---- the scalar reference (exact for every input) ----

template <typename V>
void MatVecScalar(const CompactMatrix& w, const V& v, std::size_t r0, std::size_t r1) {
  using W = typename V::Word;
  constexpr std::size_t N = V::kVectors;
  for (std::size_t r = r0; r < r1; ++r) {
    const std::uint8_t* row = w.row(r);
    W acc[N] = {};
    if (w.type == CompactType::kQ8_0) {
      for (std::size_t b = 0; b < w.cols / kQ8Block; ++b) {
        const std::uint8_t* block = row + b * kQ8BlockBytes;
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 2);
        W s[N] = {};
        for (std::size_t k = 0; k < kQ8Block; ++k) {
          const W qk = Wrap<W>(q[k]);
          for (std::size_t n = 0; n < N; ++n) s[n] += qk * v.x[n][b * kQ8Block + k];
        }
        const W scale = Wrap<W>(ScaledHalf(Half(block)));
        for (std::size_t n = 0; n < N; ++n) acc[n] += scale * s[n];
      }
    } else {
      for (std::size_t j = 0; j < w.cols; ++j) {
        const W h = Wrap<W>(ScaledHalf(Half(row + 2 * j)));
        for (std::size_t n = 0; n < N; ++n) acc[n] += h * v.x[n][j];
      }
    }
    for (std::size_t n = 0; n < N; ++n) v.y[n][r] = acc[n];
  }
}

// Columns [c0, c1) of y = x W.
template <typename V>
void VecMatScalar(const CompactMatrix& w, const V& v, std::size_t c0, std::size_t c1) {
  using W = typename V::Word;
  constexpr std::size_t N = V::kVectors;
  for (std::size_t n = 0; n < N; ++n) std::fill(v.y[n] + c0, v.y[n] + c1, W{0});
  for (std::size_t i = 0; i < w.rows; ++i) {
    const std::uint8_t* row = w.row(i);
    if (w.type == CompactType::kQ8_0) {
      for (std::size_t b = c0 / kQ8Block; b < c1 / kQ8Block; ++b) {
        const std::uint8_t* block = row + b * kQ8BlockBytes;
        const auto* q = reinterpret_cast<const std::int8_t*>(block + 2);
        const W scale = Wrap<W>(ScaledHalf(Half(block)));
        W c[N];
        for (std::size_t n = 0; n < N; ++n) c[n] = v.x[n][i] * scale;
        for (std::size_t k = 0; k < kQ8Block; ++k) {
          const W qk = Wrap<W>(q[k]);
          for (std::size_t n = 0; n < N; ++n) v.y[n][b * kQ8Block + k] += c[n] * qk;
        }
      }
    } else {
      for (std::size_t j = c0; j < c1; ++j) {
        const W h = Wrap<W>(ScaledHalf(Half(row + 2 * j)));
        for (std::size_t n = 0; n < N; ++n) v.y[n][j] += v.x[n][i] * h;
      }
    }
  }
}

#if defined(__AVX2__)

// Balanced base-2^16 digits: x = sum_l d_l 2^(16 l) mod 2^(16 L), d_l in [-2^15, 2^15).
template <std::size_t L, typename W>
void Digits(W x, std::int16_t* d) {
  for (std::size_t l = 0; l < L; ++l) {
    const auto v = static_cast<std::uint32_t>(x & 0xFFFF);
    x >>= 16;
    if (v >= 0x8000) {
      d[l] = static_cast<std::int16_t>(static_cast<std::int32_t>(v) - 0x10000);
      x += 1;
    } else {
      d[l] = static_cast<std::int16_t>(v);
    }
  }
}

// The digits of the N words (x_0, ...) of one element, plane-major: P = 4 N or 8 N.
template <typename V>
void ElementDigits(const typename V::Word* words, std::int16_t* d) {
  constexpr std::size_t kPer = V::kPlanes / V::kVectors;
  for (std::size_t n = 0; n < V::kVectors; ++n) Digits<kPer>(words[n], d + n * kPer);
}

// sum_l T_l 2^(16 l) for the words' planes.
template <typename V>
void Combine(const i128* t, typename V::Word* out) {
  using W = typename V::Word;
  constexpr std::size_t kPer = V::kPlanes / V::kVectors;
  for (std::size_t n = 0; n < V::kVectors; ++n) {
    W acc = 0;
    for (std::size_t l = 0; l < kPer; ++l) acc += static_cast<W>(t[n * kPer + l]) << (16 * l);
    out[n] = acc;
  }
}

// One row of a Q8_0 matrix against the digit planes ([block][plane][32] int16): the plane
// sums T_l = sum_b S_b sum_j q_j d_{l, j}, exact (MatVecVectorised's bound).
template <std::size_t P>
void Q8RowAvx2(const std::uint8_t* row, std::size_t nb, const std::int16_t* planes,
               std::int16_t* qw, std::int32_t* scale, i128* t) {
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint8_t* block = row + b * kQ8BlockBytes;
    scale[b] = static_cast<std::int32_t>(ScaledHalf(Half(block)));
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qw + b * 32), _mm256_cvtepi8_epi16(lo));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qw + b * 32 + 16), _mm256_cvtepi8_epi16(hi));
  }
  for (std::size_t g = 0; g < P / 4; ++g) {
    __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
    for (std::size_t b = 0; b < nb; ++b) {
      const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qw + b * 32));
      const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qw + b * 32 + 16));
      const std::int16_t* pb = planes + (b * P + 4 * g) * 32;
      const auto plane = [&](std::size_t k) {
        const auto* p = reinterpret_cast<const __m256i*>(pb + 32 * k);
        return _mm256_add_epi32(_mm256_madd_epi16(q0, _mm256_loadu_si256(p)),
                                _mm256_madd_epi16(q1, _mm256_loadu_si256(p + 1)));
      };
      // Lanes 0..3: planes 0..3 of the lower half; 4..7: of the upper half.
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(plane(0), plane(1)),
                                          _mm256_hadd_epi32(plane(2), plane(3)));
      const __m256i s = _mm256_set1_epi32(scale[b]);
      even = _mm256_add_epi64(even, _mm256_mul_epi32(h, s));
      odd = _mm256_add_epi64(odd, _mm256_mul_epi32(_mm256_srli_epi64(h, 32), s));
    }
    alignas(32) std::int64_t e[4], o[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(e), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), odd);
    t[4 * g + 0] = static_cast<i128>(e[0]) + e[2];
    t[4 * g + 1] = static_cast<i128>(o[0]) + o[2];
    t[4 * g + 2] = static_cast<i128>(e[1]) + e[3];
    t[4 * g + 3] = static_cast<i128>(o[1]) + o[3];
  }
}

template <typename V>
void MatVecAvx2(const CompactMatrix& w, const V& v, int threads) {
  using W = typename V::Word;
  constexpr std::size_t P = V::kPlanes;
  const std::size_t nb = w.cols / kQ8Block;
  std::vector<std::int16_t> planes(nb * P * 32);
  for (std::size_t j = 0; j < w.cols; ++j) {
    W words[V::kVectors];
    for (std::size_t n = 0; n < V::kVectors; ++n) words[n] = v.x[n][j];
    std::int16_t d[P];
    ElementDigits<V>(words, d);
    const std::size_t b = j / kQ8Block, k = j % kQ8Block;
    for (std::size_t l = 0; l < P; ++l) planes[(b * P + l) * 32 + k] = d[l];
  }
  Split(threads, w.rows, [&](std::size_t r0, std::size_t r1) {
    std::vector<std::int16_t> qw(nb * 32);
    std::vector<std::int32_t> scale(nb);
    i128 t[P];
    for (std::size_t r = r0; r < r1; ++r) {
      Q8RowAvx2<P>(w.row(r), nb, planes.data(), qw.data(), scale.data(), t);
      W out[V::kVectors];
      Combine<V>(t, out);
      for (std::size_t n = 0; n < V::kVectors; ++n) v.y[n][r] = out[n];
    }
  });
}

// Column (of the 32 in a block) of accumulator lane t of product vector k (the unpack order).
constexpr std::size_t PairColumn(std::size_t k, std::size_t t) {
  return 16 * (k / 2) + 4 * (k % 2) + (t < 4 ? t : t + 4);
}

// Column blocks [b0, b1) of y = x W: rows in pairs, int16 weight pairs times the digits of
// x_i S[i, b] (vpmaddwd), 32-bit sums flushed to 64 bits every 128 pairs (|lane| < 2^30).
template <typename V>
void VecMatAvx2Blocks(const CompactMatrix& w, const V& v, std::size_t b0, std::size_t b1) {
  using W = typename V::Word;
  constexpr std::size_t P = V::kPlanes;
  constexpr std::size_t kFlushPairs = 128;
  const std::size_t nbl = b1 - b0, cells = nbl * P * 32;
  if (nbl == 0) return;
  std::vector<std::int32_t> acc32(cells, 0);
  std::vector<std::int64_t> acc64(cells, 0);
  const auto flush = [&] {
    for (std::size_t i = 0; i < cells; ++i) {
      acc64[i] += acc32[i];
      acc32[i] = 0;
    }
  };
  std::size_t pairs = 0;
  for (std::size_t i = 0; i < w.rows; i += 2) {
    const bool two = i + 1 < w.rows;
    const std::uint8_t* ra = w.row(i);
    const std::uint8_t* rb = two ? w.row(i + 1) : nullptr;
    for (std::size_t bb = 0; bb < nbl; ++bb) {
      const std::size_t b = b0 + bb;
      std::int16_t da[P], db[P] = {};
      W c[V::kVectors];
      const W sa = Wrap<W>(ScaledHalf(Half(ra + b * kQ8BlockBytes)));
      for (std::size_t n = 0; n < V::kVectors; ++n) c[n] = v.x[n][i] * sa;
      ElementDigits<V>(c, da);
      __m256i b_lo = _mm256_setzero_si256(), b_hi = _mm256_setzero_si256();
      if (two) {
        const W sb = Wrap<W>(ScaledHalf(Half(rb + b * kQ8BlockBytes)));
        for (std::size_t n = 0; n < V::kVectors; ++n) c[n] = v.x[n][i + 1] * sb;
        ElementDigits<V>(c, db);
        const std::uint8_t* q = rb + b * kQ8BlockBytes + 2;
        b_lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
        b_hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
      }
      const std::uint8_t* q = ra + b * kQ8BlockBytes + 2;
      const __m256i a_lo =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
      const __m256i a_hi =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
      const __m256i p[4] = {_mm256_unpacklo_epi16(a_lo, b_lo), _mm256_unpackhi_epi16(a_lo, b_lo),
                            _mm256_unpacklo_epi16(a_hi, b_hi), _mm256_unpackhi_epi16(a_hi, b_hi)};
      std::int32_t* acc = acc32.data() + bb * P * 32;
      for (std::size_t l = 0; l < P; ++l) {
        const auto pair = static_cast<std::int32_t>(
            static_cast<std::uint32_t>(static_cast<std::uint16_t>(da[l])) |
            (static_cast<std::uint32_t>(static_cast<std::uint16_t>(db[l])) << 16));
        const __m256i bc = _mm256_set1_epi32(pair);
        auto* a = reinterpret_cast<__m256i*>(acc + l * 32);
        for (int k = 0; k < 4; ++k) {
          _mm256_storeu_si256(
              a + k, _mm256_add_epi32(_mm256_loadu_si256(a + k), _mm256_madd_epi16(p[k], bc)));
        }
      }
    }
    if (++pairs == kFlushPairs) {
      flush();
      pairs = 0;
    }
  }
  flush();
  constexpr std::size_t kPer = P / V::kVectors;
  for (std::size_t bb = 0; bb < nbl; ++bb) {
    const std::int64_t* acc = acc64.data() + bb * P * 32;
    for (std::size_t k = 0; k < 4; ++k) {
      for (std::size_t t = 0; t < 8; ++t) {
        const std::size_t col = (b0 + bb) * kQ8Block + PairColumn(k, t);
        for (std::size_t n = 0; n < V::kVectors; ++n) {
          W sum = 0;
          for (std::size_t l = 0; l < kPer; ++l) {
            sum += Wrap<W>(acc[(n * kPer + l) * 32 + 8 * k + t]) << (16 * l);
          }
          v.y[n][col] = sum;
        }
      }
    }
  }
}

#endif  // __AVX2__

template <typename V>
void MatVec(const CompactMatrix& w, const V& v, const KernelOptions& o) {
#if defined(__AVX2__)
  if (o.path == KernelPath::kAuto && MatVecVectorised(w)) {
    MatVecAvx2(w, v, o.threads);
    return;
  }
#endif
  Split(o.threads, w.rows, [&](std::size_t r0, std::size_t r1) { MatVecScalar(w, v, r0, r1); });
}

template <typename V>
void VecMat(const CompactMatrix& w, const V& v, const KernelOptions& o) {
  const bool q8 = w.type == CompactType::kQ8_0;
  const std::size_t unit = q8 ? kQ8Block : 1;
  const std::size_t units = w.cols / unit;
#if defined(__AVX2__)
  if (o.path == KernelPath::kAuto && q8) {
    Split(o.threads, units,
          [&](std::size_t b0, std::size_t b1) { VecMatAvx2Blocks(w, v, b0, b1); });
    return;
  }
#endif
  Split(o.threads, units,
        [&](std::size_t u0, std::size_t u1) { VecMatScalar(w, v, u0 * unit, u1 * unit); });
}

}  // namespace

bool CompactKernelsVectorised() {
#if defined(__AVX2__)
  return true;
#else
  return false;
#endif
}

bool MatVecVectorised(const CompactMatrix& w) {
  if (!CompactKernelsVectorised() || w.type != CompactType::kQ8_0) return false;
  // Each 64-bit lane adds, per block, S_b times a 4-plane partial sum of |.| <= 2^26.
  const i128 bound =
      static_cast<i128>(w.max_scaled) * (i128{1} << 26) * static_cast<i128>(w.cols / kQ8Block);
  return w.max_scaled < (std::int64_t{1} << 31) && bound < (i128{1} << 62);
}

void CompactMatVec(const CompactMatrix& w, const std::uint64_t* x, std::uint64_t* y,
                   const KernelOptions& options) {
  MatVec(w, One64{{x}, {y}}, options);
}

void CompactMatVec2(const CompactMatrix& w, const u128* xa, const u128* xb, u128* ya, u128* yb,
                    const KernelOptions& options) {
  MatVec(w, Two128{{xa, xb}, {ya, yb}}, options);
}

void CompactVecMat(const CompactMatrix& w, const std::uint64_t* x, std::uint64_t* y,
                   const KernelOptions& options) {
  VecMat(w, One64{{x}, {y}}, options);
}

void CompactVecMat2(const CompactMatrix& w, const u128* xa, const u128* xb, u128* ya, u128* yb,
                    const KernelOptions& options) {
  VecMat(w, Two128{{xa, xb}, {ya, yb}}, options);
}

}  // namespace mpcache::model
