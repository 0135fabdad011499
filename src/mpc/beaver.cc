#include "mpc/beaver.h"

#include <string>

namespace mpcache::mpc {

template <typename P>
std::size_t BeaverBatch<P>::Prepare(const Shares<P>& x, const Shares<P>& y) {
  jobs_.push_back(Job{&x, &y, {}});
  return jobs_.size() - 1;
}

template <typename P>
std::size_t BeaverBatch<P>::PrepareSquare(const Shares<P>& x) {
  jobs_.push_back(Job{&x, nullptr, {}});
  return jobs_.size() - 1;
}

template <typename P>
Shares<P> BeaverBatch<P>::Take(std::size_t handle) {
  return std::move(jobs_[handle].out);
}

template <typename P>
Status BeaverBatch<P>::Exchange(OpenMode mode, PartyId king) {
  if (done_) return Internal("BeaverBatch::Exchange called twice");
  done_ = true;
  std::size_t n_mul = 0, n_sq = 0;
  for (const Job& j : jobs_) {
    if (j.y != nullptr) {
      if (j.x->size() != j.y->size()) {
        return InvalidArgument("Beaver product of vectors of sizes " + std::to_string(j.x->size()) +
                               " and " + std::to_string(j.y->size()));
      }
      n_mul += j.x->size();
    } else {
      n_sq += j.x->size();
    }
  }
  Triples<P> t;
  SquarePairs<P> s;
  if (n_mul > 0) {
    MPCACHE_ASSIGN_OR_RETURN(t, ctx_.prep().GetTriples(n_mul));
  }
  if (n_sq > 0) {
    MPCACHE_ASSIGN_OR_RETURN(s, ctx_.prep().GetSquares(n_sq));
  }
  // Layout of the opened vector: [d of all products | e of all products | d of squares].
  // Every word is written below: semi-honest, the buffer of the last batch's opened values
  // (no zero-fill, no fresh pages).
  Shares<P> masked = ctx_.MaskedBuffer(2 * n_mul + n_sq);
  {
    std::size_t om = 0, os = 0;
    for (const Job& j : jobs_) {
      const std::size_t n = j.x->size();
      const auto* xv = j.x->v.data();
      if (j.y != nullptr) {
        const auto* yv = j.y->v.data();
        for (std::size_t i = 0; i < n; ++i) {
          masked.v[om + i] = xv[i] - t.a.v[om + i];
          masked.v[n_mul + om + i] = yv[i] - t.b.v[om + i];
        }
        if constexpr (P::kMalicious) {
          for (std::size_t i = 0; i < n; ++i) {
            masked.m[om + i] = j.x->m[i] - t.a.m[om + i];
            masked.m[n_mul + om + i] = j.y->m[i] - t.b.m[om + i];
          }
        }
        om += n;
      } else {
        const std::size_t base = 2 * n_mul + os;
        for (std::size_t i = 0; i < n; ++i) masked.v[base + i] = xv[i] - s.a.v[os + i];
        if constexpr (P::kMalicious) {
          for (std::size_t i = 0; i < n; ++i) masked.m[base + i] = j.x->m[i] - s.a.m[os + i];
        }
        os += n;
      }
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened,
                           ctx_.OpenOwned(std::move(masked), mode, king));

  const bool p0 = ctx_.self() == 0;
  const u128 alpha = ctx_.key().alpha;
  std::size_t om = 0, os = 0;
  // A batch of one job writes its products over its triples' c (or its squares' a^2), which
  // it then owns: no zero-filled output of its own.
  for (Job& j : jobs_) {
    const std::size_t n = j.x->size();
    const Shares<P>& own = j.y != nullptr ? t.c : s.aa;
    const bool in_place =
        jobs_.size() == 1 && own.v.size() == n && (!P::kMalicious || own.m.size() == n);
    Shares<P> z;
    if (!in_place) {
      z = Shares<P>(n);
    } else if (j.y != nullptr) {
      z = std::move(t.c);
    } else {
      z = std::move(s.aa);
    }
    if (j.y != nullptr) {
      const std::uint64_t* d = opened.data() + om;
      const std::uint64_t* e = opened.data() + n_mul + om;
      const auto* av = t.a.v.data() + om;
      const auto* bv = t.b.v.data() + om;
      const auto* cv = in_place ? z.v.data() : t.c.v.data() + om;
      for (std::size_t i = 0; i < n; ++i) {
        z.v[i] = cv[i] + d[i] * bv[i] + e[i] * av[i];
        if (p0) z.v[i] += d[i] * e[i];
      }
      if constexpr (P::kMalicious) {
        const u128* am = t.a.m.data() + om;
        const u128* bm = t.b.m.data() + om;
        const u128* cm = in_place ? z.m.data() : t.c.m.data() + om;
        for (std::size_t i = 0; i < n; ++i) {
          z.m[i] = cm[i] + d[i] * bm[i] + e[i] * am[i] + alpha * static_cast<u128>(d[i] * e[i]);
        }
      }
      om += n;
    } else {
      const std::uint64_t* d = opened.data() + 2 * n_mul + os;
      const auto* av = s.a.v.data() + os;
      const auto* aav = in_place ? z.v.data() : s.aa.v.data() + os;
      for (std::size_t i = 0; i < n; ++i) {
        z.v[i] = aav[i] + (2 * d[i]) * av[i];
        if (p0) z.v[i] += d[i] * d[i];
      }
      if constexpr (P::kMalicious) {
        const u128* am = s.a.m.data() + os;
        const u128* aam = in_place ? z.m.data() : s.aa.m.data() + os;
        for (std::size_t i = 0; i < n; ++i) {
          z.m[i] =
              aam[i] + static_cast<u128>(2 * d[i]) * am[i] + alpha * static_cast<u128>(d[i] * d[i]);
        }
      }
      os += n;
    }
    j.out = std::move(z);
  }
  ctx_.GiveSpare(std::move(opened));
  return Status::Ok();
}

template <typename P>
Result<Shares<P>> Mul(Context<P>& ctx, const Shares<P>& x, const Shares<P>& y) {
  BeaverBatch<P> batch(ctx);
  const std::size_t h = batch.Prepare(x, y);
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  return batch.Take(h);
}

template <typename P>
Result<Shares<P>> Square(Context<P>& ctx, const Shares<P>& x) {
  BeaverBatch<P> batch(ctx);
  const std::size_t h = batch.PrepareSquare(x);
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  return batch.Take(h);
}

// P names a type in explicit instantiations: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define MPCACHE_INSTANTIATE_BEAVER(P)                                                 \
  template class BeaverBatch<P>;                                                      \
  template Result<Shares<P>> Mul<P>(Context<P>&, const Shares<P>&, const Shares<P>&); \
  template Result<Shares<P>> Square<P>(Context<P>&, const Shares<P>&);
// NOLINTEND(bugprone-macro-parentheses)
MPCACHE_INSTANTIATE_BEAVER(SemiHonest)
MPCACHE_INSTANTIATE_BEAVER(Spdz2k)

}  // namespace mpcache::mpc
