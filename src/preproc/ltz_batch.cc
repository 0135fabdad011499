// Comparison tuples (mpc/compare/ltz_layout.h): dealer units -> items, for BitStore and
// BitExpander. Malicious units are the items' rows, kept in place (as edaBits'); semi-honest
// units hold 64 items, bitsliced.
#include <algorithm>
#include <memory>
#include <span>

#include "preproc/bit_batch.h"

namespace mpcache::preproc {

template <typename P>
SemiLtzUnpacker<P>::SemiLtzUnpacker(std::size_t n, int groups)
    : layout_(mpc::ltz::LtzLayoutFor(groups)), n_(n), words_(mpc::WordsFor(n)) {
  static_assert(!P::kMalicious, "malicious tuples are kept in place as rows");
  // Every vector grows in item order as the units come (no zero-fill to overwrite: the
  // copies are most of what a comparison's tuples cost the party online).
  t_.groups = groups;
  t_.r.v.reserve(n);
  t_.bin.resize(static_cast<std::size_t>(layout_.num_binary));
  for (mpc::BitShares<P>& b : t_.bin) {
    b.n = n;
    b.v.reserve(words_);
  }
  t_.mono.resize(layout_.root.monos.size());
  for (mpc::Shares<P>& m : t_.mono) m.v.reserve(n);
}

template <typename P>
void SemiLtzUnpacker<P>::Append(std::span<const std::uint64_t> units) {
  const std::size_t uw = layout_.SemiUnitWords();
  for (std::size_t off = 0; off + uw <= units.size() && u_ < words_; off += uw, ++u_) {
    const std::uint64_t* x = units.data() + off;
    for (std::size_t v = 0; v < t_.bin.size(); ++v) t_.bin[v].v.push_back(x[v]);
    // Each arithmetic vector's 64 items are consecutive in the unit: one copy apiece.
    const std::size_t items = std::min<std::size_t>(64, n_ - 64 * u_);
    const auto append = [&](std::size_t word, mpc::Shares<P>& dst) {
      dst.v.insert(dst.v.end(), x + word, x + word + items);
    };
    append(layout_.SemiRWord(), t_.r);
    for (std::size_t k = 0; k < t_.mono.size(); ++k) {
      append(layout_.SemiMonoWord(static_cast<int>(k)), t_.mono[k]);
    }
  }
}

template <typename P>
mpc::LtzTuples<P> SemiLtzUnpacker<P>::Finish() && {
  // Short of units (not from a well-formed batch): zeros, as before, for the caller's
  // shape check to see the right sizes.
  for (mpc::BitShares<P>& b : t_.bin) b.v.resize(words_);
  t_.r.v.resize(n_);
  for (mpc::Shares<P>& m : t_.mono) m.v.resize(n_);
  return std::move(t_);
}

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
    SemiLtzUnpacker<P> unpack(n, groups);
    bool first = true;
    while (!w.chunks.empty()) {
      const std::vector<std::uint64_t> c = std::move(w.chunks.front());
      w.chunks.pop_front();
      const std::size_t off = first ? std::min(w.first_offset, c.size()) : 0;
      first = false;
      unpack.Append(std::span<const std::uint64_t>(c).subspan(off));
    }
    t = std::move(unpack).Finish();
  }
  return t;
}

template class SemiLtzUnpacker<mpc::SemiHonest>;
template mpc::LtzTuples<mpc::SemiHonest> UnpackLtzTuples<mpc::SemiHonest>(BitUnits, std::size_t,
                                                                          int);
template mpc::LtzTuples<mpc::Spdz2k> UnpackLtzTuples<mpc::Spdz2k>(BitUnits, std::size_t, int);

}  // namespace mpcache::preproc
