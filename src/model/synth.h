// Deterministic synthetic Llama-2 checkpoints: the right shapes (any size up to and beyond
// Llama-2-7B) and trained-model-like weight scales, so full-size shapes can be run and timed
// without the real weights. Written straight to disk, one chunk at a time (a 7B file is never
// held in memory): in the llama2.c legacy format (float32, WriteSyntheticCheckpoint) or as a
// real GGUF (WriteSyntheticGguf: F32, F16 or Q8_0 matrices, quantised chunk by chunk with the
// GGUF writer's own encoder, so the file is byte for byte WriteGguf(MakeSyntheticWeights)).
//
// Dimension grammar (ParseDims):
//   "7b"                                   Llama-2-7B: dim 4096, hidden 11008, 32 layers,
//                                          32 heads, 32 kv heads, vocab 32000, seq 4096
//   DIM x LAYERS x HEADS [x KV_HEADS [x HIDDEN [x VOCAB [x SEQ]]]]
//                                          e.g. "288x6x6", "64x5x8x4x172x512x512";
//                                          defaults: KV_HEADS = HEADS, HIDDEN = Llama's rule
//                                          (256 * ceil((2/3 * 4 * DIM) / 256)), VOCAB = 32000,
//                                          SEQ = 4096. Case-insensitive 'x'.
//
// Weight scales (sigma in units of 1/sqrt(fan_in); chosen from the statistics of the trained
// stories260K so activations stay in the ranges a trained Llama has: residual stream O(1),
// attention scores with a spread of a few units, logits with a spread of several units):
//   token_embedding, wcls  N(0, 2/sqrt(dim))       rows of norm ~2
//   wq, wk                 N(0, 1.5/sqrt(dim))     attention scores ~ N(0, ~2)
//   wv, wo                 N(0, 0.6/sqrt(fan_in))
//   w1, w3                 N(0, 1/sqrt(dim))       gate/up inputs ~ N(0, ~1)
//   w2                     N(0, 1.5/sqrt(hidden))
//   rms_att                1.0 + 0.2 N(0,1) clipped to 3 sigma (gains near 1)
//   rms_ffn                0.85 + 0.2 N(0,1) clipped to 3 sigma
//   rms_final              1.8 + 0.5 N(0,1) clipped to 3 sigma
// Each tensor is drawn from its own stream (AES-CTR PRG seeded by DeriveSeed(seed, tensor
// id)), so a model cut to L layers is exactly the first L layers of the full one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"
#include "model/gguf.h"
#include "model/weights.h"

namespace mpcache::model {

// Llama's FFN width: multiple_of * ceil((2/3 * 4 * dim) / multiple_of), multiple_of = 256.
int LlamaHiddenDim(int dim);

// Parses the grammar above; every violation is one clear kInvalidArgument message.
Result<ModelConfig> ParseDims(const std::string& dims);

// Checks a configuration is generatable: positive, dim divisible by heads, heads by kv
// heads, even head size, sane upper bounds.
Status ValidateSynthConfig(const ModelConfig& config);

// Cuts the depth to `layers` (1 <= layers <= config.n_layers).
Status CutLayers(ModelConfig& config, int layers);

// Bytes of the llama2.c legacy file for this configuration (header, tensors, freq_cis, wcls).
std::uint64_t Llama2cLegacyFileSize(const ModelConfig& config);

struct SynthOptions {
  std::uint64_t seed = 1;
  // Called now and then with (bytes written, total bytes).
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

// Streams the synthetic checkpoint for `config` (shared_classifier decides whether wcls is
// written) to `path`. Returns the number of bytes written.
Result<std::uint64_t> WriteSyntheticCheckpoint(const ModelConfig& config, const std::string& path,
                                               const SynthOptions& options = {});

// The same weights as a llama GGUF v3 with `matrix_type` matrices (norms F32), without a
// vocabulary (pass a tokenizer.bin to the tools). Q8_0 needs dim and hidden_dim multiples of
// 32. Returns the number of bytes written.
Result<std::uint64_t> WriteSyntheticGguf(const ModelConfig& config, const std::string& path,
                                         GgmlType matrix_type, const SynthOptions& options = {});

// The same weights in memory (small models, tests): identical values to the file's.
Result<ModelWeights> MakeSyntheticWeights(const ModelConfig& config, std::uint64_t seed);

}  // namespace mpcache::model
