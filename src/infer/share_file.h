// Private-weights share files (`mpcache-model share`): the model owner encodes the weights
// as ring elements (infer/ring_model.h) and splits every element additively over Z_2^64 into
// one share per party (w = w_0 + w_1 + w_2 mod 2^64; w_0, w_1 uniform from a fresh OS-seeded
// PRG), so any two files together are uniformly random. Party i loads file i and inputs its
// share at session start (infer/secure_weights.h: PrivateWeights).
//
// Every file of one run carries the run's random split id and the SHA-256 of the clear
// encoded model (infer/model_identity.h), so that parties given files of different runs (or
// models) find out at their first session instead of computing with garbage.
//
// File layout (little-endian): magic "MPCWSHR2" (8 bytes), u32 party, u32 parties,
// u32 frac_bits, split id (16 bytes), model hash (32 bytes), the public config (i32 dim, hidden,
// layers, heads, kv heads, vocab, seq_len, shared classifier (0/1); f32 rope_theta, norm_eps), then
// every tensor in RingModel::ForEachTensor order as u64 element count + u64 elements.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/prg.h"
#include "infer/model_identity.h"
#include "infer/ring_model.h"

namespace mpcache::infer {

// Additive shares of `model` for `parties` parties, from `seed` (OsSeed() in production).
Result<std::vector<RingModel>> SplitModel(const RingModel& model, int parties, const Seed& seed);

struct ShareFile {
  int party = 0;
  int parties = 0;
  ModelIdentity identity;  // the split the file belongs to
  RingModel share;
};

// Progress: bytes written/read so far and in all.
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;

// `identity`: the split's (NewSplit of the clear model, the same for every file of the run).
Status WriteShareFile(const std::string& path, const RingModel& share, int party, int parties,
                      const ModelIdentity& identity, const ProgressFn& progress = {});
// Refuses files of the first format (no split id) with the fix: share the model again.
Result<ShareFile> ReadShareFile(const std::string& path, const ProgressFn& progress = {});

// "party<i>.mpcw" in `dir`.
std::string ShareFileName(const std::string& dir, int party);

}  // namespace mpcache::infer
