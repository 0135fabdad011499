// PartyStore<P>: one party's pool of preprocessing, fed with the dealer's batches and
// consumed by the online phase through mpc::Preprocessing<P>.
//
// Accept(batch) expands a batch from the party's seed (plus corrections when the batch's
// request names this party its corrector) into the pool. A batch's sequence number must be either
// the next one of its type or one this store issued for a request (IssueSeq) and has not accepted
// yet, so requests may be answered out of order across queues of a type (a prefetching source),
// while a replayed or skipped batch is rejected with kProtocol. Get* removes items from the pool
// (each item is handed out once). When the pool is short, the optional refill source is
// asked to deliver (Accept) at least the missing amount; without one, kExhausted.
// Matrix masks are pooled per shape and handed out in sequence order (a mask's id is its
// batch's sequence number); matrix triples per (mask, side, other); attention triples by
// their whole shape (block list included).
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "preproc/batch.h"

namespace mpcache::preproc {

template <typename P>
class PartyStore final : public mpc::Preprocessing<P> {
 public:
  // Asked to Accept() batches covering `need` (elementwise types: need.count more items
  // of the pool; matrix items: one). The store checks the result afterwards.
  using Refill = std::function<Status(const BatchRequest& need)>;

  PartyStore(PartyId party, int num_parties, const Seed& seed);

  void set_refill(Refill refill) { refill_ = std::move(refill); }
  // Bounds on every batch this store accepts (and every matrix mask it asks for): a batch
  // beyond them is refused before it is expanded (batch.h: Components).
  void set_limits(BatchLimits limits) { limits_ = std::move(limits); }
  const BatchLimits& limits() const { return limits_; }
  // Told what each Get* took (elementwise: type, parameter and count; matrix items: the
  // request), after it took it: a prefetching source tops up from here.
  using TakeHook = std::function<Status(const BatchRequest& taken)>;
  void set_on_take(TakeHook hook) { on_take_ = std::move(hook); }
  std::uint64_t next_seq(ItemType type) const { return next_seq_[static_cast<std::size_t>(type)]; }
  // The sequence number of the next batch of `type` this party requests (reserved: a
  // batch carrying it is accepted once, whenever it arrives).
  std::uint64_t IssueSeq(ItemType type);
  Status Accept(const Batch& batch);
  // The corrector a request this party is about to send the dealer names: the role
  // table's for the current unit (counting the request's correction bytes as its demand),
  // or req.corrector while no table is bound. Every source that asks a dealer calls it.
  std::int32_t CorrectorFor(const BatchRequest& req);
  void UseRoles(const std::shared_ptr<mpc::RoleTable>& roles) override { roles_ = roles; }

  PartyId party() const override { return party_; }
  mpc::u128 mac_key_share() const override { return alpha_; }

  Result<mpc::Triples<P>> GetTriples(std::size_t n) override;
  Result<mpc::SquarePairs<P>> GetSquares(std::size_t n) override;
  Result<mpc::TruncPairs<P>> GetTruncPairs(std::size_t n, int frac_bits) override;
  Result<mpc::Shares<P>> GetBits(std::size_t n) override;
  Result<mpc::Shares<P>> GetRandoms(std::size_t n) override;
  Result<mpc::InputMasks<P>> GetInputMasks(std::size_t n, PartyId owner) override;
  Result<mpc::MatrixMask<P>> GetMatrixMask(std::size_t rows, std::size_t cols) override;
  Result<mpc::MatrixTriple<P>> GetMatrixTriple(std::uint64_t mask_id, mpc::MaskSide side,
                                               std::size_t other) override;
  Result<mpc::AttentionTriple<P>> GetAttentionTriple(const mpc::AttentionShape& shape) override;
  Result<mpc::FusedTriples<P>> GetFusedTriples(std::size_t n,
                                               const mpc::FusedShape& shape) override;
  // Passed to the announce hook (a prefetching source asks for the plan's items ahead).
  Status Announce(const std::vector<mpc::AttentionShape>& plan) override;
  using AnnounceHook = std::function<Status(const std::vector<mpc::AttentionShape>& plan)>;
  void set_on_announce(AnnounceHook hook) { on_announce_ = std::move(hook); }
  // Attention triples of this shape available without a refill.
  std::size_t attention_triples(const mpc::AttentionShape& shape) const;

  // Items handed out so far, per type (elements; matrices count 1 each).
  std::uint64_t consumed(ItemType t) const { return consumed_[static_cast<std::size_t>(t)]; }
  // Items available without a refill (elementwise types, for a given parameter).
  std::size_t available(ItemType t, std::int32_t param = 0) const;
  std::size_t matrix_masks(std::size_t rows, std::size_t cols) const;
  std::size_t matrix_triples(std::uint64_t mask_id, mpc::MaskSide side, std::size_t other) const;
  // Time spent expanding batches (offline work) and correction bytes received.
  double expand_seconds() const { return expand_seconds_; }
  std::uint64_t bytes_received() const { return bytes_received_; }

 private:
  struct Chunk {
    std::vector<mpc::Shares<P>> fields;
    std::vector<std::uint64_t> clear;  // input masks at their owner
    std::size_t offset = 0;
    std::size_t size() const { return fields[0].size(); }
  };
  using PoolKey = std::pair<ItemType, std::int32_t>;  // (type, frac bits | shape | owner)
  struct Pool {
    std::deque<Chunk> chunks;
    std::size_t available = 0;
  };

  Result<Chunk> Expand(const Batch& batch) const;
  // Take n elements of an elementwise pool, asking the refill source for what is missing.
  Result<Chunk> TakeElements(const BatchRequest& req, std::int32_t param);
  Result<Chunk> TakeFront(Pool& pool, const BatchRequest& req);  // n = req.count, available
  Status RequestMore(const BatchRequest& req);

  PartyId party_;
  int num_parties_;
  Seed seed_;
  Security security_;
  mpc::u128 alpha_;
  BatchLimits limits_;
  Refill refill_;
  TakeHook on_take_;
  std::array<std::uint64_t, kNumItemTypes> next_seq_{};               // next unassigned
  std::array<std::set<std::uint64_t>, kNumItemTypes> outstanding_{};  // issued, not accepted
  std::array<std::uint64_t, kNumItemTypes> consumed_{};
  std::map<PoolKey, Pool> pools_;
  using Shape = std::pair<std::size_t, std::size_t>;
  using TripleKey = std::tuple<std::uint64_t, mpc::MaskSide, std::size_t>;
  std::map<Shape, std::deque<mpc::MatrixMask<P>>> matrix_masks_;
  std::map<TripleKey, std::deque<mpc::MatrixTriple<P>>> matrix_triples_;
  std::deque<mpc::AttentionTriple<P>> attention_;  // in arrival order
  AnnounceHook on_announce_;
  std::shared_ptr<mpc::RoleTable> roles_;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> mask_shapes_;  // id -> shape
  double expand_seconds_ = 0;
  std::uint64_t bytes_received_ = 0;
};

}  // namespace mpcache::preproc
