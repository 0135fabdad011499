// Batches of fixed-mask operations (mpc/matmul.h's algebra), each batch ONE round:
//
//   MaskFixedMany: mask several operands (cached K/V rows, private weight matrices) with
//     their own dealer matrix masks [A_i]; D_i = X_i - A_i of all of them are opened
//     together (1 round, OpenBytes<P>() x sum of sizes to each peer). Each operand is
//     masked once for its lifetime.
//   FixedProductBatch: any number of products, each with one fixed operand — only the
//     fresh operand of each product is opened (E = Y - B under a dealer matrix triple bound
//     to the fixed operand's mask), all in 1 round:
//       x W  (W fixed, k x n; x fresh, m x k):  E[W] + [B]D + [BA]   opens m*k values
//       X y  (X fixed, m x k; y fresh, k x n):  [X]E + D[B] + [AB]   opens k*n values
//
// mpc/matmul.h's MaskFixed and fixed-operand MatMul are the one-operand / one-product
// cases of these; the secure forward needs every cached row's product of a layer in the
// same round.
#pragma once

#include <cstddef>
#include <vector>

#include "mpc/matmul.h"

namespace mpcache::mpc {

template <typename P>
struct FixedRequest {
  Shares<P> x;  // rows x cols, row-major; moved into the FixedOperand
  std::size_t rows = 0, cols = 0;
};

template <typename P>
Result<std::vector<FixedOperand<P>>> MaskFixedMany(Context<P>& ctx,
                                                   std::vector<FixedRequest<P>> requests);

template <typename P>
class FixedProductBatch {
 public:
  explicit FixedProductBatch(Context<P>& ctx) : ctx_(ctx) {}

  // Queue x (m x w.rows) times the fixed w. Operands are read in Exchange(): keep them alive.
  std::size_t PrepareRight(const Shares<P>& x, std::size_t m, const FixedOperand<P>& w);
  // Queue the fixed x times y (x.cols x n).
  std::size_t PrepareLeft(const FixedOperand<P>& x, const Shares<P>& y, std::size_t n);
  std::size_t size() const { return jobs_.size(); }

  // Fetch the triples, open every fresh operand in one round, compute every product.
  Status Exchange();
  // The product of a handle (moved out; once per handle, after Exchange()).
  Shares<P> Take(std::size_t handle) { return std::move(jobs_[handle].out); }

 private:
  struct Job {
    const FixedOperand<P>* fixed;
    const Shares<P>* fresh;
    MaskSide side;
    std::size_t other;  // m (kRight) or n (kLeft)
    Shares<P> out;
  };
  Context<P>& ctx_;
  std::vector<Job> jobs_;
};

}  // namespace mpcache::mpc
