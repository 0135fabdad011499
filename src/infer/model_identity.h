// Which model a party computes with, so that the three parties can check they agree
// before a session uses it. A party's identity is
//   - the SHA-256 of the ring-encoded model (fractional bits, config and every tensor,
//     ModelHash): computed at load for public weights; recorded by `mpcache-model share`
//     in every share file for private weights (a party holds only its share and cannot
//     recompute it);
//   - for private weights, the random split id of the `mpcache-model share` run that wrote
//     its share file (zero for public weights). Files of two runs over the same model add up
//     to garbage: their split ids differ.
// AgreeOnModel exchanges the identities over the session's mesh (one round, 48 bytes to
// each peer) and refuses the session, naming the odd party, when they differ.
//
// This catches misconfiguration (files mixed from two splits, different checkpoints or
// precisions), not a corrupt party: a party can claim any identity, as it can input any
// share (SECURITY.md, known gaps).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "infer/ring_model.h"
#include "net/channel.h"

namespace mpcache::infer {

struct ModelIdentity {
  std::array<std::uint8_t, 16> split_id{};    // zero: public weights (not a split)
  std::array<std::uint8_t, 32> model_hash{};  // ModelHash of the clear encoded model
  bool operator==(const ModelIdentity&) const = default;
  bool is_split() const;
  // "split 1a2b3c4d5e6f7a8b of model 9f8e7d6c5b4a3928" (the first 8 bytes of each).
  std::string ToString() const;
};

// SHA-256 over the fractional bits, the config and every tensor of `model`.
std::array<std::uint8_t, 32> ModelHash(const RingModel& model);

// A fresh split of `model`: a random split id (OS CSPRNG) and the model's hash.
Result<ModelIdentity> NewSplit(const RingModel& model);

// The three parties' identities (index = party id) agree, or an error that names the
// party whose identity differs from the other two (or all three when no two agree), says
// whether the split or the model differs, and names `self`'s file.
Status CompareIdentities(const std::vector<ModelIdentity>& ids, int self,
                         const std::string& my_file);

// Sends `mine` to every peer, receives theirs, and compares them (CompareIdentities).
Status AgreeOnModel(net::Channel& channel, const ModelIdentity& mine, const std::string& my_file);

}  // namespace mpcache::infer
