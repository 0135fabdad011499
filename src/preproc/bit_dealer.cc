#include "preproc/bit_dealer.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace mpcache::preproc {

namespace {

using mpc::u128;

constexpr std::uint64_t kBitSeedLabel = 0xB1700000ull;
constexpr std::uint64_t kBetaLabel = 0xB17BE7A0ull;

// Unit layouts (words). Semi-honest: triple [a b c] (64 triples per unit, bitsliced),
// edaBit: 64 edaBits per unit, bit-major [bit 0..63 words, product 0..168 words, 64 arith
// words] (word j's bit i belongs to item i), daBit [bit(low) arith], random [64 bits]. Malicious:
// triple [av am bv bm cv cm], edaBit [v0..v63 pv0..pv168 m0..m63 pm0..pm168 rv_lo rv_hi
// rm_lo rm_hi], daBit [v m rv_lo rv_hi rm_lo rm_hi], random [v m]. Root tuple: semi-honest
// [bits u v w in bits 0..2, then 7 arithmetic words]; malicious [uv vv wv um vm wm, then 7 x
// (v_lo v_hi m_lo m_hi)].
constexpr std::size_t kP = mpc::edabit::kProducts;
constexpr std::size_t kLifts = 64 + kP;  // binary lifts of an edaBit (bits, then products)
constexpr std::size_t kSemiWords[kNumBitItems] = {3, 64 + kP + 64, 2, 1, 8};
constexpr std::size_t kSemiItems[kNumBitItems] = {64, 64, 1, 64, 1};
constexpr std::size_t kMalWords[kNumBitItems] = {6, 2 * kLifts + 4, 6, 2, 34};
constexpr std::size_t kSemiDetermined[kNumBitItems] = {1, kP + 64, 1, 0, 7};
constexpr std::size_t kMalDetermined[kNumBitItems] = {4, kP + kLifts + 4, 5, 1, 31};

// The arithmetic monomials of a root tuple (RootTuples::Mono order) from its bits.
std::array<std::uint64_t, 7> RootMonomials(std::uint64_t u, std::uint64_t v, std::uint64_t w) {
  return {u, v, w, v & w, u & w, u & v, u & v & w};
}

// The group products of r's bits (edabit_layout.h), as bits 0..168 of a 3-word array.
std::array<std::uint64_t, 3> GroupProducts(std::uint64_t r) {
  std::array<std::uint64_t, 3> out{};
  for (int g = 0; g < mpc::edabit::kGroups; ++g) {
    const int base = mpc::edabit::GroupBase(g), size = mpc::edabit::GroupSize(g);
    const unsigned bits = static_cast<unsigned>(r >> base) & ((1u << size) - 1);
    for (unsigned mask = 0; mask < (1u << size); ++mask) {
      const int idx = mpc::edabit::MaskIndex(mask);
      if (idx < 0 || (bits & mask) != mask) continue;
      const int k = mpc::edabit::GroupOffset(g) + idx;
      out[static_cast<std::size_t>(k / 64)] |= std::uint64_t{1} << (k % 64);
    }
  }
  return out;
}

inline u128 Join(std::uint64_t lo, std::uint64_t hi) {
  return (u128{hi} << 64) | lo;
}

}  // namespace

template <typename P>
std::size_t InProcessBitDealer<P>::UnitWords(BitItem item) {
  return P::kMalicious ? kMalWords[static_cast<int>(item)] : kSemiWords[static_cast<int>(item)];
}

template <typename P>
std::size_t InProcessBitDealer<P>::UnitItems(BitItem item) {
  return P::kMalicious ? 1 : kSemiItems[static_cast<int>(item)];
}

template <typename P>
Result<std::unique_ptr<InProcessBitDealer<P>>> InProcessBitDealer<P>::Create(const Seed& master,
                                                                             u128 alpha,
                                                                             int num_parties) {
  if (num_parties < 2) return InvalidArgument("the bit dealer needs at least 2 parties");
  std::unique_ptr<InProcessBitDealer> d(new InProcessBitDealer(DeriveSeed(master, kBitSeedLabel)));
  d->alpha_ = P::kMalicious ? alpha : 0;
  d->pools_.resize(static_cast<std::size_t>(num_parties));
  std::uint64_t beta_sum = 0;
  if constexpr (P::kMalicious) d->beta_ = d->prg_.NextU64();
  for (int p = 0; p < num_parties; ++p) {
    d->seeds_.push_back(DeriveSeed(master, kBitSeedLabel + 1 + static_cast<std::uint64_t>(p)));
    d->stores_.push_back(std::unique_ptr<BitStore<P>>(new BitStore<P>(*d, p)));
    if constexpr (P::kMalicious) {
      std::uint64_t share = 0;
      if (p + 1 < num_parties) {
        share = Prg(DeriveSeed(d->seeds_.back(), kBetaLabel)).NextU64();
        beta_sum += share;
      } else {
        share = d->beta_ - beta_sum;  // the last party's key share is a correction
        d->stats_.correction_bytes += 8;
      }
      d->stores_.back()->beta_ = share;
    }
  }
  return d;
}

// Batches are cut into chunks of about 16 MB per party, so that a party's pool can hand
// out and free them one at a time.
constexpr std::size_t kChunkWords = std::size_t{1} << 21;

template <typename P>
Status InProcessBitDealer<P>::MakeLocked(BitItem item, std::size_t units) {
  const auto t0 = std::chrono::steady_clock::now();
  const int it = static_cast<int>(item);
  const std::uint64_t seq = seq_[static_cast<std::size_t>(it)]++;
  const std::size_t per_chunk = std::max<std::size_t>(1, kChunkWords / UnitWords(item));
  std::uint64_t chunk = 0;
  for (std::size_t done = 0; done < units; done += per_chunk, ++chunk) {
    MakeChunkLocked(item, seq, chunk, std::min(per_chunk, units - done));
  }
  const std::size_t det = P::kMalicious ? kMalDetermined[it] : kSemiDetermined[it];
  stats_.correction_bytes += units * det * sizeof(std::uint64_t);
  stats_.items[it] += units * UnitItems(item);
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  stats_.dealer_seconds += dt.count();
  return Status::Ok();
}

template <typename P>
void InProcessBitDealer<P>::MakeChunkLocked(BitItem item, std::uint64_t seq, std::uint64_t chunk,
                                            std::size_t units) {
  const int it = static_cast<int>(item);
  const std::size_t uw = UnitWords(item), total = units * uw;
  const std::size_t np = seeds_.size(), last = np - 1;
  // Every party's stream, written straight into a new chunk of its pool (free words are
  // final; the last party's determined words are replaced by corrections below).
  std::vector<std::uint64_t*> part(np);
  for (std::size_t p = 0; p < np; ++p) {
    Pool& pool = pools_[p][static_cast<std::size_t>(it)];
    pool.chunks.emplace_back(total);
    pool.words += total;
    part[p] = pool.chunks.back().data();
    const Seed s =
        DeriveSeed(DeriveSeed(seeds_[p], kBitSeedLabel + 16 + static_cast<std::uint64_t>(it)), seq);
    Prg stream(DeriveSeed(s, chunk));
    stream.Fill(part[p], total * sizeof(std::uint64_t));
  }
  // Sum (malicious) or XOR (semi-honest) of word w of unit u over the parties before the
  // last one, and over all parties.
  auto others = [&](std::size_t u, std::size_t w) {
    std::uint64_t s = 0;
    for (std::size_t p = 0; p < last; ++p) {
      if constexpr (P::kMalicious) {
        s += part[p][u * uw + w];
      } else {
        s ^= part[p][u * uw + w];
      }
    }
    return s;
  };
  auto all = [&](std::size_t u, std::size_t w) {
    if constexpr (P::kMalicious) {
      return others(u, w) + part[last][u * uw + w];
    } else {
      return others(u, w) ^ part[last][u * uw + w];
    }
  };
  std::uint64_t* lp = part[last];
  const std::uint64_t beta = beta_;
  // Set the last party's word so the shares sum to `value` (mod 2^64).
  auto fix = [&](std::size_t u, std::size_t w, std::uint64_t value) {
    if constexpr (P::kMalicious) {
      lp[u * uw + w] = value - others(u, w);
    } else {
      lp[u * uw + w] = value ^ others(u, w);
    }
  };
  // The same for an arithmetic (u128 in malicious mode) value stored as [lo hi].
  auto fix128 = [&](std::size_t u, std::size_t w, u128 value) {
    u128 s = 0;
    for (std::size_t p = 0; p < last; ++p) s += Join(part[p][u * uw + w], part[p][u * uw + w + 1]);
    const u128 mine = value - s;
    lp[u * uw + w] = static_cast<std::uint64_t>(mine);
    lp[u * uw + w + 1] = static_cast<std::uint64_t>(mine >> 64);
  };
  for (std::size_t u = 0; u < units; ++u) {
    if constexpr (P::kMalicious) {
      switch (item) {
        case BitItem::kBitTriple: {
          const std::uint64_t a = all(u, 0), b = all(u, 2);
          const std::uint64_t c = a & b & 1;
          fix(u, 1, beta * a);
          fix(u, 3, beta * b);
          fix(u, 4, c);
          fix(u, 5, beta * c);
          break;
        }
        case BitItem::kEdaBit: {
          std::uint64_t r = 0;
          for (std::size_t j = 0; j < 64; ++j) {
            const std::uint64_t lift = all(u, j);
            r |= (lift & 1) << j;
            fix(u, kLifts + j, beta * lift);
          }
          const auto prods = GroupProducts(r);
          for (std::size_t k = 0; k < kP; ++k) {
            const std::uint64_t bit = (prods[k / 64] >> (k % 64)) & 1;
            fix(u, 64 + k, bit);
            fix(u, kLifts + 64 + k, beta * bit);
          }
          fix128(u, 2 * kLifts, u128{r});
          fix128(u, 2 * kLifts + 2, alpha_ * u128{r});
          break;
        }
        case BitItem::kDaBit: {
          const std::uint64_t lift = all(u, 0);
          fix(u, 1, beta * lift);
          fix128(u, 2, u128{lift & 1});
          fix128(u, 4, alpha_ * u128{lift & 1});
          break;
        }
        case BitItem::kBitRandom:
          fix(u, 1, beta * all(u, 0));
          break;
        case BitItem::kRootTuple: {
          const std::uint64_t lu = all(u, 0), lv = all(u, 1), lw = all(u, 2);
          fix(u, 3, beta * lu);
          fix(u, 4, beta * lv);
          fix(u, 5, beta * lw);
          const auto mono = RootMonomials(lu & 1, lv & 1, lw & 1);
          for (std::size_t k = 0; k < 7; ++k) {
            fix128(u, 6 + 4 * k, u128{mono[k]});
            fix128(u, 6 + 4 * k + 2, alpha_ * u128{mono[k]});
          }
          break;
        }
      }
    } else {
      switch (item) {
        case BitItem::kBitTriple:
          fix(u, 2, all(u, 0) & all(u, 1));
          break;
        case BitItem::kEdaBit: {
          std::array<std::uint64_t, 64> r{};  // bit-major, then transposed: r[i] of item i
          for (std::size_t j = 0; j < 64; ++j) r[j] = all(u, j);
          mpc::Transpose64(r.data());
          std::array<std::uint64_t, kP> prod_words{};
          for (std::size_t i = 0; i < 64; ++i) {
            const auto prods = GroupProducts(r[i]);
            for (std::size_t k = 0; k < kP; ++k)
              prod_words[k] |= ((prods[k / 64] >> (k % 64)) & 1) << i;
          }
          for (std::size_t k = 0; k < kP; ++k) fix(u, 64 + k, prod_words[k]);
          for (std::size_t i = 0; i < 64; ++i) {
            const std::size_t w = 64 + kP + i;
            std::uint64_t s = 0;
            for (std::size_t p = 0; p < last; ++p) s += part[p][u * uw + w];
            lp[u * uw + w] = r[i] - s;
          }
          break;
        }
        case BitItem::kDaBit: {
          const std::uint64_t b = all(u, 0) & 1;
          std::uint64_t s = 0;
          for (std::size_t p = 0; p < last; ++p) s += part[p][u * uw + 1];
          lp[u * uw + 1] = b - s;
          break;
        }
        case BitItem::kBitRandom:
          break;
        case BitItem::kRootTuple: {
          const std::uint64_t b = all(u, 0);
          const auto mono = RootMonomials(b & 1, (b >> 1) & 1, (b >> 2) & 1);
          for (std::size_t k = 0; k < 7; ++k) {
            std::uint64_t s = 0;
            for (std::size_t p = 0; p < last; ++p) s += part[p][u * uw + 1 + k];
            lp[u * uw + 1 + k] = mono[k] - s;
          }
          break;
        }
      }
    }
  }
}

template <typename P>
Status InProcessBitDealer<P>::Provide(BitItem item, std::size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t per = UnitItems(item);
  return MakeLocked(item, (n + per - 1) / per);
}

template <typename P>
BitOfflineStats InProcessBitDealer<P>::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

template <typename P>
Result<typename InProcessBitDealer<P>::Units> InProcessBitDealer<P>::Take(mpc::PartyId p,
                                                                          BitItem item,
                                                                          std::size_t units) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t uw = UnitWords(item);
  Pool& pool = pools_[static_cast<std::size_t>(p)][static_cast<std::size_t>(item)];
  const std::size_t have = pool.words / uw;
  if (have < units) MPCACHE_RETURN_IF_ERROR(MakeLocked(item, units - have));
  Units out;
  std::size_t need = units * uw;
  pool.words -= need;
  while (need > 0) {
    std::vector<std::uint64_t>& front = pool.chunks.front();
    const std::size_t avail = front.size() - pool.head;
    if (avail <= need) {  // the whole (rest of the) chunk: move it
      if (out.chunks.empty()) out.first_offset = pool.head;
      out.chunks.push_back(std::move(front));
      pool.chunks.pop_front();
      pool.head = 0;
      need -= avail;
    } else {  // part of it: copy
      out.chunks.emplace_back(front.begin() + static_cast<std::ptrdiff_t>(pool.head),
                              front.begin() + static_cast<std::ptrdiff_t>(pool.head + need));
      pool.head += need;
      need = 0;
    }
  }
  return out;
}

namespace {

// fn(unit index, words of the unit) for every unit, freeing each chunk once read.
template <typename Units, typename F>
void ForEachUnit(Units&& in, std::size_t uw, F&& fn) {
  std::size_t u = 0;
  bool first = true;
  while (!in.chunks.empty()) {
    const std::vector<std::uint64_t> c = std::move(in.chunks.front());
    in.chunks.pop_front();
    for (std::size_t off = first ? in.first_offset : 0; off + uw <= c.size(); off += uw) {
      fn(u++, c.data() + off);
    }
    first = false;
  }
}

}  // namespace

// ---- party side: unpack units into items ----

template <typename P>
Result<mpc::BitTriples<P>> BitStore<P>::GetBitTriples(std::size_t n) {
  using D = InProcessBitDealer<P>;
  const std::size_t per = D::UnitItems(BitItem::kBitTriple), units = (n + per - 1) / per;
  MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, BitItem::kBitTriple, units));
  consumed_[0] += units;
  mpc::BitTriples<P> t;
  t.a = mpc::BitShares<P>(n);
  t.b = mpc::BitShares<P>(n);
  t.c = mpc::BitShares<P>(n);
  ForEachUnit(std::move(w), D::UnitWords(BitItem::kBitTriple),
              [&](std::size_t u, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  t.a.v[u] = x[0], t.a.m[u] = x[1], t.b.v[u] = x[2], t.b.m[u] = x[3],
                  t.c.v[u] = x[4], t.c.m[u] = x[5];
                } else {
                  t.a.v[u] = x[0], t.b.v[u] = x[1], t.c.v[u] = x[2];
                }
              });
  return t;
}

template <typename P>
Result<mpc::EdaBits<P>> BitStore<P>::GetEdaBits(std::size_t n) {
  using D = InProcessBitDealer<P>;
  const std::size_t per = D::UnitItems(BitItem::kEdaBit);
  const std::size_t units = (n + per - 1) / per;
  MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, BitItem::kEdaBit, units));
  consumed_[1] += units * per;
  mpc::EdaBits<P> e;
  e.r = mpc::Shares<P>(n);
  for (auto& b : e.bits) b = mpc::BitShares<P>(n);
  e.prods.assign(kP, mpc::BitShares<P>(n));
  const std::size_t uw = D::UnitWords(BitItem::kEdaBit);
  if constexpr (P::kMalicious) {
    // Unit-major pool -> per-bit arrays, in blocks of 64 units (~240 KB, cache-resident)
    // so that each of the 466 destination arrays is written in runs.
    std::size_t base = 0;
    bool first = true;
    while (!w.chunks.empty()) {
      const std::vector<std::uint64_t> c = std::move(w.chunks.front());
      w.chunks.pop_front();
      const std::size_t off0 = first ? w.first_offset : 0;
      first = false;
      const std::size_t cu = (c.size() - off0) / uw;
      for (std::size_t b = 0; b < cu; b += 64) {
        const std::size_t len = std::min<std::size_t>(64, cu - b);
        const std::uint64_t* src = c.data() + off0 + b * uw;
        auto copy = [&](std::vector<std::uint64_t>& dst, std::size_t k) {
          std::uint64_t* d = dst.data() + base + b;
          for (std::size_t t = 0; t < len; ++t) d[t] = src[t * uw + k];
        };
        for (std::size_t j = 0; j < 64; ++j) {
          copy(e.bits[j].v, j);
          copy(e.bits[j].m, kLifts + j);
        }
        for (std::size_t k = 0; k < kP; ++k) {
          copy(e.prods[k].v, 64 + k);
          copy(e.prods[k].m, kLifts + 64 + k);
        }
        for (std::size_t t = 0; t < len; ++t) {
          const std::uint64_t* x = src + t * uw;
          e.r.v[base + b + t] = Join(x[2 * kLifts], x[2 * kLifts + 1]);
          e.r.m[base + b + t] = Join(x[2 * kLifts + 2], x[2 * kLifts + 3]);
        }
      }
      base += cu;
    }
  } else {
    ForEachUnit(std::move(w), uw, [&](std::size_t u, const std::uint64_t* x) {
      for (std::size_t j = 0; j < 64; ++j) e.bits[j].v[u] = x[j];
      for (std::size_t k = 0; k < kP; ++k) e.prods[k].v[u] = x[64 + k];
      for (std::size_t i = 0; i < 64 && 64 * u + i < n; ++i) e.r.v[64 * u + i] = x[64 + kP + i];
    });
  }
  return e;
}

template <typename P>
Result<mpc::DaBits<P>> BitStore<P>::GetDaBits(std::size_t n) {
  using D = InProcessBitDealer<P>;
  MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, BitItem::kDaBit, n));
  consumed_[2] += n;
  mpc::DaBits<P> d;
  d.b = mpc::BitShares<P>(n);
  d.a = mpc::Shares<P>(n);
  ForEachUnit(std::move(w), D::UnitWords(BitItem::kDaBit),
              [&](std::size_t i, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  d.b.v[i] = x[0];
                  d.b.m[i] = x[1];
                  d.a.v[i] = Join(x[2], x[3]);
                  d.a.m[i] = Join(x[4], x[5]);
                } else {
                  d.b.v[i / 64] |= (x[0] & 1) << (i % 64);
                  d.a.v[i] = x[1];
                }
              });
  return d;
}

template <typename P>
Result<mpc::RootTuples<P>> BitStore<P>::GetRootTuples(std::size_t n) {
  using D = InProcessBitDealer<P>;
  MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, BitItem::kRootTuple, n));
  consumed_[4] += n;
  mpc::RootTuples<P> t;
  t.u = mpc::BitShares<P>(n);
  t.v = mpc::BitShares<P>(n);
  t.w = mpc::BitShares<P>(n);
  for (auto& m : t.mono) m = mpc::Shares<P>(n);
  ForEachUnit(std::move(w), D::UnitWords(BitItem::kRootTuple),
              [&](std::size_t i, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  t.u.v[i] = x[0], t.v.v[i] = x[1], t.w.v[i] = x[2];
                  t.u.m[i] = x[3], t.v.m[i] = x[4], t.w.m[i] = x[5];
                  for (std::size_t k = 0; k < 7; ++k) {
                    t.mono[k].v[i] = Join(x[6 + 4 * k], x[7 + 4 * k]);
                    t.mono[k].m[i] = Join(x[8 + 4 * k], x[9 + 4 * k]);
                  }
                } else {
                  const std::size_t wi = i / 64, sh = i % 64;
                  t.u.v[wi] |= (x[0] & 1) << sh;
                  t.v.v[wi] |= ((x[0] >> 1) & 1) << sh;
                  t.w.v[wi] |= ((x[0] >> 2) & 1) << sh;
                  for (std::size_t k = 0; k < 7; ++k) t.mono[k].v[i] = x[1 + k];
                }
              });
  return t;
}

template <typename P>
Result<mpc::BitShares<P>> BitStore<P>::GetBitRandoms(std::size_t n) {
  using D = InProcessBitDealer<P>;
  const std::size_t per = D::UnitItems(BitItem::kBitRandom), units = (n + per - 1) / per;
  MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, BitItem::kBitRandom, units));
  consumed_[3] += units;
  mpc::BitShares<P> r(n);
  ForEachUnit(std::move(w), D::UnitWords(BitItem::kBitRandom),
              [&](std::size_t u, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  r.v[u] = x[0];
                  r.m[u] = x[1];
                } else {
                  r.v[u] = x[0];
                }
              });
  return r;
}

template class BitStore<mpc::SemiHonest>;
template class BitStore<mpc::Spdz2k>;
template class InProcessBitDealer<mpc::SemiHonest>;
template class InProcessBitDealer<mpc::Spdz2k>;

}  // namespace mpcache::preproc
