// The trusted dealer's comparison material (mpc/compare/bit_preprocessing.h) and the
// parties' pools of it, in one process (tests, benchmarks, the in-process engine).
//
// Seed compression as in batch.h: party i shares a seed with the dealer; every word of
// party i's part of batch (item, seq) that is free (a triple's a and b, a binary share of
// an edaBit's bits, ...) comes from the AES-CTR stream of BitChunkSeed(seed_i, item, seq,
// chunk) (FillBitUnits: one keystream bit per malicious binary value word).
// Determined words (c = a AND b, every MAC, the arithmetic half of an edaBit/daBit) come
// from the stream at every party but the batch's corrector and as a correction at the
// corrector, so dealer -> party traffic is one share per determined value at one party only
// (counted in stats()). The corrector of a batch is named by its requester: the role table
// of the party whose pool ran short (BitStore::UseRoles; the static corrector without one).
// The binary MAC key's share of the last party is a correction too (once per session).
//
// Pools: Provide(item, n) adds n items to every party's pool (offline, before timing);
// a party whose pool runs short gets exactly the missing amount made on demand (the first
// party to ask makes the batch for all; the parties consume in the same order, so their
// pools stay aligned). Items are removed when handed out and never handed out twice.
// Semi-honest bit triples and bit randoms are made and handed out in units of 64.
//
// Over the network (daemon/dealer_session.cc): MakeBatch(item, n) makes one batch for every
// party and returns each party's serialisable part (bit_batch.h: a header, the corrections
// for the request's corrector), which the party expands with its bit seed
// (BitExpander). The pools are not involved; both paths share the per-item sequence
// numbers, so their streams never repeat.
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/prg.h"
#include "mpc/compare/bit_preprocessing.h"
#include "preproc/bit_batch.h"

namespace mpcache::preproc {

struct BitOfflineStats {
  std::uint64_t correction_bytes = 0;  // sent to the correctors (the others expand seeds)
  std::uint64_t items[kNumBitItems] = {};
  double dealer_seconds = 0;
};

template <typename P>
class InProcessBitDealer;

// Sees the words of every comparison item a party's pool hands out (whole units, in that
// party's order): tests that pin the dealer's traffic. Called under the dealer's lock.
using BitWordsObserver =
    std::function<void(mpc::PartyId party, BitItem item, const BitUnits& words)>;

// One party's view: implements mpc::BitPreprocessing<P>.
template <typename P>
class BitStore final : public mpc::BitPreprocessing<P> {
 public:
  mpc::PartyId party() const override { return party_; }
  std::uint64_t bit_mac_key_share() const override { return beta_; }
  Result<mpc::BitTriples<P>> GetBitTriples(std::size_t n) override;
  Result<mpc::EdaBits<P>> GetEdaBits(std::size_t n) override;
  Result<mpc::DaBits<P>> GetDaBits(std::size_t n) override;
  Result<mpc::RootTuples<P>> GetRootTuples(std::size_t n) override;
  Result<mpc::BitShares<P>> GetBitRandoms(std::size_t n) override;
  Result<mpc::LtzTuples<P>> GetLtzTuples(std::size_t n, int groups) override;
  void UseRoles(const std::shared_ptr<mpc::RoleTable>& roles) override { roles_ = roles; }
  // Items handed out so far (semi-honest triples/randoms: in units of 64).
  std::uint64_t consumed(BitItem t) const { return consumed_[static_cast<int>(t)]; }

 private:
  friend class InProcessBitDealer<P>;
  BitStore(InProcessBitDealer<P>& dealer, mpc::PartyId party) : dealer_(dealer), party_(party) {}
  // The corrector of a batch of `units` units of `item` made now for this party's pool.
  std::int32_t Corrector(BitItem item, std::size_t units);
  InProcessBitDealer<P>& dealer_;
  std::shared_ptr<mpc::RoleTable> roles_;
  mpc::PartyId party_;
  std::uint64_t beta_ = 0;
  std::array<std::uint64_t, kNumBitItems> consumed_{};
};

template <typename P>
class InProcessBitDealer {
 public:
  // `alpha` is the arithmetic MAC key of the session (InProcessDealer::dealer().mac_key()),
  // ignored in semi-honest mode.
  static Result<std::unique_ptr<InProcessBitDealer>> Create(const Seed& master, mpc::u128 alpha,
                                                            int num_parties = 3);

  BitStore<P>& store(mpc::PartyId p) { return *stores_[static_cast<std::size_t>(p)]; }
  int num_parties() const { return static_cast<int>(stores_.size()); }
  // Offline: add n items (rounded up to whole units) to every party's pool.
  Status Provide(BitItem item, std::size_t n);
  // The next batch of n items (1..kMaxBitBatchItems) of `item` for every party (index =
  // party id; the corrections to `corrector`), to be expanded by BitExpander at each party.
  // Thread-safe.
  Result<std::vector<BitBatch>> MakeBatch(BitItem item, std::uint64_t n,
                                          std::int32_t corrector = kStaticCorrector);
  // Worker threads MakeBatch fills a batch's chunks with (1..64; chunks are independent:
  // each has its own streams, so the batch is the same however many fill it).
  void set_threads(int threads);
  // The bit seed party p shares with the dealer (sent once, over TLS, at session set-up).
  const Seed& bit_seed(mpc::PartyId p) const { return seeds_[static_cast<std::size_t>(p)]; }
  BitOfflineStats stats() const;
  std::uint64_t mac_key() const { return beta_; }  // for tests
  void set_observer(BitWordsObserver observer) { observer_ = std::move(observer); }

  // Words per unit and items per unit of an item's pool.
  static std::size_t UnitWords(BitItem item);
  static std::size_t UnitItems(BitItem item);

 private:
  friend class BitStore<P>;
  explicit InProcessBitDealer(const Seed& prg_seed) : prg_(prg_seed) {}
  static constexpr Security kSecurity =
      P::kMalicious ? Security::kMalicious : Security::kSemiHonest;
  // Take `units` units of `item` for party p, making what is missing (under mu_): whole
  // pool chunks moved out (no copy) and freed as they are read.
  // A batch made for the pools names `corrector`.
  Result<BitUnits> Take(mpc::PartyId p, BitItem item, std::size_t units, std::int32_t corrector);
  // The same units read in place by `read` (whole units, in order, under mu_) and freed:
  // for items the party copies out anyway (semi-honest comparison tuples), no copy first.
  using UnitReader = std::function<void(std::span<const std::uint64_t>)>;
  Status TakeInPlace(mpc::PartyId p, BitItem item, std::size_t units, std::int32_t corrector,
                     const UnitReader& read);
  // One batch for every party's pool.
  Status MakeLocked(BitItem item, std::size_t units, std::int32_t corrector);
  void MakeChunkLocked(BitItem item, std::uint64_t seq, std::uint64_t chunk, std::size_t units,
                       std::int32_t corrector);
  // Called after each sub-block of a chunk is final: its first unit and unit count.
  using SubBlockDone = std::function<void(std::size_t first, std::size_t count)>;
  // Every party's stream of chunk `chunk` of batch (item, seq) into part[p] (units * unit
  // words each), then the corrector's determined words set so the shares are consistent;
  // a sub-block (~64 KB per party) at a time, `done` told of each.
  // `keystream`: FillBitUnits' scratch (one per thread filling chunks).
  void FillChunkLocked(BitItem item, std::uint64_t seq, std::uint64_t chunk, std::size_t units,
                       std::int32_t corrector, const std::vector<std::uint64_t*>& part,
                       std::vector<std::uint64_t>& keystream, const SubBlockDone& done = {});
  void CountLocked(BitItem item, std::size_t units, double seconds);
  // FillChunkLocked's part: the corrector's determined words of `units` units whose streams
  // are in part[p] — comparison tuples (ltz_dealer.cc) and the other items.
  void FillLtzLocked(BitItem item, std::size_t units, std::int32_t corrector,
                     const std::vector<std::uint64_t*>& part);
  void FillItemsLocked(BitItem item, std::size_t units, std::int32_t corrector,
                       const std::vector<std::uint64_t*>& part);

  struct Pool {
    std::deque<std::vector<std::uint64_t>> chunks;  // BitChunkUnits() units each at most
    std::size_t head = 0;                           // words consumed in chunks.front()
    std::size_t words = 0;                          // words available
  };
  mutable std::mutex mu_;
  std::vector<Seed> seeds_;
  Prg prg_;  // the dealer's own randomness (constructed once: Prg's move-assignment leaks)
  mpc::u128 alpha_ = 0;
  std::uint64_t beta_ = 0;
  std::array<std::uint64_t, kNumBitItems> seq_{};
  // One per thread filling chunks, reused (no page faults next time): a chunk per party
  // (MakeBatch) and FillBitUnits' keystream blocks.
  struct Scratch {
    std::vector<std::vector<std::uint64_t>> parts;
    std::vector<std::uint64_t> keystream;
  };
  std::vector<Scratch> scratch_ = std::vector<Scratch>(1);
  int threads_ = 1;
  std::vector<std::array<Pool, kNumBitItems>> pools_;  // [party][item]
  std::vector<std::unique_ptr<BitStore<P>>> stores_;
  BitOfflineStats stats_;
  BitWordsObserver observer_;
};

}  // namespace mpcache::preproc
