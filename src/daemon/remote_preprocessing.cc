#include "daemon/remote_preprocessing.h"

#include <algorithm>
#include <array>
#include <string>
#include <tuple>
#include <type_traits>

#include "daemon/bit_pool.h"

namespace mpcache::daemon {

namespace {

using preproc::BatchRequest;
using preproc::BitItem;
using preproc::ItemType;

bool Elementwise(ItemType t) {
  return t == ItemType::kTriple || t == ItemType::kSquare || t == ItemType::kTrunc ||
         t == ItemType::kBit || t == ItemType::kRandom || t == ItemType::kInputMask ||
         t == ItemType::kFused;
}

std::uint64_t RoundUp64(std::uint64_t n) {
  return (n + 63) / 64 * 64;
}

std::int32_t Param(const BatchRequest& r) {
  return (r.type == ItemType::kTrunc || r.type == ItemType::kFused) ? r.frac_bits
         : r.type == ItemType::kInputMask                           ? r.owner
                                                                    : 0;
}

std::string Describe(const BatchRequest& r) {
  std::string s = preproc::ItemTypeName(r.type);
  switch (r.type) {
    case ItemType::kMatrixMask:
      return s + " " + std::to_string(r.rows) + " x " + std::to_string(r.cols);
    case ItemType::kMatrixTriple:
      return s + " (mask #" + std::to_string(r.mask_id) + " of " + std::to_string(r.rows) + " x " +
             std::to_string(r.cols) + ", " + (r.side == mpc::MaskSide::kLeft ? "left" : "right") +
             ", other " + std::to_string(r.other) + ")";
    case ItemType::kAttention:
      return s + " (" + (r.side == mpc::MaskSide::kLeft ? "mix" : "scores") + ", " +
             std::to_string(r.masks.size()) + " blocks from mask #" +
             (r.masks.empty() ? std::string("-") : std::to_string(r.masks.front())) + ", " +
             std::to_string(r.other) + " heads of " + std::to_string(r.rows) + ")";
    case ItemType::kTrunc:
      return s + " x " + std::to_string(r.count) + " (frac_bits " + std::to_string(r.frac_bits) +
             ")";
    case ItemType::kFused:
      return s + " x " + std::to_string(r.count) + " (shape " + std::to_string(r.frac_bits) + ")";
    case ItemType::kInputMask:
      return s + " x " + std::to_string(r.count) + " (owner " + std::to_string(r.owner) + ")";
    default:
      return s + " x " + std::to_string(r.count);
  }
}

}  // namespace

template <typename P>
class RemotePreprocessing<P>::Bits final : public mpc::BitPreprocessing<P> {
 public:
  Bits(RemotePreprocessing& owner, mpc::PartyId party, std::uint64_t key, const Seed& bit_seed)
      : owner_(owner), party_(party), key_(key), expander_(party, 3, bit_seed) {}
  mpc::PartyId party() const override { return party_; }
  std::uint64_t bit_mac_key_share() const override { return key_; }
  Result<mpc::BitTriples<P>> GetBitTriples(std::size_t n) override {
    return Get<mpc::BitTriples<P>>(BitItem::kBitTriple, n);
  }
  Result<mpc::EdaBits<P>> GetEdaBits(std::size_t n) override {
    return Get<mpc::EdaBits<P>>(BitItem::kEdaBit, n);
  }
  Result<mpc::DaBits<P>> GetDaBits(std::size_t n) override {
    return Get<mpc::DaBits<P>>(BitItem::kDaBit, n);
  }
  Result<mpc::RootTuples<P>> GetRootTuples(std::size_t n) override {
    return Get<mpc::RootTuples<P>>(BitItem::kRootTuple, n);
  }
  Result<mpc::BitShares<P>> GetBitRandoms(std::size_t n) override {
    return Get<mpc::BitShares<P>>(BitItem::kBitRandom, n);
  }
  Result<mpc::LtzTuples<P>> GetLtzTuples(std::size_t n, int groups) override {
    if (groups < mpc::ltz::kMinGroups || groups > mpc::ltz::kMaxGroups) {
      return InvalidArgument("comparison tuples for " + std::to_string(groups) + " group nodes");
    }
    return Get<mpc::LtzTuples<P>>(preproc::LtzItem(groups), n);
  }

  // Files one answer of the dealer into the item's reserve.
  // The answer is a seed-compressed batch (preproc/bit_batch.h) of the n items asked for,
  // expanded with this party's bit seed.
  void UseRoles(const std::shared_ptr<mpc::RoleTable>& roles) override { owner_.roles_ = roles; }
  Status Deliver(BitItem item, std::uint64_t n, std::int32_t corrector,
                 const std::vector<std::uint8_t>& answer) {
    MPCACHE_ASSIGN_OR_RETURN(preproc::BitBatch batch, dealer_proto::DecodeBitBatch(answer));
    batch.corrector = corrector;  // not in the header: the one this party asked for
    if (batch.item != item || batch.count != n) {
      return ProtocolError("asked the dealer for " + std::to_string(n) + " " +
                           preproc::BitItemName(item) + " items, got " +
                           std::to_string(batch.count) + " " + preproc::BitItemName(batch.item));
    }
    if (preproc::IsLtzItem(item)) return Add<mpc::LtzTuples<P>>(batch);
    switch (item) {
      case BitItem::kBitTriple:
        return Add<mpc::BitTriples<P>>(batch);
      case BitItem::kEdaBit:
        return Add<mpc::EdaBits<P>>(batch);
      case BitItem::kDaBit:
        return Add<mpc::DaBits<P>>(batch);
      case BitItem::kRootTuple:
        return Add<mpc::RootTuples<P>>(batch);
      case BitItem::kBitRandom:
        return Add<mpc::BitShares<P>>(batch);
    }
    return Internal("unknown comparison item");
  }

  // Items fetched per dealer request (about 1-4 MB each in malicious mode).
  static std::uint64_t Chunk(BitItem item) {
    if (preproc::IsLtzItem(item)) return 512;  // 0.3-3.6 MB (malicious)
    static constexpr std::uint64_t kChunk[preproc::kLtzItemBase] = {32768, 512, 8192, 32768, 2048};
    return kChunk[static_cast<int>(item)];
  }

 private:
  // The reserve of `item` (comparison tuples: one per group count).
  template <typename T>
  BitReserve<P, T>& Reserve(BitItem item) {
    if constexpr (std::is_same_v<T, mpc::LtzTuples<P>>) {
      return ltz_reserves_[static_cast<std::size_t>(static_cast<int>(item) -
                                                    preproc::kLtzItemBase)];
    } else {
      (void)item;
      return std::get<BitReserve<P, T>>(reserves_);
    }
  }
  template <typename T>
  Status Add(const preproc::BitBatch& batch) {
    MPCACHE_ASSIGN_OR_RETURN(T x, expander_.template Expand<T>(batch));
    Reserve<T>(batch.item).Add(std::move(x));
    return Status::Ok();
  }
  template <typename T>
  Result<T> Get(BitItem item, std::size_t n) {
    BitReserve<P, T>& reserve = Reserve<T>(item);
    const QueueKey key{1, static_cast<std::uint64_t>(item), 0, 0, 0};
    const std::uint64_t ahead = RoundUp64(owner_.Ahead(key, n, Chunk(item)));
    while (reserve.left() < n) {
      if (owner_.Pending(key) > 0) {
        MPCACHE_RETURN_IF_ERROR(owner_.Drain(key));
        continue;
      }
      const std::uint64_t want = std::min<std::uint64_t>(
          owner_.max_request_, RoundUp64(std::max<std::uint64_t>(n - reserve.left(), ahead)));
      MPCACHE_RETURN_IF_ERROR(owner_.IssueBits(item, want, false));
      owner_.traffic_.waited += 1;
      MPCACHE_RETURN_IF_ERROR(owner_.Drain(key));
    }
    T out = reserve.Take(n);
    if (owner_.Pending(key) == 0 && reserve.left() < ahead && owner_.in_flight() < kMaxInFlight) {
      MPCACHE_RETURN_IF_ERROR(owner_.IssueBits(item, ahead, true));
    }
    return out;
  }

  std::tuple<BitReserve<P, mpc::BitTriples<P>>, BitReserve<P, mpc::EdaBits<P>>,
             BitReserve<P, mpc::DaBits<P>>, BitReserve<P, mpc::RootTuples<P>>,
             BitReserve<P, mpc::BitShares<P>>>
      reserves_;
  std::array<BitReserve<P, mpc::LtzTuples<P>>, preproc::kNumBitItems - preproc::kLtzItemBase>
      ltz_reserves_;
  RemotePreprocessing& owner_;
  mpc::PartyId party_;
  std::uint64_t key_;
  preproc::BitExpander<P> expander_;
};

template <typename P>
RemotePreprocessing<P>::~RemotePreprocessing() = default;

template <typename P>
mpc::BitPreprocessing<P>& RemotePreprocessing<P>::bits() {
  return *bits_;
}

template <typename P>
typename RemotePreprocessing<P>::QueueKey RemotePreprocessing<P>::KeyOf(const BatchRequest& r) {
  const auto type = static_cast<std::uint64_t>(r.type);
  switch (r.type) {
    case ItemType::kTrunc:
    case ItemType::kFused:
      return {0, type, static_cast<std::uint64_t>(static_cast<std::uint32_t>(r.frac_bits)), 0, 0};
    case ItemType::kInputMask:
      return {0, type, static_cast<std::uint64_t>(static_cast<std::uint32_t>(r.owner)), 0, 0};
    case ItemType::kMatrixMask:
      return {0, type, r.rows, r.cols, 0};
    case ItemType::kMatrixTriple:
      return {0, type, r.mask_id, static_cast<std::uint64_t>(r.side), r.other};
    case ItemType::kAttention:  // one queue per (layer, product): its first block's mask
      return {0, type, r.masks.empty() ? 0 : r.masks.front(), static_cast<std::uint64_t>(r.side),
              0};
    default:
      return {0, type, 0, 0, 0};
  }
}

template <typename P>
std::size_t RemotePreprocessing<P>::Pending(const QueueKey& key) const {
  auto it = pending_.find(key);
  return it == pending_.end() ? 0 : it->second;
}

template <typename P>
Status RemotePreprocessing<P>::CheckShape(const BatchRequest& r) const {
  const auto refuse = [&](const std::string& what, std::uint64_t limit) -> Status {
    return InvalidArgument("refusing to ask the dealer for " + Describe(r) + ": " + what +
                           " exceeds " + std::to_string(limit) + ", the most " + shapes_.source +
                           " can need");
  };
  if (r.type == ItemType::kMatrixMask) {
    if (r.rows > shapes_.max_dim) return refuse("rows", shapes_.max_dim);
    if (r.cols > shapes_.max_dim) return refuse("cols", shapes_.max_dim);
  } else if ((r.type == ItemType::kMatrixTriple || r.type == ItemType::kAttention) &&
             r.other > shapes_.max_other) {
    return refuse("other", shapes_.max_other);
  }
  return Status::Ok();
}

template <typename P>
Status RemotePreprocessing<P>::CheckAnswer(const InFlight& f, preproc::Batch& b) const {
  b.request.corrector = f.request.corrector;  // not in the header: the one asked for
  BatchRequest want = f.request;
  if (want.type == ItemType::kMatrixTriple) {
    auto shape = mask_shape_.find(want.mask_id);
    if (shape == mask_shape_.end()) {
      return Internal("matrix triple asked for mask #" + std::to_string(want.mask_id) +
                      ", which this party never asked for");
    }
    want.rows = shape->second.first;
    want.cols = shape->second.second;
  }
  if (b.seq != f.seq || !(b.request == want)) {
    return ProtocolError("the dealer answered the request for " + Describe(want) + " #" +
                         std::to_string(f.seq) + " with a batch of " + Describe(b.request) + " #" +
                         std::to_string(b.seq) + ": refusing it");
  }
  return Status::Ok();
}

template <typename P>
Status RemotePreprocessing<P>::Issue(BatchRequest r, bool ahead) {
  MPCACHE_RETURN_IF_ERROR(CheckShape(r));
  r.corrector = store_->CorrectorFor(r);
  const std::uint64_t seq = store_->IssueSeq(r.type);
  if (r.type == ItemType::kMatrixMask) mask_shape_[seq] = {r.rows, r.cols};
  MPCACHE_RETURN_IF_ERROR(link_->Send(dealer_proto::Encode(dealer_proto::BatchRequest{r, seq})));
  const QueueKey key = KeyOf(r);
  in_flight_.push_back({key, false, BitItem::kBitTriple, 0, r, seq, r.corrector});
  ++pending_[key];
  traffic_.requests += 1;
  if (ahead) traffic_.prefetched += 1;
  return Status::Ok();
}

template <typename P>
Status RemotePreprocessing<P>::IssueBits(BitItem item, std::uint64_t n, bool ahead) {
  std::int32_t corrector = preproc::kStaticCorrector;
  if (roles_) {
    const preproc::Security sec =
        P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
    corrector = roles_->CorrectorFor(
        preproc::BitCorrectionWords(sec, item, preproc::BitUnitsFor(sec, item, n)) * 8);
  }
  MPCACHE_RETURN_IF_ERROR(
      link_->Send(dealer_proto::Encode(dealer_proto::BitRequest{item, n, corrector})));
  const QueueKey key{1, static_cast<std::uint64_t>(item), 0, 0, 0};
  in_flight_.push_back({key, true, item, n, {}, 0, corrector});
  ++pending_[key];
  traffic_.requests += 1;
  if (ahead) traffic_.prefetched += 1;
  return Status::Ok();
}

template <typename P>
Status RemotePreprocessing<P>::ReadOne() {
  if (in_flight_.empty()) return Internal("no dealer request in flight to read the answer of");
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<std::uint8_t>> answer = link_->Recv(timeout_);
  traffic_.wait_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!answer.ok()) return answer.error();
  const InFlight f = in_flight_.front();
  in_flight_.pop_front();
  if (--pending_[f.key] == 0) pending_.erase(f.key);
  traffic_.bytes_received += answer->size();
  Status filed = Status::Ok();
  if (f.bits) {
    filed = bits_->Deliver(f.item, f.n, f.corrector, *answer);
  } else {
    MPCACHE_ASSIGN_OR_RETURN(preproc::Batch b, dealer_proto::DecodeBatch(*answer));
    MPCACHE_RETURN_IF_ERROR(CheckAnswer(f, b));
    filed = store_->Accept(b);
  }
  // What this answer cost the online phase: reading it, then expanding it.
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (f.corrector == store_->party()) {
    traffic_.corrected_answers += 1;
    traffic_.corrected_bytes += answer->size();
    traffic_.corrected_seconds += seconds;
  } else {
    traffic_.header_answers += 1;
    traffic_.header_seconds += seconds;
  }
  return filed;
}

template <typename P>
std::uint64_t RemotePreprocessing<P>::Ahead(const QueueKey& key, std::uint64_t n,
                                            std::uint64_t chunk) {
  std::uint64_t& largest = largest_[key];
  largest = std::max(largest, n);
  return std::min(max_request_, std::max(chunk, 2 * largest));
}

template <typename P>
Status RemotePreprocessing<P>::Drain(const QueueKey& key) {
  while (Pending(key) > 0) MPCACHE_RETURN_IF_ERROR(ReadOne());
  return Status::Ok();
}

template <typename P>
Status RemotePreprocessing<P>::PrefetchMask(std::size_t rows, std::size_t cols) {
  if (rows * cols > kMaxPrefetchElements || in_flight_.size() >= kMaxInFlight) return Status::Ok();
  const BatchRequest r{.type = ItemType::kMatrixMask, .rows = rows, .cols = cols};
  const std::uint64_t id = store_->next_seq(ItemType::kMatrixMask);
  MPCACHE_RETURN_IF_ERROR(Issue(r, true));
  auto use = use_of_shape_.find({rows, cols});
  if (use != use_of_shape_.end()) {
    MPCACHE_RETURN_IF_ERROR(PrefetchTriple(id, use->second.first, use->second.second));
  }
  return Status::Ok();
}

template <typename P>
Status RemotePreprocessing<P>::PrefetchTriple(std::uint64_t mask_id, mpc::MaskSide side,
                                              std::uint64_t other) {
  auto shape = mask_shape_.find(mask_id);
  if (shape == mask_shape_.end() || in_flight_.size() >= kMaxInFlight) return Status::Ok();
  const auto [rows, cols] = shape->second;
  if (other * (rows + cols) > kMaxPrefetchElements) return Status::Ok();
  return Issue(
      BatchRequest{
          .type = ItemType::kMatrixTriple, .mask_id = mask_id, .side = side, .other = other},
      true);
}

template <typename P>
Status RemotePreprocessing<P>::Refill(const BatchRequest& need) {
  const QueueKey key = KeyOf(need);
  preproc::PartyStore<P>& s = *store_;
  if (Elementwise(need.type)) {
    const std::int32_t param = Param(need);
    const std::size_t before = s.available(need.type, param);
    MPCACHE_RETURN_IF_ERROR(Drain(key));
    const std::uint64_t ahead =
        need.type == ItemType::kInputMask ? 0 : Ahead(key, need.count, ChunkFor(need.type));
    // Requests of at most max_request_ items (the dealer's pool.capacity_items).
    for (std::size_t got = s.available(need.type, param) - before; got < need.count;
         got = s.available(need.type, param) - before) {
      BatchRequest r = need;
      r.count =
          std::min<std::uint64_t>(max_request_, std::max<std::uint64_t>(need.count - got, ahead));
      MPCACHE_RETURN_IF_ERROR(Issue(r, false));
      traffic_.waited += 1;
      MPCACHE_RETURN_IF_ERROR(Drain(key));
    }
    return Status::Ok();
  }
  if (need.type == ItemType::kMatrixMask) {
    MPCACHE_RETURN_IF_ERROR(Drain(key));
    if (s.matrix_masks(need.rows, need.cols) > 0) return Status::Ok();
  } else if (need.type == ItemType::kMatrixTriple) {
    MPCACHE_RETURN_IF_ERROR(Drain(key));
    if (s.matrix_triples(need.mask_id, need.side, need.other) > 0) return Status::Ok();
  } else if (need.type == ItemType::kAttention) {
    const mpc::AttentionShape shape = preproc::AttentionShapeOf(need);
    MPCACHE_RETURN_IF_ERROR(Drain(key));
    if (s.attention_triples(shape) > 0) return Status::Ok();
  } else {
    return InvalidArgument(std::string("no refill for ") + preproc::ItemTypeName(need.type));
  }
  MPCACHE_RETURN_IF_ERROR(Issue(need, false));
  traffic_.waited += 1;
  return Drain(key);
}

template <typename P>
Status RemotePreprocessing<P>::OnAnnounce(const std::vector<mpc::AttentionShape>& plan) {
  // The step's attention triples, all asked for now (answered while the step runs). A shape
  // already in the store or in flight (including one issued earlier in this loop) is not
  // asked for twice.
  for (const mpc::AttentionShape& shape : plan) {
    if (in_flight_.size() >= kMaxInFlight) break;
    const BatchRequest r = preproc::AttentionRequest(shape);
    const bool in_flight =
        std::any_of(in_flight_.begin(), in_flight_.end(), [&](const InFlight& f) {
          BatchRequest same = r;
          same.corrector = f.request.corrector;  // whoever it names
          return !f.bits && f.request == same;
        });
    if (in_flight || store_->attention_triples(shape) > 0) continue;
    MPCACHE_RETURN_IF_ERROR(Issue(r, true));
  }
  return Status::Ok();
}

template <typename P>
Status RemotePreprocessing<P>::OnTake(const BatchRequest& taken) {
  preproc::PartyStore<P>& s = *store_;
  const QueueKey key = KeyOf(taken);
  const std::uint64_t ahead = Ahead(key, taken.count, ChunkFor(taken.type));
  if (Pending(key) > 0 || in_flight_.size() >= kMaxInFlight) return Status::Ok();
  switch (taken.type) {
    case ItemType::kTriple:
    case ItemType::kSquare:
    case ItemType::kTrunc:
    case ItemType::kFused:
    case ItemType::kBit:
    case ItemType::kRandom: {
      if (s.available(taken.type, Param(taken)) >= ahead) return Status::Ok();
      BatchRequest next = taken;
      next.count = ahead;
      return Issue(next, true);
    }
    case ItemType::kMatrixMask:
      if (s.matrix_masks(taken.rows, taken.cols) > 0) return Status::Ok();
      return PrefetchMask(taken.rows, taken.cols);
    case ItemType::kMatrixTriple: {
      auto shape = mask_shape_.find(taken.mask_id);
      if (shape != mask_shape_.end()) use_of_shape_[shape->second] = {taken.side, taken.other};
      if (s.matrix_triples(taken.mask_id, taken.side, taken.other) > 0) return Status::Ok();
      return PrefetchTriple(taken.mask_id, taken.side, taken.other);
    }
    default:
      return Status::Ok();  // input masks: sized by the session, never prefetched
  }
}

template <typename P>
Result<std::unique_ptr<RemotePreprocessing<P>>> RemotePreprocessing<P>::Open(
    std::unique_ptr<MessageLink> link, const dealer_proto::Join& join,
    std::chrono::milliseconds timeout, const MatrixShapeLimits& shapes) {
  std::unique_ptr<RemotePreprocessing> r(new RemotePreprocessing());
  r->link_ = std::move(link);
  r->timeout_ = timeout;
  r->shapes_ = shapes;
  MPCACHE_RETURN_IF_ERROR(r->link_->Send(dealer_proto::Encode(join)));
  MPCACHE_ASSIGN_OR_RETURN(auto answer, r->link_->Recv(timeout));
  MPCACHE_ASSIGN_OR_RETURN(r->setup_, dealer_proto::DecodeSetup(answer));
  const int party = static_cast<int>(join.party);
  r->store_ = std::make_unique<preproc::PartyStore<P>>(party, 3, r->setup_.party_seed);
  preproc::BatchLimits limits;
  limits.max_matrix_elements = std::min(limits.max_matrix_elements, r->shapes_.max_elements);
  limits.matrix_setting = "the most " + r->shapes_.source + " can need";
  r->store_->set_limits(std::move(limits));
  // The client's mask batches: the prompt's (prompt_len x vocab), the sampling noise's (if
  // any) and the outputs' (steps).
  const std::vector<std::uint64_t> sizes = dealer_proto::ClientMaskBatches(join);
  if (r->setup_.client_batches.size() != sizes.size()) {
    return ProtocolError("the dealer's Setup carries " +
                         std::to_string(r->setup_.client_batches.size()) +
                         " client mask batches, expected " + std::to_string(sizes.size()));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    preproc::Batch& b = r->setup_.client_batches[i];
    InFlight f;
    f.request =
        BatchRequest{.type = ItemType::kInputMask, .count = sizes[i], .owner = mpc::kClient};
    f.seq = i;
    MPCACHE_RETURN_IF_ERROR(r->CheckAnswer(f, b));
    MPCACHE_RETURN_IF_ERROR(r->store_->Accept(b));
  }
  r->setup_.client_batches.clear();
  RemotePreprocessing* self = r.get();
  r->store_->set_refill([self](const BatchRequest& need) { return self->Refill(need); });
  r->store_->set_on_take([self](const BatchRequest& taken) { return self->OnTake(taken); });
  r->store_->set_on_announce(
      [self](const std::vector<mpc::AttentionShape>& plan) { return self->OnAnnounce(plan); });
  r->chunk_ = r->setup_.chunk_items;
  r->max_request_ = r->setup_.max_request_items / 64 * 64;  // whole semi-honest bit units
  r->bits_ = std::make_unique<Bits>(*r, party, r->setup_.bit_key_share, r->setup_.bit_seed);
  return r;
}

template class RemotePreprocessing<mpc::SemiHonest>;
template class RemotePreprocessing<mpc::Spdz2k>;

}  // namespace mpcache::daemon
