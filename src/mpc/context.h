// Context<P>: one party's state for an MPC session — its channel, preprocessing, MAC key
// share, the log of values opened since the last MAC check, and whether a check failed.
// No globals: every protocol function takes the Context.
//
// Opening (cost per party for n values; "round" = one set of sends then receives). A
// malicious (Spdz2k) opening carries each share's low 112 bits, 14 bytes (64 value bits and
// kCheckSlackBits = 48 above them, of the value's lift in Z_2^128), a semi-honest one 8
// bytes (docs/mpc-core.md says why the slack):
//   kAllToAll: 1 round; each party sends its shares to both peers (2 x 14n bytes).
//   kKing:     2 rounds; non-kings send 14n bytes to the king, the king sends the sum
//              (14n bytes) to each peer (king sends 28n bytes, the others 14n).
//   kSplitKing: 2 rounds; every party is the king of a third of the values (SplitSegment:
//              which third rotates from one opening to the next): it receives the others'
//              shares of its third and sends the sums back. Each party sends ~2/3 x 14n in
//              each round, 4/3 x 14n in all (SplitKingBytes) against 2 x 14n all-to-all:
//              a third fewer bytes for a round more (ContextOptions::open_style).
// Semi-honest: the same with 8 instead of 14. kByRole (the default, for callers that name
// no king): the king of the current unit of work in the session's role table (roles()):
// all-to-all while it names none (the static table). In king mode the king only relays the
// sum: every party logs the opened value it received (the king: the sum it sent) for the
// MAC check, so a king that relays a wrong sum is caught there like any lie in an opening.
// In Spdz2k mode each opened value (its low 112 bits as opened, and this party's MAC
// share) is logged for the next CheckMacs();
// after a failed check the context refuses every later open and output.
//
// CheckMacs() (Spdz2k; the batched MAC check over everything opened since the last check,
// SPDZ2k's Pi_MACCheck over openings of 112 (or fewer) bits; free when nothing was opened):
// 3 rounds,
// per party to each peer:
//   round 1: 112 B = coin seed share (16) + nonce (32) + commitment to the next coin seed
//            share (32) + hash of the input broadcasts seen since the last check (32)
//   round 2:  32 B = SHA-256(c_i || nonce), c_i = sum_j chi_j m_j^(i) - alpha_i sum_j chi_j x~_j
//   round 3:  46 B = c_i (14) + nonce (32); the sum of the c_i must be 0 mod 2^112
//            (narrow openings, a comparison's: one more c_i per width, mod 2^width, in
//            width / 8 bytes)
// i.e. 380 bytes sent per party. The coefficients chi_j in Z_2^64 come from a coin whose
// seed shares were committed before the values being checked were opened (at Create() or
// at the previous check). A lie that survives has probability < 2^-43 (bound and proof
// sketch in docs/mpc-core.md). Semi-honest: CheckMacs() is free and always succeeds.
// BeginMacCheck() hands the same check out as steps (mac_check.h) so that the binary
// domain's check can travel in the same 3 rounds (CheckAllMacs).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/prg.h"
#include "common/result.h"
#include "mpc/adversary.h"
#include "mpc/mac_check.h"
#include "mpc/preprocessing.h"
#include "mpc/roles.h"
#include "mpc/share.h"
#include "net/channel.h"

namespace mpcache::mpc {

enum class OpenMode : std::uint8_t { kAllToAll, kKing, kByRole, kSplitKing };

// How a kByRole opening goes when the role table names no king: all-to-all (1 round) or
// split among kings (2 rounds, a third fewer bytes). Every party of a session must use the
// same style (the sessions agree on it: daemon/party_session.cc).
enum class OpenStyle : std::uint8_t { kAllToAll, kSplitKing };

// How an opening goes whose role names `king` (a party, kNoKing or kSplitKing) in a session
// of `style`: the one rule FlushDeferred, a kByRole OpenOwned and NextOpenCost all follow.
constexpr OpenMode ModeForKing(PartyId king, OpenStyle style) {
  if (king == kSplitKing || (king == kNoKing && style == OpenStyle::kSplitKing)) {
    return OpenMode::kSplitKing;
  }
  return king == kNoKing ? OpenMode::kAllToAll : OpenMode::kKing;
}

struct ContextOptions {
  // Worker threads for big local kernels (matrix products). 1 = run in the caller.
  int threads = 1;
  OpenStyle open_style = OpenStyle::kAllToAll;
};

// "all-to-all" / "split-king" (config files and command lines), and back.
const char* OpenStyleName(OpenStyle style);
Result<OpenStyle> ParseOpenStyle(std::string_view name);

// A split-king opening of n values among `parties` parties with rotation `rot`: segment j
// is [n j / parties, n (j + 1) / parties) and its king is party (j + rot) mod parties; the
// king of segment j opens it. Returns the [begin, end) of `king`'s segment.
constexpr std::pair<std::size_t, std::size_t> SplitSegment(std::size_t n, int parties, int rot,
                                                           PartyId king) {
  const auto j = static_cast<std::size_t>(((king - rot) % parties + parties) % parties);
  const auto np = static_cast<std::size_t>(parties);
  return {n * j / np, n * (j + 1) / np};
}
// Bytes `self` sends in a split-king opening of n values of `width` bytes each: its share
// of every other king's segment (round 1) and its own segment's sum to every peer (round 2).
constexpr std::uint64_t SplitKingBytes(std::size_t n, std::size_t width, int parties, int rot,
                                       PartyId self) {
  std::uint64_t values = 0;
  for (PartyId k = 0; k < parties; ++k) {
    const auto [b, e] = SplitSegment(n, parties, rot, k);
    values += (k == self ? static_cast<std::uint64_t>(parties - 1) : 1) * (e - b);
  }
  return values * width;
}

using Digest = std::array<std::uint8_t, 32>;

template <typename P>
class ContextCheckSteps;
template <typename P>
class Context;

// Openings that wait for the session's next exchange, so that they cost no round of their
// own (mpc/lazy_shares.h: a pending truncation's masked value). A source registered with
// Context::Defer is asked for its masked values just before an exchange sends anything
// (Prepare; it may draw preprocessing then) and gets the opened values right after
// (Finish). Every exchange of the session carries them: Context::Open/OpenOwned in either
// mode and BinaryContext's openings. In such an exchange each party sends the deferred
// values (whole values: OpenBytes<P>() each, all-to-all) to every peer before any other message,
// and reads a peer's deferred values before any other message from that peer; they are logged for
// the MAC check like any opening. A split-king opening of whole values instead puts them in
// front of its own values and splits them alike (the adversary hook sees them there).
// Sources are held weakly: one that is gone is skipped.
template <typename P>
class DeferredSource {
 public:
  virtual ~DeferredSource() = default;
  // The masked values to open in this exchange (empty: nothing now).
  virtual Result<Shares<P>> Prepare(Context<P>& ctx) = 0;
  // Their opened values (low 64 bits), in the same order.
  virtual Status Finish(Context<P>& ctx, std::span<const std::uint64_t> opened) = 0;
  // Whether the values are masked by truncation pairs drawn in Prepare (a lazy truncation)
  // rather than by masks drawn earlier (Adversary::DeferredPart, for observers).
  virtual bool truncation() const { return true; }
};

// Cost of one arithmetic CheckMacs() with something pending (malicious mode): rounds, and
// bytes sent per party: 112 + 32 + (V + 32) to each of 2 peers, V = the check values' bytes:
// w / 8 for each distinct opening width w since the last check (14 for full-value openings
// only; 14 + 10 with 32-bit comparisons' openings too).
inline constexpr std::uint64_t kMacCheckRounds = MacCheckSteps::kRounds;
constexpr std::uint64_t ArithCheckBytes(std::uint64_t value_bytes = 14) {
  return 2 * (112 + 32 + value_bytes + 32);
}
inline constexpr std::uint64_t kArithCheckBytes = ArithCheckBytes();

// Malicious openings carry this many bits above the ones that matter (all 64 of a value, or
// a comparison's low `bits`), so that a lie in the low bits survives the check modulo
// 2^(bits + slack) with probability at most (slack + 2) 2^-(slack + 1) < 2^-43
// (docs/mpc-core.md "MAC check soundness"): 112-bit openings of whole values.
inline constexpr int kCheckSlackBits = 48;

// Bytes per value that OpenOwned(..., bits) sends to each peer (14 for a whole value in
// malicious mode, 8 semi-honest).
template <typename P>
constexpr std::uint64_t OpenBytes(int bits = 64) {
  const int b = bits >= 64 ? 64 : bits;
  if constexpr (P::kMalicious) {
    return static_cast<std::uint64_t>((b + kCheckSlackBits + 7) / 8);
  } else {
    return static_cast<std::uint64_t>((b + 7) / 8);
  }
}

template <typename P>
class Context {
 public:
  // Creates the context. In Spdz2k mode this runs one round: every party commits to its
  // first coin seed share (32 B to each peer). `local_seed` seeds this party's private
  // randomness (coin shares, commitment nonces): OsSeed() in production. The context's role
  // table starts as the static one and is handed to `prep` (Preprocessing::UseRoles).
  static Result<std::unique_ptr<Context>> Create(net::Channel& channel, Preprocessing<P>& prep,
                                                 const Seed& local_seed,
                                                 ContextOptions options = {});

  PartyId self() const { return channel_.self(); }
  int num_parties() const { return channel_.num_parties(); }
  net::Channel& channel() { return channel_; }
  net::CommStats& stats() { return channel_.stats(); }
  Preprocessing<P>& prep() { return prep_; }
  const ShareKey& key() const { return key_; }
  const ContextOptions& options() const { return options_; }
  bool failed() const { return failed_; }
  // Values opened since the last MAC check (the same count at every party).
  std::size_t pending_openings() const { return pending_; }
  // The session's role table (mpc/roles.h), shared with the preprocessing.
  RoleTable& roles() { return *roles_; }
  const std::shared_ptr<RoleTable>& shared_roles() const { return roles_; }

  // Open shared values (all parties learn them). Logged for the next MAC check.
  Result<std::vector<std::uint64_t>> Open(const Shares<P>& x, OpenMode mode = OpenMode::kByRole,
                                          PartyId king = 0);
  // Same, taking ownership of x (no copy into the MAC-check log). With `bits` < 64 only the
  // low `bits` bits of each value matter to the caller (a comparison's masked value) and
  // the opening is narrower: OpenBytes<P>(bits) bytes per value (semi-honest: the `bits`
  // themselves; malicious: bits + kCheckSlackBits, checked modulo 2^(8 x that)). The
  // values must be masked by dealer masks uniform over the whole share ring; the result
  // holds them mod 2^bits.
  Result<std::vector<std::uint64_t>> OpenOwned(Shares<P>&& x, OpenMode mode = OpenMode::kByRole,
                                               PartyId king = 0, int bits = 64);

  // A vector of n words for the caller to fill (its contents unspecified): the buffer the
  // last GiveSpare handed back, so that a batch opening as many values as the last one
  // allocates, zero-fills and page-faults nothing (1M products: 16 MB a party per batch).
  std::vector<std::uint64_t> TakeSpare(std::size_t n);
  // An opening's result the caller is done with, kept for TakeSpare. Only opened (public)
  // words come back here: a TakeSpare caller that left a word unwritten would send it.
  void GiveSpare(std::vector<std::uint64_t>&& words);
  // n shares to be masked and opened, every word written by the caller: semi-honest, the
  // spare (TakeSpare); malicious, fresh (a MAC word per value, no spare kept for them).
  Shares<P> MaskedBuffer(std::size_t n);

  // What an opening costs this party: its rounds and the bytes it sends.
  struct OpenCost {
    std::uint64_t rounds = 0, bytes = 0;
  };
  // The last OpenOwned: how it went (the mode kByRole resolved to, its king, the split
  // rotation), its own values and the deferred values that rode in front of them (split
  // kings, whole values: they are split like the rest; otherwise they went all-to-all
  // before it and count in neither).
  struct LastOpen {
    OpenMode mode = OpenMode::kAllToAll;
    PartyId king = kNoKing;
    int rot = 0;
    std::size_t values = 0, merged_deferred = 0;
    int bits = 64;
  };
  const LastOpen& last_open() const { return last_open_; }
  // The cost of an opening that went as `how` with `values` values in all (the theory the
  // secure backend charges: SplitKingBytes for split kings).
  OpenCost CostOf(const LastOpen& how, std::size_t values) const;
  // What the next OpenOwned(n values, kByRole, ., bits) will cost, deferred values aside
  // (by the role table, the open style and the split rotation).
  OpenCost NextOpenCost(std::size_t n, int bits = 64) const;
  // The last opening's cost, deferred values that rode in front of it included.
  OpenCost LastOpenCost() const {
    return CostOf(last_open_, last_open_.values + last_open_.merged_deferred);
  }

  // Registers a deferred source (see DeferredSource): its values ride the next exchange.
  void Defer(std::weak_ptr<DeferredSource<P>> source) { deferred_.push_back(std::move(source)); }
  // An exchange of only the deferred values: 1 round (each party sends 14 B per value in
  // malicious mode, 8 B semi-honest, to each peer); with split kings a split opening of them
  // (2 rounds, SplitKingBytes); nothing at all when none is waiting.
  Status FlushDeferred();
  // Deferred values opened so far, and of them those that rode a split-king opening (the
  // others went all-to-all: OpenBytes<P>() bytes each, to each peer).
  std::uint64_t deferred_opened() const { return deferred_opened_; }
  std::uint64_t deferred_in_split() const { return deferred_in_split_; }
  // The deferred part of an exchange, for exchanges outside this class (the binary
  // domain's openings): SendDeferred before sending anything, RecvDeferred(p) before
  // reading anything from p, FinishDeferred after the exchange. No-ops when nothing waits.
  Status SendDeferred();
  Status RecvDeferred(PartyId from);
  Status FinishDeferred();

  // Batched MAC check of everything opened (and every input broadcast) since the last check.
  Status CheckMacs();
  // The same check as steps for RunMacChecks (mac_check.h), to run next to another domain's
  // check. nullptr when there is nothing to check (and always in semi-honest mode);
  // kMacCheckFailed after an earlier failure; takes the check's random [r] now, before any
  // message, so a short pool stops every party in step.
  Result<std::unique_ptr<MacCheckSteps>> BeginMacCheck();

  // A check in another domain of this session failed: refuse every later open, input and
  // output here too (as after a failed check of this context).
  void MarkFailed() {
    failed_ = true;
    log_.clear();
    pending_ = 0;
  }

  // Number of values opened since the last check (0 in semi-honest mode).
  std::size_t pending_checks() const { return pending_; }
  // A fresh seed from this party's private randomness (local_seed's PRG: OsSeed() in
  // production), for private draws of a protocol above this one (MPCache's DP noise).
  Seed PrivateSeed() {
    Seed s{};
    local_prg_.Fill(s.data(), s.size());
    return s;
  }
  // Batched MAC checks begun in this session (each covers everything pending then).
  std::uint64_t checks_begun() const { return checks_begun_; }

  // Fold a broadcast value that every party must have received identically (input
  // sharing) into the transcript hash compared at the next check.
  void RecordBroadcast(std::span<const std::uint64_t> values);

  // For tamper tests and debugging only: the logged openings of this party (the opened
  // values as opened and this party's MAC shares of them).
  struct OpenedChunk {
    int width = 112;  // bits: the opened values are known mod 2^width
    std::vector<u128> opened;
    std::vector<u128> macs;
  };
  std::vector<OpenedChunk>& log_for_testing() { return log_; }
  // For attacker tests only (mpc/adversary.h): this party deviates as `adversary` says.
  void set_adversary_for_testing(Adversary* adversary) { adversary_ = adversary; }
  Adversary* adversary() const { return adversary_; }

 private:
  friend class ContextCheckSteps<P>;
  Context(net::Channel& channel, Preprocessing<P>& prep, const Seed& local_seed,
          ContextOptions options);
  Status SendToPeers(std::span<const std::uint8_t> bytes);
  Status Fail(const std::string& why);
  Status StartCoin();  // draw the next coin seed share and its commitment
  // The registered sources' masked values for the coming exchange (deferred_now_ set), and
  // their opened values back to those sources, in order.
  Result<Shares<P>> TakeDeferred();
  Status HandOutDeferred(std::span<const std::uint64_t> opened);
  // The two rounds of a split-king opening (mpc/split_open.cc): `sum` holds my shares (low
  // `width` bytes; `out` their wire form, already sent nowhere) and ends as the opened values.
  Status SplitExchange(std::vector<typename P::Word>& sum, std::span<const std::uint8_t> out,
                       std::size_t width);

  net::Channel& channel_;
  Preprocessing<P>& prep_;
  Prg local_prg_;
  ContextOptions options_;
  std::shared_ptr<RoleTable> roles_;
  ShareKey key_;
  bool failed_ = false;
  std::size_t pending_ = 0;
  std::uint64_t checks_begun_ = 0;
  std::vector<OpenedChunk> log_;
  // Coin for the check coefficients: my committed seed share and nonce, and the peers'
  // commitments (index = party id).
  Seed coin_share_{};
  Digest coin_nonce_{};
  std::vector<Digest> peer_coin_commitments_;
  // Chained hash of the input broadcasts since the last check (h = H(h || values)).
  bool broadcast_pending_ = false;
  Digest broadcast_hash_{};
  Adversary* adversary_ = nullptr;
  std::uint64_t opens_ = 0;        // openings so far (the adversary's index)
  std::uint64_t split_opens_ = 0;  // split-king openings so far (their rotation)
  LastOpen last_open_;
  // FlushDeferred's values on their way into a split-king OpenOwned.
  Shares<P> flush_taken_;
  bool flush_pending_ = false;
  // Deferred openings: registered sources; the exchange in progress (the sources that
  // contributed, with their value counts; the running sums; my MAC shares; peers read).
  std::vector<std::weak_ptr<DeferredSource<P>>> deferred_;
  std::vector<std::pair<std::shared_ptr<DeferredSource<P>>, std::size_t>> deferred_now_;
  std::vector<typename P::Word> deferred_sum_;
  std::vector<u128> deferred_macs_;
  std::vector<std::uint8_t> deferred_wire_, deferred_in_;  // the deferred values' wire bytes
  // OpenOwned's wire bytes out and in, kept between openings: an opening of the same size
  // as the last one allocates (and page-faults) nothing.
  std::vector<std::uint8_t> open_wire_, open_in_;
  std::vector<typename P::Word> open_words_;  // a peer's whole values (full-width openings)
  std::vector<std::uint64_t> spare_;          // TakeSpare / GiveSpare
  std::vector<bool> deferred_read_;
  bool deferred_active_ = false;
  std::uint64_t deferred_opened_ = 0;
  std::uint64_t deferred_in_split_ = 0;
};

// SHA-256 of the concatenation of `parts` (OpenSSL).
Digest Sha256(std::initializer_list<std::span<const std::uint8_t>> parts);

}  // namespace mpcache::mpc
