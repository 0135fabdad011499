// Batched Beaver multiplication and squaring (MP-SPDZ's init -> prepare many -> one
// exchange -> finalize).
//
// Cost (per party, all-to-all opening): a batch of n products and q squares is ONE round;
// each party sends (2n + q) ring elements of 8 bytes to each of its 2 peers, i.e.
// 2 x 8 x (2n + q) bytes. Products use triples ([a],[b],[c=ab]): open d = x - a, e = y - b,
// z = c + d[b] + e[a] + de. Squares use square pairs ([a],[a^2]): open d = x - a,
// x^2 = a^2 + 2d[a] + d^2. In Spdz2k mode the openings are logged for the next MAC check.
#pragma once

#include <cstddef>
#include <vector>

#include "mpc/context.h"

namespace mpcache::mpc {

template <typename P>
class BeaverBatch {
 public:
  explicit BeaverBatch(Context<P>& ctx) : ctx_(ctx) {}

  // Queue the elementwise product x * y (same sizes) / the square x * x. The operands are
  // read during Exchange(): keep them alive and unchanged until then. Returns a handle.
  std::size_t Prepare(const Shares<P>& x, const Shares<P>& y);
  std::size_t PrepareSquare(const Shares<P>& x);

  // Fetch preprocessing, open everything in one round (or two through a king, chosen per
  // batch by the caller, or by the role table for kByRole: context.h), compute every result.
  Status Exchange(OpenMode mode = OpenMode::kByRole, PartyId king = 0);

  // The result of a handle (moved out: call once per handle, after Exchange()).
  Shares<P> Take(std::size_t handle);

 private:
  struct Job {
    const Shares<P>* x;
    const Shares<P>* y;  // nullptr: square
    Shares<P> out;
  };
  Context<P>& ctx_;
  std::vector<Job> jobs_;
  bool done_ = false;
};

template <typename P>
Result<Shares<P>> Mul(Context<P>& ctx, const Shares<P>& x, const Shares<P>& y);

template <typename P>
Result<Shares<P>> Square(Context<P>& ctx, const Shares<P>& x);

}  // namespace mpcache::mpc
