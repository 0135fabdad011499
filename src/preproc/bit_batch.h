// The bit dealer's unit of output over the network: one BitBatch per party per request of
// comparison material (mpc/compare/bit_preprocessing.h), the binary-domain twin of batch.h.
//
// Seed compression (bit_dealer.h): party i shares a bit seed with the dealer. Party i's
// part of batch (item, seq) is `units` fixed-size units of 64-bit words (layout in
// bit_batch.cc), cut into chunks of BitChunkUnits() units; chunk c is expanded from the
// AES-CTR stream of BitChunkSeed(seed_i, item, seq, c) by FillBitUnits. Free words (a triple's a
// and b, the bits of an edaBit) are final at every party; determined words (c = a AND b, every MAC,
// the arithmetic half of an edaBit/daBit) are final at every party but one, the request's
// corrector, where they are replaced by the corrections the batch carries (unit-major, in word
// order). So the others receive a header only (kBitBatchHeaderBytes), the corrector 8 bytes per
// determined word more — but one bit per determined malicious binary value (its word's
// other 63 bits are ignored by every reader: IsBitCorrection). The corrector is named in the
// party's request (daemon's BitRequest); the serialised header does not repeat it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <type_traits>
#include <vector>

#include "common/prg.h"
#include "common/result.h"
#include "mpc/compare/bit_preprocessing.h"
#include "mpc/compare/ltz_layout.h"
#include "preproc/batch.h"

namespace mpcache::preproc {

enum class BitItem : std::uint8_t {
  kBitTriple = 0,
  kEdaBit = 1,
  kDaBit = 2,
  kBitRandom = 3,
  kRootTuple = 4
};
// Comparison tuples (mpc/compare/ltz_layout.h): one item per group count G, numbered from
// kLtzItemBase (G = 2) to kLtzItemBase + 14 (G = 16); LtzItem(G) names it.
inline constexpr int kLtzItemBase = 5;
inline constexpr int kNumBitItems =
    kLtzItemBase + mpc::ltz::kMaxGroups - mpc::ltz::kMinGroups + 1;  // 20
constexpr BitItem LtzItem(int groups) {
  return static_cast<BitItem>(kLtzItemBase + groups - mpc::ltz::kMinGroups);
}
constexpr bool IsLtzItem(BitItem item) {
  return static_cast<int>(item) >= kLtzItemBase && static_cast<int>(item) < kNumBitItems;
}
constexpr int LtzItemGroups(BitItem item) {
  return static_cast<int>(item) - kLtzItemBase + mpc::ltz::kMinGroups;
}
const char* BitItemName(BitItem item);

// Items in one batch at most (a malicious edaBit unit is 3.7 KB: 2^24 of them is 63 GB).
inline constexpr std::uint64_t kMaxBitBatchItems = std::uint64_t{1} << 24;
inline constexpr std::size_t kBitBatchHeaderBytes = 36;

// Unit layout: words per unit, items per unit (semi-honest triples, edaBits and randoms
// come 64 to a unit, bitsliced), determined words per unit and whether word w is one.
std::size_t BitUnitWords(Security security, BitItem item);
std::size_t BitUnitItems(Security security, BitItem item);
std::size_t BitDeterminedWords(Security security, BitItem item);
bool IsBitDetermined(Security security, BitItem item, std::size_t w);
// A malicious binary value word (free or determined): only its bit 0 is a share, the rest
// is ignored by every reader. Semi-honest binary values are bitsliced (64 per word): none.
bool IsBinaryValueWord(Security security, BitItem item, std::size_t w);
// The stream a unit is expanded from (FillBitUnits): a binary value word takes one keystream
// BIT, not a word — the unit's value bits come first, packed 64 to a word, then its other
// words in order. So a 40-bit comparison tuple costs 290 keystream words, not 492.
// Semi-honest units are their keystream words.
std::size_t BitStreamWords(Security security, BitItem item);  // per unit
// `units` units of `item` from the keystream `stream` (the next units * BitStreamWords words
// of it) into `out` (units * BitUnitWords words). `scratch` holds keystream blocks (reused
// across calls: the dealer and the expander fill many sub-blocks).
void FillBitUnits(Prg& stream, Security security, BitItem item, std::size_t units,
                  std::uint64_t* out, std::vector<std::uint64_t>& scratch);
// A determined binary value word (a bit triple's c, an edaBit's group products, a comparison
// tuple's products): the corrector's correction is one bit. BitCorrectionBits counts them
// per unit.
bool IsBitCorrection(Security security, BitItem item, std::size_t w);
std::size_t BitCorrectionBits(Security security, BitItem item);
// The determined words of a unit by how the corrector receives them: `full` (a word each)
// and `bits` (IsBitCorrection: a bit each), offsets within the unit in word order.
struct BitCorrectionOffsets {
  std::vector<std::uint32_t> full, bits;
};
const BitCorrectionOffsets& CorrectionOffsetsOf(Security security, BitItem item);
// The correction words a corrector receives for `units` units: the other determined words
// (unit-major), then the bit corrections packed 64 to a word (unit-major, in word order, bit
// k in bit k % 64 of word k / 64).
std::uint64_t BitCorrectionWords(Security security, BitItem item, std::uint64_t units);
// Units per stream chunk (about 16 MB of words per party), and units for n items.
std::size_t BitChunkUnits(Security security, BitItem item);
std::uint64_t BitUnitsFor(Security security, BitItem item, std::uint64_t n);
// The stream seed of chunk `chunk` of batch (item, seq) for a party with bit seed `seed`.
Seed BitChunkSeed(const Seed& party_bit_seed, BitItem item, std::uint64_t seq, std::uint64_t chunk);

struct BitBatch {
  Security security = Security::kMalicious;
  std::int32_t party = 0;  // receiver
  BitItem item = BitItem::kBitTriple;
  std::uint64_t seq = 0;    // per-item sequence number of the dealer, from 0
  std::uint64_t count = 0;  // items (1..kMaxBitBatchItems)
  // The corrector only: BitCorrectionWords(security, item, units) words (full determined
  // words unit-major, then the value words' packed bits).
  std::vector<std::uint64_t> corrections;
  // Not serialised: the party the request named (Parse gives kStaticCorrector; the receiver
  // sets the one it asked for before expanding).
  std::int32_t corrector = kStaticCorrector;

  std::size_t WireSize() const { return kBitBatchHeaderBytes + 8 * corrections.size(); }
  std::vector<std::uint8_t> Serialize() const;
  // Serialize()'s bytes appended to `out` (a message built around the batch without a copy
  // of it of its own).
  void AppendTo(std::vector<std::uint8_t>& out) const;
  static Result<BitBatch> Parse(std::span<const std::uint8_t> bytes);
};

// Consecutive units of one item as chunks of words (only the first may start at an
// offset); the unpackers free each chunk once read.
struct BitUnits {
  std::deque<std::vector<std::uint64_t>> chunks;
  std::size_t first_offset = 0;
};

// Units -> the n items they hold (shared by BitStore and BitExpander).
template <typename P>
mpc::BitTriples<P> UnpackBitTriples(BitUnits w, std::size_t n);
template <typename P>
mpc::EdaBits<P> UnpackEdaBits(BitUnits w, std::size_t n);
template <typename P>
mpc::DaBits<P> UnpackDaBits(BitUnits w, std::size_t n);
template <typename P>
mpc::RootTuples<P> UnpackRootTuples(BitUnits w, std::size_t n);
template <typename P>
mpc::BitShares<P> UnpackBitRandoms(BitUnits w, std::size_t n);
// Comparison tuples of `groups` group nodes (ltz_batch.cc).
template <typename P>
mpc::LtzTuples<P> UnpackLtzTuples(BitUnits w, std::size_t n, int groups);
// Semi-honest comparison tuples from whole units appended in order, wherever they are read
// (a BitUnits' chunks, or a pool's chunks in place: InProcessBitDealer::TakeInPlace), so
// the units are copied once, into the items' vectors. Units past the n items are ignored.
template <typename P>
class SemiLtzUnpacker {
 public:
  SemiLtzUnpacker(std::size_t n, int groups);
  void Append(std::span<const std::uint64_t> units);  // whole units
  mpc::LtzTuples<P> Finish() &&;

 private:
  const mpc::ltz::LtzLayout& layout_;
  std::size_t n_, words_;
  std::size_t u_ = 0;  // units appended (item words filled)
  mpc::LtzTuples<P> t_;
};

// A party's side: expands the batches addressed to it (its bit seed from the dealer's
// Setup) into items. Refuses batches for another party, item or security mode, with a
// payload of the wrong size for their corrector, or out of sequence (batches of an item
// come in order).
template <typename P>
class BitExpander {
 public:
  BitExpander(mpc::PartyId party, int num_parties, const Seed& bit_seed)
      : party_(party), num_parties_(num_parties), seed_(bit_seed) {}

  Result<mpc::BitTriples<P>> BitTriples(const BitBatch& b);
  Result<mpc::EdaBits<P>> EdaBits(const BitBatch& b);
  Result<mpc::DaBits<P>> DaBits(const BitBatch& b);
  Result<mpc::RootTuples<P>> RootTuples(const BitBatch& b);
  Result<mpc::BitShares<P>> BitRandoms(const BitBatch& b);
  // Comparison tuples (any of the LtzItem(G) items: G follows from b.item).
  Result<mpc::LtzTuples<P>> LtzTuples(const BitBatch& b);
  // The same, chosen by the item type T (mpc::BitTriples<P>, ..., mpc::LtzTuples<P>).
  template <typename T>
  Result<T> Expand(const BitBatch& b);

 private:
  // Checks b against (party, item, security, sequence) and regenerates its units.
  Result<BitUnits> Units(const BitBatch& b, BitItem want);

  mpc::PartyId party_;
  int num_parties_;
  Seed seed_;
  std::uint64_t next_seq_[kNumBitItems] = {};
};

template <typename P>
template <typename T>
Result<T> BitExpander<P>::Expand(const BitBatch& b) {
  if constexpr (std::is_same_v<T, mpc::BitTriples<P>>) {
    return BitTriples(b);
  } else if constexpr (std::is_same_v<T, mpc::EdaBits<P>>) {
    return EdaBits(b);
  } else if constexpr (std::is_same_v<T, mpc::DaBits<P>>) {
    return DaBits(b);
  } else if constexpr (std::is_same_v<T, mpc::RootTuples<P>>) {
    return RootTuples(b);
  } else if constexpr (std::is_same_v<T, mpc::LtzTuples<P>>) {
    return LtzTuples(b);
  } else {
    static_assert(std::is_same_v<T, mpc::BitShares<P>>, "not a comparison item type");
    return BitRandoms(b);
  }
}

}  // namespace mpcache::preproc
