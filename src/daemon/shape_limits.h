// The matrix shapes a party's model can ever ask the dealer for (masks, matrix and
// attention triples, MPCache's one-hots and gathers): the bound a party's requests and the
// answers it accepts are held to (daemon/remote_preprocessing.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "model/mpcache_policy.h"
#include "model/weights.h"
#include "preproc/batch.h"

namespace mpcache::daemon {

// The matrix items a party's model can ever need from the dealer: the party asks for, and
// accepts, no mask or matrix triple beyond these (nor any batch other than the one it asked
// for). The defaults are the built-in bounds; ShapeLimitsForModel gives a model's.
struct MatrixShapeLimits {
  std::uint64_t max_elements = preproc::kMaxBatchElements;  // a mask's rows x cols; B; C
  std::uint64_t max_dim = preproc::kMaxBatchElements;       // a mask's rows or cols
  std::uint64_t max_other = preproc::kMaxBatchElements;     // a matrix triple's `other`
  std::string source = "the built-in bounds";               // named in refusals
};
// The shapes the secure Llama forward uses for a model of config c (infer/): the private
// weights' matrices, the KV-cache rows (head_size x n_kv_heads and back), and their triples
// (other = 1 for the linear layers and the embedding, n_heads for the attention), and with
// MPCache (infer/mpcache_kv.h) the selection's one-hot (kept x candidate clusters) and its
// gather and scatter triples (other = n_heads x cluster_tokens).
Result<MatrixShapeLimits> ShapeLimitsForModel(
    const model::ModelConfig& c, const std::optional<model::MpcachePolicy>& mpcache = {});

}  // namespace mpcache::daemon
