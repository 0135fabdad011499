// The two attention products against a secret KV cache held in fixed-mask blocks, each ONE
// round that opens only the fresh operand, once, whatever the number of blocks:
//
//   scores  s[h, t] = q_h . K_t[kv(h)]         opens q - B     (n_heads x hs = dim values)
//   mix     o[h, :] = sum_t p[h, t] V_t[kv(h)]  opens p - B     (n_heads x L values)
//
// where kv(h) = h / (n_heads / n_kv) (grouped-query heads share a kv head), t runs over the
// used rows of the listed blocks in order (L in all), and each block is a matrix X (rows x
// kv_dim) masked once with its own dealer matrix [A] (D = X - A public, opened a row at a
// time as the cache grows). With the dealer's attention triple ([B], [C]) for the block
// list (mpc/preprocessing.h: AttentionTriple; B is ONE mask of the query for all blocks):
//   scores: s = E_q [K]^T + [B] D^T + [C]      (per head, over the head's kv columns)
//   mix:    o = E_p [V]  + [B] D   + [C]
// Party-to-party cost per product: 1 round, OpenBytes<P>() x (dim or n_heads x L) to each
// of the 2 peers; no per-row opening, no zero padding for the grouped heads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "mpc/context.h"

namespace mpcache::mpc {

// One block of a cached matrix (keys or values of a layer) under its fixed mask.
template <typename P>
struct FixedBlock {
  std::uint64_t mask_id = 0;
  std::size_t capacity = 0;      // rows of the block (and of its mask)
  std::size_t rows = 0;          // rows appended so far
  Shares<P> x;                   // [X], capacity x kv_dim (the first `rows` rows are set)
  std::vector<std::uint64_t> d;  // D = X - A of the appended rows (rows x kv_dim)
  Shares<P> a;                   // [A], released once the block is full
};

struct HeadShape {
  std::size_t n_heads = 0, head_size = 0, kv_dim = 0;
};

// A block used by a product: its first `rows` rows.
template <typename P>
struct BlockUse {
  const FixedBlock<P>* block = nullptr;
  std::size_t rows = 0;
};

// The dealer's shape for a product over `blocks` (side kRight: scores, kLeft: mix).
template <typename P>
AttentionShape ShapeOf(MaskSide side, const HeadShape& h, const std::vector<BlockUse<P>>& blocks);

// Appends one row to each block in `rows` (row i: values of rows[i].second, kv_dim each),
// opening every D row together: 1 round, OpenBytes<P>() x kv_dim x rows.size() per peer.
template <typename P>
Status AppendRows(Context<P>& ctx, std::vector<std::pair<FixedBlock<P>*, Shares<P>>> rows);

// AppendRows without a round of its own: the rows' shares enter their blocks now (rows
// counted, masks used up as in AppendRows) and their D rows ride the session's next exchange
// (Context::Defer; same bytes, logged for the MAC check like any opening). Until then the
// blocks hold rows without D: AttentionScores / AttentionMix read D only after their own
// opening, which carries it, and refuse a block whose D is still missing. The caller keeps
// the returned source alive until done() (the context holds it weakly) and must neither move
// nor drop the blocks before.
template <typename P>
class DeferredRows final : public DeferredSource<P> {
 public:
  DeferredRows(Shares<P> masked, std::vector<std::pair<FixedBlock<P>*, std::size_t>> to)
      : masked_(std::move(masked)), to_(std::move(to)), done_(to_.empty()) {}
  bool done() const { return done_; }
  Result<Shares<P>> Prepare(Context<P>& ctx) override;
  Status Finish(Context<P>& ctx, std::span<const std::uint64_t> opened) override;
  bool truncation() const override { return false; }  // masked by the blocks' own masks

 private:
  Shares<P> masked_;                                        // X - A of every row, in order
  std::vector<std::pair<FixedBlock<P>*, std::size_t>> to_;  // each row's block and width
  bool sent_ = false;
  bool done_;
};
template <typename P>
Result<std::shared_ptr<DeferredRows<P>>> DeferRows(
    Context<P>& ctx, std::vector<std::pair<FixedBlock<P>*, Shares<P>>> rows);

// q (n_heads x head_size) against the key blocks: n_heads x L raw scores (2f bits when q
// and K are at f), head-major (row h, column t in block order).
template <typename P>
Result<Shares<P>> AttentionScores(Context<P>& ctx, const HeadShape& h, const Shares<P>& q,
                                  const std::vector<BlockUse<P>>& keys);
// p (n_heads x L) times the value blocks: n_heads x head_size (2f bits).
template <typename P>
Result<Shares<P>> AttentionMix(Context<P>& ctx, const HeadShape& h, const Shares<P>& p,
                               const std::vector<BlockUse<P>>& values);

}  // namespace mpcache::mpc
