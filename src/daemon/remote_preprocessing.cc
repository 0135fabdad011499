#include "daemon/remote_preprocessing.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "daemon/bit_pool.h"

namespace mpcache::daemon {

namespace {
constexpr std::uint64_t kBatchItems = 32768;            // elementwise items per dealer request
constexpr std::size_t kMaxPlan = std::size_t{1} << 20;  // requests recorded at most
constexpr std::size_t kCreditEvery = 8;                 // streamed answers per credit
}  // namespace

template <typename P>
class RemotePreprocessing<P>::Bits final : public mpc::BitPreprocessing<P> {
 public:
  Bits(RemotePreprocessing& owner, mpc::PartyId party, std::uint64_t key, const Seed& bit_seed)
      : owner_(owner), party_(party), key_(key), expander_(party, 3, bit_seed) {}
  mpc::PartyId party() const override { return party_; }
  std::uint64_t bit_mac_key_share() const override { return key_; }
  Result<mpc::BitTriples<P>> GetBitTriples(std::size_t n) override {
    return Get<mpc::BitTriples<P>>(preproc::BitItem::kBitTriple, n);
  }
  Result<mpc::EdaBits<P>> GetEdaBits(std::size_t n) override {
    return Get<mpc::EdaBits<P>>(preproc::BitItem::kEdaBit, n);
  }
  Result<mpc::DaBits<P>> GetDaBits(std::size_t n) override {
    return Get<mpc::DaBits<P>>(preproc::BitItem::kDaBit, n);
  }
  Result<mpc::RootTuples<P>> GetRootTuples(std::size_t n) override {
    return Get<mpc::RootTuples<P>>(preproc::BitItem::kRootTuple, n);
  }
  Result<mpc::BitShares<P>> GetBitRandoms(std::size_t n) override {
    return Get<mpc::BitShares<P>>(preproc::BitItem::kBitRandom, n);
  }

 private:
  template <typename T>
  Result<T> Exact(preproc::BitItem item, std::size_t n) {
    MPCACHE_ASSIGN_OR_RETURN(auto answer,
                             owner_.Ask(dealer_proto::Encode(dealer_proto::BitRequest{item, n})));
    // A seed-compressed batch (preproc/bit_batch.h), expanded with this party's bit seed.
    MPCACHE_ASSIGN_OR_RETURN(preproc::BitBatch batch, dealer_proto::DecodeBitBatch(answer));
    if (batch.count != n) {
      return ProtocolError("asked the dealer for " + std::to_string(n) + " " +
                           preproc::BitItemName(item) + " items, got " +
                           std::to_string(batch.count));
    }
    return expander_.template Expand<T>(batch);
  }
  template <typename T>
  Result<T> Get(preproc::BitItem item, std::size_t n) {
    if constexpr (!P::kMalicious) {
      return Exact<T>(item, n);
    } else {
      if (n == 0) return Exact<T>(item, n);
      auto fetch = [this, item](std::size_t k) { return Exact<T>(item, k); };
      return std::get<BitReserve<P, T>>(reserves_).Take(n, kChunk[static_cast<int>(item)], fetch);
    }
  }
  // Items fetched at least per dealer request (about 1-4 MB each).
  static constexpr std::size_t kChunk[preproc::kNumBitItems] = {32768, 512, 8192, 2048, 32768};
  std::tuple<BitReserve<P, mpc::BitTriples<P>>, BitReserve<P, mpc::EdaBits<P>>,
             BitReserve<P, mpc::DaBits<P>>, BitReserve<P, mpc::RootTuples<P>>,
             BitReserve<P, mpc::BitShares<P>>>
      reserves_;
  RemotePreprocessing& owner_;
  mpc::PartyId party_;
  std::uint64_t key_;
  preproc::BitExpander<P> expander_;
};

template <typename P>
Result<std::vector<std::uint8_t>> RemotePreprocessing<P>::Ask(std::vector<std::uint8_t> request) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool join = !request.empty() && request[0] == dealer_proto::kJoin;
  if (!join && recorded_.size() < kMaxPlan) recorded_.push_back(request);
  if (!join && next_planned_ < plan_.size()) {
    if (request != plan_[next_planned_]) {
      return Internal("the dealer plan diverged at request " + std::to_string(next_planned_) +
                      " (the plan of this request shape is dropped)");
    }
    ++next_planned_;
    MPCACHE_ASSIGN_OR_RETURN(auto answer, link_->Recv(timeout_));
    if (next_planned_ % kCreditEvery == 0 || next_planned_ == plan_.size()) {
      MPCACHE_RETURN_IF_ERROR(link_->Send(dealer_proto::EncodeCredit(next_planned_)));
    }
    traffic_.requests += 1;
    traffic_.bytes_received += answer.size();
    traffic_.wait_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return answer;
  }
  MPCACHE_RETURN_IF_ERROR(link_->Send(std::move(request)));
  MPCACHE_ASSIGN_OR_RETURN(auto answer, link_->Recv(timeout_));
  traffic_.requests += 1;
  traffic_.bytes_received += answer.size();
  traffic_.wait_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return answer;
}

template <typename P>
Result<std::unique_ptr<RemotePreprocessing<P>>> RemotePreprocessing<P>::Open(
    std::unique_ptr<SyncLink> link, const dealer_proto::Join& join,
    std::chrono::milliseconds timeout) {
  std::unique_ptr<RemotePreprocessing> r(new RemotePreprocessing());
  r->link_ = std::move(link);
  r->timeout_ = timeout;
  MPCACHE_ASSIGN_OR_RETURN(auto answer, r->Ask(dealer_proto::Encode(join)));
  r->plan_ = join.plan;
  MPCACHE_ASSIGN_OR_RETURN(r->setup_, dealer_proto::DecodeSetup(answer));
  const int party = static_cast<int>(join.party);
  r->store_ = std::make_unique<preproc::PartyStore<P>>(party, 3, r->setup_.party_seed);
  for (const preproc::Batch& b : r->setup_.client_batches) {
    MPCACHE_RETURN_IF_ERROR(r->store_->Accept(b));
  }
  r->setup_.client_batches.clear();
  RemotePreprocessing* self = r.get();
  r->store_->set_refill(
      [self](const preproc::BatchRequest& asked, std::uint64_t seq) -> Result<preproc::Batch> {
        // Elementwise items: ask for a whole batch ahead of need (every party does the same,
        // so the pools stay aligned); the store keeps the rest for later calls.
        preproc::BatchRequest req = asked;
        using preproc::ItemType;
        if (req.type == ItemType::kTriple || req.type == ItemType::kSquare ||
            req.type == ItemType::kTrunc || req.type == ItemType::kBit ||
            req.type == ItemType::kRandom) {
          req.count = std::max<std::uint64_t>(req.count, kBatchItems);
        }
        MPCACHE_ASSIGN_OR_RETURN(
            auto answer, self->Ask(dealer_proto::Encode(dealer_proto::BatchRequest{req, seq})));
        return dealer_proto::DecodeBatch(answer);
      });
  r->bits_ = std::make_unique<Bits>(*r, party, r->setup_.bit_key_share, r->setup_.bit_seed);
  return r;
}

template class RemotePreprocessing<mpc::SemiHonest>;
template class RemotePreprocessing<mpc::Spdz2k>;

}  // namespace mpcache::daemon
