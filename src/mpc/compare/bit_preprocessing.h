// Dealer material for comparisons (the binary-domain counterpart of mpc/preprocessing.h).
// Every item is move-only and handed out exactly once.
//
//   BitTriples  [a], [b], [c = a AND b] in the binary domain
//   EdaBits     [r] in Z_2^64 (arithmetic, shared as P says, uniform over the share ring)
//               and its 64 low bits [r_j] in the binary domain, plus the binary ANDs of bit
//               groups listed in edabit_layout.h (semi-honest: bit-major bitsliced vectors;
//               malicious: item-major rows, see EdaRows)
//   DaBits      a uniform bit shared in both domains: [b] binary and [b] arithmetic
//   RootTuples  three uniform bits u, v, w shared in the binary domain, and arithmetic
//               shares of u, v, w, vw, uw, uv, uvw (the comparison's last AND fused with
//               the conversion to arithmetic: compare.h)
//   BitRandoms  uniform lifts in the binary domain (the binary MAC check's mask)
//   LtzTuples   everything one LessThanZero value of a width with G group nodes needs, in
//               one item (ltz_layout.h): [r] with its low bits, the group products, the
//               combination round's masks and mask products, the fused root's masks and
//               their arithmetic monomials
// The trusted dealer guarantees that the two halves of an edaBit / daBit are consistent
// (the parties do not check it: see docs/comparison.md). In Spdz2k mode every part carries
// its MAC (arithmetic parts under alpha, binary parts under the binary key beta).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "common/result.h"
#include "mpc/compare/bit_share.h"
#include "mpc/compare/edabit_layout.h"
#include "mpc/preprocessing.h"

namespace mpcache::mpc {

template <typename P>
struct BitTriples : MoveOnly {
  BitShares<P> a, b, c;
};

// Item-major rows (malicious edaBits): row i is item i's words (edabit::kRowWords, layout in
// edabit_layout.h), straight from the dealer's units — no transposition, so the comparison
// reads each item's few dozen words in one place. The chunks are shared, so a range of
// items can be handed out without copying.
struct EdaRows {
  std::vector<std::shared_ptr<std::vector<std::uint64_t>>> owners;
  std::vector<std::uint64_t*> rows;
  std::size_t size() const { return rows.size(); }
};

template <typename P>
struct EdaBits : MoveOnly {
  Shares<P> r;
  // Semi-honest: bit-major and bitsliced — bits[j] holds bit j of every element, prods[k]
  // product k (edabit::kProducts of them).
  std::array<BitShares<P>, 64> bits;
  std::vector<BitShares<P>> prods;
  // Malicious: item-major rows (bits and prods stay empty).
  EdaRows rows;
  std::size_t size() const { return r.size(); }
};

template <typename P>
struct DaBits : MoveOnly {
  BitShares<P> b;
  Shares<P> a;
};

template <typename P>
struct RootTuples : MoveOnly {
  enum Mono { kU = 0, kV, kW, kVW, kUW, kUV, kUVW };
  BitShares<P> u, v, w;
  std::array<Shares<P>, 7> mono;  // indexed by Mono
};

// Comparison tuples for LessThanZero of a width with `groups` group nodes (one per value;
// words in ltz::LtzLayoutFor(groups)).
template <typename P>
struct LtzTuples : MoveOnly {
  int groups = 0;
  Shares<P> r;
  // Malicious: item-major rows (ltz_layout.h's row words; bin and mono stay empty).
  EdaRows rows;
  // Semi-honest: the binary values bitsliced (bin[v] holds value v of every item) and the
  // root's arithmetic monomials.
  std::vector<BitShares<P>> bin;
  std::vector<Shares<P>> mono;
  std::size_t size() const { return r.size(); }
};

template <typename P>
class BitPreprocessing {
 public:
  virtual ~BitPreprocessing() = default;

  virtual PartyId party() const = 0;
  // This party's share of the binary MAC key beta (0 in semi-honest mode).
  virtual std::uint64_t bit_mac_key_share() const = 0;

  virtual Result<BitTriples<P>> GetBitTriples(std::size_t n) = 0;
  virtual Result<EdaBits<P>> GetEdaBits(std::size_t n) = 0;
  virtual Result<DaBits<P>> GetDaBits(std::size_t n) = 0;
  virtual Result<RootTuples<P>> GetRootTuples(std::size_t n) = 0;
  virtual Result<BitShares<P>> GetBitRandoms(std::size_t n) = 0;
  // n comparison tuples for widths with `groups` group nodes (ltz::kMinGroups..kMaxGroups).
  virtual Result<LtzTuples<P>> GetLtzTuples(std::size_t n, int groups) = 0;
  // As Preprocessing::UseRoles (from BinaryContext::Create).
  virtual void UseRoles(const std::shared_ptr<RoleTable>& /*roles*/) {}
};

}  // namespace mpcache::mpc
