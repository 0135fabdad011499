#include "mpc/context.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "mpc/wire_pack.h"

namespace mpcache::mpc {

using wire::PackLow;
using wire::UnpackLow;
using wire::WireMask;

Digest Sha256(std::initializer_list<std::span<const std::uint8_t>> parts) {
  Digest out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const auto& p : parts) EVP_DigestUpdate(ctx, p.data(), p.size());
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, out.data(), &len);
  EVP_MD_CTX_free(ctx);
  return out;
}

namespace {

template <typename T>
std::span<const std::uint8_t> Bytes(const T& v) {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof(T)};
}

template <typename T>
T Get(std::span<const std::uint8_t> buf, std::size_t& off) {
  T v;
  std::memcpy(&v, buf.data() + off, sizeof(T));
  off += sizeof(T);
  return v;
}

}  // namespace

template <typename P>
Context<P>::Context(net::Channel& channel, Preprocessing<P>& prep, const Seed& local_seed,
                    ContextOptions options)
    : channel_(channel),
      prep_(prep),
      local_prg_(local_seed),
      options_(options),
      roles_(std::make_shared<RoleTable>(channel.num_parties())) {
  roles_->BindPhase(&channel.stats());
  prep_.UseRoles(roles_);
  key_.party = channel.self();
  key_.alpha = prep.mac_key_share();
  peer_coin_commitments_.resize(static_cast<std::size_t>(channel.num_parties()));
}

template <typename P>
Result<std::unique_ptr<Context<P>>> Context<P>::Create(net::Channel& channel,
                                                       Preprocessing<P>& prep,
                                                       const Seed& local_seed,
                                                       ContextOptions options) {
  if (prep.party() != channel.self()) {
    return InvalidArgument("preprocessing belongs to party " + std::to_string(prep.party()) +
                           " but the channel to party " + std::to_string(channel.self()));
  }
  if (options.threads < 1) return InvalidArgument("ContextOptions.threads must be >= 1");
  std::unique_ptr<Context> ctx(new Context(channel, prep, local_seed, options));
  if constexpr (P::kMalicious) {
    // Commit to the first coin seed share before anything is opened.
    ctx->local_prg_.Fill(ctx->coin_share_.data(), ctx->coin_share_.size());
    ctx->local_prg_.Fill(ctx->coin_nonce_.data(), ctx->coin_nonce_.size());
    const Digest commit = Sha256({ctx->coin_share_, ctx->coin_nonce_});
    MPCACHE_RETURN_IF_ERROR(ctx->SendToPeers(commit));
    ctx->stats().RecordRound();
    for (PartyId p = 0; p < ctx->num_parties(); ++p) {
      if (p == ctx->self()) continue;
      MPCACHE_RETURN_IF_ERROR(
          channel.Recv(p, ctx->peer_coin_commitments_[static_cast<std::size_t>(p)]));
    }
  }
  return ctx;
}

template <typename P>
Status Context<P>::SendToPeers(std::span<const std::uint8_t> bytes) {
  for (PartyId p = 0; p < num_parties(); ++p) {
    if (p == self()) continue;
    MPCACHE_RETURN_IF_ERROR(channel_.Send(p, bytes));
  }
  return channel_.Flush();
}

template <typename P>
Status Context<P>::Fail(const std::string& why) {
  failed_ = true;
  log_.clear();
  pending_ = 0;
  return MacCheckFailed("party " + std::to_string(self()) + ": " + why);
}

template <typename P>
void Context<P>::RecordBroadcast(std::span<const std::uint64_t> values) {
  if constexpr (P::kMalicious) {
    broadcast_hash_ =
        Sha256({broadcast_hash_,
                {reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes()}});
    broadcast_pending_ = true;
  }
}

template <typename P>
Result<Shares<P>> Context<P>::TakeDeferred() {
  deferred_active_ = false;
  deferred_now_.clear();
  Shares<P> all;
  if (deferred_.empty()) return all;
  std::vector<std::weak_ptr<DeferredSource<P>>> live;
  live.reserve(deferred_.size());
  for (std::size_t k = 0; k < deferred_.size(); ++k) {
    std::shared_ptr<DeferredSource<P>> src = deferred_[k].lock();
    if (!src) continue;
    live.push_back(deferred_[k]);
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> masked, src->Prepare(*this));
    if (masked.empty()) continue;
    deferred_now_.emplace_back(std::move(src), masked.size());
    all.Append(masked);
  }
  deferred_.swap(live);
  return all;
}

template <typename P>
Status Context<P>::SendDeferred() {
  using W = typename P::Word;
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> all, TakeDeferred());
  if (all.empty()) return Status::Ok();
  const std::size_t n = all.size();
  deferred_sum_ = std::move(all.v);
  deferred_macs_ = std::move(all.m);
  // Each value travels as its low OpenBytes<P>() little-endian bytes.
  const std::size_t width = OpenBytes<P>();
  PackLow<W>(deferred_sum_, width, deferred_wire_);
  const std::span<std::uint8_t> bytes(deferred_wire_);
  if (adversary_ != nullptr) {
    std::vector<Adversary::DeferredPart> parts;
    for (const auto& [src, count] : deferred_now_) {
      if (!parts.empty() && parts.back().truncation == src->truncation()) {
        parts.back().n += count;
      } else {
        parts.push_back({src->truncation(), count});
      }
    }
    adversary_->OnDeferredOpen(Domain::kArith, opens_, n, bytes, parts);
    // The liar's own view includes its lie.
    UnpackLow<W>(deferred_wire_, width, std::span<W>(deferred_sum_), false);
  }
  ++opens_;
  for (PartyId p = 0; p < num_parties(); ++p) {
    if (p != self()) MPCACHE_RETURN_IF_ERROR(channel_.Send(p, bytes));
  }
  deferred_read_.assign(static_cast<std::size_t>(num_parties()), false);
  deferred_active_ = true;
  return Status::Ok();
}

template <typename P>
Status Context<P>::RecvDeferred(PartyId from) {
  using W = typename P::Word;
  if (!deferred_active_ || deferred_read_[static_cast<std::size_t>(from)]) return Status::Ok();
  const std::size_t width = OpenBytes<P>(), n = deferred_sum_.size();
  deferred_in_.resize(n * width);
  MPCACHE_RETURN_IF_ERROR(channel_.Recv(from, deferred_in_));
  UnpackLow<W>(deferred_in_, width, std::span<W>(deferred_sum_), true);
  deferred_read_[static_cast<std::size_t>(from)] = true;
  return Status::Ok();
}

template <typename P>
Status Context<P>::FinishDeferred() {
  using W = typename P::Word;
  if (!deferred_active_) return Status::Ok();
  for (PartyId p = 0; p < num_parties(); ++p) {
    if (p != self()) MPCACHE_RETURN_IF_ERROR(RecvDeferred(p));
  }
  deferred_active_ = false;
  const std::size_t n = deferred_sum_.size();
  const std::size_t width = OpenBytes<P>();
  const W wire_mask = WireMask<W>(width);
  std::vector<std::uint64_t> low(n);
  for (std::size_t i = 0; i < n; ++i) {
    deferred_sum_[i] &= wire_mask;
    low[i] = Low64(deferred_sum_[i]);
  }
  if constexpr (P::kMalicious) {
    OpenedChunk chunk;
    chunk.width = static_cast<int>(8 * width);
    chunk.opened = std::move(deferred_sum_);
    chunk.macs = std::move(deferred_macs_);
    log_.push_back(std::move(chunk));
    pending_ += n;
  }
  deferred_sum_.clear();
  deferred_macs_.clear();
  deferred_opened_ += n;
  return HandOutDeferred(low);
}

template <typename P>
Status Context<P>::HandOutDeferred(std::span<const std::uint64_t> opened) {
  std::size_t off = 0;
  auto now = std::move(deferred_now_);
  deferred_now_.clear();
  for (auto& [src, count] : now) {
    MPCACHE_RETURN_IF_ERROR(src->Finish(*this, opened.subspan(off, count)));
    off += count;
  }
  return Status::Ok();
}

template <typename P>
Status Context<P>::FlushDeferred() {
  if (failed_) return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
  const PartyId king = roles_->For(roles_->Current()).king;
  if (ModeForKing(king, options_.open_style) == OpenMode::kSplitKing) {
    // A split-king opening of the deferred values alone (2 rounds, a third fewer bytes).
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> d, TakeDeferred());
    if (d.empty()) return Status::Ok();
    flush_taken_ = std::move(d);
    flush_pending_ = true;
    auto r = OpenOwned(Shares<P>{}, OpenMode::kSplitKing);
    flush_pending_ = false;
    return r.ok() ? Status::Ok() : Status(r.error());
  }
  MPCACHE_RETURN_IF_ERROR(SendDeferred());
  if (!deferred_active_) return Status::Ok();
  MPCACHE_RETURN_IF_ERROR(channel_.Flush());
  stats().RecordRound();
  return FinishDeferred();
}

template <typename P>
Result<std::vector<std::uint64_t>> Context<P>::Open(const Shares<P>& x, OpenMode mode,
                                                    PartyId king) {
  Shares<P> copy = x;
  return OpenOwned(std::move(copy), mode, king);
}

template <typename P>
Result<std::vector<std::uint64_t>> Context<P>::OpenOwned(Shares<P>&& x, OpenMode mode, PartyId king,
                                                         int bits) {
  // u128 in malicious mode; each share's low OpenBytes<P>(bits) bytes travel.
  using W = typename P::Word;
  if (failed_) return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
  if (bits < 1 || bits > 64) {
    return InvalidArgument("an opening keeps 1..64 bits of each value, not " +
                           std::to_string(bits));
  }
  const std::size_t width = OpenBytes<P>(bits);  // bytes per value on the wire
  if (mode == OpenMode::kByRole) {
    king = roles_->KingFor(x.size() * width);
    mode = ModeForKing(king, options_.open_style);
  }
  if (mode == OpenMode::kKing && (king < 0 || king >= num_parties())) {
    return InvalidArgument("king must be a party id, got " + std::to_string(king));
  }
  // Deferred values go first (see DeferredSource): to every peer, or — in a split-king
  // opening of whole values — in front of this opening's values, split like them.
  std::size_t merged = 0;
  if (mode == OpenMode::kSplitKing && width == OpenBytes<P>()) {
    Shares<P> d;
    if (flush_pending_) {
      d = std::move(flush_taken_);  // FlushDeferred took them (and set deferred_now_)
    } else {
      MPCACHE_ASSIGN_OR_RETURN(d, TakeDeferred());
    }
    merged = d.size();
    if (merged > 0) {
      d.Append(x);
      x = std::move(d);
    }
  } else {
    MPCACHE_RETURN_IF_ERROR(SendDeferred());
  }
  const std::size_t n = x.size();
  last_open_ = {mode,
                king,
                static_cast<int>(split_opens_ % static_cast<std::uint64_t>(num_parties())),
                n - merged,
                merged,
                bits};
  const W wire_mask = WireMask<W>(width);
  // The running sum starts as my share (the log keeps the opened value, not my share).
  std::vector<W> sum = std::move(x.v);
  // Values travel as their low `width` little-endian bytes.
  std::vector<std::uint8_t>& wire = open_wire_;
  auto pack = [&]() -> std::span<const std::uint8_t> {
    if (width == sizeof(W)) return {reinterpret_cast<const std::uint8_t*>(sum.data()), n * width};
    PackLow<W>(sum, width, wire);
    return wire;
  };
  std::vector<std::uint8_t>& in_bytes = open_in_;
  std::vector<W>& in_words = open_words_;
  auto recv_into = [&](PartyId p, bool add) -> Status {
    if (width == sizeof(W)) {  // full width: straight into words
      in_words.resize(n);
      MPCACHE_RETURN_IF_ERROR(channel_.RecvValues<W>(p, in_words));
      if (!add) {
        sum.swap(in_words);
        return Status::Ok();
      }
      for (std::size_t i = 0; i < n; ++i) sum[i] += in_words[i];
      return Status::Ok();
    }
    in_bytes.resize(n * width);
    MPCACHE_RETURN_IF_ERROR(channel_.Recv(p, in_bytes));
    UnpackLow<W>(in_bytes, width, std::span<W>(sum), add);
    return Status::Ok();
  };
  auto send_to = [&](PartyId p, std::span<const std::uint8_t> bytes) -> Status {
    return channel_.Send(p, bytes);
  };
  const bool sends_share = mode != OpenMode::kKing || self() != king;
  std::span<const std::uint8_t> out;
  if (sends_share) {
    out = pack();
    if (adversary_ != nullptr) {
      // Test-only: the liar changes what it sends; its own view includes the lie.
      std::vector<std::uint8_t> lie(out.begin(), out.end());
      adversary_->OnOpen(Domain::kArith, opens_, n, lie);
      wire = std::move(lie);
      out = wire;
      UnpackLow<W>(wire, width, std::span<W>(sum), false);
    }
  }
  ++opens_;
  if (mode == OpenMode::kSplitKing) {
    MPCACHE_RETURN_IF_ERROR(SplitExchange(sum, out, width));
  } else if (mode == OpenMode::kAllToAll) {
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p != self()) MPCACHE_RETURN_IF_ERROR(send_to(p, out));
    }
    MPCACHE_RETURN_IF_ERROR(channel_.Flush());
    stats().RecordRound();
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p == self()) continue;
      MPCACHE_RETURN_IF_ERROR(RecvDeferred(p));
      MPCACHE_RETURN_IF_ERROR(recv_into(p, true));
    }
  } else if (self() != king) {
    MPCACHE_RETURN_IF_ERROR(send_to(king, out));
    MPCACHE_RETURN_IF_ERROR(channel_.Flush());
    stats().RecordRound();
    MPCACHE_RETURN_IF_ERROR(RecvDeferred(king));
    MPCACHE_RETURN_IF_ERROR(recv_into(king, false));
    stats().RecordRound();
  } else {
    if (deferred_active_) MPCACHE_RETURN_IF_ERROR(channel_.Flush());
    stats().RecordRound();
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p == self()) continue;
      MPCACHE_RETURN_IF_ERROR(RecvDeferred(p));
      MPCACHE_RETURN_IF_ERROR(recv_into(p, true));
    }
    for (auto& v : sum) v &= wire_mask;
    out = pack();
    if (adversary_ != nullptr) {
      // Test-only: a lying king relays another sum (to both peers alike) and keeps it.
      std::vector<std::uint8_t> lie(out.begin(), out.end());
      adversary_->OnOpen(Domain::kArith, opens_ - 1, n, lie);
      wire = std::move(lie);
      out = wire;
      UnpackLow<W>(wire, width, std::span<W>(sum), false);
    }
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p != self()) MPCACHE_RETURN_IF_ERROR(send_to(p, out));
    }
    MPCACHE_RETURN_IF_ERROR(channel_.Flush());
    stats().RecordRound();
  }
  MPCACHE_RETURN_IF_ERROR(FinishDeferred());
  const std::uint64_t keep = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  std::vector<std::uint64_t> low;
  if constexpr (P::kMalicious) {
    low = TakeSpare(n);
    for (std::size_t i = 0; i < n; ++i) {
      sum[i] &= wire_mask;
      low[i] = Low64(sum[i]) & keep;
    }
    OpenedChunk chunk;
    chunk.width = static_cast<int>(8 * width);
    chunk.opened = std::move(sum);
    chunk.macs = std::move(x.m);
    log_.push_back(std::move(chunk));
    pending_ += n;
  } else {
    if (bits < 64) {
      for (auto& v : sum) v &= keep;
    }
    low = std::move(sum);
  }
  if (merged > 0) {
    // The deferred values in front: to their sources, in order (as FinishDeferred does).
    deferred_opened_ += merged;
    deferred_in_split_ += merged;
    MPCACHE_RETURN_IF_ERROR(HandOutDeferred(std::span<const std::uint64_t>(low.data(), merged)));
    low.erase(low.begin(), low.begin() + static_cast<std::ptrdiff_t>(merged));
  }
  return low;
}

template <typename P>
std::vector<std::uint64_t> Context<P>::TakeSpare(std::size_t n) {
  if (spare_.capacity() < n) return std::vector<std::uint64_t>(n);  // no copy of the old words
  std::vector<std::uint64_t> out = std::move(spare_);
  spare_ = {};
  out.resize(n);
  return out;
}

template <typename P>
void Context<P>::GiveSpare(std::vector<std::uint64_t>&& words) {
  if (words.capacity() > spare_.capacity()) spare_ = std::move(words);
}

template <typename P>
Shares<P> Context<P>::MaskedBuffer(std::size_t n) {
  if constexpr (P::kMalicious) {
    return Shares<P>(n);
  } else {
    Shares<P> out;
    out.v = TakeSpare(n);
    return out;
  }
}

template <typename P>
Status Context<P>::StartCoin() {
  local_prg_.Fill(coin_share_.data(), coin_share_.size());
  local_prg_.Fill(coin_nonce_.data(), coin_nonce_.size());
  return Status::Ok();
}

// The batched MAC check of one Context as the 3 message rounds of mac_check.h (Spdz2k
// only). With chi_j drawn after the openings were made, each party computes, for every
// opening width w present (112 bits for whole values, narrower for comparisons),
//   c_i(w) = sum_j chi_j m_j^(i) - alpha_i sum_j chi_j x~_j  mod 2^w   (j opened at width w)
// and the c_i(w) of all parties sum to 0 mod 2^w exactly when the opened values carry valid
// MACs (up to the probability bound of docs/mpc-core.md). The widths are checked
// separately: a lie at one width cannot be cancelled with one at another.
template <typename P>
class ContextCheckSteps final : public MacCheckSteps {
 public:
  explicit ContextCheckSteps(Context<P>& ctx)
      : ctx_(ctx), commits_(static_cast<std::size_t>(ctx.num_parties())) {
    for (const auto& c : ctx_.log_) {
      if (std::find(widths_.begin(), widths_.end(), c.width) == widths_.end()) {
        widths_.push_back(c.width);
      }
    }
    // Only input broadcasts to compare: one (zero) check value of a whole value's width.
    if (widths_.empty()) widths_.push_back(static_cast<int>(8 * OpenBytes<P>()));
    std::sort(widths_.begin(), widths_.end());
    c_.assign(widths_.size(), 0);
    total_.assign(widths_.size(), 0);
  }

  std::size_t PeerMessageSize(int round) const override {
    if (round == 0) return 112;
    if (round == 1) return 32;
    return CheckValueBytes() + 32;
  }

  std::vector<std::uint8_t> Message(int round) override {
    Fields msg;
    switch (round) {
      case 0: {
        // Reveal the committed coin share, commit to the next one, and send the hash of
        // the input broadcasts seen since the last check.
        coin_ = ctx_.coin_share_;
        msg.Put(ctx_.coin_share_);
        msg.Put(ctx_.coin_nonce_);
        (void)ctx_.StartCoin();
        msg.Put(Sha256({ctx_.coin_share_, ctx_.coin_nonce_}));
        msg.Put(ctx_.broadcast_hash_);
        break;
      }
      case 1:
        msg.Put(Sha256({EncodeCheckValues(c_), nonce_}));
        break;
      default: {
        const std::vector<std::uint8_t> values = EncodeCheckValues(c_);
        msg.PutBytes(values);
        msg.Put(nonce_);
        break;
      }
    }
    std::vector<std::uint8_t> out = msg.Take();
    if (ctx_.adversary_ != nullptr) ctx_.adversary_->OnCheckMessage(Domain::kArith, round, out);
    return out;
  }

  void Receive(int round, PartyId p, std::span<const std::uint8_t> buf) override {
    std::size_t off = 0;
    const auto pi = static_cast<std::size_t>(p);
    switch (round) {
      case 0: {
        const auto share = Get<Seed>(buf, off);
        const auto nonce = Get<Digest>(buf, off);
        const auto commit = Get<Digest>(buf, off);
        const auto bhash = Get<Digest>(buf, off);
        if (Sha256({share, nonce}) != ctx_.peer_coin_commitments_[pi]) {
          Mark("party " + std::to_string(p) +
               " opened a coin share that does not match its commitment");
        }
        if (bhash != ctx_.broadcast_hash_) {
          Mark("party " + std::to_string(p) + " saw different input broadcasts");
        }
        ctx_.peer_coin_commitments_[pi] = commit;
        for (std::size_t i = 0; i < coin_.size(); ++i) coin_[i] ^= share[i];
        break;
      }
      case 1:
        commits_[pi] = Get<Digest>(buf, off);
        break;
      default: {
        const std::span<const std::uint8_t> values = buf.subspan(0, CheckValueBytes());
        off = values.size();
        std::vector<u128> cp(widths_.size());
        std::size_t at = 0;
        for (std::size_t k = 0; k < cp.size(); ++k) {
          const auto w = static_cast<std::size_t>(widths_[k] / 8);
          std::memcpy(&cp[k], values.data() + at, w);
          at += w;
        }
        const auto pn = Get<Digest>(buf, off);
        if (Sha256({values, pn}) != commits_[pi]) {
          Mark("party " + std::to_string(p) +
               " opened a check value that does not match its commitment");
        }
        for (std::size_t k = 0; k < cp.size(); ++k) total_[k] += cp[k];
        break;
      }
    }
  }

  void EndRound(int round) override {
    if (round == 0) {
      // Random linear combination of everything opened since the last check, per width.
      Prg chi_prg(coin_);
      constexpr std::size_t kBlock = 4096;
      std::array<std::uint64_t, kBlock> chi{};
      std::vector<u128> mac(widths_.size(), 0), opened(widths_.size(), 0);
      for (const auto& c : ctx_.log_) {
        const auto k = static_cast<std::size_t>(std::find(widths_.begin(), widths_.end(), c.width) -
                                                widths_.begin());
        u128 m_acc = 0, x_acc = 0;
        for (std::size_t base = 0; base < c.opened.size(); base += kBlock) {
          const std::size_t len = std::min(kBlock, c.opened.size() - base);
          chi_prg.Fill(chi.data(), len * sizeof(std::uint64_t));
          const u128* x = c.opened.data() + base;
          const u128* m = c.macs.data() + base;
          for (std::size_t j = 0; j < len; ++j) {
            x_acc += chi[j] * x[j];
            m_acc += chi[j] * m[j];
          }
        }
        mac[k] += m_acc;
        opened[k] += x_acc;
      }
      for (std::size_t k = 0; k < widths_.size(); ++k) {
        c_[k] = (mac[k] - ctx_.key_.alpha * opened[k]) & Mask(widths_[k]);
      }
      ctx_.local_prg_.Fill(nonce_.data(), nonce_.size());
      total_ = c_;
    } else if (round == kRounds - 1) {
      for (std::size_t k = 0; k < widths_.size(); ++k) {
        if ((total_[k] & Mask(widths_[k])) != 0) {
          Mark("MAC check failed: an opened value or its MAC was tampered with");
        }
      }
    }
  }

  Status Finish() override {
    ctx_.log_.clear();
    ctx_.pending_ = 0;
    ctx_.broadcast_pending_ = false;
    ctx_.broadcast_hash_ = Digest{};
    if (bad_) return ctx_.Fail(why_);
    return Status::Ok();
  }

 private:
  // A message of fixed-size fields, appended in order.
  class Fields {
   public:
    template <typename T>
    void Put(const T& v) {
      PutBytes(Bytes(v));
    }
    void PutBytes(std::span<const std::uint8_t> b) {
      bytes_.insert(bytes_.end(), b.begin(), b.end());
    }
    std::vector<std::uint8_t> Take() { return std::move(bytes_); }

   private:
    std::vector<std::uint8_t> bytes_;
  };

  static u128 Mask(int width) { return width >= 128 ? ~u128{0} : (u128{1} << width) - 1; }
  // The check values on the wire: c(w) in w / 8 bytes each, ascending w.
  std::size_t CheckValueBytes() const {
    std::size_t n = 0;
    for (const int w : widths_) n += static_cast<std::size_t>(w / 8);
    return n;
  }
  std::vector<std::uint8_t> EncodeCheckValues(const std::vector<u128>& c) const {
    std::vector<std::uint8_t> out(CheckValueBytes());
    std::size_t at = 0;
    for (std::size_t k = 0; k < c.size(); ++k) {
      const auto w = static_cast<std::size_t>(widths_[k] / 8);
      std::memcpy(out.data() + at, &c[k], w);
      at += w;
    }
    return out;
  }

  void Mark(std::string why) {
    if (!bad_) why_ = std::move(why);
    bad_ = true;
  }

  Context<P>& ctx_;
  std::vector<Digest> commits_;
  std::vector<int> widths_;  // opening widths present, ascending
  Seed coin_{};
  std::vector<u128> c_, total_;
  Digest nonce_{};
  bool bad_ = false;
  std::string why_;
};

template <typename P>
Result<std::unique_ptr<MacCheckSteps>> Context<P>::BeginMacCheck() {
  if constexpr (!P::kMalicious) {
    return std::unique_ptr<MacCheckSteps>();
  } else {
    if (failed_) return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
    if (pending_ == 0 && !broadcast_pending_) return std::unique_ptr<MacCheckSteps>();
    ++checks_begun_;
    return std::unique_ptr<MacCheckSteps>(new ContextCheckSteps<P>(*this));
  }
}

template <typename P>
Status Context<P>::CheckMacs() {
  MPCACHE_ASSIGN_OR_RETURN(std::unique_ptr<MacCheckSteps> check, BeginMacCheck());
  MacCheckSteps* const checks[] = {check.get()};
  return RunMacChecks(channel_, checks);
}

template class Context<SemiHonest>;
template class Context<Spdz2k>;

}  // namespace mpcache::mpc
