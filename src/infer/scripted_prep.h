// Offline-first preprocessing for benchmarks: the generation's requests to the dealers are
// data-independent (they depend only on the model shape, the prompt length and the number of
// steps), so a first run records the sequence of Get* calls each party makes, and a second
// run (fresh dealers, same seeds) fetches all of them BEFORE the online phase (Prefetch) and
// then serves the online calls from memory, checking each call matches the script. The
// online figures then contain no dealer work at all, as with a dealer streaming ahead.
#pragma once

#include <deque>
#include <variant>
#include <vector>

#include "mpc/compare/bit_preprocessing.h"
#include "mpc/preprocessing.h"

namespace mpcache::infer {

enum class PrepCall : std::uint8_t {
  kTriples,
  kSquares,
  kTrunc,
  kBits,
  kRandoms,
  kInputMasks,
  kMatrixMask,
  kMatrixTriple,
  kAttention,
  kFused,
  kBitTriples,
  kEdaBits,
  kDaBits,
  kRootTuples,
  kBitRandoms,
  kLtzTuples
};

struct PrepRequest {
  PrepCall call = PrepCall::kTriples;
  std::size_t n = 0, rows = 0, cols = 0;
  std::int64_t param = 0;  // frac bits, owner, mask id, comparison groups, fused shape code
  mpc::MaskSide side = mpc::MaskSide::kRight;
  mpc::AttentionShape attention{};  // kAttention
  bool operator==(const PrepRequest&) const = default;
};

// Records (record mode) or replays (after Prefetch) one party's calls, for both domains.
template <typename P>
class ScriptedPrep final : public mpc::Preprocessing<P>, public mpc::BitPreprocessing<P> {
 public:
  ScriptedPrep(mpc::Preprocessing<P>& arith, mpc::BitPreprocessing<P>& bits)
      : arith_(arith), bits_(bits) {}

  // The calls seen so far (record mode).
  const std::vector<PrepRequest>& script() const { return script_; }
  // Fetches every call of `script` from the inner sources now; later Get* calls are served
  // from memory and must follow the script exactly.
  Status Prefetch(const std::vector<PrepRequest>& script);

  mpc::PartyId party() const override { return arith_.party(); }
  mpc::u128 mac_key_share() const override { return arith_.mac_key_share(); }
  std::uint64_t bit_mac_key_share() const override { return bits_.bit_mac_key_share(); }

  Result<mpc::Triples<P>> GetTriples(std::size_t n) override;
  Result<mpc::SquarePairs<P>> GetSquares(std::size_t n) override;
  Result<mpc::TruncPairs<P>> GetTruncPairs(std::size_t n, int frac_bits) override;
  Result<mpc::Shares<P>> GetBits(std::size_t n) override;
  Result<mpc::Shares<P>> GetRandoms(std::size_t n) override;
  Result<mpc::InputMasks<P>> GetInputMasks(std::size_t n, mpc::PartyId owner) override;
  Result<mpc::MatrixMask<P>> GetMatrixMask(std::size_t rows, std::size_t cols) override;
  Result<mpc::MatrixTriple<P>> GetMatrixTriple(std::uint64_t mask_id, mpc::MaskSide side,
                                               std::size_t other) override;
  Result<mpc::AttentionTriple<P>> GetAttentionTriple(const mpc::AttentionShape& shape) override;
  Result<mpc::FusedTriples<P>> GetFusedTriples(std::size_t n,
                                               const mpc::FusedShape& shape) override;
  Status Announce(const std::vector<mpc::AttentionShape>& plan) override {
    return replay_ ? Status::Ok() : arith_.Announce(plan);
  }
  Result<mpc::BitTriples<P>> GetBitTriples(std::size_t n) override;
  Result<mpc::EdaBits<P>> GetEdaBits(std::size_t n) override;
  Result<mpc::DaBits<P>> GetDaBits(std::size_t n) override;
  Result<mpc::RootTuples<P>> GetRootTuples(std::size_t n) override;
  Result<mpc::BitShares<P>> GetBitRandoms(std::size_t n) override;
  Result<mpc::LtzTuples<P>> GetLtzTuples(std::size_t n, int groups) override;

 private:
  using Item = std::variant<mpc::Triples<P>, mpc::SquarePairs<P>, mpc::TruncPairs<P>,
                            mpc::Shares<P>, mpc::InputMasks<P>, mpc::MatrixMask<P>,
                            mpc::MatrixTriple<P>, mpc::AttentionTriple<P>, mpc::FusedTriples<P>,
                            mpc::BitTriples<P>, mpc::EdaBits<P>, mpc::DaBits<P>, mpc::RootTuples<P>,
                            mpc::BitShares<P>, mpc::LtzTuples<P>>;
  Result<Item> Fetch(const PrepRequest& r);
  template <typename T>
  Result<T> Serve(const PrepRequest& r);

  mpc::Preprocessing<P>& arith_;
  mpc::BitPreprocessing<P>& bits_;
  bool replay_ = false;
  std::vector<PrepRequest> script_;
  std::deque<std::pair<PrepRequest, Item>> ready_;
};

}  // namespace mpcache::infer
