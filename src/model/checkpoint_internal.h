// Helpers shared by the checkpoint readers and writers (not a public API).
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "model/checkpoint.h"
#include "model/file_io.h"

namespace mpcache::model::internal {

// The tensors of a model in llama2.c's on-disk order within one kind: visit(tensor, count,
// name) for every tensor, with layers grouped by kind (all wq, then all wk, ...).
struct TensorRef {
  std::vector<float>* data;
  std::uint64_t count;
  std::string name;
};
// Norm weights (rms_att x L, rms_ffn x L, rms_final) in ak42 order.
std::vector<TensorRef> NormTensors(ModelWeights& w);
// token_embedding, wq x L, wk x L, wv x L, wo x L, w1 x L, w2 x L, w3 x L (+ wcls).
std::vector<TensorRef> MatrixTensors(ModelWeights& w, bool include_classifier);

// Sum of counts; false on overflow.
bool TotalCount(const std::vector<TensorRef>& tensors, std::uint64_t* total);

// A config read from a llama2.c header: validates and returns a descriptive error.
Status ValidateHeaderConfig(const ModelConfig& config, const std::string& path);

// Versioned (ak42) format reader; `reader` is positioned at 0.
Result<Checkpoint> LoadVersioned(FileReader& reader);

// Shaped but zero-filled weights are not allocated up front: readers resize as they go.
void ResizeLayers(ModelWeights& w);

}  // namespace mpcache::model::internal
