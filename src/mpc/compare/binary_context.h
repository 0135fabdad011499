// BinaryContext<P>: the binary domain next to an arithmetic Context<P> — opening of bits,
// batched AND gates with dealer bit triples, and (Spdz2k) the binary MAC check.
//
// Opening a batch of bit vectors with N bits in all (1 round): each party sends its shares'
// low bits packed back to back, ceil(N/8) bytes, to each of the 2 peers.
// AND batch of G gates in all (any number of jobs): 1 round, ceil(2G/8) bytes to each peer
// (open d = x ^ a and e = y ^ b; z = c ^ d b ^ e a ^ d e).
//
// CheckMacs() (Spdz2k, k = 1, s = 63, all in Z_2^64; SPDZ2k's Pi_MACCheck over everything
// opened in the binary domain since the last check; free when nothing was opened):
//   round 1: 80 B  coin seed share (16) + nonce (32) + commitment to the next share (32)
//   round 2:  8 B  z_i = y_i + 2 r_i (party 0 subtracts y~): reveals only y mod 2 (= 0)
//   round 3: 32 B  SHA-256(c_i || nonce)
//   round 4: 48 B  c_i (8) + nonce (32) + z (8, so all agree on z)
// i.e. 2 x 168 = 336 bytes sent per party. The coin's seed shares are committed before the
// values they check are opened (at Create(): 1 round, 32 B to each peer; then at every
// check). After a failed check this context opens nothing more, and CheckAllMacs() reports
// the failure before touching the arithmetic side.
#pragma once

#include <memory>
#include <vector>

#include "mpc/compare/bit_preprocessing.h"
#include "mpc/context.h"

namespace mpcache::mpc {

template <typename P>
class BinaryContext {
 public:
  static Result<std::unique_ptr<BinaryContext>> Create(Context<P>& arith, BitPreprocessing<P>& prep,
                                                       const Seed& local_seed);

  Context<P>& arith() { return arith_; }
  BitPreprocessing<P>& prep() { return prep_; }
  const BitKey& key() const { return key_; }
  PartyId self() const { return arith_.self(); }
  bool failed() const { return failed_; }
  std::size_t pending_checks() const { return pending_; }

  // Open several bit vectors in one round.
  Result<std::vector<PublicBits>> OpenMany(std::vector<BitShares<P>>&& xs);
  Result<PublicBits> Open(BitShares<P> x);

  Status CheckMacs();

  // For tamper tests: the log of opened bits since the last check.
  struct OpenedChunk {
    PublicBits opened;
    std::vector<std::uint64_t> shares, macs;
  };
  std::vector<OpenedChunk>& log_for_testing() { return log_; }

 private:
  BinaryContext(Context<P>& arith, BitPreprocessing<P>& prep, const Seed& local_seed);
  Status SendToPeers(std::span<const std::uint8_t> bytes);
  Status Fail(std::string why);

  Context<P>& arith_;
  BitPreprocessing<P>& prep_;
  Prg local_prg_;
  BitKey key_;
  bool failed_ = false;
  std::size_t pending_ = 0;
  std::vector<OpenedChunk> log_;
  Seed coin_share_{};
  Digest coin_nonce_{};
  std::vector<Digest> peer_commitments_;
};

// A batch of independent AND gates: one round for all of them.
template <typename P>
class BitAndBatch {
 public:
  explicit BitAndBatch(BinaryContext<P>& ctx) : ctx_(ctx) {}
  // Queue x AND y (same sizes); operands are read in Exchange(). Returns a handle.
  std::size_t Prepare(const BitShares<P>& x, const BitShares<P>& y);
  Status Exchange();
  BitShares<P> Take(std::size_t handle) { return std::move(jobs_[handle].out); }

 private:
  struct Job {
    const BitShares<P>* x;
    const BitShares<P>* y;
    BitShares<P> out;
  };
  BinaryContext<P>& ctx_;
  std::vector<Job> jobs_;
};

// The binary MAC check, then the arithmetic one (SPDZ2k: both must pass before anything
// computed from the opened values may be released). Semi-honest: free.
template <typename P>
Status CheckAllMacs(BinaryContext<P>& ctx);

}  // namespace mpcache::mpc
