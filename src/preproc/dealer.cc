#include "preproc/dealer.h"

#include <cstring>
#include <string>
#include <utility>

namespace mpcache::preproc {

using mpc::u128;

mpc::u128 MacKeyShare(Security security, const Seed& party_seed) {
  if (security == Security::kSemiHonest) return 0;
  Prg prg(DeriveSeed(party_seed, kMacKeyLabel));
  return prg.NextU128();
}

Result<std::unique_ptr<Dealer>> Dealer::Create(Security security, const Seed& master,
                                               int num_parties, BatchLimits limits) {
  if (num_parties < 2) return InvalidArgument("the dealer needs at least 2 parties");
  return std::unique_ptr<Dealer>(new Dealer(security, master, num_parties, std::move(limits)));
}

Dealer::Dealer(Security security, const Seed& master, int num_parties, BatchLimits limits)
    : security_(security),
      limits_(std::move(limits)),
      client_seed_(DeriveSeed(master, 0xC11E47ull)),
      prg_(DeriveSeed(master, 0xDEA1ull)) {
  for (int i = 0; i < num_parties; ++i) {
    seeds_.push_back(DeriveSeed(master, 1 + static_cast<std::uint64_t>(i)));
    alpha_ += MacKeyShare(security, seeds_.back());
  }
}

const Seed& Dealer::party_seed(PartyId p) const {
  if (p == mpc::kClient) return client_seed_;
  return seeds_[static_cast<std::size_t>(p)];
}

Result<Dealer::Output> Dealer::Make(BatchRequest req) {
  if (req.type == ItemType::kMatrixTriple) {
    auto it = masks_.find(req.mask_id);
    if (it == masks_.end()) {
      return NotFound("matrix-triple request: mask_id " + std::to_string(req.mask_id) +
                      " names no matrix mask made in this session (" +
                      std::to_string(next_seq(ItemType::kMatrixMask)) +
                      " made so far; a mask's id is its batch's sequence number): ask for the "
                      "matrix mask first");
    }
    req.rows = it->second.rows;
    req.cols = it->second.cols;
  }
  if (req.type == ItemType::kAttention) {
    for (std::size_t i = 0; i < req.masks.size(); ++i) {
      auto it = masks_.find(req.masks[i]);
      const std::string which = "attention-triple request: block " + std::to_string(i) +
                                " (mask_id " + std::to_string(req.masks[i]) + ")";
      if (it == masks_.end()) {
        return NotFound(which +
                        " names no matrix mask made in this session: ask for the "
                        "block's matrix mask first");
      }
      if (it->second.cols != req.cols) {
        return InvalidArgument(which + " has " + std::to_string(it->second.cols) +
                               " columns, the request's kv_dim is " + std::to_string(req.cols));
      }
      if (i < req.lens.size() && req.lens[i] > it->second.rows) {
        return InvalidArgument(which + ": uses " + std::to_string(req.lens[i]) +
                               " rows of a block of " + std::to_string(it->second.rows));
      }
    }
  }
  if (req.type == ItemType::kInputMask &&
      !(req.owner == mpc::kClient || (req.owner >= 0 && req.owner < num_parties()))) {
    return InvalidArgument("input-mask request: owner " + std::to_string(req.owner) +
                           " is not a party (0.." + std::to_string(num_parties() - 1) +
                           ") or the client (" + std::to_string(mpc::kClient) + ")");
  }
  if (req.corrector < 0 || req.corrector >= num_parties()) {
    return InvalidArgument(std::string(ItemTypeName(req.type)) + " request: corrector " +
                           std::to_string(req.corrector) + " is not a party (0.." +
                           std::to_string(num_parties() - 1) + ")");
  }
  MPCACHE_ASSIGN_OR_RETURN(std::size_t corr_bytes, CorrectionBytes(security_, req, limits_));
  const std::uint64_t seq = seq_[static_cast<std::size_t>(req.type)]++;
  Output out;
  for (int i = 0; i < num_parties(); ++i) {
    Batch b;
    b.security = security_;
    b.party = i;
    b.seq = seq;
    b.request = req;
    out.parties.push_back(std::move(b));
  }
  std::vector<std::uint8_t>& payload = out.parties[static_cast<std::size_t>(req.corrector)].payload;
  payload.resize(corr_bytes);
  if (security_ == Security::kMalicious) {
    MPCACHE_RETURN_IF_ERROR(Generate<mpc::Spdz2k>(req, seq, payload));
  } else {
    MPCACHE_RETURN_IF_ERROR(Generate<mpc::SemiHonest>(req, seq, payload));
  }
  if (req.type == ItemType::kInputMask && req.owner == mpc::kClient) {
    Batch c;
    c.security = security_;
    c.party = mpc::kClient;
    c.seq = seq;
    c.request = req;
    out.client = std::move(c);
  }
  return out;
}

std::vector<std::uint64_t> Dealer::AttentionProduct(const BatchRequest& req,
                                                    const std::vector<std::uint64_t>& b) const {
  const std::size_t nh = req.other, hs = req.rows, kv = req.cols;
  const std::size_t group = nh / (kv / hs);
  std::size_t length = 0;
  for (std::uint64_t l : req.lens) length += l;
  const bool scores = req.side == MaskSide::kRight;
  std::vector<std::uint64_t> c(scores ? nh * length : nh * hs, 0);
  std::size_t t0 = 0;  // first row of the block in the cache order
  for (std::size_t blk = 0; blk < req.masks.size(); ++blk) {
    const Mask& a = masks_.at(req.masks[blk]);
    for (std::size_t t = 0; t < req.lens[blk]; ++t) {
      for (std::size_t h = 0; h < nh; ++h) {
        const std::uint64_t* arow = a.a.data() + t * kv + (h / group) * hs;
        if (scores) {  // C[h, t] = B[h, :] . A(t)[kv(h)]
          const std::uint64_t* bh = b.data() + h * hs;
          std::uint64_t acc = 0;
          for (std::size_t i = 0; i < hs; ++i) acc += bh[i] * arow[i];
          c[h * length + t0 + t] = acc;
        } else {  // C[h, :] += B[h, t] A(t)[kv(h)]
          const std::uint64_t x = b[h * length + t0 + t];
          std::uint64_t* ch = c.data() + h * hs;
          for (std::size_t i = 0; i < hs; ++i) ch[i] += x * arow[i];
        }
      }
    }
    t0 += req.lens[blk];
  }
  return c;
}

template <typename P>
Status Dealer::Generate(const BatchRequest& req, std::uint64_t seq,
                        std::vector<std::uint8_t>& payload) {
  using W = typename P::Word;
  MPCACHE_ASSIGN_OR_RETURN(std::vector<Component> comps, Components(security_, req, limits_));
  const std::size_t nc = comps.size();
  const std::size_t nv = P::kMalicious ? nc / 2 : nc;  // value components
  const std::size_t np = seeds_.size();
  std::vector<std::vector<Prg>> prgs(np);
  for (std::size_t i = 0; i < np; ++i) {
    for (std::size_t j = 0; j < nc; ++j) {
      prgs[i].emplace_back(ComponentSeed(seeds_[i], req.type, seq, j));
    }
  }
  std::vector<std::size_t> offset(nc, 0);
  {
    std::size_t off = 0;
    for (std::size_t j = 0; j < nc; ++j) {
      offset[j] = off;
      if (comps[j].determined) off += comps[j].n * ElementBytes(security_, comps[j]);
    }
  }
  std::optional<Prg> clear_prg;
  if (req.type == ItemType::kInputMask) {
    clear_prg.emplace(ComponentSeed(party_seed(req.owner), req.type, seq, kClearComponent));
  }
  Mask* new_mask = nullptr;
  if (req.type == ItemType::kMatrixMask) {
    new_mask = &masks_[seq];
    new_mask->rows = req.rows;
    new_mask->cols = req.cols;
    new_mask->a.resize(comps[0].n);  // rows x cols, checked by Components
  }

  // Elementwise types are processed in chunks (bounded memory); a matrix triple in one go
  // (its components differ in length and C depends on all of B).
  const bool whole = req.type == ItemType::kMatrixTriple || req.type == ItemType::kAttention;
  const std::uint64_t total = comps[0].n;
  const std::uint64_t chunk = whole ? total : std::uint64_t{1} << 15;
  std::vector<std::vector<W>> vals(nv), sums(nv);
  std::vector<W> tmp;
  std::vector<u128> msum, mtmp;
  std::vector<std::uint64_t> clear;
  for (std::uint64_t start = 0; start < total; start += chunk) {
    auto len_of = [&](std::size_t j) -> std::size_t {
      return whole ? comps[j].n : std::min<std::uint64_t>(chunk, total - start);
    };
    auto pos_of = [&](std::size_t) -> std::uint64_t { return whole ? 0 : start; };
    // Sum every party's stream for each value component (the corrector's stream included:
    // its correction is the target minus the sum of all streams).
    for (std::size_t j = 0; j < nv; ++j) {
      const std::size_t len = len_of(j);
      vals[j].assign(len, 0);
      sums[j].assign(len, 0);
      tmp.resize(len);
      for (std::size_t i = 0; i < np; ++i) {
        prgs[i][j].FillValues(std::span<W>(tmp.data(), len));
        for (std::size_t t = 0; t < len; ++t) sums[j][t] += tmp[t];
      }
      if (!comps[j].determined) vals[j] = sums[j];
    }
    // Targets of the determined value components.
    const std::size_t len0 = len_of(0);
    switch (req.type) {
      case ItemType::kTriple:
        for (std::size_t t = 0; t < len0; ++t) {
          // The product is meant mod 2^64 (the values' ring); W only widens the result.
          // NOLINTNEXTLINE(bugprone-misplaced-widening-cast)
          vals[2][t] = static_cast<W>(mpc::Low64(vals[0][t]) * mpc::Low64(vals[1][t]));
        }
        break;
      case ItemType::kSquare:
        for (std::size_t t = 0; t < len0; ++t) {
          // NOLINTNEXTLINE(bugprone-misplaced-widening-cast): mod 2^64, as above
          vals[1][t] = static_cast<W>(mpc::Low64(vals[0][t]) * mpc::Low64(vals[0][t]));
        }
        break;
      case ItemType::kTrunc: {
        const std::uint64_t low_mask = (std::uint64_t{1} << 63) - 1;
        for (std::size_t t = 0; t < len0; ++t) {
          const std::uint64_t r = mpc::Low64(vals[0][t]);
          vals[1][t] = static_cast<W>(r >> 63);
          vals[2][t] = static_cast<W>((r & low_mask) >> req.frac_bits);
        }
        break;
      }
      case ItemType::kFused: {
        const mpc::FusedShape shape = mpc::FusedShape::FromCode(req.frac_bits);
        const std::vector<FusedRole> roles = FusedRoles(shape);
        const std::uint64_t low_mask = (std::uint64_t{1} << 63) - 1;
        const int bits[3] = {shape.left_bits, shape.right_bits, shape.left2_bits};
        for (std::size_t t = 0; t < len0; ++t) {
          // Each side's atoms (a, r_shift, r_top as present), from its free components.
          std::uint64_t atoms[3][3] = {};
          int count[3] = {0, 0, 0};
          std::uint64_t r[3] = {0, 0, 0};
          for (std::size_t j = 0; j < roles.size(); ++j) {
            const FusedRole& role = roles[j];
            const int sd = role.side;
            switch (role.kind) {
              case FusedRole::kA:
                atoms[sd][count[sd]++] = mpc::Low64(vals[j][t]);
                break;
              case FusedRole::kR:
                r[sd] = mpc::Low64(vals[j][t]);
                break;
              case FusedRole::kRTop:
                vals[j][t] = static_cast<W>(r[sd] >> 63);
                break;
              case FusedRole::kRShift: {
                const std::uint64_t shift = (r[sd] & low_mask) >> bits[sd];
                vals[j][t] = static_cast<W>(shift);
                atoms[sd][count[sd]++] = shift;
                atoms[sd][count[sd]++] = r[sd] >> 63;
                break;
              }
              case FusedRole::kProduct: {
                const int other = shape.square() ? 0 : 1;
                // The product is meant mod 2^64 (the values' ring); W only widens the result.
                // NOLINTNEXTLINE(bugprone-misplaced-widening-cast)
                vals[j][t] = static_cast<W>(atoms[role.side][role.i] * atoms[other][role.j]);
                break;
              }
            }
          }
        }
        break;
      }
      case ItemType::kBit:
        clear.resize(len0);
        prg_.FillValues(std::span<std::uint64_t>(clear));
        for (std::size_t t = 0; t < len0; ++t) vals[0][t] = static_cast<W>(clear[t] & 1);
        break;
      case ItemType::kInputMask:
        clear.resize(len0);
        clear_prg->FillValues(std::span<std::uint64_t>(clear));
        for (std::size_t t = 0; t < len0; ++t) {
          // The owner knows r mod 2^64; in malicious mode the upper half of the 128-bit
          // value stays the (uniform) sum of the parties' streams, so that an opening of
          // x + r at full share width is uniform (docs/mpc-core.md).
          vals[0][t] =
              (sums[0][t] - static_cast<W>(mpc::Low64(sums[0][t]))) + static_cast<W>(clear[t]);
        }
        break;
      case ItemType::kMatrixMask:
        for (std::size_t t = 0; t < len0; ++t) new_mask->a[start + t] = mpc::Low64(vals[0][t]);
        break;
      case ItemType::kMatrixTriple: {
        const Mask& a = masks_.at(req.mask_id);
        std::vector<std::uint64_t> b(vals[0].size());
        for (std::size_t t = 0; t < b.size(); ++t) b[t] = mpc::Low64(vals[0][t]);
        std::vector<std::uint64_t> c(vals[1].size(), 0);
        // kRight: C (other x cols) = B (other x rows) A (rows x cols)
        // kLeft:  C (rows x other) = A (rows x cols) B (cols x other)
        const bool right = req.side == MaskSide::kRight;
        const std::size_t m = right ? req.other : req.rows;
        const std::size_t k = right ? req.rows : req.cols;
        const std::size_t n = right ? req.cols : req.other;
        const std::uint64_t* l = right ? b.data() : a.a.data();
        const std::uint64_t* r = right ? a.a.data() : b.data();
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t t = 0; t < k; ++t) {
            const std::uint64_t x = l[i * k + t];
            const std::uint64_t* row = r + t * n;
            std::uint64_t* o = c.data() + i * n;
            for (std::size_t j = 0; j < n; ++j) o[j] += x * row[j];
          }
        }
        for (std::size_t t = 0; t < c.size(); ++t) vals[1][t] = static_cast<W>(c[t]);
        break;
      }
      case ItemType::kAttention: {
        std::vector<std::uint64_t> b(vals[0].size());
        for (std::size_t t = 0; t < b.size(); ++t) b[t] = mpc::Low64(vals[0][t]);
        const std::vector<std::uint64_t> c = AttentionProduct(req, b);
        for (std::size_t t = 0; t < c.size(); ++t) vals[1][t] = static_cast<W>(c[t]);
        break;
      }
      case ItemType::kRandom:
        break;
    }
    // Corrections for the corrector: determined values, then every MAC.
    for (std::size_t j = 0; j < nv; ++j) {
      if (!comps[j].determined) continue;
      const std::size_t len = len_of(j);
      tmp.resize(len);
      for (std::size_t t = 0; t < len; ++t) tmp[t] = vals[j][t] - sums[j][t];
      std::memcpy(payload.data() + offset[j] + pos_of(j) * sizeof(W), tmp.data(), len * sizeof(W));
    }
    if constexpr (P::kMalicious) {
      for (std::size_t j = 0; j < nv; ++j) {
        const std::size_t jm = nv + j;
        const std::size_t len = len_of(j);
        msum.assign(len, 0);
        mtmp.resize(len);
        for (std::size_t i = 0; i < np; ++i) {
          prgs[i][jm].FillValues(std::span<u128>(mtmp.data(), len));
          for (std::size_t t = 0; t < len; ++t) msum[t] += mtmp[t];
        }
        for (std::size_t t = 0; t < len; ++t) mtmp[t] = alpha_ * vals[j][t] - msum[t];
        std::memcpy(payload.data() + offset[jm] + pos_of(jm) * sizeof(u128), mtmp.data(),
                    len * sizeof(u128));
      }
    }
    if (whole) break;
  }
  return Status::Ok();
}

}  // namespace mpcache::preproc
