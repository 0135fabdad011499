// BinaryContext<P>: the binary domain next to an arithmetic Context<P> — opening of bits,
// batched AND gates with dealer bit triples, and (Spdz2k) the binary MAC check.
//
// Opening a batch of bit vectors with N bits in all (1 round): each party sends its shares'
// bits packed back to back, ceil(N/8) bytes, to each of the 2 peers. Through a king (2
// rounds): the others send their ceil(N/8) bytes to the king, which sends the XOR of all
// three to each of them (the king sends 2 ceil(N/8) bytes, the others ceil(N/8)); every
// party logs the bits it received (the king: those it sent) for the MAC check, so a king
// that relays other bits is caught there.
// AND batch of G gates in all (any number of jobs): 1 round, ceil(2G/8) bytes to each peer
// (open d = x ^ a and e = y ^ b; z = c ^ d b ^ e a ^ d e).
//
// CheckMacs() (Spdz2k: MACs in GF(2^64), bit_share.h; the batched MAC check of SPDZ over a
// binary field over everything opened in the binary domain since the last check; free when
// nothing was opened): 3 rounds, to each peer
//   round 1: 80 B  coin seed share (16) + nonce (32) + commitment to the next share (32)
//   round 2: 32 B  SHA-256(c_i || nonce), c_i = sum_j chi_j m_j^(i) + beta_i sum_j chi_j x~_j
//   round 3: 40 B  c_i (8) + nonce (32); the XOR of the c_i must be 0
// i.e. 2 x 152 = 304 bytes sent per party. The coin's seed shares are committed before the
// values they check are opened (at Create(): 1 round, 32 B to each peer; then at every
// check). After a failed check this context opens nothing more.
//
// CheckAllMacs() runs this check and the arithmetic Context's check side by side (mac_check.h):
// one message per peer per round carries both, so it costs 3 rounds and 304 + 384 = 688 B
// per party when both domains have pending openings (3 rounds and that domain's bytes when
// only one has; free when neither has). A binary failure is reported first and also marks
// the arithmetic context failed: after a failure in either domain nothing is opened in
// either.
#pragma once

#include <memory>
#include <vector>

#include "mpc/compare/bit_preprocessing.h"
#include "mpc/context.h"

namespace mpcache::mpc {

template <typename P>
class BinaryCheckSteps;

// Bytes one binary CheckMacs() with something pending sends per party (80 + 32 + 40 to each
// of 2 peers); rounds: kMacCheckRounds.
inline constexpr std::uint64_t kBinaryCheckBytes = std::uint64_t{2} * (80 + 32 + 40);

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
  // Batched MAC checks of the binary domain begun in this session.
  std::uint64_t checks_begun() const { return checks_begun_; }
  // Bits opened since the last MAC check (the same count at every party).
  std::size_t pending_openings() const { return pending_; }

  // Open several bit vectors in one round (all-to-all), or two through a king; kByRole
  // (the default): the king of the current unit in the role table (Context::roles()).
  Result<std::vector<PublicBits>> OpenMany(std::vector<BitShares<P>>&& xs,
                                           OpenMode mode = OpenMode::kByRole, PartyId king = 0);
  Result<PublicBits> Open(BitShares<P> x, OpenMode mode = OpenMode::kByRole, PartyId king = 0);

  Status CheckMacs();
  // The binary check as steps for RunMacChecks (nullptr when nothing is pending or in
  // semi-honest mode; kMacCheckFailed after an earlier failure). Takes the check's random
  // bit now, before any message.
  Result<std::unique_ptr<MacCheckSteps>> BeginMacCheck();

  // For tamper tests: the log of opened bits since the last check (and my MAC shares).
  struct OpenedChunk {
    PublicBits opened;
    std::vector<std::uint64_t> macs;
  };
  std::vector<OpenedChunk>& log_for_testing() { return log_; }
  // For attacker tests only (mpc/adversary.h).
  void set_adversary_for_testing(Adversary* adversary) { adversary_ = adversary; }

 private:
  friend class BinaryCheckSteps<P>;
  BinaryContext(Context<P>& arith, BitPreprocessing<P>& prep, const Seed& local_seed);
  Status SendToPeers(std::span<const std::uint8_t> bytes);
  Status Fail(const std::string& why);

  Context<P>& arith_;
  BitPreprocessing<P>& prep_;
  Prg local_prg_;
  BitKey key_;
  bool failed_ = false;
  std::size_t pending_ = 0;
  std::uint64_t checks_begun_ = 0;
  std::vector<OpenedChunk> log_;
  Seed coin_share_{};
  Digest coin_nonce_{};
  std::vector<Digest> peer_commitments_;
  Adversary* adversary_ = nullptr;
  std::uint64_t opens_ = 0;
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

// The binary and the arithmetic MAC checks in the same 3 rounds (SPDZ2k: both must pass
// before anything computed from the opened values may be released). Semi-honest: free.
template <typename P>
Status CheckAllMacs(BinaryContext<P>& ctx);

}  // namespace mpcache::mpc
