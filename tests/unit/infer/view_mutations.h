// Test mutations of the dealer material for the view tests (view_test.cc, through
// view_harness.h): an item's element zeroed (a sharing of 0 in every component and MAC, so
// the item stays valid and the opening it masks carries the raw value) or copied from an
// earlier item of the same type (the same mask handed out twice). Applied identically at
// every party (each edits its own shares), so the sharings stay consistent, the results
// stay right and the run completes; only the masking changes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "mpc/compare/bit_preprocessing.h"
#include "mpc/compare/edabit_layout.h"
#include "mpc/preprocessing.h"
#include "unit/infer/view_ltz.h"

namespace mpcache::infer::viewtest {

using mpc::u128;

enum class Item : std::uint8_t {
  kTriple,
  kSquare,
  kTrunc,
  kBit,
  kRandom,
  kInputMask,
  kClientMask,
  kMatrixMask,
  kMatrixTriple,
  kAttention,
  kFused,
  kBitTriple,
  kEdaBit,
  kDaBit,
  kRootTuple,
  kBitRandom,
  kLtzTuple,
  kCount
};
inline const char* ItemName(Item t) {
  static constexpr const char* kNames[] = {
      "triples",       "squares",      "trunc",       "bits",          "randoms",
      "input-masks",   "client-masks", "matrix-mask", "matrix-triple", "attention-triple",
      "fused-triples", "bit-triples",  "edabits",     "dabits",        "root-tuples",
      "bit-randoms",   "ltz-tuples"};
  return kNames[static_cast<int>(t)];
}
inline constexpr std::uint32_t Bit(Item t) {
  return 1u << static_cast<int>(t);
}

// A change to the dealer material, made at every party: element `elem` (every element
// with all = true) of the `call`-th request (0-based, counted per item type) of `item`.
// kZero replaces it by a sharing of 0 (every component and MAC: still a valid item, so the
// opening it masks carries the raw value); kReuse copies element `src_elem` of request
// `src_call` over it (the same mask handed out twice).
struct Mutation {
  enum class Op : std::uint8_t { kZero, kReuse } op = Op::kZero;
  Item item = Item::kTriple;
  int call = 0;
  std::size_t elem = 0;
  bool all = false;
  int src_call = 0;
  std::size_t src_elem = 0;
  // Comparison tuples only (view_ltz.h): kLtzR, kLtzMasks, or a mask's binary value index
  // (zeroed with every monomial that contains it).
  int part = kLtzMasks;
};

// ---- element-wise edits of dealer items -------------------------------------------------

template <typename P>
struct Fields {
  std::vector<mpc::Shares<P>*> arith;
  std::vector<mpc::BitShares<P>*> bits;
  mpc::EdaRows* rows = nullptr;  // malicious edaBits: one row of words per item
};

template <typename P>
bool GetBitElem(const mpc::BitShares<P>& s, std::size_t e, std::uint64_t* mac) {
  if constexpr (P::kMalicious) {
    *mac = s.m[e];
    return s.v[e] != 0;
  } else {
    *mac = 0;
    return ((s.v[e / 64] >> (e % 64)) & 1) != 0;
  }
}
template <typename P>
void SetBitElem(mpc::BitShares<P>& s, std::size_t e, bool v, std::uint64_t mac) {
  if constexpr (P::kMalicious) {
    s.v[e] = v ? 1 : 0;
    s.m[e] = mac;
  } else {
    const std::uint64_t b = std::uint64_t{1} << (e % 64);
    s.v[e / 64] = v ? (s.v[e / 64] | b) : (s.v[e / 64] & ~b);
  }
}

template <typename P>
std::size_t Size(const mpc::Shares<P>& s) {
  return s.size();
}
template <typename P>
std::size_t Size(const mpc::BitShares<P>& s) {
  return s.n;
}

// Element e (or every element, e = kAll) of every field of an item: this party's shares
// and MAC shares.
inline constexpr std::size_t kAll = ~std::size_t{0};
template <typename P>
struct Saved {
  std::vector<std::vector<std::pair<typename P::Word, u128>>> arith;
  std::vector<std::vector<std::pair<bool, std::uint64_t>>> bits;
  std::vector<std::vector<std::uint64_t>> rows;
};

template <typename P>
Saved<P> Save(Fields<P> f, std::size_t e) {
  Saved<P> c;
  for (auto* s : f.arith) {
    auto& out = c.arith.emplace_back();
    for (std::size_t i = e == kAll ? 0 : e; i < (e == kAll ? Size(*s) : e + 1); ++i) {
      out.push_back({s->v[i], P::kMalicious ? s->m[i] : 0});
    }
  }
  for (auto* s : f.bits) {
    auto& out = c.bits.emplace_back();
    for (std::size_t i = e == kAll ? 0 : e; i < (e == kAll ? Size(*s) : e + 1) && i < Size(*s);
         ++i) {
      std::uint64_t mac = 0;
      const bool v = GetBitElem(*s, i, &mac);
      out.push_back({v, mac});
    }
  }
  if (f.rows != nullptr) {
    const std::size_t n = f.rows->size();
    for (std::size_t i = e == kAll ? 0 : e; i < (e == kAll ? n : e + 1) && i < n; ++i) {
      const std::uint64_t* row = f.rows->rows[i];
      c.rows.emplace_back(row, row + mpc::edabit::kRowWords);
    }
  }
  return c;
}

// Writes `c` (or zeros, c = nullptr) over element e (or every element) of every field.
template <typename P>
void Restore(Fields<P> f, std::size_t e, const Saved<P>* c) {
  for (std::size_t k = 0; k < f.arith.size(); ++k) {
    auto* s = f.arith[k];
    const std::size_t lo = e == kAll ? 0 : e, hi = e == kAll ? Size(*s) : e + 1;
    for (std::size_t i = lo; i < hi && i < Size(*s); ++i) {
      const auto w = c ? c->arith[k].at(i - lo) : std::pair<typename P::Word, u128>{0, 0};
      s->v[i] = w.first;
      if constexpr (P::kMalicious) s->m[i] = w.second;
    }
  }
  for (std::size_t k = 0; k < f.bits.size(); ++k) {
    auto* s = f.bits[k];
    const std::size_t lo = e == kAll ? 0 : e, hi = e == kAll ? Size(*s) : e + 1;
    for (std::size_t i = lo; i < hi && i < Size(*s); ++i) {
      const auto w = c ? c->bits[k].at(i - lo) : std::pair<bool, std::uint64_t>{false, 0};
      SetBitElem(*s, i, w.first, w.second);
    }
  }
  if (f.rows != nullptr) {
    const std::size_t n = f.rows->size();
    const std::size_t lo = e == kAll ? 0 : e, hi = e == kAll ? n : e + 1;
    for (std::size_t i = lo; i < hi && i < n; ++i) {
      std::uint64_t* row = f.rows->rows[i];
      if (c != nullptr) {
        const auto& src = c->rows.at(i - lo);
        std::copy(src.begin(), src.end(), row);
      } else {
        std::fill(row, row + mpc::edabit::kRowWords, std::uint64_t{0});
      }
    }
  }
}

template <typename P>
Fields<P> FieldsOf(mpc::Triples<P>& t) {
  return {{&t.a, &t.b, &t.c}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::SquarePairs<P>& t) {
  return {{&t.a, &t.aa}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::TruncPairs<P>& t) {
  return {{&t.r, &t.r_top, &t.r_shift}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::Shares<P>& t) {
  return {{&t}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::InputMasks<P>& t) {
  return {{&t.r}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::MatrixMask<P>& t) {
  return {{&t.a}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::MatrixTriple<P>& t) {
  return {{&t.b, &t.c}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::AttentionTriple<P>& t) {
  return {{&t.b, &t.c}, {}};
}
template <typename P>
Fields<P> FieldsOf(mpc::FusedTriples<P>& t) {
  Fields<P> f;
  for (mpc::FusedSide<P>* side : {&t.left, &t.right, &t.left2}) {
    for (mpc::Shares<P>* s : {&side->a, &side->r, &side->r_top, &side->r_shift}) {
      if (!s->empty()) f.arith.push_back(s);
    }
  }
  for (auto& p : t.products) f.arith.push_back(&p);
  return f;
}
template <typename P>
Fields<P> FieldsOf(mpc::BitTriples<P>& t) {
  return {{}, {&t.a, &t.b, &t.c}};
}
template <typename P>
Fields<P> FieldsOf(mpc::BitShares<P>& t) {
  return {{}, {&t}};
}
template <typename P>
Fields<P> FieldsOf(mpc::DaBits<P>& t) {
  return {{&t.a}, {&t.b}};
}
template <typename P>
Fields<P> FieldsOf(mpc::EdaBits<P>& t) {
  Fields<P> f{{&t.r}, {}, P::kMalicious ? &t.rows : nullptr};
  for (auto& b : t.bits) f.bits.push_back(&b);
  for (auto& b : t.prods) f.bits.push_back(&b);
  return f;
}
template <typename P>
Fields<P> FieldsOf(mpc::RootTuples<P>& t) {
  Fields<P> f{{}, {&t.u, &t.v, &t.w}};
  for (auto& m : t.mono) f.arith.push_back(&m);
  return f;
}

// Applies the mutations of one item type to this party's items, request by request.
template <typename P>
class Mutator {
 public:
  explicit Mutator(const std::vector<Mutation>& muts) : muts_(muts) {}
  template <typename T>
  void Apply(Item item, T& t) {
    const int call = calls_[static_cast<int>(item)]++;
    Fields<P> f = FieldsOf<P>(t);
    for (std::size_t k = 0; k < muts_.size(); ++k) {
      const Mutation& m = muts_[k];
      if (m.item != item) continue;
      if (m.op == Mutation::Op::kReuse && m.src_call == call) {
        saved_[k] = Save(f, m.all ? kAll : m.src_elem);
      }
      if (m.call != call) continue;
      if (m.op == Mutation::Op::kZero) {
        Restore<P>(f, m.all ? kAll : m.elem, nullptr);
      } else if (auto it = saved_.find(k); it != saved_.end()) {
        Restore<P>(f, m.all ? kAll : m.elem, &it->second);
      }
    }
  }
  // Comparison tuples: parts of elements (view_ltz.h).
  void Apply(Item item, mpc::LtzTuples<P>& t) {
    const int call = calls_[static_cast<int>(item)]++;
    const mpc::ltz::LtzLayout& l = mpc::ltz::LtzLayoutFor(t.groups);
    for (std::size_t k = 0; k < muts_.size(); ++k) {
      const Mutation& m = muts_[k];
      if (m.item != item) continue;
      if (m.op == Mutation::Op::kReuse && m.src_call == call) {
        ltz_saved_[k] = LtzSave(LtzElem<P>{t, l, m.src_elem}, m.part);
      }
      if (m.call != call) continue;
      const std::size_t lo = m.all ? 0 : m.elem, hi = m.all ? t.size() : m.elem + 1;
      for (std::size_t e = lo; e < hi; ++e) {
        LtzElem<P> x{t, l, e};
        if (m.op == Mutation::Op::kZero) {
          if (m.part >= 0) {
            LtzZeroMask(x, m.part);
          } else {
            LtzRestore(x, m.part, nullptr);
          }
        } else if (auto it = ltz_saved_.find(k); it != ltz_saved_.end()) {
          LtzRestore(x, m.part, &it->second);
        }
      }
    }
  }

 private:
  const std::vector<Mutation>& muts_;
  std::array<int, static_cast<int>(Item::kCount)> calls_{};
  std::map<std::size_t, Saved<P>> saved_;
  std::map<std::size_t, LtzSaved> ltz_saved_;
};

// The client's clear mask batches, with the client-mask mutations applied as at the parties.
class ClientMasks {
 public:
  ClientMasks(std::function<Result<std::vector<std::uint64_t>>()> next,
              const std::vector<Mutation>& muts)
      : next_(std::move(next)), muts_(muts) {}
  Result<std::vector<std::uint64_t>> Next() {
    MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> r, next_());
    const int call = calls_++;
    for (std::size_t k = 0; k < muts_.size(); ++k) {
      const Mutation& m = muts_[k];
      if (m.item != Item::kClientMask) continue;
      if (m.op == Mutation::Op::kReuse && m.src_call == call) saved_[k] = r.at(m.src_elem);
      if (m.call != call) continue;
      for (std::size_t e = m.all ? 0 : m.elem; e < (m.all ? r.size() : m.elem + 1); ++e) {
        r.at(e) = m.op == Mutation::Op::kZero ? 0 : saved_.at(k);
      }
    }
    return r;
  }

 private:
  std::function<Result<std::vector<std::uint64_t>>()> next_;
  const std::vector<Mutation>& muts_;
  int calls_ = 0;
  std::map<std::size_t, std::uint64_t> saved_;
};

}  // namespace mpcache::infer::viewtest
