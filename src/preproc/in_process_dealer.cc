#include "preproc/in_process_dealer.h"

#include <chrono>
#include <string>

namespace mpcache::preproc {
namespace {
double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Result<std::vector<std::uint64_t>> ExpandClientMasks(const Seed& client_seed, const Batch& batch) {
  if (batch.request.type != ItemType::kInputMask || batch.request.owner != mpc::kClient) {
    return InvalidArgument("not a client mask batch");
  }
  if (batch.request.count > kMaxBatchElements) {
    return InvalidArgument("client mask batch: count = " + std::to_string(batch.request.count) +
                           " exceeds preproc::kMaxBatchElements (" +
                           std::to_string(kMaxBatchElements) + ")");
  }
  std::vector<std::uint64_t> clear(batch.request.count);
  Prg prg(ComponentSeed(client_seed, ItemType::kInputMask, batch.seq, kClearComponent));
  prg.FillValues(std::span<std::uint64_t>(clear));
  return clear;
}

template <typename P>
Result<std::unique_ptr<InProcessDealer<P>>> InProcessDealer<P>::Create(const Seed& master,
                                                                       int num_parties,
                                                                       bool on_demand,
                                                                       const BatchLimits& limits) {
  const Security sec = P::kMalicious ? Security::kMalicious : Security::kSemiHonest;
  MPCACHE_ASSIGN_OR_RETURN(std::unique_ptr<Dealer> dealer,
                           Dealer::Create(sec, master, num_parties, limits));
  std::unique_ptr<InProcessDealer> d(new InProcessDealer());
  d->dealer_ = std::move(dealer);
  d->stats_.bytes_to_party.assign(static_cast<std::size_t>(num_parties), 0);
  for (int i = 0; i < num_parties; ++i) {
    d->stores_.push_back(
        std::make_unique<PartyStore<P>>(i, num_parties, d->dealer_->party_seed(i)));
    d->stores_.back()->set_limits(limits);
    if (on_demand) {
      InProcessDealer* self = d.get();
      PartyStore<P>* store = d->stores_.back().get();
      d->stores_.back()->set_refill([self, store, i](const BatchRequest& need) -> Status {
        BatchRequest req = need;
        req.corrector = store->CorrectorFor(req);
        MPCACHE_ASSIGN_OR_RETURN(Batch b, self->Fetch(i, req, store->IssueSeq(req.type)));
        return store->Accept(b);
      });
    }
  }
  return d;
}

template <typename P>
Status InProcessDealer<P>::Record(Dealer::Output& out, double seconds) {
  stats_.dealer_seconds += seconds;
  stats_.batches += 1;
  for (std::size_t i = 0; i < out.parties.size(); ++i) {
    stats_.bytes_to_party[i] += out.parties[i].WireSize();
  }
  if (out.client) {
    stats_.bytes_to_client += out.client->WireSize();
    client_batches_.push_back(std::move(*out.client));
  }
  return Status::Ok();
}

template <typename P>
Status InProcessDealer<P>::Provide(const BatchRequest& req) {
  Dealer::Output out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto t0 = std::chrono::steady_clock::now();
    MPCACHE_ASSIGN_OR_RETURN(out, dealer_->Make(req));
    MPCACHE_RETURN_IF_ERROR(Record(out, Since(t0)));
    if (observer_) {
      for (std::size_t i = 0; i < out.parties.size(); ++i) {
        observer_(static_cast<PartyId>(i), out.parties[i]);
      }
    }
  }
  for (std::size_t i = 0; i < stores_.size(); ++i) {
    MPCACHE_RETURN_IF_ERROR(stores_[i]->Accept(out.parties[i]));
  }
  return Status::Ok();
}

template <typename P>
Result<Batch> InProcessDealer<P>::Fetch(PartyId p, const BatchRequest& req, std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto key = std::make_pair(req.type, seq);
  const std::uint64_t next = dealer_->next_seq(req.type);
  if (seq == next) {
    const auto t0 = std::chrono::steady_clock::now();
    MPCACHE_ASSIGN_OR_RETURN(Dealer::Output out, dealer_->Make(req));
    Pending pend;
    pend.request = out.parties[0].request;
    pend.left = num_parties();
    MPCACHE_RETURN_IF_ERROR(Record(out, Since(t0)));
    for (auto& b : out.parties) pend.parts.emplace_back(std::move(b));
    pending_[key] = std::move(pend);
  } else if (seq > next) {
    return ProtocolError("party " + std::to_string(p) + " asked for a future preprocessing batch");
  }
  auto it = pending_.find(key);
  if (it == pending_.end()) {
    return ProtocolError("party " + std::to_string(p) + " asked for preprocessing batch " +
                         ItemTypeName(req.type) + " #" + std::to_string(seq) + " twice");
  }
  Pending& pend = it->second;
  BatchRequest canonical = req;
  if (req.type == ItemType::kMatrixTriple) {  // the dealer filled in the mask's shape
    canonical.rows = pend.request.rows;
    canonical.cols = pend.request.cols;
  }
  if (!(canonical == pend.request)) {
    return ProtocolError(std::string("parties asked for different preprocessing under ") +
                         ItemTypeName(req.type) + " #" + std::to_string(seq) +
                         (canonical.corrector != pend.request.corrector
                              ? " (correctors party " + std::to_string(pend.request.corrector) +
                                    " and party " + std::to_string(canonical.corrector) +
                                    ": their role tables differ)"
                              : std::string()));
  }
  auto& slot = pend.parts[static_cast<std::size_t>(p)];
  if (!slot) {
    return ProtocolError("party " + std::to_string(p) + " already took its part of batch #" +
                         std::to_string(seq));
  }
  Batch b = std::move(*slot);
  slot.reset();
  if (--pend.left == 0) pending_.erase(it);
  if (observer_) observer_(p, b);
  return b;
}

template <typename P>
Result<std::vector<std::uint64_t>> InProcessDealer<P>::NextClientMasks() {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_batches_.empty()) return Exhausted("no client mask batch is waiting");
  Batch b = std::move(client_batches_.front());
  client_batches_.pop_front();
  return ExpandClientMasks(dealer_->party_seed(mpc::kClient), b);
}

template <typename P>
OfflineStats InProcessDealer<P>::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  OfflineStats s = stats_;
  s.expand_seconds = 0;
  for (const auto& st : stores_) s.expand_seconds += st->expand_seconds();
  return s;
}

template class InProcessDealer<mpc::SemiHonest>;
template class InProcessDealer<mpc::Spdz2k>;

}  // namespace mpcache::preproc
