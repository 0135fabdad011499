#include "mpc/compare/binary_context.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

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
Status BinaryContext<P>::Fail(std::string why) {
  failed_ = true;
  log_.clear();
  pending_ = 0;
  return MacCheckFailed("party " + std::to_string(self()) + " (binary domain): " + why);
}

template <typename P>
Result<PublicBits> BinaryContext<P>::Open(BitShares<P> x) {
  std::vector<BitShares<P>> xs;
  xs.push_back(std::move(x));
  MPCACHE_ASSIGN_OR_RETURN(auto out, OpenMany(std::move(xs)));
  return std::move(out[0]);
}

template <typename P>
Result<std::vector<PublicBits>> BinaryContext<P>::OpenMany(std::vector<BitShares<P>>&& xs) {
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
  std::vector<std::uint64_t> msg(WordsFor(total_bits) + 1);
  {
    std::size_t off = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      AppendBits(msg, off, mine[k]);
      off += xs[k].n;
    }
  }
  const std::size_t total_bytes = (total_bits + 7) / 8;
  MPCACHE_RETURN_IF_ERROR(
      SendToPeers({reinterpret_cast<const std::uint8_t*>(msg.data()), total_bytes}));
  arith_.stats().RecordRound();
  std::vector<std::uint64_t> in(WordsFor(total_bits) + 1);
  net::Channel& ch = arith_.channel();
  for (PartyId p = 0; p < ch.num_parties(); ++p) {
    if (p == ch.self()) continue;
    std::fill(in.begin(), in.end(), 0);
    MPCACHE_RETURN_IF_ERROR(ch.Recv(p, {reinterpret_cast<std::uint8_t*>(in.data()), total_bytes}));
    std::size_t off = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      XorBitsFrom(mine[k], in, off, xs[k].n);
      off += xs[k].n;
    }
  }
  std::vector<PublicBits> out(xs.size());
  for (std::size_t k = 0; k < xs.size(); ++k) {
    out[k].n = xs[k].n;
    out[k].w = std::move(mine[k]);
    if constexpr (P::kMalicious) {
      OpenedChunk c;
      c.opened = out[k];
      c.shares = std::move(xs[k].v);
      c.macs = std::move(xs[k].m);
      pending_ += c.opened.n;
      log_.push_back(std::move(c));
    }
  }
  return out;
}

template <typename P>
Status BinaryContext<P>::CheckMacs() {
  if constexpr (!P::kMalicious) {
    return Status::Ok();
  } else {
    if (failed_) return MacCheckFailed("a MAC check failed earlier: this session opens nothing");
    if (pending_ == 0) return Status::Ok();
    net::Channel& ch = arith_.channel();
    const int np = ch.num_parties();
    bool bad = false;
    std::string why;
    auto mark = [&](std::string w) {
      if (!bad) why = std::move(w);
      bad = true;
    };
    // Round 1: reveal the committed coin share, commit to the next one.
    const Seed my_share = coin_share_;
    const Digest my_nonce = coin_nonce_;
    local_prg_.Fill(coin_share_.data(), coin_share_.size());
    local_prg_.Fill(coin_nonce_.data(), coin_nonce_.size());
    const Digest next = Sha256({coin_share_, coin_nonce_});
    {
      std::array<std::uint8_t, 80> msg{};
      std::memcpy(msg.data(), my_share.data(), 16);
      std::memcpy(msg.data() + 16, my_nonce.data(), 32);
      std::memcpy(msg.data() + 48, next.data(), 32);
      MPCACHE_RETURN_IF_ERROR(SendToPeers(msg));
      arith_.stats().RecordRound();
    }
    Seed coin = my_share;
    for (PartyId p = 0; p < np; ++p) {
      if (p == self()) continue;
      std::array<std::uint8_t, 80> buf{};
      MPCACHE_RETURN_IF_ERROR(ch.Recv(p, buf));
      Seed share{};
      Digest nonce{}, commit{};
      std::memcpy(share.data(), buf.data(), 16);
      std::memcpy(nonce.data(), buf.data() + 16, 32);
      std::memcpy(commit.data(), buf.data() + 48, 32);
      if (Sha256({share, nonce}) != peer_commitments_[static_cast<std::size_t>(p)]) {
        mark("party " + std::to_string(p) +
             " opened a coin share that does not match its commitment");
      }
      peer_commitments_[static_cast<std::size_t>(p)] = commit;
      for (std::size_t i = 0; i < coin.size(); ++i) coin[i] ^= share[i];
    }
    // Random linear combination (coefficients in Z_2^64) of everything opened.
    Prg chi_prg(coin);
    std::uint64_t y = 0, y_open = 0, mac = 0;
    constexpr std::size_t kBlock = 4096;
    std::array<std::uint64_t, kBlock> chi{};
    for (const OpenedChunk& c : log_) {
      for (std::size_t base = 0; base < c.opened.n; base += kBlock) {
        const std::size_t len = std::min(kBlock, c.opened.n - base);
        chi_prg.Fill(chi.data(), len * sizeof(std::uint64_t));
        for (std::size_t j = 0; j < len; ++j) {
          const std::size_t i = base + j;
          y += chi[j] * c.shares[i];
          mac += chi[j] * c.macs[i];
          y_open += chi[j] & (0 - ((c.opened.w[i / 64] >> (i % 64)) & 1));
        }
      }
    }
    MPCACHE_ASSIGN_OR_RETURN(BitShares<P> r, prep_.GetBitRandoms(1));
    // Round 2: z = y - y~ + 2 r: its low bit must be 0; the rest is masked by r.
    std::uint64_t z = y + 2 * r.v[0];
    if (self() == 0) z -= y_open;
    MPCACHE_RETURN_IF_ERROR(SendToPeers(AsBytes(z)));
    arith_.stats().RecordRound();
    for (PartyId p = 0; p < np; ++p) {
      if (p == self()) continue;
      std::uint64_t zp = 0;
      MPCACHE_RETURN_IF_ERROR(ch.Recv(p, {reinterpret_cast<std::uint8_t*>(&zp), sizeof(zp)}));
      z += zp;
    }
    if ((z & 1) != 0) mark("opened bits are inconsistent with their shares");
    // Rounds 3 and 4: commit to c_i = mac_i + 2 r.m_i - beta_i (y~ + z), then open it.
    const std::uint64_t c = mac + 2 * r.m[0] - key_.beta * (y_open + z);
    Digest nonce{};
    local_prg_.Fill(nonce.data(), nonce.size());
    MPCACHE_RETURN_IF_ERROR(SendToPeers(Sha256({AsBytes(c), nonce})));
    arith_.stats().RecordRound();
    std::vector<Digest> commits(static_cast<std::size_t>(np));
    for (PartyId p = 0; p < np; ++p) {
      if (p != self()) MPCACHE_RETURN_IF_ERROR(ch.Recv(p, commits[static_cast<std::size_t>(p)]));
    }
    {
      std::array<std::uint8_t, 48> msg{};
      std::memcpy(msg.data(), &c, 8);
      std::memcpy(msg.data() + 8, nonce.data(), 32);
      std::memcpy(msg.data() + 40, &z, 8);
      MPCACHE_RETURN_IF_ERROR(SendToPeers(msg));
      arith_.stats().RecordRound();
    }
    std::uint64_t total = c;
    for (PartyId p = 0; p < np; ++p) {
      if (p == self()) continue;
      std::array<std::uint8_t, 48> buf{};
      MPCACHE_RETURN_IF_ERROR(ch.Recv(p, buf));
      std::uint64_t cp = 0, zp = 0;
      Digest pn{};
      std::memcpy(&cp, buf.data(), 8);
      std::memcpy(pn.data(), buf.data() + 8, 32);
      std::memcpy(&zp, buf.data() + 40, 8);
      if (Sha256({AsBytes(cp), pn}) != commits[static_cast<std::size_t>(p)]) {
        mark("party " + std::to_string(p) +
             " opened a check value that does not match its commitment");
      }
      if (zp != z) mark("party " + std::to_string(p) + " computed a different z");
      total += cp;
    }
    if (total != 0) mark("MAC check failed: an opened bit or its MAC was tampered with");
    log_.clear();
    pending_ = 0;
    if (bad) return Fail(why);
    return Status::Ok();
  }
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
        d.v[i] = j.x->v[i] - t.a.v[o + i];
        d.m[i] = j.x->m[i] - t.a.m[o + i];
        e.v[i] = j.y->v[i] - t.b.v[o + i];
        e.m[i] = j.y->m[i] - t.b.m[o + i];
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
        // z = c + d b + e a + d e (lifts; the low bit is the AND; d, e in {0, 1}).
        z.v[i] = t.c.v[o + i] + (t.b.v[o + i] & (0 - di)) + (t.a.v[o + i] & (0 - ei));
        if (p0) z.v[i] += di & ei;
        z.m[i] = t.c.m[o + i] + (t.b.m[o + i] & (0 - di)) + (t.a.m[o + i] & (0 - ei)) +
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
  MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
  return ctx.arith().CheckMacs();
}

template class BinaryContext<SemiHonest>;
template class BinaryContext<Spdz2k>;
template class BitAndBatch<SemiHonest>;
template class BitAndBatch<Spdz2k>;
template Status CheckAllMacs<SemiHonest>(BinaryContext<SemiHonest>&);
template Status CheckAllMacs<Spdz2k>(BinaryContext<Spdz2k>&);

}  // namespace mpcache::mpc
