#include "mpc/compare/binary_context.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "mpc/gf2_64.h"

namespace mpcache::mpc {

namespace {

// Low bits of lifts packed 64 per word.
std::vector<std::uint64_t> PackLowBits(const std::vector<std::uint64_t>& lifts) {
  std::vector<std::uint64_t> w(WordsFor(lifts.size()));
  for (std::size_t i = 0; i < lifts.size(); ++i) w[i / 64] |= (lifts[i] & 1) << (i % 64);
  return w;
}

// dst[off .. off + 64 * src.size()) |= src (bit offsets; dst has a spare word at the end).
void AppendBits(std::vector<std::uint64_t>& dst, std::size_t off,
                const std::vector<std::uint64_t>& src) {
  const std::size_t w = off / 64, s = off % 64;
  for (std::size_t i = 0; i < src.size(); ++i) {
    dst[w + i] |= src[i] << s;
    if (s != 0) dst[w + i + 1] |= src[i] >> (64 - s);
  }
}

// dst (n bits) ^= bits [off, off + n) of src.
void XorBitsFrom(std::vector<std::uint64_t>& dst, const std::vector<std::uint64_t>& src,
                 std::size_t off, std::size_t n) {
  const std::size_t w = off / 64, s = off % 64;
  for (std::size_t i = 0; i < dst.size(); ++i) {
    std::uint64_t x = src[w + i] >> s;
    if (s != 0 && w + i + 1 < src.size()) x |= src[w + i + 1] << (64 - s);
    if (i + 1 == dst.size() && n % 64 != 0) x &= (std::uint64_t{1} << (n % 64)) - 1;
    dst[i] ^= x;
  }
}

template <typename T>
std::span<const std::uint8_t> AsBytes(const T& v) {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof(T)};
}

}  // namespace

template <typename P>
BinaryContext<P>::BinaryContext(Context<P>& arith, BitPreprocessing<P>& prep,
                                const Seed& local_seed)
    : arith_(arith), prep_(prep), local_prg_(local_seed) {
  key_.party = arith.self();
  key_.beta = prep.bit_mac_key_share();
  peer_commitments_.resize(static_cast<std::size_t>(arith.num_parties()));
}

template <typename P>
Result<std::unique_ptr<BinaryContext<P>>> BinaryContext<P>::Create(Context<P>& arith,
                                                                   BitPreprocessing<P>& prep,
                                                                   const Seed& local_seed) {
  if (prep.party() != arith.self()) {
    return InvalidArgument("bit preprocessing belongs to party " + std::to_string(prep.party()) +
                           ", the context to party " + std::to_string(arith.self()));
  }
  std::unique_ptr<BinaryContext> ctx(new BinaryContext(arith, prep, local_seed));
  prep.UseRoles(arith.shared_roles());
  if constexpr (P::kMalicious) {
    ctx->local_prg_.Fill(ctx->coin_share_.data(), ctx->coin_share_.size());
    ctx->local_prg_.Fill(ctx->coin_nonce_.data(), ctx->coin_nonce_.size());
    const Digest commit = Sha256({ctx->coin_share_, ctx->coin_nonce_});
    MPCACHE_RETURN_IF_ERROR(ctx->SendToPeers(commit));
    arith.stats().RecordRound();
    for (PartyId p = 0; p < arith.num_parties(); ++p) {
      if (p == arith.self()) continue;
      MPCACHE_RETURN_IF_ERROR(
          arith.channel().Recv(p, ctx->peer_commitments_[static_cast<std::size_t>(p)]));
    }
  }
  return ctx;
}

template <typename P>
Status BinaryContext<P>::SendToPeers(std::span<const std::uint8_t> bytes) {
  net::Channel& ch = arith_.channel();
  for (PartyId p = 0; p < ch.num_parties(); ++p) {
    if (p != ch.self()) MPCACHE_RETURN_IF_ERROR(ch.Send(p, bytes));
  }
  return ch.Flush();
}

template <typename P>
Status BinaryContext<P>::Fail(const std::string& why) {
  failed_ = true;
  log_.clear();
  pending_ = 0;
  return MacCheckFailed("party " + std::to_string(self()) + " (binary domain): " + why);
}

template <typename P>
Result<PublicBits> BinaryContext<P>::Open(BitShares<P> x, OpenMode mode, PartyId king) {
  std::vector<BitShares<P>> xs;
  xs.push_back(std::move(x));
  MPCACHE_ASSIGN_OR_RETURN(auto out, OpenMany(std::move(xs), mode, king));
  return std::move(out[0]);
}

template <typename P>
Result<std::vector<PublicBits>> BinaryContext<P>::OpenMany(std::vector<BitShares<P>>&& xs,
                                                           OpenMode mode, PartyId king) {
  if (failed_ || arith_.failed()) {
    return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
  }
  // My shares' (low) bits, all vectors packed back to back into one bit string.
  std::vector<std::vector<std::uint64_t>> mine(xs.size());
  std::size_t total_bits = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if constexpr (P::kMalicious) {
      mine[k] = PackLowBits(xs[k].v);
    } else {
      mine[k] = xs[k].v;
    }
    if (xs[k].n % 64 != 0 && !mine[k].empty()) {
      mine[k].back() &= (std::uint64_t{1} << (xs[k].n % 64)) - 1;  // clear padding
    }
    total_bits += xs[k].n;
  }
  const std::size_t total_bytes = (total_bits + 7) / 8;
  if (mode == OpenMode::kByRole) {
    king = arith_.roles().KingFor(total_bytes);
    // Split kings open arithmetic values only: bits go all-to-all.
    mode = king == kNoKing || king == kSplitKing ? OpenMode::kAllToAll : OpenMode::kKing;
  }
  net::Channel& ch = arith_.channel();
  if (mode == OpenMode::kKing && (king < 0 || king >= ch.num_parties())) {
    return InvalidArgument("king must be a party id, got " + std::to_string(king));
  }
  std::vector<std::uint64_t> msg(WordsFor(total_bits) + 1);
  {
    std::size_t off = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      AppendBits(msg, off, mine[k]);
      off += xs[k].n;
    }
  }
  const auto msg_bytes = [&]() -> std::span<std::uint8_t> {
    return {reinterpret_cast<std::uint8_t*>(msg.data()), total_bytes};
  };
  // Re-split `bits` (the whole opened string, or the liar's changed share) into mine.
  const auto split = [&](const std::vector<std::uint64_t>& bits) {
    std::size_t off = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      std::fill(mine[k].begin(), mine[k].end(), 0);
      XorBitsFrom(mine[k], bits, off, xs[k].n);
      off += xs[k].n;
    }
  };
  const bool sends_share = mode == OpenMode::kAllToAll || ch.self() != king;
  if (adversary_ != nullptr && sends_share) {
    adversary_->OnOpen(Domain::kBinary, opens_, total_bits, msg_bytes());
    split(msg);  // the liar's own view includes its lie
  }
  ++opens_;
  // The arithmetic domain's deferred values ride this exchange (mpc/context.h): sent to
  // every peer first, received from a peer before its bits.
  MPCACHE_RETURN_IF_ERROR(arith_.SendDeferred());
  std::vector<std::uint64_t> in(WordsFor(total_bits) + 1);
  const auto recv = [&](PartyId p) -> Status {
    MPCACHE_RETURN_IF_ERROR(arith_.RecvDeferred(p));  // p sent them before its bits
    std::fill(in.begin(), in.end(), 0);
    return ch.Recv(p, {reinterpret_cast<std::uint8_t*>(in.data()), total_bytes});
  };
  if (mode == OpenMode::kAllToAll) {
    MPCACHE_RETURN_IF_ERROR(SendToPeers(msg_bytes()));
    arith_.stats().RecordRound();
    for (PartyId p = 0; p < ch.num_parties(); ++p) {
      if (p == ch.self()) continue;
      MPCACHE_RETURN_IF_ERROR(recv(p));
      std::size_t off = 0;
      for (std::size_t k = 0; k < xs.size(); ++k) {
        XorBitsFrom(mine[k], in, off, xs[k].n);
        off += xs[k].n;
      }
    }
  } else if (ch.self() != king) {
    // King mode: my share to the king, the opened bits back from it (2 rounds).
    MPCACHE_RETURN_IF_ERROR(ch.Send(king, msg_bytes()));
    MPCACHE_RETURN_IF_ERROR(ch.Flush());
    arith_.stats().RecordRound();
    MPCACHE_RETURN_IF_ERROR(recv(king));
    arith_.stats().RecordRound();
    split(in);
  } else {
    // The king: XOR of every share, relayed to both peers.
    arith_.stats().RecordRound();
    for (PartyId p = 0; p < ch.num_parties(); ++p) {
      if (p == ch.self()) continue;
      MPCACHE_RETURN_IF_ERROR(recv(p));
      for (std::size_t i = 0; i < msg.size(); ++i) msg[i] ^= in[i];
    }
    if (adversary_ != nullptr) {
      // Test-only: a lying king relays other bits (to both peers alike) and keeps them.
      adversary_->OnOpen(Domain::kBinary, opens_ - 1, total_bits, msg_bytes());
    }
    MPCACHE_RETURN_IF_ERROR(SendToPeers(msg_bytes()));
    arith_.stats().RecordRound();
    split(msg);
  }
  MPCACHE_RETURN_IF_ERROR(arith_.FinishDeferred());
  std::vector<PublicBits> out(xs.size());
  for (std::size_t k = 0; k < xs.size(); ++k) {
    out[k].n = xs[k].n;
    out[k].w = std::move(mine[k]);
    if constexpr (P::kMalicious) {
      OpenedChunk c;
      c.opened = out[k];
      c.macs = std::move(xs[k].m);
      pending_ += c.opened.n;
      log_.push_back(std::move(c));
    }
  }
  return out;
}

// The binary MAC check of one BinaryContext as the 3 rounds of mac_check.h: the batched
// check of SPDZ over GF(2^64) (MASCOT's Pi_MACCheck): coefficients chi_j in GF(2^64) from
// the committed coin, c_i = sum_j chi_j m_j^(i) + beta_i sum_j chi_j x~_j, committed, then
// opened; the XOR of the c_i must be 0.
template <typename P>
class BinaryCheckSteps final : public MacCheckSteps {
 public:
  explicit BinaryCheckSteps(BinaryContext<P>& ctx)
      : ctx_(ctx), commits_(static_cast<std::size_t>(ctx.arith().num_parties())) {}

  std::size_t PeerMessageSize(int round) const override {
    static constexpr std::size_t kSize[kRounds] = {80, 32, 40};
    return kSize[round];
  }

  std::vector<std::uint8_t> Message(int round) override {
    std::vector<std::uint8_t> msg(PeerMessageSize(round));
    switch (round) {
      case 0: {
        // Reveal the committed coin share, commit to the next one.
        coin_ = ctx_.coin_share_;
        std::memcpy(msg.data(), ctx_.coin_share_.data(), 16);
        std::memcpy(msg.data() + 16, ctx_.coin_nonce_.data(), 32);
        ctx_.local_prg_.Fill(ctx_.coin_share_.data(), ctx_.coin_share_.size());
        ctx_.local_prg_.Fill(ctx_.coin_nonce_.data(), ctx_.coin_nonce_.size());
        const Digest next = Sha256({ctx_.coin_share_, ctx_.coin_nonce_});
        std::memcpy(msg.data() + 48, next.data(), 32);
        break;
      }
      case 1: {
        const Digest commit = Sha256({AsBytes(c_), nonce_});
        std::memcpy(msg.data(), commit.data(), 32);
        break;
      }
      default:
        std::memcpy(msg.data(), &c_, 8);
        std::memcpy(msg.data() + 8, nonce_.data(), 32);
        break;
    }
    if (ctx_.adversary_ != nullptr) ctx_.adversary_->OnCheckMessage(Domain::kBinary, round, msg);
    return msg;
  }

  void Receive(int round, PartyId p, std::span<const std::uint8_t> buf) override {
    const auto pi = static_cast<std::size_t>(p);
    switch (round) {
      case 0: {
        Seed share{};
        Digest nonce{}, commit{};
        std::memcpy(share.data(), buf.data(), 16);
        std::memcpy(nonce.data(), buf.data() + 16, 32);
        std::memcpy(commit.data(), buf.data() + 48, 32);
        if (Sha256({share, nonce}) != ctx_.peer_commitments_[pi]) {
          Mark("party " + std::to_string(p) +
               " opened a coin share that does not match its commitment");
        }
        ctx_.peer_commitments_[pi] = commit;
        for (std::size_t i = 0; i < coin_.size(); ++i) coin_[i] ^= share[i];
        break;
      }
      case 1:
        std::memcpy(commits_[pi].data(), buf.data(), 32);
        break;
      default: {
        std::uint64_t cp = 0;
        Digest pn{};
        std::memcpy(&cp, buf.data(), 8);
        std::memcpy(pn.data(), buf.data() + 8, 32);
        if (Sha256({AsBytes(cp), pn}) != commits_[pi]) {
          Mark("party " + std::to_string(p) +
               " opened a check value that does not match its commitment");
        }
        total_ ^= cp;
        break;
      }
    }
  }

  void EndRound(int round) override {
    if (round == 0) {
      // Random linear combination, coefficients in GF(2^64), of everything opened.
      Prg chi_prg(coin_);
      gf64::u128 mac = 0;
      std::uint64_t opened = 0;
      constexpr std::size_t kBlock = 4096;
      std::array<std::uint64_t, kBlock> chi{};
      for (const auto& c : ctx_.log_) {
        for (std::size_t base = 0; base < c.opened.n; base += kBlock) {
          const std::size_t len = std::min(kBlock, c.opened.n - base);
          chi_prg.Fill(chi.data(), len * sizeof(std::uint64_t));
          const std::span<const std::uint64_t> ch(chi.data(), len);
          mac ^= gf64::DotUnreduced(ch, {c.macs.data() + base, len});
          opened ^= gf64::SelectXor(ch, c.opened.w.data(), base);
        }
      }
      c_ = gf64::Reduce(mac) ^ gf64::Mul(ctx_.key_.beta, opened);
      ctx_.local_prg_.Fill(nonce_.data(), nonce_.size());
      total_ = c_;
    } else if (round == kRounds - 1) {
      if (total_ != 0) Mark("MAC check failed: an opened bit or its MAC was tampered with");
    }
  }

  Status Finish() override {
    ctx_.log_.clear();
    ctx_.pending_ = 0;
    if (bad_) return ctx_.Fail(why_);
    return Status::Ok();
  }

 private:
  void Mark(std::string why) {
    if (!bad_) why_ = std::move(why);
    bad_ = true;
  }

  BinaryContext<P>& ctx_;
  std::vector<Digest> commits_;
  Seed coin_{};
  std::uint64_t c_ = 0, total_ = 0;
  Digest nonce_{};
  bool bad_ = false;
  std::string why_;
};

template <typename P>
Result<std::unique_ptr<MacCheckSteps>> BinaryContext<P>::BeginMacCheck() {
  if constexpr (!P::kMalicious) {
    return std::unique_ptr<MacCheckSteps>();
  } else {
    if (failed_) return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
    if (pending_ == 0) return std::unique_ptr<MacCheckSteps>();
    ++checks_begun_;
    return std::unique_ptr<MacCheckSteps>(new BinaryCheckSteps<P>(*this));
  }
}

template <typename P>
Status BinaryContext<P>::CheckMacs() {
  MPCACHE_ASSIGN_OR_RETURN(std::unique_ptr<MacCheckSteps> check, BeginMacCheck());
  MacCheckSteps* const checks[] = {check.get()};
  return RunMacChecks(arith_.channel(), checks);
}

template <typename P>
std::size_t BitAndBatch<P>::Prepare(const BitShares<P>& x, const BitShares<P>& y) {
  jobs_.push_back(Job{&x, &y, {}});
  return jobs_.size() - 1;
}

template <typename P>
Status BitAndBatch<P>::Exchange() {
  // Triples: semi-honest jobs take whole words (64 gates), malicious ones one per gate.
  std::size_t total = 0;
  std::vector<std::size_t> offset;
  for (const Job& j : jobs_) {
    if (j.x->n != j.y->n) {
      return InvalidArgument("AND of bit vectors of sizes " + std::to_string(j.x->n) + " and " +
                             std::to_string(j.y->n));
    }
    offset.push_back(total);
    total += P::kMalicious ? j.x->n : 64 * WordsFor(j.x->n);
  }
  if (total == 0) return Status::Ok();
  MPCACHE_ASSIGN_OR_RETURN(BitTriples<P> t, ctx_.prep().GetBitTriples(total));
  std::vector<BitShares<P>> masked;
  masked.reserve(2 * jobs_.size());
  for (std::size_t k = 0; k < jobs_.size(); ++k) {
    const Job& j = jobs_[k];
    BitShares<P> d(j.x->n), e(j.x->n);
    const std::size_t o = P::kMalicious ? offset[k] : offset[k] / 64;
    for (std::size_t i = 0; i < d.v.size(); ++i) {
      if constexpr (P::kMalicious) {
        d.v[i] = j.x->v[i] ^ t.a.v[o + i];
        d.m[i] = j.x->m[i] ^ t.a.m[o + i];
        e.v[i] = j.y->v[i] ^ t.b.v[o + i];
        e.m[i] = j.y->m[i] ^ t.b.m[o + i];
      } else {
        d.v[i] = j.x->v[i] ^ t.a.v[o + i];
        e.v[i] = j.y->v[i] ^ t.b.v[o + i];
      }
    }
    masked.push_back(std::move(d));
    masked.push_back(std::move(e));
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<PublicBits> opened, ctx_.OpenMany(std::move(masked)));
  const bool p0 = ctx_.self() == 0;
  const std::uint64_t beta = ctx_.key().beta;
  for (std::size_t k = 0; k < jobs_.size(); ++k) {
    Job& j = jobs_[k];
    const PublicBits& d = opened[2 * k];
    const PublicBits& e = opened[2 * k + 1];
    const std::size_t o = P::kMalicious ? offset[k] : offset[k] / 64;
    BitShares<P> z(j.x->n);
    for (std::size_t i = 0; i < z.v.size(); ++i) {
      if constexpr (P::kMalicious) {
        const std::uint64_t di = (d.w[i / 64] >> (i % 64)) & 1, ei = (e.w[i / 64] >> (i % 64)) & 1;
        // z = c ^ d b ^ e a ^ d e (d, e public bits select; the MAC of the public d e is
        // beta d e).
        z.v[i] = t.c.v[o + i] ^ (t.b.v[o + i] & (0 - di)) ^ (t.a.v[o + i] & (0 - ei));
        if (p0) z.v[i] ^= di & ei;
        z.m[i] = t.c.m[o + i] ^ (t.b.m[o + i] & (0 - di)) ^ (t.a.m[o + i] & (0 - ei)) ^
                 (beta & (0 - (di & ei)));
      } else {
        const std::uint64_t di = d.w[i], ei = e.w[i];
        z.v[i] = t.c.v[o + i] ^ (di & t.b.v[o + i]) ^ (ei & t.a.v[o + i]);
        if (p0) z.v[i] ^= di & ei;
      }
    }
    j.out = std::move(z);
  }
  return Status::Ok();
}

template <typename P>
Status CheckAllMacs(BinaryContext<P>& ctx) {
  if constexpr (!P::kMalicious) {
    return Status::Ok();
  } else {
    // Both checks' randoms are taken before any message (a short pool stops every party in
    // step); a binary failure is reported before the arithmetic side is looked at.
    MPCACHE_ASSIGN_OR_RETURN(std::unique_ptr<MacCheckSteps> binary, ctx.BeginMacCheck());
    MPCACHE_ASSIGN_OR_RETURN(std::unique_ptr<MacCheckSteps> arith, ctx.arith().BeginMacCheck());
    MacCheckSteps* const checks[] = {binary.get(), arith.get()};
    Status st = RunMacChecks(ctx.arith().channel(), checks);
    // After a failure in the binary domain the arithmetic side releases nothing either.
    if (ctx.failed()) ctx.arith().MarkFailed();
    return st;
  }
}

template class BinaryContext<SemiHonest>;
template class BinaryContext<Spdz2k>;
template class BitAndBatch<SemiHonest>;
template class BitAndBatch<Spdz2k>;
template Status CheckAllMacs<SemiHonest>(BinaryContext<SemiHonest>&);
template Status CheckAllMacs<Spdz2k>(BinaryContext<Spdz2k>&);

}  // namespace mpcache::mpc
