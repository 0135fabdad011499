// Private-weights share files (`mpcache-model share`): the model owner encodes the weights
// as ring elements (infer/ring_model.h) and splits every element additively over Z_2^64 into
// one share per party (w = w_0 + w_1 + w_2 mod 2^64; w_0, w_1 uniform from a fresh OS-seeded
// PRG), so any two files together are uniformly random. Party i loads file i and inputs its
// share at session start (infer/secure_weights.h: PrivateWeights).
//
// File layout (little-endian): magic "MPCWSHR1" (8 bytes), u32 party, u32 parties,
// u32 frac_bits, the public config (i32 dim, hidden, layers, heads, kv heads, vocab, seq_len,
// shared classifier (0/1); f32 rope_theta, norm_eps), then every tensor in
// RingModel::ForEachTensor order as u64 element count + u64 elements.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/prg.h"
#include "infer/ring_model.h"

namespace mpcache::infer {

// Additive shares of `model` for `parties` parties, from `seed` (OsSeed() in production).
Result<std::vector<RingModel>> SplitModel(const RingModel& model, int parties, const Seed& seed);

struct ShareFile {
  int party = 0;
  int parties = 0;
  RingModel share;
};

// Progress: bytes written/read so far and in all.
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

Status WriteShareFile(const std::string& path, const RingModel& share, int party, int parties,
                      const ProgressFn& progress = {});
Result<ShareFile> ReadShareFile(const std::string& path, const ProgressFn& progress = {});

// "party<i>.mpcw" in `dir`.
std::string ShareFileName(const std::string& dir, int party);

}  // namespace mpcache::infer
