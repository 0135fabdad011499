// The exact communication of one secure decoding step, predicted from public shapes: bytes
// sent by the busiest party and rounds, per phase, as infer::RunDecodeStep (decode_step.h)
// measures them in DecodeStepReport::phases — a model, not a measurement: closed forms read
// off the code, built from the protocols' own theory functions (mpc::LtzRounds,
// mpc::LtzBytesPerPeer, mpc::RankTopKRounds / RankTopKBytesPerPeer, mpc::RankBits,
// mpc::OpenBytes, mpc::ArgMaxRounds, RankGroup, mpc::ArithCheckBytes, ...). No share is made,
// no message sent, nothing is run (mpcache-tune prices thousands of configurations with it).
//
// Notation: B = OpenBytes<P>() (14 malicious, 8 semi-honest) bytes per full-width opened
// value, sent to each of the 2 peers (every opening of the step is all-to-all: the static
// role table names no king), so n values opened cost a party 2 B n bytes; "an exchange of n"
// is one round that opens n values; "riding" values are pending truncations (mpc/
// lazy_shares.h) or deferred K/V rows opened in another exchange (no round of their own,
// 2 B each). d = dim, kv = kv_dim, nh = n_heads, hd = hidden_dim, V = vocab, f = frac_bits,
// L = context + 1 (the step's row included).
//
// Per layer (both security modes; the kernels' closed forms are in step_cost.cc, each with
// its derivation, and exposed below so tests check them against SecureBackend at many widths):
//   norms        RmsNorm(d) then its output's truncations opened (1 round, d): two per layer,
//                one more before the classifier. The first of layer 0 reads the plain
//                embedding row; every other reads x + a pending truncation (the previous
//                projection's), which the norm's first product opens (7 values per element
//                instead of 4).
//   projections  public weights: local (0).
//   attention    the q, k, v truncations opened (1 round, d + 2 kv), and after the mix its
//                truncation (1 round, d).
//   kv_append    0: the step's blocks are fetched from the dealer (no party traffic) and the
//                new K/V rows (2 kv values) ride the scores' opening.
//   scores       1 round, d + 2 kv (q masked once against every key block, representative
//                block and mean-key block, and the K/V rows riding).
//   softmax      Softmax(nh rows, A + m_res columns) of scores truncated by f + 14 (their
//                truncation rides the row max's first comparison while 63 - (f + 14) >= 31),
//                then its output's truncations (1 round, nh (A + m_res)). A = attended
//                positions (model::SelectionShape::attended()), m_res = residual columns.
//   mix          1 round, nh (L + m_res): the weights scattered back to cache order.
//   ffn          SiluTimes(hd) of the w13 product's truncations, then its output's (1, hd).
//   select       (MPCache, only when the shape at L selects: C >= 3 clusters and keep <
//                candidates) per selecting layer (model::MpcachePolicy::SelectingLayer): [score
//                reuse (layer_share_decay > 0, every selecting layer after layer 0): 1 round,
//                m] rank (RowRankSelection of m cluster scores, keep k: 64-bit pairs + 2 k m
//                RankBits(m)-bit tests), S masked (1 round, k m), gather (1 round, m (nh cs +
//                s'), s' = s sub-scores at a selecting layer with level 2), [level 2: rank of
//                the k s gathered sub-scores keep k2, S2 masked (1, k2 k s), gather 2 (1, k s nh
//                cs2)]; a sharing layer gathers only; in the mix: [level 2 scatter (1, nh cs2
//                k2)], scatter (1, nh cs k).
//                reveal plain | dp: [dp: InputSum of m (+ m s), 1 round, 8 bytes per value
//                to each peer] the scores opened (1 round) and a MAC check (malicious: 3
//                rounds), then gathers and scatters are local copies.
//                The representatives and means the step scores were made at the end of the
//                prefill (PredictRepresentativesCost), never in the step: decode-step's
//                EndPrefill makes what L needs, and a cluster the step completes ((context +
//                1) % cluster_tokens == 0) becomes a candidate only at the next step.
// Then classifier_argmax (the logits' truncations, 1 round, V; the ranked argmax's one-hot),
// and mac_check: malicious, one batched check of both domains, 3 rounds, ArithCheckBytes(sum
// of the distinct opening widths since the last check, in bytes) + kBinaryCheckBytes when a
// comparison ran; semi-honest 0. embedding (public weights): 0.
//
// Not modelled (the query carries only dims; PredictStepCost models the wide public-weight
// engine decode-step runs on llama2.c checkpoints and synthetic dims): compact (Q8_0/F16
// GGUF) weights (an extra truncation round per layer) and private weights (matrix-triple
// products). Every FixedMathParams field is modelled (the kernels' closed forms hold for any
// valid parameters: frac_bits, comparison widths, group sizes, exp's squarings, bucket counts
// and Newton step counts; the kernel tests vary them). Context >= 1 (decode-step's --context
// is at least 1; at 0 the softmax row would be a single column). Static eviction
// (static_keep_ratio < 1, observation_window, eviction_score, impact_weight) is modelled as
// decode-step measures it: its context is a loaded prefill with no prompt announced
// (KvMemory::BeginPrompt is never called), so nothing is evicted and the step costs what the
// same policy without eviction costs. The KV block size changes only the dealer's masks, never
// party traffic. In a generation (not decode-step) the step at which a cluster becomes a
// candidate (L % cluster_tokens == 1) also makes its representative (and, with the residual
// path, its means) under "select": PredictRepresentativesCost's per-cluster cost, which this
// step model does not add because decode-step's step never pays it. No fallback: nothing
// here runs a kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/fixed_backend.h"
#include "common/result.h"
#include "model/kv_layout.h"
#include "model/mpcache_policy.h"
#include "model/weights.h"

namespace mpcache::infer {

struct StepCostQuery {
  model::ModelConfig config;  // the model's dims (n_layers, dim, n_heads, n_kv_heads, hidden,
                              // vocab, seq_len)
  bool malicious = true;      // Spdz2k (true) or SemiHonest
  std::optional<model::MpcachePolicy> policy;  // none: the full cache
  int context = 0;  // cached positions before the step (decode-step's --context)
  int block = model::KvLayout::kDefaultBlockTokens;  // decode-step's --kv-block
  FixedMathParams math;  // kernel parameters (defaults = what the engine uses)
};

struct PhaseCost {
  std::uint64_t bytes = 0;
  std::uint64_t rounds = 0;
  // Sum over the phase's secure comparisons of their width in bits. Not a communication
  // figure: the work of a comparison (the dealer's tuple, its check, the binary circuit)
  // grows with it, and in process it dominates the time of softmax and selection
  // (mpcache-tune's time model, tune/workload_cost.h, reads it).
  std::uint64_t compared_bits = 0;
  bool operator==(const PhaseCost&) const = default;
};

// Bytes sent by the busiest party and rounds of ONE decoding step, per phase, named exactly
// as infer::RunDecodeStep reports them in DecodeStepReport::phases (every phase it reports,
// zeros included).
Result<std::map<std::string, PhaseCost>> PredictStepCost(const StepCostQuery& q);

// MPCache: what DecodeStepReport::representatives measures — the end of the prefill
// (MpcacheKv::EndPrefill: the representatives of the context's candidate clusters at every
// selecting layer, the residual path's means at every layer) and the MAC check after it.
// Total bytes of the busiest party (the report's bytes_per_party_per_cluster is this divided
// by its `clusters`, as an integer) and rounds. InvalidArgument for the full cache (it makes
// none).
Result<PhaseCost> PredictRepresentativesCost(const StepCostQuery& q);

// MPCache: what one more cluster costs when it becomes a candidate while the policy selects
// (a generation makes its representatives once, in the step that first needs them): its
// representatives at every selecting layer (AddRepresentatives of one cluster) and, with the
// residual path, its mean key and value at every layer (2 rounds each); no MAC check (the
// step's own covers it). A model of what decode-step does not measure (its context's
// clusters are made before the step): mpcache-tune amortizes it over cluster_tokens tokens.
Result<PhaseCost> PredictNewClusterCost(const StepCostQuery& q);

// The fixed_math kernels on mpc::SecureBackend, per call, in the input state the engine
// gives them, with the call's output materialized (the engine's Materialize: one more round
// opening its pending truncations); bytes sent by one party (all parties send alike) and
// rounds — what SecureBackend::theory() and the CommStats of the call count.
struct KernelCost {
  std::uint64_t rounds = 0;
  std::uint64_t bytes = 0;
  bool operator==(const KernelCost&) const = default;
};
// Softmax(be, p, x, rows, cols, max_bits), x = Trunc(plain shares, input_shift) (the
// attention's scaled scores: input_shift = f + kScoreScaleBits, max_bits =
// kScoreCompareBits). cols >= 2.
Result<KernelCost> SoftmaxKernelCost(bool malicious, const FixedMathParams& p, std::size_t rows,
                                     std::size_t cols, int input_shift, int max_bits);
// RmsNorm(be, p, x, g, rows, cols, eps), g plain shares (public_gain: g public values, the
// span overload); x plain shares, or (input_pending) plain shares plus Trunc(plain shares, f)
// (the residual stream after a projection). cols >= 2.
Result<KernelCost> RmsNormKernelCost(bool malicious, const FixedMathParams& p, std::size_t rows,
                                     std::size_t cols, bool input_pending,
                                     bool public_gain = false);
// SiluTimes(be, p, x, h), x and h the two halves of Trunc(plain shares of 2n, f) (the FFN's
// w13 product).
Result<KernelCost> SiluTimesKernelCost(bool malicious, const FixedMathParams& p, std::size_t n);
// RowArgMaxRank(be, plain logits, 1, cols, p.compare_bits,
// ArgMaxGroup(cols, p.argmax_group, p.argmax_round_cost)),
// its one-hot materialized (SecureLlama::ArgmaxOneHot).
Result<KernelCost> ArgMaxKernelCost(bool malicious, const FixedMathParams& p, std::size_t cols);
// mpc::RowMax (compare/select.h: fixed_math's 4-ary RowMax) of rows x cols plain shares.
Result<KernelCost> RowMaxKernelCost(bool malicious, std::size_t rows, std::size_t cols, int bits);

}  // namespace mpcache::infer
