#include "mpc/context.h"

#include <openssl/evp.h>

#include <cstring>

namespace mpcache::mpc {

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

// A message of fixed-size fields, appended in order.
class Message {
 public:
  template <typename T>
  void Put(const T& v) {
    const auto b = Bytes(v);
    bytes_.insert(bytes_.end(), b.begin(), b.end());
  }
  std::span<const std::uint8_t> bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

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
    : channel_(channel), prep_(prep), local_prg_(local_seed), options_(options) {
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
Status Context<P>::Fail(std::string why) {
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
Result<std::vector<std::uint64_t>> Context<P>::Open(const Shares<P>& x, OpenMode mode,
                                                    PartyId king) {
  Shares<P> copy = x;
  return OpenOwned(std::move(copy), mode, king);
}

template <typename P>
Result<std::vector<std::uint64_t>> Context<P>::OpenOwned(Shares<P>&& x, OpenMode mode,
                                                         PartyId king) {
  if (failed_) return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
  if (mode == OpenMode::kKing && (king < 0 || king >= num_parties())) {
    return InvalidArgument("king must be a party id, got " + std::to_string(king));
  }
  const std::size_t n = x.size();
  // The running sum starts as my share (semi-honest: my share vector itself, no copy).
  std::vector<std::uint64_t> sum;
  if constexpr (P::kMalicious) {
    sum.resize(n);
    for (std::size_t i = 0; i < n; ++i) sum[i] = Low64(x.v[i]);
  } else {
    sum = std::move(x.v);
  }
  std::vector<std::uint64_t> in(n);
  auto add_from = [&](PartyId p) -> Status {
    MPCACHE_RETURN_IF_ERROR(channel_.RecvValues<std::uint64_t>(p, in));
    for (std::size_t i = 0; i < n; ++i) sum[i] += in[i];
    return Status::Ok();
  };
  if (mode == OpenMode::kAllToAll) {
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p != self()) MPCACHE_RETURN_IF_ERROR(channel_.SendValues<std::uint64_t>(p, sum));
    }
    MPCACHE_RETURN_IF_ERROR(channel_.Flush());
    stats().RecordRound();
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p != self()) MPCACHE_RETURN_IF_ERROR(add_from(p));
    }
  } else if (self() != king) {
    MPCACHE_RETURN_IF_ERROR(channel_.SendValues<std::uint64_t>(king, sum));
    MPCACHE_RETURN_IF_ERROR(channel_.Flush());
    stats().RecordRound();
    MPCACHE_RETURN_IF_ERROR(channel_.RecvValues<std::uint64_t>(king, sum));
    stats().RecordRound();
  } else {
    stats().RecordRound();
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p != self()) MPCACHE_RETURN_IF_ERROR(add_from(p));
    }
    for (PartyId p = 0; p < num_parties(); ++p) {
      if (p != self()) MPCACHE_RETURN_IF_ERROR(channel_.SendValues<std::uint64_t>(p, sum));
    }
    MPCACHE_RETURN_IF_ERROR(channel_.Flush());
    stats().RecordRound();
  }
  if constexpr (P::kMalicious) {
    OpenedChunk chunk;
    chunk.opened = sum;
    chunk.shares = std::move(x.v);
    chunk.macs = std::move(x.m);
    log_.push_back(std::move(chunk));
    pending_ += n;
  }
  return sum;
}

template <typename P>
Status Context<P>::StartCoin() {
  local_prg_.Fill(coin_share_.data(), coin_share_.size());
  local_prg_.Fill(coin_nonce_.data(), coin_nonce_.size());
  return Status::Ok();
}

template <typename P>
Status Context<P>::CheckMacs() {
  if constexpr (!P::kMalicious) {
    return Status::Ok();
  } else {
    if (failed_) return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
    if (pending_ == 0 && !broadcast_pending_) return Status::Ok();
    const int np = num_parties();
    bool bad = false;
    std::string why;
    auto mark = [&](std::string w) {
      if (!bad) why = std::move(w);
      bad = true;
    };

    // The authenticated random [r] that masks the high half of z. Taken before any message
    // is sent: if preprocessing is short, every party stops here, in step.
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> r, prep_.GetRandoms(1));

    // Round 1: reveal the committed coin share, commit to the next one, compare the
    // input-broadcast transcript hash.
    const Seed my_share = coin_share_;
    const Digest my_nonce = coin_nonce_;
    MPCACHE_RETURN_IF_ERROR(StartCoin());
    const Digest next_commit = Sha256({coin_share_, coin_nonce_});
    {
      Message msg;
      msg.Put(my_share);
      msg.Put(my_nonce);
      msg.Put(next_commit);
      msg.Put(broadcast_hash_);
      MPCACHE_RETURN_IF_ERROR(SendToPeers(msg.bytes()));
      stats().RecordRound();
    }
    Seed coin = my_share;
    for (PartyId p = 0; p < np; ++p) {
      if (p == self()) continue;
      std::array<std::uint8_t, 112> buf{};
      MPCACHE_RETURN_IF_ERROR(channel_.Recv(p, buf));
      std::size_t off = 0;
      const auto share = Get<Seed>(buf, off);
      const auto nonce = Get<Digest>(buf, off);
      const auto commit = Get<Digest>(buf, off);
      const auto bhash = Get<Digest>(buf, off);
      if (Sha256({share, nonce}) != peer_coin_commitments_[static_cast<std::size_t>(p)]) {
        mark("party " + std::to_string(p) +
             " opened a coin share that does not match its commitment");
      }
      if (bhash != broadcast_hash_) {
        mark("party " + std::to_string(p) + " saw different input broadcasts");
      }
      peer_coin_commitments_[static_cast<std::size_t>(p)] = commit;
      for (std::size_t i = 0; i < coin.size(); ++i) coin[i] ^= share[i];
    }

    // Random linear combination of everything opened since the last check.
    Prg chi_prg(coin);
    u128 y = 0, y_open = 0, mac = 0;
    constexpr std::size_t kBlock = 4096;
    std::array<std::uint64_t, kBlock> chi{};
    for (const OpenedChunk& c : log_) {
      for (std::size_t base = 0; base < c.opened.size(); base += kBlock) {
        const std::size_t len = std::min(kBlock, c.opened.size() - base);
        chi_prg.Fill(chi.data(), len * sizeof(std::uint64_t));
        for (std::size_t j = 0; j < len; ++j) {
          const u128 x = chi[j];
          y += x * c.shares[base + j];
          y_open += x * c.opened[base + j];
          mac += x * c.macs[base + j];
        }
      }
    }

    // Round 2: z_i = y_i + 2^64 r_i (party 0 subtracts y~): z reveals only (u + r) mod 2^64.
    u128 z = y + (r.v[0] << 64);
    if (self() == 0) z -= y_open;
    MPCACHE_RETURN_IF_ERROR(SendToPeers(Bytes(z)));
    stats().RecordRound();
    for (PartyId p = 0; p < np; ++p) {
      if (p == self()) continue;
      u128 zp = 0;
      MPCACHE_RETURN_IF_ERROR(channel_.Recv(p, {reinterpret_cast<std::uint8_t*>(&zp), sizeof(zp)}));
      z += zp;
    }
    if (Low64(z) != 0) mark("opened values are inconsistent with their shares");

    // Rounds 3 and 4: commit to c_i, then open it.
    const u128 c = mac + (r.m[0] << 64) - key_.alpha * (y_open + z);
    Digest nonce{};
    local_prg_.Fill(nonce.data(), nonce.size());
    const Digest my_commit = Sha256({Bytes(c), nonce});
    MPCACHE_RETURN_IF_ERROR(SendToPeers(my_commit));
    stats().RecordRound();
    std::vector<Digest> commits(static_cast<std::size_t>(np));
    for (PartyId p = 0; p < np; ++p) {
      if (p != self())
        MPCACHE_RETURN_IF_ERROR(channel_.Recv(p, commits[static_cast<std::size_t>(p)]));
    }
    {
      Message msg;
      msg.Put(c);
      msg.Put(nonce);
      msg.Put(z);
      MPCACHE_RETURN_IF_ERROR(SendToPeers(msg.bytes()));
      stats().RecordRound();
    }
    u128 total = c;
    for (PartyId p = 0; p < np; ++p) {
      if (p == self()) continue;
      std::array<std::uint8_t, 64> buf{};
      MPCACHE_RETURN_IF_ERROR(channel_.Recv(p, buf));
      std::size_t off = 0;
      const auto cp = Get<u128>(buf, off);
      const auto np_nonce = Get<Digest>(buf, off);
      const auto zp = Get<u128>(buf, off);
      if (Sha256({Bytes(cp), np_nonce}) != commits[static_cast<std::size_t>(p)]) {
        mark("party " + std::to_string(p) +
             " opened a check value that does not match its commitment");
      }
      if (zp != z) mark("party " + std::to_string(p) + " computed a different z");
      total += cp;
    }
    if (total != 0) mark("MAC check failed: an opened value or its MAC was tampered with");

    log_.clear();
    pending_ = 0;
    broadcast_pending_ = false;
    broadcast_hash_ = Digest{};
    if (bad) return Fail(why);
    return Status::Ok();
  }
}

template class Context<SemiHonest>;
template class Context<Spdz2k>;

}  // namespace mpcache::mpc
