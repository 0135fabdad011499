#include "preproc/party_store.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <tuple>

#include "preproc/dealer.h"

namespace mpcache::preproc {

using mpc::u128;

template <typename P>
PartyStore<P>::PartyStore(PartyId party, int num_parties, const Seed& seed)
    : party_(party),
      num_parties_(num_parties),
      seed_(seed),
      security_(P::kMalicious ? Security::kMalicious : Security::kSemiHonest),
      alpha_(MacKeyShare(security_, seed)) {}

template <typename P>
std::size_t PartyStore<P>::available(ItemType t, std::int32_t param) const {
  auto it = pools_.find({t, param});
  return it == pools_.end() ? 0 : it->second.available;
}

template <typename P>
Result<typename PartyStore<P>::Chunk> PartyStore<P>::Expand(const Batch& batch) const {
  using W = typename P::Word;
  const BatchRequest& req = batch.request;
  MPCACHE_ASSIGN_OR_RETURN(std::vector<Component> comps, Components(security_, req, limits_));
  const bool corrector = party_ == req.corrector;
  MPCACHE_ASSIGN_OR_RETURN(std::size_t want, CorrectionBytes(security_, req, limits_));
  if (batch.payload.size() != (corrector ? want : 0)) {
    return CorruptData(std::string("preprocessing batch (") + ItemTypeName(req.type) +
                       ") carries " + std::to_string(batch.payload.size()) +
                       " bytes of corrections, expected " + std::to_string(corrector ? want : 0) +
                       " (its corrector is party " + std::to_string(req.corrector) + ")");
  }
  const std::size_t nv = P::kMalicious ? comps.size() / 2 : comps.size();
  Chunk chunk;
  chunk.fields.resize(nv);
  std::size_t off = 0;
  for (std::size_t j = 0; j < nv; ++j) {
    const std::size_t n = comps[j].n;
    chunk.fields[j].v.resize(n);
    Prg prg(ComponentSeed(seed_, req.type, batch.seq, j));
    prg.FillValues(std::span<W>(chunk.fields[j].v));
    if (corrector && comps[j].determined) {
      std::vector<W> corr(n);
      std::memcpy(corr.data(), batch.payload.data() + off, n * sizeof(W));
      off += n * sizeof(W);
      for (std::size_t t = 0; t < n; ++t) chunk.fields[j].v[t] += corr[t];
    }
  }
  if constexpr (P::kMalicious) {
    for (std::size_t j = 0; j < nv; ++j) {
      const std::size_t n = comps[j].n;
      chunk.fields[j].m.resize(n);
      Prg prg(ComponentSeed(seed_, req.type, batch.seq, nv + j));
      prg.FillValues(std::span<u128>(chunk.fields[j].m));
      if (corrector) {
        std::vector<u128> corr(n);
        std::memcpy(corr.data(), batch.payload.data() + off, n * sizeof(u128));
        off += n * sizeof(u128);
        for (std::size_t t = 0; t < n; ++t) chunk.fields[j].m[t] += corr[t];
      }
    }
  }
  if (req.type == ItemType::kInputMask && req.owner == party_) {
    chunk.clear.resize(comps[0].n);
    Prg prg(ComponentSeed(seed_, req.type, batch.seq, kClearComponent));
    prg.FillValues(std::span<std::uint64_t>(chunk.clear));
  }
  return chunk;
}

template <typename P>
Status PartyStore<P>::Accept(const Batch& batch) {
  if (batch.party != party_) {
    return InvalidArgument("batch for party " + std::to_string(batch.party) +
                           " delivered to party " + std::to_string(party_));
  }
  if (batch.security != security_) {
    return ProtocolError("preprocessing batch of the wrong security mode");
  }
  if (batch.request.corrector < 0 || batch.request.corrector >= num_parties_) {
    return InvalidArgument("preprocessing batch with corrector " +
                           std::to_string(batch.request.corrector) + ", not a party (0.." +
                           std::to_string(num_parties_ - 1) + ")");
  }
  const auto ti = static_cast<std::size_t>(batch.request.type);
  const bool issued = outstanding_[ti].contains(batch.seq);
  if (!issued && batch.seq != next_seq_[ti]) {
    return ProtocolError(
        std::string("preprocessing batch ") + ItemTypeName(batch.request.type) + " #" +
        std::to_string(batch.seq) + " is replayed or out of order (expected #" +
        std::to_string(next_seq_[ti]) +
        (outstanding_[ti].empty() ? std::string() : " or one of the requested batches") + ")");
  }
  const auto t0 = std::chrono::steady_clock::now();
  MPCACHE_ASSIGN_OR_RETURN(Chunk chunk, Expand(batch));
  expand_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bytes_received_ += batch.WireSize();
  if (issued) {
    outstanding_[ti].erase(batch.seq);
  } else {
    next_seq_[ti]++;
  }
  const BatchRequest& req = batch.request;
  switch (req.type) {
    case ItemType::kMatrixMask: {
      mask_shapes_[batch.seq] = {req.rows, req.cols};
      mpc::MatrixMask<P> m;
      m.id = batch.seq;
      m.rows = req.rows;
      m.cols = req.cols;
      m.a = std::move(chunk.fields[0]);
      matrix_masks_[{m.rows, m.cols}].push_back(std::move(m));
      return Status::Ok();
    }
    case ItemType::kMatrixTriple: {
      mpc::MatrixTriple<P> t;
      t.mask_id = req.mask_id;
      t.side = req.side;
      t.other = req.other;
      t.b = std::move(chunk.fields[0]);
      t.c = std::move(chunk.fields[1]);
      matrix_triples_[{t.mask_id, t.side, t.other}].push_back(std::move(t));
      return Status::Ok();
    }
    case ItemType::kAttention: {
      mpc::AttentionTriple<P> t;
      t.shape = AttentionShapeOf(req);
      t.b = std::move(chunk.fields[0]);
      t.c = std::move(chunk.fields[1]);
      attention_.push_back(std::move(t));
      return Status::Ok();
    }
    default:
      break;
  }
  const std::int32_t param = (req.type == ItemType::kTrunc || req.type == ItemType::kFused)
                                 ? req.frac_bits
                             : req.type == ItemType::kInputMask ? req.owner
                                                                : 0;
  Pool& pool = pools_[{req.type, param}];
  pool.available += chunk.size();
  if (chunk.size() > 0) pool.chunks.push_back(std::move(chunk));
  return Status::Ok();
}

template <typename P>
Status PartyStore<P>::RequestMore(const BatchRequest& req) {
  if (!refill_) {
    return Exhausted(std::string("preprocessing pool of ") + ItemTypeName(req.type) +
                     " is exhausted at party " + std::to_string(party_));
  }
  return refill_(req);
}

template <typename P>
std::int32_t PartyStore<P>::CorrectorFor(const BatchRequest& req) {
  if (!roles_) return req.corrector;
  BatchRequest sized = req;
  if (req.type == ItemType::kMatrixTriple) {  // the mask's shape, as the dealer fills it in
    auto it = mask_shapes_.find(req.mask_id);
    if (it != mask_shapes_.end()) std::tie(sized.rows, sized.cols) = it->second;
  }
  const Result<std::size_t> bytes = CorrectionBytes(security_, sized, limits_);
  return roles_->CorrectorFor(bytes.ok() ? *bytes : 0);
}

template <typename P>
std::uint64_t PartyStore<P>::IssueSeq(ItemType type) {
  const auto ti = static_cast<std::size_t>(type);
  const std::uint64_t seq = next_seq_[ti]++;
  outstanding_[ti].insert(seq);
  return seq;
}

template <typename P>
std::size_t PartyStore<P>::matrix_masks(std::size_t rows, std::size_t cols) const {
  auto it = matrix_masks_.find({rows, cols});
  return it == matrix_masks_.end() ? 0 : it->second.size();
}

template <typename P>
std::size_t PartyStore<P>::matrix_triples(std::uint64_t mask_id, mpc::MaskSide side,
                                          std::size_t other) const {
  auto it = matrix_triples_.find({mask_id, side, other});
  return it == matrix_triples_.end() ? 0 : it->second.size();
}

template <typename P>
Result<typename PartyStore<P>::Chunk> PartyStore<P>::TakeElements(const BatchRequest& req,
                                                                  std::int32_t param) {
  const std::size_t n = req.count;
  Pool* pool = &pools_[{req.type, param}];
  if (pool->available < n) {
    BatchRequest more = req;
    more.count = n - pool->available;
    MPCACHE_RETURN_IF_ERROR(RequestMore(more));
    pool = &pools_[{req.type, param}];
    if (pool->available < n) return Exhausted("preprocessing refill came back short");
  }
  consumed_[static_cast<std::size_t>(req.type)] += n;
  pool->available -= n;
  Result<Chunk> out = TakeFront(*pool, req);
  if (out.ok() && on_take_) MPCACHE_RETURN_IF_ERROR(on_take_(req));
  return out;
}

template <typename P>
Result<typename PartyStore<P>::Chunk> PartyStore<P>::TakeFront(Pool& pool,
                                                               const BatchRequest& req) {
  const std::size_t n = req.count;
  if (n == 0) {
    Chunk empty;
    const std::size_t nf = req.type == ItemType::kTriple   ? 3
                           : req.type == ItemType::kSquare ? 2
                           : req.type == ItemType::kTrunc  ? 3
                           : req.type == ItemType::kFused
                               ? FusedRoles(mpc::FusedShape::FromCode(req.frac_bits)).size()
                               : 1;
    empty.fields.resize(nf);
    return empty;
  }
  Chunk& front = pool.chunks.front();
  if (front.offset == 0 && front.size() == n) {  // the common case: no copy
    Chunk out = std::move(front);
    pool.chunks.pop_front();
    return out;
  }
  Chunk out;
  out.fields.resize(front.fields.size());
  std::size_t need = n;
  while (need > 0) {
    Chunk& c = pool.chunks.front();
    const std::size_t take = std::min(need, c.size() - c.offset);
    for (std::size_t f = 0; f < c.fields.size(); ++f) {
      out.fields[f].Append(c.fields[f].Slice(c.offset, take));
    }
    if (!c.clear.empty()) {
      out.clear.insert(out.clear.end(), c.clear.begin() + static_cast<std::ptrdiff_t>(c.offset),
                       c.clear.begin() + static_cast<std::ptrdiff_t>(c.offset + take));
    }
    c.offset += take;
    need -= take;
    if (c.offset == c.size()) pool.chunks.pop_front();
  }
  return out;
}

template <typename P>
Result<mpc::Triples<P>> PartyStore<P>::GetTriples(std::size_t n) {
  BatchRequest req{.type = ItemType::kTriple, .count = n};
  MPCACHE_ASSIGN_OR_RETURN(Chunk c, TakeElements(req, 0));
  mpc::Triples<P> t;
  t.a = std::move(c.fields[0]);
  t.b = std::move(c.fields[1]);
  t.c = std::move(c.fields[2]);
  return t;
}

template <typename P>
Result<mpc::SquarePairs<P>> PartyStore<P>::GetSquares(std::size_t n) {
  BatchRequest req{.type = ItemType::kSquare, .count = n};
  MPCACHE_ASSIGN_OR_RETURN(Chunk c, TakeElements(req, 0));
  mpc::SquarePairs<P> s;
  s.a = std::move(c.fields[0]);
  s.aa = std::move(c.fields[1]);
  return s;
}

template <typename P>
Result<mpc::TruncPairs<P>> PartyStore<P>::GetTruncPairs(std::size_t n, int frac_bits) {
  BatchRequest req{.type = ItemType::kTrunc, .count = n, .frac_bits = frac_bits};
  MPCACHE_ASSIGN_OR_RETURN(Chunk c, TakeElements(req, frac_bits));
  mpc::TruncPairs<P> t;
  t.frac_bits = frac_bits;
  t.r = std::move(c.fields[0]);
  t.r_top = std::move(c.fields[1]);
  t.r_shift = std::move(c.fields[2]);
  return t;
}

template <typename P>
Result<mpc::FusedTriples<P>> PartyStore<P>::GetFusedTriples(std::size_t n,
                                                            const mpc::FusedShape& shape) {
  if (!shape.Valid()) {
    return InvalidArgument("fused-triple shape " + std::to_string(shape.Code()) + " is not valid");
  }
  BatchRequest req{.type = ItemType::kFused, .count = n, .frac_bits = shape.Code()};
  MPCACHE_ASSIGN_OR_RETURN(Chunk c, TakeElements(req, shape.Code()));
  mpc::FusedTriples<P> t;
  t.shape = shape;
  const std::vector<FusedRole> roles = FusedRoles(shape);
  for (std::size_t j = 0; j < roles.size(); ++j) {
    mpc::FusedSide<P>& side = roles[j].side == 0 ? t.left : roles[j].side == 1 ? t.right : t.left2;
    switch (roles[j].kind) {
      case FusedRole::kA:
        side.a = std::move(c.fields[j]);
        break;
      case FusedRole::kR:
        side.r = std::move(c.fields[j]);
        break;
      case FusedRole::kRTop:
        side.r_top = std::move(c.fields[j]);
        break;
      case FusedRole::kRShift:
        side.r_shift = std::move(c.fields[j]);
        break;
      case FusedRole::kProduct:
        t.products.push_back(std::move(c.fields[j]));
        break;
    }
  }
  return t;
}

template <typename P>
Result<mpc::Shares<P>> PartyStore<P>::GetBits(std::size_t n) {
  BatchRequest req{.type = ItemType::kBit, .count = n};
  MPCACHE_ASSIGN_OR_RETURN(Chunk c, TakeElements(req, 0));
  return std::move(c.fields[0]);
}

template <typename P>
Result<mpc::Shares<P>> PartyStore<P>::GetRandoms(std::size_t n) {
  BatchRequest req{.type = ItemType::kRandom, .count = n};
  MPCACHE_ASSIGN_OR_RETURN(Chunk c, TakeElements(req, 0));
  return std::move(c.fields[0]);
}

template <typename P>
Result<mpc::InputMasks<P>> PartyStore<P>::GetInputMasks(std::size_t n, PartyId owner) {
  if (!(owner == mpc::kClient || (owner >= 0 && owner < num_parties_))) {
    return InvalidArgument("input mask owner " + std::to_string(owner) + " is not a party");
  }
  BatchRequest req{.type = ItemType::kInputMask, .count = n, .owner = owner};
  MPCACHE_ASSIGN_OR_RETURN(Chunk c, TakeElements(req, owner));
  mpc::InputMasks<P> m;
  m.owner = owner;
  m.r = std::move(c.fields[0]);
  m.clear = std::move(c.clear);
  return m;
}

template <typename P>
Result<mpc::MatrixMask<P>> PartyStore<P>::GetMatrixMask(std::size_t rows, std::size_t cols) {
  if (matrix_masks(rows, cols) == 0) {
    const BatchRequest req{.type = ItemType::kMatrixMask, .rows = rows, .cols = cols};
    // A shape beyond the limits (or overflowing) is refused here, before the dealer is asked.
    if (auto shape = Components(security_, req, limits_); !shape.ok()) return shape.error();
    MPCACHE_RETURN_IF_ERROR(RequestMore(req));
    if (matrix_masks(rows, cols) == 0) {
      return Exhausted("no " + std::to_string(rows) + "x" + std::to_string(cols) +
                       " matrix mask arrived at party " + std::to_string(party_));
    }
  }
  auto it = matrix_masks_.find({rows, cols});
  mpc::MatrixMask<P> out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) matrix_masks_.erase(it);
  consumed_[static_cast<std::size_t>(ItemType::kMatrixMask)]++;
  if (on_take_) {
    MPCACHE_RETURN_IF_ERROR(
        on_take_(BatchRequest{.type = ItemType::kMatrixMask, .rows = rows, .cols = cols}));
  }
  return out;
}

template <typename P>
Result<mpc::MatrixTriple<P>> PartyStore<P>::GetMatrixTriple(std::uint64_t mask_id,
                                                            mpc::MaskSide side, std::size_t other) {
  if (matrix_triples(mask_id, side, other) == 0) {
    MPCACHE_RETURN_IF_ERROR(RequestMore(BatchRequest{
        .type = ItemType::kMatrixTriple, .mask_id = mask_id, .side = side, .other = other}));
    if (matrix_triples(mask_id, side, other) == 0) {
      return Exhausted("no matrix triple for mask #" + std::to_string(mask_id) +
                       " arrived at party " + std::to_string(party_));
    }
  }
  auto it = matrix_triples_.find({mask_id, side, other});
  mpc::MatrixTriple<P> out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) matrix_triples_.erase(it);
  consumed_[static_cast<std::size_t>(ItemType::kMatrixTriple)]++;
  if (on_take_) {
    MPCACHE_RETURN_IF_ERROR(on_take_(BatchRequest{
        .type = ItemType::kMatrixTriple, .mask_id = mask_id, .side = side, .other = other}));
  }
  return out;
}

template <typename P>
std::size_t PartyStore<P>::attention_triples(const mpc::AttentionShape& shape) const {
  std::size_t n = 0;
  for (const auto& t : attention_) n += t.shape == shape ? 1 : 0;
  return n;
}

template <typename P>
Result<mpc::AttentionTriple<P>> PartyStore<P>::GetAttentionTriple(
    const mpc::AttentionShape& shape) {
  const BatchRequest req = AttentionRequest(shape);
  if (auto ok = Components(security_, req, limits_); !ok.ok()) return ok.error();
  auto find = [&] {
    return std::find_if(attention_.begin(), attention_.end(),
                        [&](const mpc::AttentionTriple<P>& t) { return t.shape == shape; });
  };
  auto it = find();
  if (it == attention_.end()) {
    MPCACHE_RETURN_IF_ERROR(RequestMore(req));
    it = find();
    if (it == attention_.end()) {
      return Exhausted("no attention triple of the asked shape (" +
                       std::to_string(shape.masks.size()) + " blocks, " +
                       std::to_string(shape.length()) + " rows) arrived at party " +
                       std::to_string(party_));
    }
  }
  mpc::AttentionTriple<P> out = std::move(*it);
  attention_.erase(it);
  consumed_[static_cast<std::size_t>(ItemType::kAttention)]++;
  return out;
}

template <typename P>
Status PartyStore<P>::Announce(const std::vector<mpc::AttentionShape>& plan) {
  for (const auto& s : plan) {
    if (auto ok = Components(security_, AttentionRequest(s), limits_); !ok.ok()) return ok.error();
  }
  return on_announce_ ? on_announce_(plan) : Status::Ok();
}

template class PartyStore<mpc::SemiHonest>;
template class PartyStore<mpc::Spdz2k>;

}  // namespace mpcache::preproc
