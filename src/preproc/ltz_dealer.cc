// The bit dealer's comparison tuples (mpc/compare/ltz_layout.h): given every party's stream
// words of a chunk, set the corrector's determined words so that the shares are
// consistent: the group products of r's bits, the combination round's mask products, every
// MAC, [r] (its low W bits are the binary bits, the rest uniform) and the root's arithmetic
// monomials of its masks.
#include <bit>

#include "preproc/bit_dealer.h"

namespace mpcache::preproc {

namespace {

using mpc::u128;

// The value of every binary monomial of the tuple from its free values: val[v] for v <
// free_values must be set; fills the products. Each word holds items in parallel (64 items
// bitsliced in semi-honest mode, one item in bit 0 in malicious mode): a product is the AND
// of its factors' words.
void Products(const mpc::ltz::LtzLayout& l, std::vector<std::uint64_t>& val) {
  for (int g = 0; g < l.groups; ++g) {
    const std::size_t base =
        static_cast<std::size_t>(mpc::edabit::kGroupBits) * static_cast<std::size_t>(g);
    for (unsigned mask = 0; mask < (1u << l.GroupSize(g)); ++mask) {
      if (std::popcount(mask) < 2) continue;
      std::uint64_t prod = ~std::uint64_t{0};  // AND of r's bits in the mask
      for (unsigned m = mask; m != 0; m &= m - 1) {
        prod &= val[base + static_cast<std::size_t>(std::countr_zero(m))];
      }
      val[static_cast<std::size_t>(l.GroupMono(g, mask))] = prod;
    }
  }
  for (std::size_t q = 0; q < l.supers.size(); ++q) {
    const mpc::ltz::SuperNode& s = l.supers[q];
    for (std::size_t i = static_cast<std::size_t>(s.vars); i < s.monos.size(); ++i) {
      std::uint64_t prod = ~std::uint64_t{0};  // AND of the singletons (fresh masks) it holds
      for (int v = 0; v < s.vars; ++v) {
        if ((s.monos[i] & s.monos[static_cast<std::size_t>(v)]) != 0) {
          prod &= val[static_cast<std::size_t>(l.SuperMono(static_cast<int>(q), v))];
        }
      }
      val[static_cast<std::size_t>(l.SuperMono(static_cast<int>(q), static_cast<int>(i)))] = prod;
    }
  }
}

// The root's arithmetic monomials (0/1) from its mask bits (bit v of `masks`).
std::uint64_t RootMono(const mpc::ltz::RootMonos& root, std::size_t k, unsigned masks) {
  return (masks & root.monos[k]) == root.monos[k] ? 1 : 0;
}

}  // namespace

template <typename P>
void InProcessBitDealer<P>::FillLtzLocked(BitItem item, std::size_t units, std::int32_t corrector,
                                          const std::vector<std::uint64_t*>& part) {
  const mpc::ltz::LtzLayout& l = mpc::ltz::LtzLayoutFor(LtzItemGroups(item));
  const std::size_t uw = UnitWords(item), np = seeds_.size(),
                    last = static_cast<std::size_t>(corrector);
  const auto nb = static_cast<std::size_t>(l.num_binary);
  const auto nfree = static_cast<std::size_t>(l.free_values);
  const auto root_masks = static_cast<std::size_t>(l.root_masks);
  std::vector<std::uint64_t> val(nb);
  for (std::size_t u = 0; u < units; ++u) {
    const std::size_t base = u * uw;
    auto others = [&](std::size_t w) {
      std::uint64_t s = 0;
      for (std::size_t p = 0; p < np; ++p) {
        if (p != last) s ^= part[p][base + w];
      }
      return s;
    };
    auto sum_others = [&](std::size_t w) {
      std::uint64_t s = 0;
      for (std::size_t p = 0; p < np; ++p) {
        if (p != last) s += part[p][base + w];
      }
      return s;
    };
    std::uint64_t* lp = part[last] + base;
    if constexpr (P::kMalicious) {
      for (std::size_t v = 0; v < nfree; ++v) val[v] = (others(v) ^ lp[v]) & 1;
      Products(l, val);
      for (std::size_t v = 0; v < nb; ++v) {
        if (v >= nfree) lp[v] = (val[v] ^ others(v)) & 1;  // a value word: bit 0 (IsBitCorrection)
        lp[nb + v] = (beta_ & (0 - std::uint64_t{val[v]})) ^ others(nb + v);
      }
      auto join = [&](std::size_t p, std::size_t w) {
        return (u128{part[p][base + w + 1]} << 64) | part[p][base + w];
      };
      auto fix128 = [&](std::size_t w, u128 value) {
        u128 s = 0;
        for (std::size_t p = 0; p < np; ++p) {
          if (p != last) s += join(p, w);
        }
        const u128 mine = value - s;
        lp[w] = static_cast<std::uint64_t>(mine);
        lp[w + 1] = static_cast<std::uint64_t>(mine >> 64);
      };
      // r mod 2^W is the bits; the rest is uniform (the sum of the parties' stream words),
      // so that c = x + r opened at l + 48 bits is uniform.
      std::uint64_t r = 0;
      for (int j = 0; j < l.r_bits; ++j) r |= std::uint64_t{val[static_cast<std::size_t>(j)]} << j;
      u128 upper = 0;
      for (std::size_t p = 0; p < np; ++p) upper += join(p, l.RWord());
      const u128 r_full = (upper << l.r_bits) | r;
      fix128(l.RWord(), r_full);
      fix128(l.RMacWord(), alpha_ * r_full);
      unsigned masks = 0;
      for (int v = 0; v < l.root.vars; ++v) {
        masks |= static_cast<unsigned>(val[root_masks + static_cast<std::size_t>(v)]) << v;
      }
      for (std::size_t k = 0; k < l.root.monos.size(); ++k) {
        const u128 mono = RootMono(l.root, k, masks);
        fix128(l.MonoWord(static_cast<int>(k)), mono);
        fix128(l.MonoWord(static_cast<int>(k)) + 2, alpha_ * mono);
      }
    } else {
      // 64 items, bitsliced binary values; item i is bit i of each value word.
      for (std::size_t v = 0; v < nfree; ++v) val[v] = others(v) ^ lp[v];
      Products(l, val);
      for (std::size_t i = 0; i < 64; ++i) {
        const auto bit = [&](std::size_t v) { return (val[v] >> i) & 1; };
        std::uint64_t r = 0;
        for (int j = 0; j < l.r_bits; ++j) r |= bit(static_cast<std::size_t>(j)) << j;
        const std::size_t rw = l.SemiRWord() + i;
        if (l.r_bits < 64) r |= (sum_others(rw) + lp[rw]) << l.r_bits;  // uniform upper bits
        lp[rw] = r - sum_others(rw);
        unsigned masks = 0;
        for (int v = 0; v < l.root.vars; ++v) {
          masks |= static_cast<unsigned>(bit(root_masks + static_cast<std::size_t>(v))) << v;
        }
        for (std::size_t k = 0; k < l.root.monos.size(); ++k) {
          const std::size_t w = l.SemiMonoWord(static_cast<int>(k)) + i;
          lp[w] = RootMono(l.root, k, masks) - sum_others(w);
        }
      }
      for (std::size_t v = nfree; v < nb; ++v) lp[v] = val[v] ^ others(v);
    }
  }
}

template void InProcessBitDealer<mpc::SemiHonest>::FillLtzLocked(
    BitItem, std::size_t, std::int32_t, const std::vector<std::uint64_t*>&);
template void InProcessBitDealer<mpc::Spdz2k>::FillLtzLocked(BitItem, std::size_t, std::int32_t,
                                                             const std::vector<std::uint64_t*>&);

}  // namespace mpcache::preproc
