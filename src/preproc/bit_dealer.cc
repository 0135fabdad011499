#include "preproc/bit_dealer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <system_error>
#include <thread>

namespace mpcache::preproc {

namespace {

using mpc::u128;

constexpr std::uint64_t kBitSeedLabel = 0xB1700000ull;
constexpr std::uint64_t kBetaLabel = 0xB17BE7A0ull;

constexpr std::size_t kP = mpc::edabit::kProducts;
constexpr std::size_t kLifts = mpc::edabit::kBinaryWords;  // binary words of an edaBit row

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
  return BitUnitWords(kSecurity, item);
}

template <typename P>
std::size_t InProcessBitDealer<P>::UnitItems(BitItem item) {
  return BitUnitItems(kSecurity, item);
}

template <typename P>
Result<std::unique_ptr<InProcessBitDealer<P>>> InProcessBitDealer<P>::Create(const Seed& master,
                                                                             u128 alpha,
                                                                             int num_parties) {
  if (num_parties < 2) return InvalidArgument("the bit dealer needs at least 2 parties");
  std::unique_ptr<InProcessBitDealer> d(new InProcessBitDealer(DeriveSeed(master, kBitSeedLabel)));
  d->alpha_ = P::kMalicious ? alpha : 0;
  d->pools_.resize(static_cast<std::size_t>(num_parties));
  std::uint64_t beta_sum = 0;  // XOR of the key shares handed out so far
  if constexpr (P::kMalicious) d->beta_ = d->prg_.NextU64();
  for (int p = 0; p < num_parties; ++p) {
    d->seeds_.push_back(DeriveSeed(master, kBitSeedLabel + 1 + static_cast<std::uint64_t>(p)));
    d->stores_.push_back(std::unique_ptr<BitStore<P>>(new BitStore<P>(*d, p)));
    if constexpr (P::kMalicious) {
      std::uint64_t share = 0;
      if (p + 1 < num_parties) {
        share = Prg(DeriveSeed(d->seeds_.back(), kBetaLabel)).NextU64();
        beta_sum ^= share;
      } else {
        share = d->beta_ ^ beta_sum;  // the last party's key share is a correction
        d->stats_.correction_bytes += 8;
      }
      d->stores_.back()->beta_ = share;
    }
  }
  return d;
}

template <typename P>
void InProcessBitDealer<P>::CountLocked(BitItem item, std::size_t units, double seconds) {
  const int it = static_cast<int>(item);
  stats_.correction_bytes += BitCorrectionWords(kSecurity, item, units) * sizeof(std::uint64_t);
  stats_.items[it] += units * UnitItems(item);
  stats_.dealer_seconds += seconds;
}

template <typename P>
Status InProcessBitDealer<P>::MakeLocked(BitItem item, std::size_t units, std::int32_t corrector) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t seq = seq_[static_cast<std::size_t>(item)]++;
  const std::size_t per_chunk = BitChunkUnits(kSecurity, item);
  std::uint64_t chunk = 0;
  for (std::size_t done = 0; done < units; done += per_chunk, ++chunk) {
    MakeChunkLocked(item, seq, chunk, std::min(per_chunk, units - done), corrector);
  }
  CountLocked(item, units,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return Status::Ok();
}

template <typename P>
void InProcessBitDealer<P>::MakeChunkLocked(BitItem item, std::uint64_t seq, std::uint64_t chunk,
                                            std::size_t units, std::int32_t corrector) {
  const std::size_t total = units * UnitWords(item);
  std::vector<std::uint64_t*> part(seeds_.size());
  for (std::size_t p = 0; p < seeds_.size(); ++p) {  // straight into a new chunk of each pool
    Pool& pool = pools_[p][static_cast<std::size_t>(item)];
    pool.chunks.emplace_back(total);
    pool.words += total;
    part[p] = pool.chunks.back().data();
  }
  FillChunkLocked(item, seq, chunk, units, corrector, part, scratch_[0].keystream);
}

template <typename P>
void InProcessBitDealer<P>::set_threads(int threads) {
  std::lock_guard<std::mutex> lock(mu_);
  threads_ = std::clamp(threads, 1, 64);
}

template <typename P>
Result<std::vector<BitBatch>> InProcessBitDealer<P>::MakeBatch(BitItem item, std::uint64_t n,
                                                               std::int32_t corrector) {
  if (n == 0 || n > kMaxBitBatchItems) {
    return InvalidArgument("a comparison-material batch holds 1.." +
                           std::to_string(kMaxBitBatchItems) + " items, not " + std::to_string(n));
  }
  if (corrector < 0 || corrector >= num_parties()) {
    return InvalidArgument(std::string(BitItemName(item)) + " request: corrector " +
                           std::to_string(corrector) + " is not a party (0.." +
                           std::to_string(num_parties() - 1) + ")");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t seq = seq_[static_cast<std::size_t>(item)]++;
  const std::size_t np = seeds_.size(), uw = UnitWords(item);
  const auto units = static_cast<std::size_t>(BitUnitsFor(kSecurity, item, n));
  std::vector<BitBatch> out(np);
  for (std::size_t p = 0; p < np; ++p) {
    out[p].security = kSecurity;
    out[p].party = static_cast<std::int32_t>(p);
    out[p].item = item;
    out[p].seq = seq;
    out[p].count = n;
    out[p].corrector = corrector;
  }
  const BitCorrectionOffsets& offsets = CorrectionOffsetsOf(kSecurity, item);
  const std::vector<std::uint32_t>&det = offsets.full, &val = offsets.bits;
  const auto cp = static_cast<std::size_t>(corrector);
  std::vector<std::uint64_t>& corr = out[cp].corrections;
  corr.assign(BitCorrectionWords(kSecurity, item, units), 0);
  std::uint64_t* const bits = corr.data() + units * det.size();  // the value words' bits, packed
  // Every party's chunk in a scratch buffer (the dealer needs all shares to correct the
  // corrector's); only the corrector's determined words leave. Chunks are independent (own
  // streams, own ranges of the corrections), so up to threads_ workers fill them, each with
  // its own scratch, taking the next chunk as they finish one; only the packed value bits of
  // a chunk may share a word with its neighbour's, so a worker packs them apart and they are
  // merged afterwards.
  const std::size_t per_chunk = BitChunkUnits(kSecurity, item);
  const std::size_t chunks = (units + per_chunk - 1) / per_chunk;
  const std::size_t workers = std::min<std::size_t>(static_cast<std::size_t>(threads_), chunks);
  if (scratch_.size() < workers) scratch_.resize(workers);
  std::vector<std::vector<std::uint64_t>> chunk_bits(val.empty() ? 0 : chunks);
  std::atomic<std::size_t> next{0};
  auto work = [&](Scratch& scratch) {
    scratch.parts.resize(np);
    std::vector<std::uint64_t*> part(np);
    for (std::size_t chunk = next++; chunk < chunks; chunk = next++) {
      const std::size_t done = chunk * per_chunk, cu = std::min(per_chunk, units - done);
      for (std::size_t p = 0; p < np; ++p) {
        scratch.parts[p].resize(cu * uw);
        part[p] = scratch.parts[p].data();
      }
      FillChunkLocked(item, seq, chunk, cu, corrector, part, scratch.keystream);
      const std::uint64_t* lp = part[cp];
      std::uint64_t* dst = corr.data() + done * det.size();
      std::uint64_t* packed = nullptr;
      if (!val.empty()) {
        chunk_bits[chunk].assign((cu * val.size() + 63) / 64, 0);
        packed = chunk_bits[chunk].data();
      }
      std::uint64_t k = 0;
      for (std::size_t u = 0; u < cu; ++u) {
        for (std::uint32_t w : det) *dst++ = lp[u * uw + w];
        for (std::uint32_t w : val) {
          packed[k / 64] |= (lp[u * uw + w] & 1) << (k % 64);
          ++k;
        }
      }
    }
  };
  std::vector<std::thread> helpers;
  for (std::size_t w = 1; w < workers; ++w) {
    try {
      helpers.emplace_back(work, std::ref(scratch_[w]));
    } catch (const std::system_error&) {
      break;  // no thread to be had: the others take its chunks
    }
  }
  work(scratch_[0]);
  for (std::thread& t : helpers) t.join();
  // The chunks' value bits, end to end.
  std::uint64_t k = 0;
  for (std::size_t chunk = 0; chunk < chunk_bits.size(); ++chunk) {
    const std::size_t count = std::min(per_chunk, units - chunk * per_chunk) * val.size();
    const std::vector<std::uint64_t>& src = chunk_bits[chunk];
    const std::size_t shift = k % 64;
    std::uint64_t* at = bits + k / 64;
    for (std::size_t i = 0; i < src.size(); ++i) {
      at[i] |= src[i] << shift;
      // The high part spills into the next word only where that word holds bits of the batch.
      if (shift != 0 && (i + 1) * 64 - shift < count) at[i + 1] |= src[i] >> (64 - shift);
    }
    k += count;
  }
  CountLocked(item, units,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

template <typename P>
void InProcessBitDealer<P>::FillChunkLocked(BitItem item, std::uint64_t seq, std::uint64_t chunk,
                                            std::size_t units, std::int32_t corrector,
                                            const std::vector<std::uint64_t*>& part,
                                            std::vector<std::uint64_t>& keystream,
                                            const SubBlockDone& done) {
  // Every party's stream (free words are final; the corrector's determined words are
  // replaced by corrections), a sub-block of units at a time so that the dealer reads the
  // three streams while they are in cache (the keystream is the same however it is cut).
  const std::size_t uw = UnitWords(item), np = seeds_.size();
  std::vector<std::unique_ptr<Prg>> streams;
  for (std::size_t p = 0; p < np; ++p) {
    streams.push_back(std::make_unique<Prg>(BitChunkSeed(seeds_[p], item, seq, chunk)));
  }
  constexpr std::size_t kSubBlockBytes = std::size_t{64} << 10;  // per party
  const std::size_t sub = std::max<std::size_t>(1, kSubBlockBytes / (uw * sizeof(std::uint64_t)));
  std::vector<std::uint64_t*> at(np);
  for (std::size_t first = 0; first < units; first += sub) {
    const std::size_t cu = std::min(sub, units - first);
    for (std::size_t p = 0; p < np; ++p) {
      at[p] = part[p] + first * uw;
      FillBitUnits(*streams[p], kSecurity, item, cu, at[p], keystream);
    }
    if (IsLtzItem(item)) {
      FillLtzLocked(item, cu, corrector, at);
    } else {
      FillItemsLocked(item, cu, corrector, at);
    }
    if (done) done(first, cu);
  }
}

template <typename P>
void InProcessBitDealer<P>::FillItemsLocked(BitItem item, std::size_t units, std::int32_t corrector,
                                            const std::vector<std::uint64_t*>& part) {
  // `last` names the corrector: every loop below over "the other parties" skips it.
  const std::size_t uw = UnitWords(item);
  const std::size_t np = seeds_.size(), last = static_cast<std::size_t>(corrector);
  // XOR of binary word w of unit u over the parties but the corrector, and over all
  // parties (binary values and their GF(2^64) MACs are XOR-shared in both modes).
  auto others = [&](std::size_t u, std::size_t w) {
    std::uint64_t s = 0;
    for (std::size_t p = 0; p < np; ++p) {
      if (p != last) s ^= part[p][u * uw + w];
    }
    return s;
  };
  auto all = [&](std::size_t u, std::size_t w) { return others(u, w) ^ part[last][u * uw + w]; };
  std::uint64_t* lp = part[last];
  const std::uint64_t beta = beta_;
  // Set the corrector's word so the shares XOR to `value`.
  auto fix = [&](std::size_t u, std::size_t w, std::uint64_t value) {
    lp[u * uw + w] = value ^ others(u, w);
  };
  // A malicious binary value word: only its bit 0 is a share, and only that bit is sent
  // (IsBitCorrection); the pool holds the same word the expander makes from the bit.
  auto fix_bit = [&](std::size_t u, std::size_t w, std::uint64_t bit) {
    lp[u * uw + w] = (bit ^ others(u, w)) & 1;
  };
  // A malicious binary value: bit 0 of the XOR of the stream words; its MAC is beta * bit
  // in GF(2^64), i.e. beta or 0.
  auto bit_of = [&](std::size_t u, std::size_t w) { return all(u, w) & 1; };
  auto mac_of = [beta](std::uint64_t bit) { return beta & (0 - bit); };
  // The same for an arithmetic (u128 in malicious mode) value stored as [lo hi].
  auto fix128 = [&](std::size_t u, std::size_t w, u128 value) {
    u128 s = 0;
    for (std::size_t p = 0; p < np; ++p) {
      if (p != last) s += Join(part[p][u * uw + w], part[p][u * uw + w + 1]);
    }
    const u128 mine = value - s;
    lp[u * uw + w] = static_cast<std::uint64_t>(mine);
    lp[u * uw + w + 1] = static_cast<std::uint64_t>(mine >> 64);
  };
  for (std::size_t u = 0; u < units; ++u) {
    if constexpr (P::kMalicious) {
      switch (item) {
        case BitItem::kBitTriple: {
          const std::uint64_t a = bit_of(u, 0), b = bit_of(u, 2);
          const std::uint64_t c = a & b;
          fix(u, 1, mac_of(a));
          fix(u, 3, mac_of(b));
          fix_bit(u, 4, c);
          fix(u, 5, mac_of(c));
          break;
        }
        case BitItem::kEdaBit: {
          std::uint64_t r = 0;
          for (std::size_t j = 0; j < 64; ++j) {
            const std::uint64_t bit = bit_of(u, j);
            r |= bit << j;
            fix(u, kLifts + j, mac_of(bit));
          }
          const auto prods = GroupProducts(r);
          for (std::size_t k = 0; k < kP; ++k) {
            const std::uint64_t bit = (prods[k / 64] >> (k % 64)) & 1;
            fix_bit(u, 64 + k, bit);
            fix(u, kLifts + 64 + k, mac_of(bit));
          }
          // r mod 2^64 is the bits; the upper half is uniform (the sum of the parties'
          // stream words), so that c = x + r opened at full share width is uniform.
          u128 hi = 0;
          for (std::size_t p = 0; p < np; ++p) hi += part[p][u * uw + 2 * kLifts + 1];
          const u128 r_full = (hi << 64) | r;
          fix128(u, 2 * kLifts, r_full);
          fix128(u, 2 * kLifts + 2, alpha_ * r_full);
          break;
        }
        case BitItem::kDaBit: {
          const std::uint64_t bit = bit_of(u, 0);
          fix(u, 1, mac_of(bit));
          fix128(u, 2, u128{bit});
          fix128(u, 4, alpha_ * u128{bit});
          break;
        }
        case BitItem::kBitRandom:
          fix(u, 1, mac_of(bit_of(u, 0)));
          break;
        case BitItem::kRootTuple: {
          const std::uint64_t lu = bit_of(u, 0), lv = bit_of(u, 1), lw = bit_of(u, 2);
          fix(u, 3, mac_of(lu));
          fix(u, 4, mac_of(lv));
          fix(u, 5, mac_of(lw));
          const auto mono = RootMonomials(lu, lv, lw);
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
            for (std::size_t p = 0; p < np; ++p) {
              if (p != last) s += part[p][u * uw + w];
            }
            lp[u * uw + w] = r[i] - s;
          }
          break;
        }
        case BitItem::kDaBit: {
          const std::uint64_t b = all(u, 0) & 1;
          std::uint64_t s = 0;
          for (std::size_t p = 0; p < np; ++p) {
            if (p != last) s += part[p][u * uw + 1];
          }
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
            for (std::size_t p = 0; p < np; ++p) {
              if (p != last) s += part[p][u * uw + 1 + k];
            }
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
  return MakeLocked(item, (n + per - 1) / per, kStaticCorrector);
}

template <typename P>
BitOfflineStats InProcessBitDealer<P>::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

template <typename P>
Result<BitUnits> InProcessBitDealer<P>::Take(mpc::PartyId p, BitItem item, std::size_t units,
                                             std::int32_t corrector) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t uw = UnitWords(item);
  Pool& pool = pools_[static_cast<std::size_t>(p)][static_cast<std::size_t>(item)];
  const std::size_t have = pool.words / uw;
  if (have < units) MPCACHE_RETURN_IF_ERROR(MakeLocked(item, units - have, corrector));
  BitUnits out;
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
  if (observer_) observer_(p, item, out);
  return out;
}

template <typename P>
Status InProcessBitDealer<P>::TakeInPlace(mpc::PartyId p, BitItem item, std::size_t units,
                                          std::int32_t corrector, const UnitReader& read) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t uw = UnitWords(item);
  Pool& pool = pools_[static_cast<std::size_t>(p)][static_cast<std::size_t>(item)];
  const std::size_t have = pool.words / uw;
  if (have < units) MPCACHE_RETURN_IF_ERROR(MakeLocked(item, units - have, corrector));
  BitUnits seen;  // for the observer only (tests)
  std::size_t need = units * uw;
  pool.words -= need;
  while (need > 0) {
    std::vector<std::uint64_t>& front = pool.chunks.front();
    const std::size_t take = std::min(front.size() - pool.head, need);
    const std::span<const std::uint64_t> words(front.data() + pool.head, take);
    read(words);
    if (observer_) seen.chunks.emplace_back(words.begin(), words.end());
    need -= take;
    pool.head += take;
    if (pool.head == front.size()) {
      pool.chunks.pop_front();
      pool.head = 0;
    }
  }
  if (observer_) observer_(p, item, seen);
  return Status::Ok();
}

// ---- party side: unpack units into items ----

template <typename P>
std::int32_t BitStore<P>::Corrector(BitItem item, std::size_t units) {
  if (!roles_) return kStaticCorrector;
  return roles_->CorrectorFor(BitCorrectionWords(InProcessBitDealer<P>::kSecurity, item, units) *
                              sizeof(std::uint64_t));
}

template <typename P>
Result<mpc::BitTriples<P>> BitStore<P>::GetBitTriples(std::size_t n) {
  const std::size_t units = BitUnitsFor(InProcessBitDealer<P>::kSecurity, BitItem::kBitTriple, n);
  MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, BitItem::kBitTriple, units,
                                                Corrector(BitItem::kBitTriple, units)));
  consumed_[0] += units;
  return UnpackBitTriples<P>(std::move(w), n);
}

template <typename P>
Result<mpc::EdaBits<P>> BitStore<P>::GetEdaBits(std::size_t n) {
  const std::size_t per = InProcessBitDealer<P>::UnitItems(BitItem::kEdaBit);
  const std::size_t units = (n + per - 1) / per;
  MPCACHE_ASSIGN_OR_RETURN(
      auto w, dealer_.Take(party_, BitItem::kEdaBit, units, Corrector(BitItem::kEdaBit, units)));
  consumed_[1] += units * per;
  return UnpackEdaBits<P>(std::move(w), n);
}

template <typename P>
Result<mpc::DaBits<P>> BitStore<P>::GetDaBits(std::size_t n) {
  MPCACHE_ASSIGN_OR_RETURN(auto w,
                           dealer_.Take(party_, BitItem::kDaBit, n, Corrector(BitItem::kDaBit, n)));
  consumed_[2] += n;
  return UnpackDaBits<P>(std::move(w), n);
}

template <typename P>
Result<mpc::RootTuples<P>> BitStore<P>::GetRootTuples(std::size_t n) {
  MPCACHE_ASSIGN_OR_RETURN(
      auto w, dealer_.Take(party_, BitItem::kRootTuple, n, Corrector(BitItem::kRootTuple, n)));
  consumed_[4] += n;
  return UnpackRootTuples<P>(std::move(w), n);
}

template <typename P>
Result<mpc::BitShares<P>> BitStore<P>::GetBitRandoms(std::size_t n) {
  const std::size_t units = BitUnitsFor(InProcessBitDealer<P>::kSecurity, BitItem::kBitRandom, n);
  MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, BitItem::kBitRandom, units,
                                                Corrector(BitItem::kBitRandom, units)));
  consumed_[3] += units;
  return UnpackBitRandoms<P>(std::move(w), n);
}

template <typename P>
Result<mpc::LtzTuples<P>> BitStore<P>::GetLtzTuples(std::size_t n, int groups) {
  if (groups < mpc::ltz::kMinGroups || groups > mpc::ltz::kMaxGroups) {
    return InvalidArgument("comparison tuples for " + std::to_string(groups) + " group nodes (" +
                           std::to_string(mpc::ltz::kMinGroups) + ".." +
                           std::to_string(mpc::ltz::kMaxGroups) + ")");
  }
  const BitItem item = LtzItem(groups);
  const std::size_t units = BitUnitsFor(InProcessBitDealer<P>::kSecurity, item, n);
  const std::int32_t corrector = Corrector(item, units);
  if constexpr (P::kMalicious) {  // rows kept in place (the chunks are moved, not copied)
    MPCACHE_ASSIGN_OR_RETURN(auto w, dealer_.Take(party_, item, units, corrector));
    consumed_[static_cast<std::size_t>(item)] += units * InProcessBitDealer<P>::UnitItems(item);
    return UnpackLtzTuples<P>(std::move(w), n, groups);
  } else {  // bitsliced: copied once, straight from the pool
    SemiLtzUnpacker<P> unpack(n, groups);
    MPCACHE_RETURN_IF_ERROR(dealer_.TakeInPlace(
        party_, item, units, corrector,
        [&unpack](std::span<const std::uint64_t> words) { unpack.Append(words); }));
    consumed_[static_cast<std::size_t>(item)] += units * InProcessBitDealer<P>::UnitItems(item);
    return std::move(unpack).Finish();
  }
}

template class BitStore<mpc::SemiHonest>;
template class BitStore<mpc::Spdz2k>;
template class InProcessBitDealer<mpc::SemiHonest>;
template class InProcessBitDealer<mpc::Spdz2k>;

}  // namespace mpcache::preproc
