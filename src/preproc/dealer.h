// The trusted dealer: makes every party's part of a preprocessing batch (see batch.h for
// the seed-compressed format). Deterministic given its master seed: OsSeed() in
// production, TestSeed(n) in tests. Not thread-safe: one caller at a time (the in-process
// dealer serialises access).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "preproc/batch.h"

namespace mpcache::preproc {

// A party's share of the MAC key, derived from its seed (0 in semi-honest mode).
mpc::u128 MacKeyShare(Security security, const Seed& party_seed);

class Dealer {
 public:
  // `limits` bound every request Make() serves (checked before anything is allocated).
  static Result<std::unique_ptr<Dealer>> Create(Security security, const Seed& master,
                                                int num_parties = 3, BatchLimits limits = {});

  Security security() const { return security_; }
  const BatchLimits& limits() const { return limits_; }
  void set_limits(BatchLimits limits) { limits_ = std::move(limits); }
  int num_parties() const { return static_cast<int>(seeds_.size()); }
  // The seed party p shares with the dealer (p = mpc::kClient: the client's seed). Over
  // the network this is sent once, over TLS, at session set-up.
  const Seed& party_seed(PartyId p) const;
  // The global MAC key (for tests).
  mpc::u128 mac_key() const { return alpha_; }

  struct Output {
    std::vector<Batch> parties;   // index = party id
    std::optional<Batch> client;  // input masks owned by the client
  };
  // Makes the next batch of req.type (sequence numbers are per type, from 0). For
  // kMatrixTriple, req.mask_id must name a mask made earlier; rows/cols are filled in. For
  // kAttention every listed mask must exist, have kv_dim columns and at least lens[i] rows.
  // The corrections go to req.corrector. A malformed or oversized request (batch.h:
  // Components), or a corrector that is not a party, is refused, naming the field, and uses
  // up no sequence number.
  Result<Output> Make(BatchRequest req);
  std::uint64_t next_seq(ItemType t) const { return seq_[static_cast<std::size_t>(t)]; }

 private:
  Dealer(Security security, const Seed& master, int num_parties, BatchLimits limits);
  // C of an attention triple (mpc::AttentionShape) from its B, mod 2^64.
  std::vector<std::uint64_t> AttentionProduct(const BatchRequest& req,
                                              const std::vector<std::uint64_t>& b) const;
  template <typename P>
  Status Generate(const BatchRequest& req, std::uint64_t seq, std::vector<std::uint8_t>& payload);

  Security security_;
  BatchLimits limits_;
  std::vector<Seed> seeds_;
  Seed client_seed_;
  Prg prg_;  // the dealer's own randomness (random bits)
  mpc::u128 alpha_ = 0;
  std::array<std::uint64_t, kNumItemTypes> seq_{};
  struct Mask {
    std::uint64_t rows = 0, cols = 0;
    std::vector<std::uint64_t> a;  // A mod 2^64, row-major
  };
  std::map<std::uint64_t, Mask> masks_;
};

}  // namespace mpcache::preproc
