// Comparison tuples (mpc/compare/ltz_layout.h): dealer units -> items, for BitStore and
// BitExpander. Malicious units are the items' rows, kept in place (as edaBits'); semi-honest
// units hold 64 items, bitsliced.
#include <algorithm>
#include <memory>

#include "preproc/bit_batch.h"

namespace mpcache::preproc {

template <typename P>
mpc::LtzTuples<P> UnpackLtzTuples(BitUnits w, std::size_t n, int groups) {
  const mpc::ltz::LtzLayout& layout = mpc::ltz::LtzLayoutFor(groups);
  mpc::LtzTuples<P> t;
  t.groups = groups;
  const auto join = [](std::uint64_t lo, std::uint64_t hi) { return (mpc::u128{hi} << 64) | lo; };
  if constexpr (P::kMalicious) {
    t.r = mpc::Shares<P>(n);
    const std::size_t uw = layout.RowWords();
    t.rows.rows.reserve(n);
    bool first = true;
    while (!w.chunks.empty() && t.rows.size() < n) {
      auto chunk = std::make_shared<std::vector<std::uint64_t>>(std::move(w.chunks.front()));
      w.chunks.pop_front();
      const std::size_t off0 = first ? w.first_offset : 0;
      first = false;
      for (std::size_t off = off0; off + uw <= chunk->size() && t.rows.size() < n; off += uw) {
        std::uint64_t* x = chunk->data() + off;
        const std::size_t i = t.rows.size();
        t.r.v[i] = join(x[layout.RWord()], x[layout.RWord() + 1]);
        t.r.m[i] = join(x[layout.RMacWord()], x[layout.RMacWord() + 1]);
        t.rows.rows.push_back(x);
      }
      t.rows.owners.push_back(std::move(chunk));
    }
  } else {
    const std::size_t uw = layout.SemiUnitWords();
    const std::size_t values = static_cast<std::size_t>(layout.num_binary);
    const std::size_t words = mpc::WordsFor(n);
    // Every vector grows in item order as the units come (no zero-fill to overwrite: the
    // copies are most of what a comparison's tuples cost the party online).
    t.r.v.reserve(n);
    t.bin.resize(values);
    for (mpc::BitShares<P>& b : t.bin) {
      b.n = n;
      b.v.reserve(words);
    }
    t.mono.resize(layout.root.monos.size());
    for (mpc::Shares<P>& m : t.mono) m.v.reserve(n);
    std::size_t u = 0;
    bool first = true;
    while (!w.chunks.empty() && u < words) {
      const std::vector<std::uint64_t> c = std::move(w.chunks.front());
      w.chunks.pop_front();
      for (std::size_t off = first ? w.first_offset : 0; off + uw <= c.size() && u < words;
           off += uw, ++u) {
        const std::uint64_t* x = c.data() + off;
        for (std::size_t v = 0; v < values; ++v) t.bin[v].v.push_back(x[v]);
        // Each arithmetic vector's 64 items are consecutive in the unit: one copy apiece.
        const std::size_t items = std::min<std::size_t>(64, n - 64 * u);
        const auto append = [&](std::size_t word, mpc::Shares<P>& dst) {
          dst.v.insert(dst.v.end(), x + word, x + word + items);
        };
        append(layout.SemiRWord(), t.r);
        for (std::size_t k = 0; k < t.mono.size(); ++k) {
          append(layout.SemiMonoWord(static_cast<int>(k)), t.mono[k]);
        }
      }
      first = false;
    }
    // Short of units (not from a well-formed batch): zeros, as before, for the caller's
    // shape check to see the right sizes.
    for (mpc::BitShares<P>& b : t.bin) b.v.resize(words);
    t.r.v.resize(n);
    for (mpc::Shares<P>& m : t.mono) m.v.resize(n);
  }
  return t;
}

template mpc::LtzTuples<mpc::SemiHonest> UnpackLtzTuples<mpc::SemiHonest>(BitUnits, std::size_t,
                                                                          int);
template mpc::LtzTuples<mpc::Spdz2k> UnpackLtzTuples<mpc::Spdz2k>(BitUnits, std::size_t, int);

}  // namespace mpcache::preproc
