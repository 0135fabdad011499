#include "preproc/bit_batch.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

namespace mpcache::preproc {

namespace {

using mpc::u128;

constexpr std::uint8_t kMagic[4] = {'M', 'P', 'B', 'B'};
constexpr std::uint8_t kVersion = 2;  // 2: value words' corrections as bits
constexpr std::uint64_t kBitSeedLabel = 0xB1700000ull;

// Unit layouts (words). Binary values are XOR-shared; a malicious binary value word carries
// the share in bit 0 (the rest is ignored), its MAC word a GF(2^64) share. Semi-honest: triple [a b
// c] (64 triples per unit, bitsliced), edaBit: 64 edaBits per unit, bit-major [bit 0..63 words,
// product 0..168 words, 64 arith words] (word j's bit i belongs to item i), daBit [bit(low) arith],
// random [64 bits]. Malicious: triple [av am bv bm cv cm], edaBit [v0..v63 pv0..pv168 m0..m63
// pm0..pm168 rv_lo rv_hi rm_lo rm_hi], daBit [v m rv_lo rv_hi rm_lo rm_hi], random [v m]. Root
// tuple: semi-honest [bits u v w in bits 0..2, then 7 arithmetic words]; malicious [uv vv wv um vm
// wm, then 7 x (v_lo v_hi m_lo m_hi)]. Free words come first in every unit, except the malicious
// triple (free: av and bv).
constexpr std::size_t kP = mpc::edabit::kProducts;
constexpr std::size_t kSemiWords[kNumBitItems] = {3, 64 + kP + 64, 2, 1, 8};
constexpr std::size_t kSemiItems[kNumBitItems] = {64, 64, 1, 64, 1};
constexpr std::size_t kMalWords[kNumBitItems] = {6, mpc::edabit::kRowWords, 6, 2, 34};
constexpr std::size_t kSemiFree[kNumBitItems] = {2, 64, 1, 1, 1};
constexpr std::size_t kMalFree[kNumBitItems] = {2, 64, 1, 1, 3};
// Stream chunks of about 16 MB per party (a pool can free them one at a time).
constexpr std::size_t kChunkWords = std::size_t{1} << 21;

inline u128 Join(std::uint64_t lo, std::uint64_t hi) {
  return (u128{hi} << 64) | lo;
}

bool Mal(Security s) {
  return s == Security::kMalicious;
}

template <typename T>
void Put(std::vector<std::uint8_t>& out, std::size_t& off, T v) {
  std::memcpy(out.data() + off, &v, sizeof(T));
  off += sizeof(T);
}

template <typename T>
T Take(std::span<const std::uint8_t> in, std::size_t& off) {
  T v;
  std::memcpy(&v, in.data() + off, sizeof(T));
  off += sizeof(T);
  return v;
}

// fn(unit index, words of the unit) for every unit, freeing each chunk once read.
template <typename F>
void ForEachUnit(BitUnits&& in, std::size_t uw, F&& fn) {
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

template <typename P>
constexpr Security SecurityOf() {
  return P::kMalicious ? Security::kMalicious : Security::kSemiHonest;
}

}  // namespace

const char* BitItemName(BitItem item) {
  if (IsLtzItem(item)) {
    static constexpr const char* kLtzNames[] = {
        "ltz-tuple-2",  "ltz-tuple-3",  "ltz-tuple-4",  "ltz-tuple-5",  "ltz-tuple-6",
        "ltz-tuple-7",  "ltz-tuple-8",  "ltz-tuple-9",  "ltz-tuple-10", "ltz-tuple-11",
        "ltz-tuple-12", "ltz-tuple-13", "ltz-tuple-14", "ltz-tuple-15", "ltz-tuple-16"};
    static_assert(std::size(kLtzNames) == kNumBitItems - kLtzItemBase);
    return kLtzNames[static_cast<int>(item) - kLtzItemBase];
  }
  switch (item) {
    case BitItem::kBitTriple:
      return "bit-triple";
    case BitItem::kEdaBit:
      return "edabit";
    case BitItem::kDaBit:
      return "dabit";
    case BitItem::kBitRandom:
      return "bit-random";
    case BitItem::kRootTuple:
      return "root-tuple";
  }
  return "unknown";
}

std::size_t BitUnitWords(Security security, BitItem item) {
  if (IsLtzItem(item)) {
    const mpc::ltz::LtzLayout& l = mpc::ltz::LtzLayoutFor(LtzItemGroups(item));
    return Mal(security) ? l.RowWords() : l.SemiUnitWords();
  }
  return Mal(security) ? kMalWords[static_cast<int>(item)] : kSemiWords[static_cast<int>(item)];
}

std::size_t BitUnitItems(Security security, BitItem item) {
  if (IsLtzItem(item)) return Mal(security) ? 1 : 64;
  return Mal(security) ? 1 : kSemiItems[static_cast<int>(item)];
}

std::size_t BitDeterminedWords(Security security, BitItem item) {
  if (IsLtzItem(item)) {
    return BitUnitWords(security, item) -
           static_cast<std::size_t>(mpc::ltz::LtzLayoutFor(LtzItemGroups(item)).free_values);
  }
  const int it = static_cast<int>(item);
  return BitUnitWords(security, item) - (Mal(security) ? kMalFree[it] : kSemiFree[it]);
}

bool IsBitDetermined(Security security, BitItem item, std::size_t w) {
  if (IsLtzItem(item)) {  // the free binary values come first (ltz_layout.h)
    return w >= static_cast<std::size_t>(mpc::ltz::LtzLayoutFor(LtzItemGroups(item)).free_values);
  }
  const int it = static_cast<int>(item);
  if (Mal(security) && item == BitItem::kBitTriple) return w != 0 && w != 2;
  return w >= (Mal(security) ? kMalFree[it] : kSemiFree[it]);
}

bool IsBinaryValueWord(Security security, BitItem item, std::size_t w) {
  if (!Mal(security)) return false;
  if (IsLtzItem(item)) {
    return w < static_cast<std::size_t>(mpc::ltz::LtzLayoutFor(LtzItemGroups(item)).num_binary);
  }
  switch (item) {
    case BitItem::kBitTriple:
      return w == 0 || w == 2 || w == 4;  // av bv cv
    case BitItem::kEdaBit:
      return w < 64 + kP;  // v0..v63 pv0..pv168
    case BitItem::kDaBit:
    case BitItem::kBitRandom:
      return w == 0;
    case BitItem::kRootTuple:
      return w < 3;  // uv vv wv
  }
  return false;
}

namespace {

// Per (security, item): which words of a unit are value words, and the stream's size.
struct StreamShape {
  struct Run {
    std::uint32_t first, count;
    bool value;
  };
  std::vector<Run> runs;  // the unit's words as runs of value words and of other words
  std::size_t unit_words = 0, values = 0, stream_words = 0;
  std::size_t corrected_bits = 0;  // determined value words
  BitCorrectionOffsets corrections;
};

const StreamShape& ShapeOf(Security security, BitItem item) {
  static const auto kShapes = [] {
    std::array<std::array<StreamShape, kNumBitItems>, 2> shapes;
    for (int m = 0; m < 2; ++m) {
      const auto sec = m == 1 ? Security::kMalicious : Security::kSemiHonest;
      for (int it = 0; it < kNumBitItems; ++it) {
        const auto item = static_cast<BitItem>(it);
        StreamShape& sh = shapes[static_cast<std::size_t>(m)][static_cast<std::size_t>(it)];
        const std::size_t uw = BitUnitWords(sec, item);
        sh.unit_words = uw;
        for (std::size_t w = 0; w < uw; ++w) {
          const bool v = IsBinaryValueWord(sec, item, w);
          sh.values += v ? 1 : 0;
          if (IsBitDetermined(sec, item, w)) {
            const bool bit = IsBitCorrection(sec, item, w);
            sh.corrected_bits += bit ? 1 : 0;
            (bit ? sh.corrections.bits : sh.corrections.full)
                .push_back(static_cast<std::uint32_t>(w));
          }
          if (sh.runs.empty() || sh.runs.back().value != v) {
            sh.runs.push_back({static_cast<std::uint32_t>(w), 0, v});
          }
          ++sh.runs.back().count;
        }
        sh.stream_words = uw - sh.values + (sh.values + 63) / 64;
      }
    }
    return shapes;
  }();
  return kShapes[Mal(security) ? 1 : 0][static_cast<std::size_t>(item)];
}

}  // namespace

bool IsBitCorrection(Security security, BitItem item, std::size_t w) {
  return IsBinaryValueWord(security, item, w) && IsBitDetermined(security, item, w);
}

std::size_t BitCorrectionBits(Security security, BitItem item) {
  return ShapeOf(security, item).corrected_bits;
}

std::size_t BitStreamWords(Security security, BitItem item) {
  return ShapeOf(security, item).stream_words;
}

const BitCorrectionOffsets& CorrectionOffsetsOf(Security security, BitItem item) {
  return ShapeOf(security, item).corrections;
}

void FillBitUnits(Prg& stream, Security security, BitItem item, std::size_t units,
                  std::uint64_t* out, std::vector<std::uint64_t>& scratch) {
  const StreamShape& sh = ShapeOf(security, item);
  const std::size_t uw = sh.unit_words;
  if (sh.values == 0) {
    stream.Fill(out, units * uw * sizeof(std::uint64_t));
    return;
  }
  // A block of ~32 KB of keystream at a time (small enough to stay in cache and on the heap).
  const std::size_t block_units =
      std::max<std::size_t>(1, (std::size_t{32} << 10) / (sh.stream_words * sizeof(std::uint64_t)));
  const std::size_t need = std::min(units, block_units) * sh.stream_words;
  if (scratch.size() < need) scratch.resize(need);
  const std::size_t bit_words = (sh.values + 63) / 64;
  for (std::size_t first = 0; first < units; first += block_units) {
    const std::size_t cu = std::min(block_units, units - first);
    stream.Fill(scratch.data(), cu * sh.stream_words * sizeof(std::uint64_t));
    for (std::size_t u = 0; u < cu; ++u) {
      const std::uint64_t* bits = scratch.data() + u * sh.stream_words;
      const std::uint64_t* rest = bits + bit_words;
      std::uint64_t* dst = out + (first + u) * uw;
      std::size_t k = 0;
      for (const StreamShape::Run& r : sh.runs) {
        std::uint64_t* d = dst + r.first;
        if (r.value) {
          for (std::size_t i = 0; i < r.count; ++i, ++k) d[i] = (bits[k / 64] >> (k % 64)) & 1;
        } else {
          std::memcpy(d, rest, r.count * sizeof(std::uint64_t));
          rest += r.count;
        }
      }
    }
  }
}

std::uint64_t BitCorrectionWords(Security security, BitItem item, std::uint64_t units) {
  const std::uint64_t bits = units * BitCorrectionBits(security, item);
  return units * (BitDeterminedWords(security, item) - BitCorrectionBits(security, item)) +
         (bits + 63) / 64;
}

std::size_t BitChunkUnits(Security security, BitItem item) {
  return std::max<std::size_t>(1, kChunkWords / BitUnitWords(security, item));
}

std::uint64_t BitUnitsFor(Security security, BitItem item, std::uint64_t n) {
  const std::uint64_t per = BitUnitItems(security, item);
  return (n + per - 1) / per;
}

Seed BitChunkSeed(const Seed& party_bit_seed, BitItem item, std::uint64_t seq,
                  std::uint64_t chunk) {
  const Seed s = DeriveSeed(
      DeriveSeed(party_bit_seed, kBitSeedLabel + 16 + static_cast<std::uint64_t>(item)), seq);
  return DeriveSeed(s, chunk);
}

// Header: magic[4] version u8, security u8, item u8, reserved u8, party i32, seq u64,
// count u64, corrections u64; then the corrections (little-endian words).
std::vector<std::uint8_t> BitBatch::Serialize() const {
  std::vector<std::uint8_t> out;
  AppendTo(out);
  return out;
}

void BitBatch::AppendTo(std::vector<std::uint8_t>& out) const {
  std::size_t off = out.size();
  out.resize(off + WireSize());
  std::memcpy(out.data() + off, kMagic, 4);
  off += 4;
  Put<std::uint8_t>(out, off, kVersion);
  Put<std::uint8_t>(out, off, static_cast<std::uint8_t>(security));
  Put<std::uint8_t>(out, off, static_cast<std::uint8_t>(item));
  Put<std::uint8_t>(out, off, 0);
  Put<std::int32_t>(out, off, party);
  Put<std::uint64_t>(out, off, seq);
  Put<std::uint64_t>(out, off, count);
  Put<std::uint64_t>(out, off, static_cast<std::uint64_t>(corrections.size()));
  if (!corrections.empty()) {
    std::memcpy(out.data() + off, corrections.data(), 8 * corrections.size());
  }
}

Result<BitBatch> BitBatch::Parse(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kBitBatchHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return CorruptData("not a comparison-material batch (bad magic or a header shorter than " +
                       std::to_string(kBitBatchHeaderBytes) + " bytes)");
  }
  std::size_t off = 4;
  if (Take<std::uint8_t>(bytes, off) != kVersion) {
    return Unsupported(
        "comparison-material batch version not supported (dealer and party "
        "binaries differ: upgrade both)");
  }
  BitBatch b;
  const auto sec = Take<std::uint8_t>(bytes, off);
  const auto item = Take<std::uint8_t>(bytes, off);
  const auto reserved = Take<std::uint8_t>(bytes, off);
  if (sec > 1 || item >= kNumBitItems) {
    return CorruptData("comparison-material batch header has an unknown security mode (" +
                       std::to_string(sec) + ") or item (" + std::to_string(item) + ")");
  }
  if (reserved != 0) {  // one encoding per batch: the byte Serialize writes as 0
    return CorruptData("comparison-material batch header has reserved byte " +
                       std::to_string(reserved) + " (0 expected)");
  }
  b.security = static_cast<Security>(sec);
  b.item = static_cast<BitItem>(item);
  b.party = Take<std::int32_t>(bytes, off);
  b.seq = Take<std::uint64_t>(bytes, off);
  b.count = Take<std::uint64_t>(bytes, off);
  const auto n = Take<std::uint64_t>(bytes, off);
  if (b.count == 0 || b.count > kMaxBitBatchItems) {
    return CorruptData("comparison-material batch of " + std::to_string(b.count) + " items (1.." +
                       std::to_string(kMaxBitBatchItems) + " allowed)");
  }
  const std::size_t body = bytes.size() - kBitBatchHeaderBytes;
  if (body % 8 != 0 || n != body / 8) {
    return CorruptData("comparison-material batch announces " + std::to_string(n) +
                       " corrections but carries " + std::to_string(body) +
                       " bytes (truncated or corrupted in transit)");
  }
  b.corrections.resize(static_cast<std::size_t>(n));
  if (n > 0) std::memcpy(b.corrections.data(), bytes.data() + kBitBatchHeaderBytes, body);
  return b;
}

// ---- units -> items ----

template <typename P>
mpc::BitTriples<P> UnpackBitTriples(BitUnits w, std::size_t n) {
  mpc::BitTriples<P> t;
  t.a = mpc::BitShares<P>(n);
  t.b = mpc::BitShares<P>(n);
  t.c = mpc::BitShares<P>(n);
  ForEachUnit(std::move(w), BitUnitWords(SecurityOf<P>(), BitItem::kBitTriple),
              [&](std::size_t u, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  t.a.v[u] = x[0] & 1, t.a.m[u] = x[1], t.b.v[u] = x[2] & 1, t.b.m[u] = x[3],
                  t.c.v[u] = x[4] & 1, t.c.m[u] = x[5];
                } else {
                  t.a.v[u] = x[0], t.b.v[u] = x[1], t.c.v[u] = x[2];
                }
              });
  return t;
}

template <typename P>
mpc::EdaBits<P> UnpackEdaBits(BitUnits w, std::size_t n) {
  mpc::EdaBits<P> e;
  e.r = mpc::Shares<P>(n);
  const std::size_t uw = BitUnitWords(SecurityOf<P>(), BitItem::kEdaBit);
  if constexpr (P::kMalicious) {
    // The units are the rows: keep the chunks and point at each item's unit (no copy).
    static_assert(kMalWords[static_cast<int>(BitItem::kEdaBit)] == mpc::edabit::kRowWords);
    e.rows.rows.reserve(n);
    bool first = true;
    while (!w.chunks.empty() && e.rows.size() < n) {
      auto chunk = std::make_shared<std::vector<std::uint64_t>>(std::move(w.chunks.front()));
      w.chunks.pop_front();
      const std::size_t off0 = first ? w.first_offset : 0;
      first = false;
      for (std::size_t off = off0; off + uw <= chunk->size() && e.rows.size() < n; off += uw) {
        std::uint64_t* x = chunk->data() + off;
        const std::size_t i = e.rows.size();
        e.r.v[i] = Join(x[mpc::edabit::kRWord], x[mpc::edabit::kRWord + 1]);
        e.r.m[i] = Join(x[mpc::edabit::kRMacWord], x[mpc::edabit::kRMacWord + 1]);
        e.rows.rows.push_back(x);
      }
      e.rows.owners.push_back(std::move(chunk));
    }
  } else {
    for (auto& b : e.bits) b = mpc::BitShares<P>(n);
    e.prods.assign(kP, mpc::BitShares<P>(n));
    ForEachUnit(std::move(w), uw, [&](std::size_t u, const std::uint64_t* x) {
      for (std::size_t j = 0; j < 64; ++j) e.bits[j].v[u] = x[j];
      for (std::size_t k = 0; k < kP; ++k) e.prods[k].v[u] = x[64 + k];
      for (std::size_t i = 0; i < 64 && 64 * u + i < n; ++i) e.r.v[64 * u + i] = x[64 + kP + i];
    });
  }
  return e;
}

template <typename P>
mpc::DaBits<P> UnpackDaBits(BitUnits w, std::size_t n) {
  mpc::DaBits<P> d;
  d.b = mpc::BitShares<P>(n);
  d.a = mpc::Shares<P>(n);
  ForEachUnit(std::move(w), BitUnitWords(SecurityOf<P>(), BitItem::kDaBit),
              [&](std::size_t i, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  d.b.v[i] = x[0] & 1;
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
mpc::RootTuples<P> UnpackRootTuples(BitUnits w, std::size_t n) {
  mpc::RootTuples<P> t;
  t.u = mpc::BitShares<P>(n);
  t.v = mpc::BitShares<P>(n);
  t.w = mpc::BitShares<P>(n);
  for (auto& m : t.mono) m = mpc::Shares<P>(n);
  ForEachUnit(std::move(w), BitUnitWords(SecurityOf<P>(), BitItem::kRootTuple),
              [&](std::size_t i, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  t.u.v[i] = x[0] & 1, t.v.v[i] = x[1] & 1, t.w.v[i] = x[2] & 1;
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
mpc::BitShares<P> UnpackBitRandoms(BitUnits w, std::size_t n) {
  mpc::BitShares<P> r(n);
  ForEachUnit(std::move(w), BitUnitWords(SecurityOf<P>(), BitItem::kBitRandom),
              [&](std::size_t u, const std::uint64_t* x) {
                if constexpr (P::kMalicious) {
                  r.v[u] = x[0] & 1;
                  r.m[u] = x[1];
                } else {
                  r.v[u] = x[0];
                }
              });
  return r;
}

// ---- party side ----

template <typename P>
Result<BitUnits> BitExpander<P>::Units(const BitBatch& b, BitItem want) {
  const Security sec = SecurityOf<P>();
  const std::string what = std::string(BitItemName(b.item)) + " batch #" + std::to_string(b.seq);
  if (b.party != party_) {
    return ProtocolError("party " + std::to_string(party_) + " got the " + what + " of party " +
                         std::to_string(b.party) + " (dealer mix-up: refused)");
  }
  if (b.item != want) {
    return ProtocolError(std::string("expected a ") + BitItemName(want) + " batch, got a " + what);
  }
  if (b.security != sec) {
    return ProtocolError("the " + what + " is for the other security mode than this session's");
  }
  if (b.count == 0 || b.count > kMaxBitBatchItems) {
    return ProtocolError("the " + what + " holds " + std::to_string(b.count) + " items");
  }
  const int it = static_cast<int>(want);
  if (b.seq != next_seq_[it]) {
    return ProtocolError("the " + what + " is out of sequence (expected #" +
                         std::to_string(next_seq_[it]) + "): dealer and party are misaligned");
  }
  if (b.corrector < 0 || b.corrector >= num_parties_) {
    return ProtocolError("the " + what + " names corrector " + std::to_string(b.corrector) +
                         ", not a party");
  }
  const bool corrector = party_ == b.corrector;
  const std::uint64_t units = BitUnitsFor(sec, want, b.count);
  const std::size_t uw = BitUnitWords(sec, want);
  const std::uint64_t want_corr = corrector ? BitCorrectionWords(sec, want, units) : 0;
  if (b.corrections.size() != want_corr) {
    return ProtocolError("the " + what + " carries " + std::to_string(b.corrections.size()) +
                         " corrections, expected " + std::to_string(want_corr) + " for party " +
                         std::to_string(party_) + " (its corrector is party " +
                         std::to_string(b.corrector) + ")");
  }
  ++next_seq_[it];
  const BitCorrectionOffsets& offsets = CorrectionOffsetsOf(sec, want);
  const std::vector<std::uint32_t>&det = offsets.full, &val = offsets.bits;
  BitUnits out;
  std::vector<std::uint64_t> scratch;
  const std::size_t per_chunk = BitChunkUnits(sec, want);
  const std::uint64_t* corr = b.corrections.data();
  const std::uint64_t* bits = corr + units * det.size();  // the packed value bits
  std::uint64_t k = 0;                                    // next value bit
  std::uint64_t chunk = 0;
  for (std::uint64_t done = 0; done < units; done += per_chunk, ++chunk) {
    const std::size_t cu =
        static_cast<std::size_t>(std::min<std::uint64_t>(per_chunk, units - done));
    std::vector<std::uint64_t>& words = out.chunks.emplace_back(cu * uw);
    Prg stream(BitChunkSeed(seed_, want, b.seq, chunk));
    FillBitUnits(stream, sec, want, cu, words.data(), scratch);
    if (corrector) {
      for (std::size_t u = 0; u < cu; ++u) {
        std::uint64_t* x = words.data() + u * uw;
        for (std::uint32_t w : det) x[w] = *corr++;
        for (std::uint32_t w : val) {
          x[w] = (bits[k / 64] >> (k % 64)) & 1;
          ++k;
        }
      }
    }
  }
  return out;
}

template <typename P>
Result<mpc::BitTriples<P>> BitExpander<P>::BitTriples(const BitBatch& b) {
  MPCACHE_ASSIGN_OR_RETURN(BitUnits w, Units(b, BitItem::kBitTriple));
  return UnpackBitTriples<P>(std::move(w), static_cast<std::size_t>(b.count));
}
template <typename P>
Result<mpc::EdaBits<P>> BitExpander<P>::EdaBits(const BitBatch& b) {
  MPCACHE_ASSIGN_OR_RETURN(BitUnits w, Units(b, BitItem::kEdaBit));
  return UnpackEdaBits<P>(std::move(w), static_cast<std::size_t>(b.count));
}
template <typename P>
Result<mpc::DaBits<P>> BitExpander<P>::DaBits(const BitBatch& b) {
  MPCACHE_ASSIGN_OR_RETURN(BitUnits w, Units(b, BitItem::kDaBit));
  return UnpackDaBits<P>(std::move(w), static_cast<std::size_t>(b.count));
}
template <typename P>
Result<mpc::RootTuples<P>> BitExpander<P>::RootTuples(const BitBatch& b) {
  MPCACHE_ASSIGN_OR_RETURN(BitUnits w, Units(b, BitItem::kRootTuple));
  return UnpackRootTuples<P>(std::move(w), static_cast<std::size_t>(b.count));
}
template <typename P>
Result<mpc::BitShares<P>> BitExpander<P>::BitRandoms(const BitBatch& b) {
  MPCACHE_ASSIGN_OR_RETURN(BitUnits w, Units(b, BitItem::kBitRandom));
  return UnpackBitRandoms<P>(std::move(w), static_cast<std::size_t>(b.count));
}
template <typename P>
Result<mpc::LtzTuples<P>> BitExpander<P>::LtzTuples(const BitBatch& b) {
  if (!IsLtzItem(b.item)) {
    return ProtocolError(std::string("expected a comparison-tuple batch, got a ") +
                         BitItemName(b.item) + " batch");
  }
  MPCACHE_ASSIGN_OR_RETURN(BitUnits w, Units(b, b.item));
  return UnpackLtzTuples<P>(std::move(w), static_cast<std::size_t>(b.count), LtzItemGroups(b.item));
}

#define MPCACHE_BIT_BATCH(P)                                              \
  template mpc::BitTriples<P> UnpackBitTriples<P>(BitUnits, std::size_t); \
  template mpc::EdaBits<P> UnpackEdaBits<P>(BitUnits, std::size_t);       \
  template mpc::DaBits<P> UnpackDaBits<P>(BitUnits, std::size_t);         \
  template mpc::RootTuples<P> UnpackRootTuples<P>(BitUnits, std::size_t); \
  template mpc::BitShares<P> UnpackBitRandoms<P>(BitUnits, std::size_t);  \
  template class BitExpander<P>;
MPCACHE_BIT_BATCH(mpc::SemiHonest)
MPCACHE_BIT_BATCH(mpc::Spdz2k)

}  // namespace mpcache::preproc
