#include "daemon/dealer_session.h"

#include <openssl/sha.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "common/checked.h"
#include "preproc/bit_dealer.h"

namespace mpcache::daemon {

std::array<std::uint8_t, 32> SeedHash(const Seed& seed) {
  std::array<std::uint8_t, 32> out{};
  SHA256(seed.data(), seed.size(), out.data());
  return out;
}

namespace {

using preproc::Batch;
using preproc::BitItem;

template <typename P>
class DealerSessionImpl final : public DealerSession {
 public:
  explicit DealerSessionImpl(const dealer_proto::Join& join) : DealerSession(join) {}

  Status Init() {
    const preproc::Security sec =
        P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
    MPCACHE_ASSIGN_OR_RETURN(Seed master, OsSeed());
    // The client's mask batches are sized by the (checked) Join, not by a party's request:
    // made under the built-in bounds; the parties' requests then under limits_.
    MPCACHE_ASSIGN_OR_RETURN(dealer_, preproc::Dealer::Create(sec, master, 3));
    MPCACHE_ASSIGN_OR_RETURN(bits_, preproc::InProcessBitDealer<P>::Create(
                                        DeriveSeed(master, 0xB17), dealer_->mac_key(), 3));
    bits_->set_threads(limits_.threads);
    // Client seed: XOR-shared over the parties (each sees one share).
    const Seed client = dealer_->party_seed(mpc::kClient);
    MPCACHE_ASSIGN_OR_RETURN(Seed s0, OsSeed());
    MPCACHE_ASSIGN_OR_RETURN(Seed s1, OsSeed());
    shares_[0] = s0;
    shares_[1] = s1;
    for (std::size_t i = 0; i < 16; ++i) shares_[2][i] = client[i] ^ s0[i] ^ s1[i];
    hash_ = SeedHash(client);
    for (std::uint64_t count : dealer_proto::ClientMaskBatches(join_)) {
      preproc::BatchRequest req;
      req.type = preproc::ItemType::kInputMask;
      req.count = count;
      req.owner = mpc::kClient;
      MPCACHE_ASSIGN_OR_RETURN(preproc::Dealer::Output out, dealer_->Make(req));
      for (int p = 0; p < 3; ++p) {
        stats_.bytes_to_party[static_cast<std::size_t>(p)] +=
            out.parties[static_cast<std::size_t>(p)].WireSize();
        client_batches_[static_cast<std::size_t>(p)].push_back(
            std::move(out.parties[static_cast<std::size_t>(p)]));
      }
      stats_.batches += 1;
    }
    dealer_->set_limits(ArithmeticLimits(limits_));
    return Status::Ok();
  }

  Result<dealer_proto::Setup> SetupFor(int party) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto i = static_cast<std::size_t>(party);
    if (setup_done_[i]) return ProtocolError("party " + std::to_string(party) + " joined twice");
    setup_done_[i] = true;
    dealer_proto::Setup s;
    s.party_seed = dealer_->party_seed(party);
    s.bit_key_share = bits_->store(party).bit_mac_key_share();
    s.bit_seed = bits_->bit_seed(party);
    s.client_seed_share = shares_[i];
    s.client_seed_hash = hash_;
    s.client_batches = std::move(client_batches_[i]);
    s.chunk_items = limits_.chunk_items;
    s.max_request_items = limits_.max_request_items;
    return s;
  }

  Result<Batch> Fetch(int p, const preproc::BatchRequest& req, std::uint64_t seq) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = std::make_pair(req.type, seq);
    const std::uint64_t next = dealer_->next_seq(req.type);
    if (seq == next) {
      const auto t0 = std::chrono::steady_clock::now();
      MPCACHE_ASSIGN_OR_RETURN(preproc::Dealer::Output out, dealer_->Make(req));
      stats_.dealer_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      stats_.batches += 1;
      Pending pend;
      pend.request = out.parties[0].request;
      pend.left = 3;
      for (auto& b : out.parties) pend.parts.emplace_back(std::move(b));
      pending_[key] = std::move(pend);
    } else if (seq > next) {
      return ProtocolError("party " + std::to_string(p) + " asked for a future batch");
    }
    auto it = pending_.find(key);
    if (it == pending_.end()) {
      return ProtocolError("party " + std::to_string(p) + " asked for " +
                           preproc::ItemTypeName(req.type) + " batch #" + std::to_string(seq) +
                           " twice");
    }
    Pending& pend = it->second;
    preproc::BatchRequest canonical = req;
    if (req.type == preproc::ItemType::kMatrixTriple) {  // the dealer filled in the shape
      canonical.rows = pend.request.rows;
      canonical.cols = pend.request.cols;
    }
    if (!(canonical == pend.request)) {
      return ProtocolError(std::string("parties asked for different preprocessing under ") +
                           preproc::ItemTypeName(req.type) + " #" + std::to_string(seq) +
                           (canonical.corrector != pend.request.corrector
                                ? " (correctors party " + std::to_string(pend.request.corrector) +
                                      " and party " + std::to_string(canonical.corrector) +
                                      ": their role tables differ)"
                                : std::string()));
    }
    auto& slot = pend.parts[static_cast<std::size_t>(p)];
    if (!slot) return ProtocolError("party " + std::to_string(p) + " took its part twice");
    Batch b = std::move(*slot);
    slot.reset();
    stats_.bytes_to_party[static_cast<std::size_t>(p)] += b.WireSize();
    if (--pend.left == 0) pending_.erase(it);
    return b;
  }

  Result<std::vector<std::uint8_t>> Bits(int party, BitItem item, std::uint64_t n,
                                         std::int32_t corrector) override {
    if (n == 0 || n > preproc::kMaxBitBatchItems) {
      return ProtocolError("binary request of " + std::to_string(n) + " items");
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::uint8_t> out;
    {
      // A party's k-th request of an item is answered from batch #k of that item, made for
      // all three by the first party to ask (under bit_mu_, so that arithmetic batches are
      // not held up). The request's corrector gets the corrections, the others a header
      // (bit_batch.h).
      std::lock_guard<std::mutex> lock(bit_mu_);
      const auto it = static_cast<std::size_t>(item);
      const std::uint64_t k = bit_asked_[static_cast<std::size_t>(party)][it]++;
      const auto key = std::make_pair(item, k);
      if (k == bit_made_[it]) {
        MPCACHE_ASSIGN_OR_RETURN(std::vector<preproc::BitBatch> parts,
                                 bits_->MakeBatch(item, n, corrector));
        ++bit_made_[it];
        BitPending pend;
        pend.n = n;
        pend.corrector = corrector;
        pend.left = 3;
        for (auto& b : parts) pend.parts.emplace_back(std::move(b));
        bit_pending_[key] = std::move(pend);
      }
      auto found = bit_pending_.find(key);
      if (found == bit_pending_.end()) {
        return ProtocolError("party " + std::to_string(party) + " took " +
                             preproc::BitItemName(item) + " batch #" + std::to_string(k) +
                             " twice");
      }
      BitPending& pend = found->second;
      if (pend.n != n) {
        return ProtocolError("parties asked for different numbers of " +
                             std::string(preproc::BitItemName(item)) + " under request #" +
                             std::to_string(k) + " (" + std::to_string(pend.n) + " and " +
                             std::to_string(n) + ")");
      }
      if (pend.corrector != corrector) {
        return ProtocolError(
            "parties named different correctors for " + std::string(preproc::BitItemName(item)) +
            " request #" + std::to_string(k) + " (party " + std::to_string(pend.corrector) +
            " and party " + std::to_string(corrector) + "): their role tables differ");
      }
      auto& slot = pend.parts[static_cast<std::size_t>(party)];
      out = dealer_proto::EncodeBitBatch(*slot);
      slot.reset();
      if (--pend.left == 0) bit_pending_.erase(found);
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bit_requests += 1;
    stats_.bytes_to_party[static_cast<std::size_t>(party)] += out.size();
    stats_.dealer_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

  DealerSessionStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  struct Pending {
    preproc::BatchRequest request;
    std::vector<std::optional<Batch>> parts;
    int left = 0;
  };
  mutable std::mutex mu_;
  std::unique_ptr<preproc::Dealer> dealer_;
  std::unique_ptr<preproc::InProcessBitDealer<P>> bits_;
  std::array<Seed, 3> shares_{};
  std::array<std::uint8_t, 32> hash_{};
  std::array<std::vector<Batch>, 3> client_batches_;
  std::array<bool, 3> setup_done_{};
  std::map<std::pair<preproc::ItemType, std::uint64_t>, Pending> pending_;
  // Comparison material: batch #k of an item, until all three parties took their part.
  struct BitPending {
    std::uint64_t n = 0;
    std::int32_t corrector = 0;
    std::vector<std::optional<preproc::BitBatch>> parts;
    int left = 0;
  };
  std::mutex bit_mu_;
  std::array<std::array<std::uint64_t, preproc::kNumBitItems>, 3> bit_asked_{};
  std::array<std::uint64_t, preproc::kNumBitItems> bit_made_{};
  std::map<std::pair<BitItem, std::uint64_t>, BitPending> bit_pending_;
  DealerSessionStats stats_;
};

}  // namespace

preproc::BatchLimits ArithmeticLimits(const DealerLimits& limits) {
  preproc::BatchLimits b;
  b.max_items = limits.max_request_items;
  b.max_matrix_elements = limits.max_matrix_elements;
  b.items_setting = "pool.capacity_items in the dealer's config";
  b.matrix_setting = "pool.max_matrix_elements in the dealer's config";
  // The corrector's answer (corrections, a header and the message's framing) must fit in
  // one message.
  b.max_correction_bytes = kMaxLinkMessageBytes - 1024;
  b.bytes_setting = "the largest message a party reads, " + std::to_string(kMaxLinkMessageBytes) +
                    " bytes; lower pool.capacity_items or pool.max_matrix_elements";
  return b;
}

Result<std::shared_ptr<DealerSession>> DealerSession::Create(const dealer_proto::Join& join,
                                                             const DealerLimits& limits) {
  if (limits.chunk_items < 64 || limits.max_request_items < limits.chunk_items) {
    return InvalidArgument(
        "dealer limits: pool.batch_items must be at least 64 and at most "
        "pool.capacity_items");
  }
  if (limits.threads < 1 || limits.threads > 64) {
    return InvalidArgument("dealer limits: pool.threads must be 1..64, got " +
                           std::to_string(limits.threads));
  }
  if (limits.max_matrix_elements < 1 || limits.max_matrix_elements > preproc::kMaxBatchElements) {
    return InvalidArgument("dealer limits: pool.max_matrix_elements must be 1.." +
                           std::to_string(preproc::kMaxBatchElements));
  }
  if (join.prompt_len < 1 || join.prompt_len > 65536 || join.vocab < 2 || join.vocab > (1u << 20) ||
      std::uint64_t{join.prompt_len} * join.vocab > (1u << 26) || join.steps < 1 ||
      join.steps > (1u << 20) ||
      (join.noise != 0 && (join.noise % join.vocab != 0 || join.noise / join.vocab > join.steps))) {
    return ProtocolError("session parameters out of range (prompt " +
                         std::to_string(join.prompt_len) + ", vocab " + std::to_string(join.vocab) +
                         ", steps " + std::to_string(join.steps) + ", sampling noise " +
                         std::to_string(join.noise) + ")");
  }
  // The Setup carries the client's mask batches (the static corrector's with corrections):
  // it must fit in one message, so a Join cannot make the dealer build an unreadable one.
  std::uint64_t setup_bytes = 4096;  // seeds, hashes, limits, headers
  for (const std::uint64_t count : dealer_proto::ClientMaskBatches(join)) {
    const preproc::BatchRequest req{
        .type = preproc::ItemType::kInputMask, .count = count, .owner = mpc::kClient};
    MPCACHE_ASSIGN_OR_RETURN(std::size_t bytes, preproc::CorrectionBytes(join.security, req));
    MPCACHE_ASSIGN_OR_RETURN(setup_bytes, AddSize(setup_bytes, bytes, "Setup bytes"));
  }
  if (setup_bytes > kMaxLinkMessageBytes) {
    return ProtocolError("session parameters: prompt_len x vocab = " +
                         std::to_string(std::uint64_t{join.prompt_len} * join.vocab) +
                         " input masks (and steps = " + std::to_string(join.steps) +
                         ", sampling noise = " + std::to_string(join.noise) + ") make a Setup of " +
                         std::to_string(setup_bytes) +
                         " bytes, more than the largest message a party reads (" +
                         std::to_string(kMaxLinkMessageBytes) + "): use a shorter prompt" +
                         (join.noise > 0 ? " or fewer --max-tokens (sampling enters noise for "
                                           "every generated position)"
                                         : ""));
  }
  if (join.security == preproc::Security::kMalicious) {
    auto s = std::make_shared<DealerSessionImpl<mpc::Spdz2k>>(join);
    s->limits_ = limits;
    MPCACHE_RETURN_IF_ERROR(s->Init());
    return std::shared_ptr<DealerSession>(std::move(s));
  }
  auto s = std::make_shared<DealerSessionImpl<mpc::SemiHonest>>(join);
  s->limits_ = limits;
  MPCACHE_RETURN_IF_ERROR(s->Init());
  return std::shared_ptr<DealerSession>(std::move(s));
}

namespace {
Status CheckSize(const DealerSession& session, int party, std::uint64_t items) {
  if (items <= session.limits().max_request_items) return Status::Ok();
  return ProtocolError("party " + std::to_string(party) + " asked for " + std::to_string(items) +
                       " items in one request; the dealer serves at most " +
                       std::to_string(session.limits().max_request_items) +
                       " (pool.capacity_items in the dealer's config)");
}

// Comparison items differ ~400-fold in size (a malicious edaBit's corrections are 3.2 KB):
// the corrector's answer, which the dealer builds in memory, must fit in one message.
Status CheckBitAnswer(const DealerSession& session, int party, preproc::BitItem item,
                      std::uint64_t n) {
  const preproc::Security sec = session.join().security;
  const std::uint64_t units = preproc::BitUnitsFor(sec, item, n);
  const std::string what = std::string(preproc::BitItemName(item)) + " request: answer bytes";
  // Every determined word bounds the corrections: checking that product for overflow keeps
  // BitCorrectionWords' own products in range.
  MPCACHE_ASSIGN_OR_RETURN(const std::uint64_t bound,
                           MulSize(units, preproc::BitDeterminedWords(sec, item), what));
  (void)bound;
  const std::uint64_t words = preproc::BitCorrectionWords(sec, item, units);
  MPCACHE_ASSIGN_OR_RETURN(std::uint64_t bytes, MulSize(words, 8, what));
  // The Bits message: a type byte, the batch's length (8 bytes), the batch.
  MPCACHE_ASSIGN_OR_RETURN(bytes, AddSize(bytes, 1 + 8 + preproc::kBitBatchHeaderBytes, what));
  if (bytes <= kMaxLinkMessageBytes) return Status::Ok();
  return ProtocolError("party " + std::to_string(party) + " asked for " + std::to_string(n) + " " +
                       preproc::BitItemName(item) + " items in one request: the answer (" +
                       std::to_string(bytes) + " bytes) exceeds the largest message a party " +
                       "reads (" + std::to_string(kMaxLinkMessageBytes) +
                       " bytes); ask for fewer (pool.capacity_items in the dealer's config)");
}
}  // namespace

Result<std::vector<std::uint8_t>> Answer(DealerSession& session, int party,
                                         const std::vector<std::uint8_t>& request) {
  const std::uint8_t type = request.empty() ? 0 : request[0];
  if (type == dealer_proto::kBatchRequest) {
    MPCACHE_ASSIGN_OR_RETURN(auto req, dealer_proto::DecodeBatchRequest(request));
    // Every item type's sizes are checked by the dealer (preproc::Components, under
    // ArithmeticLimits) before anything is made.
    MPCACHE_ASSIGN_OR_RETURN(preproc::Batch b, session.Fetch(party, req.request, req.seq));
    return dealer_proto::EncodeBatch(b);
  }
  if (type == dealer_proto::kBitRequest) {
    MPCACHE_ASSIGN_OR_RETURN(auto req, dealer_proto::DecodeBitRequest(request));
    MPCACHE_RETURN_IF_ERROR(CheckSize(session, party, req.n));
    MPCACHE_RETURN_IF_ERROR(CheckBitAnswer(session, party, req.item, req.n));
    return session.Bits(party, req.item, req.n, req.corrector);
  }
  return ProtocolError("party " + std::to_string(party) + " sent an unexpected message (type " +
                       std::to_string(type) + ") to the dealer");
}

Status ServeRequests(MessageLink& link, DealerSession& session, int party,
                     std::chrono::milliseconds idle, const AnswerObserver& observe) {
  for (;;) {
    auto msg = link.Recv(idle);
    if (!msg.ok()) {
      if (msg.error().code() == ErrorCode::kIo) return Status::Ok();  // the party closed
      return msg.error();
    }
    MPCACHE_ASSIGN_OR_RETURN(auto bytes, Answer(session, party, *msg));
    if (observe) observe(*msg, bytes.size());
    MPCACHE_RETURN_IF_ERROR(link.Send(std::move(bytes)));
  }
}

}  // namespace mpcache::daemon
