#include "infer/scripted_prep.h"

#include <string>

namespace mpcache::infer {

template <typename P>
Result<typename ScriptedPrep<P>::Item> ScriptedPrep<P>::Fetch(const PrepRequest& r) {
  const auto wrap = [](auto result) -> Result<Item> {
    if (!result.ok()) return result.error();
    return Item(std::move(result).value());
  };
  switch (r.call) {
    case PrepCall::kTriples:
      return wrap(arith_.GetTriples(r.n));
    case PrepCall::kSquares:
      return wrap(arith_.GetSquares(r.n));
    case PrepCall::kTrunc:
      return wrap(arith_.GetTruncPairs(r.n, static_cast<int>(r.param)));
    case PrepCall::kBits:
      return wrap(arith_.GetBits(r.n));
    case PrepCall::kRandoms:
      return wrap(arith_.GetRandoms(r.n));
    case PrepCall::kInputMasks:
      return wrap(arith_.GetInputMasks(r.n, static_cast<mpc::PartyId>(r.param)));
    case PrepCall::kMatrixMask:
      return wrap(arith_.GetMatrixMask(r.rows, r.cols));
    case PrepCall::kMatrixTriple:
      return wrap(arith_.GetMatrixTriple(static_cast<std::uint64_t>(r.param), r.side, r.n));
    case PrepCall::kAttention:
      return wrap(arith_.GetAttentionTriple(r.attention));
    case PrepCall::kFused:
      return wrap(arith_.GetFusedTriples(
          r.n, mpc::FusedShape::FromCode(static_cast<std::int32_t>(r.param))));
    case PrepCall::kBitTriples:
      return wrap(bits_.GetBitTriples(r.n));
    case PrepCall::kEdaBits:
      return wrap(bits_.GetEdaBits(r.n));
    case PrepCall::kDaBits:
      return wrap(bits_.GetDaBits(r.n));
    case PrepCall::kRootTuples:
      return wrap(bits_.GetRootTuples(r.n));
    case PrepCall::kBitRandoms:
      return wrap(bits_.GetBitRandoms(r.n));
    case PrepCall::kLtzTuples:
      return wrap(bits_.GetLtzTuples(r.n, static_cast<int>(r.param)));
  }
  return Internal("unknown preprocessing call");
}

template <typename P>
Status ScriptedPrep<P>::Prefetch(const std::vector<PrepRequest>& script) {
  for (const PrepRequest& r : script) {
    MPCACHE_ASSIGN_OR_RETURN(Item item, Fetch(r));
    ready_.emplace_back(r, std::move(item));
  }
  replay_ = true;
  return Status::Ok();
}

template <typename P>
template <typename T>
Result<T> ScriptedPrep<P>::Serve(const PrepRequest& r) {
  if (!replay_) {
    script_.push_back(r);
    MPCACHE_ASSIGN_OR_RETURN(Item item, Fetch(r));
    return std::get<T>(std::move(item));
  }
  if (ready_.empty() || !(ready_.front().first == r)) {
    return ProtocolError("preprocessing call #" + std::to_string(script_.size()) +
                         " does not follow the prefetched script");
  }
  Item item = std::move(ready_.front().second);
  ready_.pop_front();
  script_.push_back(r);
  if (!std::holds_alternative<T>(item)) return Internal("prefetched item of the wrong type");
  return std::get<T>(std::move(item));
}

template <typename P>
Result<mpc::Triples<P>> ScriptedPrep<P>::GetTriples(std::size_t n) {
  return Serve<mpc::Triples<P>>({PrepCall::kTriples, n});
}
template <typename P>
Result<mpc::SquarePairs<P>> ScriptedPrep<P>::GetSquares(std::size_t n) {
  return Serve<mpc::SquarePairs<P>>({PrepCall::kSquares, n});
}
template <typename P>
Result<mpc::TruncPairs<P>> ScriptedPrep<P>::GetTruncPairs(std::size_t n, int frac_bits) {
  return Serve<mpc::TruncPairs<P>>({PrepCall::kTrunc, n, 0, 0, frac_bits});
}
template <typename P>
Result<mpc::Shares<P>> ScriptedPrep<P>::GetBits(std::size_t n) {
  return Serve<mpc::Shares<P>>({PrepCall::kBits, n});
}
template <typename P>
Result<mpc::Shares<P>> ScriptedPrep<P>::GetRandoms(std::size_t n) {
  return Serve<mpc::Shares<P>>({PrepCall::kRandoms, n});
}
template <typename P>
Result<mpc::InputMasks<P>> ScriptedPrep<P>::GetInputMasks(std::size_t n, mpc::PartyId owner) {
  return Serve<mpc::InputMasks<P>>({PrepCall::kInputMasks, n, 0, 0, owner});
}
template <typename P>
Result<mpc::MatrixMask<P>> ScriptedPrep<P>::GetMatrixMask(std::size_t rows, std::size_t cols) {
  return Serve<mpc::MatrixMask<P>>({PrepCall::kMatrixMask, 0, rows, cols});
}
template <typename P>
Result<mpc::MatrixTriple<P>> ScriptedPrep<P>::GetMatrixTriple(std::uint64_t mask_id,
                                                              mpc::MaskSide side,
                                                              std::size_t other) {
  return Serve<mpc::MatrixTriple<P>>(
      {PrepCall::kMatrixTriple, other, 0, 0, static_cast<std::int64_t>(mask_id), side});
}
template <typename P>
Result<mpc::AttentionTriple<P>> ScriptedPrep<P>::GetAttentionTriple(
    const mpc::AttentionShape& shape) {
  PrepRequest r{PrepCall::kAttention};
  r.attention = shape;
  return Serve<mpc::AttentionTriple<P>>(r);
}
template <typename P>
Result<mpc::FusedTriples<P>> ScriptedPrep<P>::GetFusedTriples(std::size_t n,
                                                              const mpc::FusedShape& shape) {
  return Serve<mpc::FusedTriples<P>>({PrepCall::kFused, n, 0, 0, shape.Code()});
}
template <typename P>
Result<mpc::BitTriples<P>> ScriptedPrep<P>::GetBitTriples(std::size_t n) {
  return Serve<mpc::BitTriples<P>>({PrepCall::kBitTriples, n});
}
template <typename P>
Result<mpc::EdaBits<P>> ScriptedPrep<P>::GetEdaBits(std::size_t n) {
  return Serve<mpc::EdaBits<P>>({PrepCall::kEdaBits, n});
}
template <typename P>
Result<mpc::DaBits<P>> ScriptedPrep<P>::GetDaBits(std::size_t n) {
  return Serve<mpc::DaBits<P>>({PrepCall::kDaBits, n});
}
template <typename P>
Result<mpc::RootTuples<P>> ScriptedPrep<P>::GetRootTuples(std::size_t n) {
  return Serve<mpc::RootTuples<P>>({PrepCall::kRootTuples, n});
}
template <typename P>
Result<mpc::BitShares<P>> ScriptedPrep<P>::GetBitRandoms(std::size_t n) {
  return Serve<mpc::BitShares<P>>({PrepCall::kBitRandoms, n});
}

template <typename P>
Result<mpc::LtzTuples<P>> ScriptedPrep<P>::GetLtzTuples(std::size_t n, int groups) {
  return Serve<mpc::LtzTuples<P>>({PrepCall::kLtzTuples, n, 0, 0, groups});
}

template class ScriptedPrep<mpc::SemiHonest>;
template class ScriptedPrep<mpc::Spdz2k>;

}  // namespace mpcache::infer
