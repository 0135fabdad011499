#include "infer/share_file.h"

#include <cstring>

#include "model/file_io.h"

namespace mpcache::infer {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'C', 'W', 'S', 'H', 'R', '2'};
constexpr char kMagicV1[8] = {'M', 'P', 'C', 'W', 'S', 'H', 'R', '1'};

std::uint64_t TotalBytes(const RingModel& m) {
  std::uint64_t n = 0;
  m.ForEachTensor([&](const std::string&, const RingVec& t) { n += 8 + 8 * t.size(); });
  return n;
}

}  // namespace

Result<std::vector<RingModel>> SplitModel(const RingModel& model, int parties, const Seed& seed) {
  if (parties < 2) return InvalidArgument("sharing needs at least 2 parties");
  if (model.is_compact()) {
    return InvalidArgument(
        "private weights are split from the wide ring encoding; this model is compact "
        "(memory-mapped public weights): load the checkpoint with model::LoadCheckpoint and "
        "EncodeModel to share it");
  }
  MPCACHE_RETURN_IF_ERROR(model.CheckShapes());
  // Every share starts as a copy of the model (shapes, config); shares 0..n-2 are then
  // overwritten with PRG output and subtracted from the last one.
  std::vector<RingModel> out(static_cast<std::size_t>(parties), model);
  std::vector<std::vector<RingVec*>> tensors(out.size());
  for (std::size_t p = 0; p < out.size(); ++p) {
    out[p].ForEachTensor([&](const std::string&, RingVec& t) { tensors[p].push_back(&t); });
  }
  Prg prg(seed);
  for (std::size_t i = 0; i < tensors[0].size(); ++i) {
    RingVec& last = *tensors.back()[i];
    for (std::size_t p = 0; p + 1 < out.size(); ++p) {
      RingVec& t = *tensors[p][i];
      prg.FillValues(std::span<std::uint64_t>(t));
      for (std::size_t j = 0; j < t.size(); ++j) last[j] -= t[j];
    }
  }
  return out;
}

std::string ShareFileName(const std::string& dir, int party) {
  return (dir.empty() ? std::string(".") : dir) + "/party" + std::to_string(party) + ".mpcw";
}

Status WriteShareFile(const std::string& path, const RingModel& share, int party, int parties,
                      const ModelIdentity& identity, const ProgressFn& progress) {
  if (!identity.is_split()) {
    return InvalidArgument(path + ": a share file needs the split id of its run (NewSplit)");
  }
  MPCACHE_RETURN_IF_ERROR(share.CheckShapes());
  MPCACHE_ASSIGN_OR_RETURN(model::FileWriter w, model::FileWriter::Create(path));
  const model::ModelConfig& c = share.config;
  MPCACHE_RETURN_IF_ERROR(w.Write(kMagic, sizeof(kMagic)));
  for (std::uint32_t v : {static_cast<std::uint32_t>(party), static_cast<std::uint32_t>(parties),
                          static_cast<std::uint32_t>(share.frac_bits)}) {
    MPCACHE_RETURN_IF_ERROR(w.WriteValue(v));
  }
  MPCACHE_RETURN_IF_ERROR(w.Write(identity.split_id.data(), identity.split_id.size()));
  MPCACHE_RETURN_IF_ERROR(w.Write(identity.model_hash.data(), identity.model_hash.size()));
  for (std::int32_t v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
                         c.seq_len, c.shared_classifier ? 1 : 0}) {
    MPCACHE_RETURN_IF_ERROR(w.WriteValue(v));
  }
  MPCACHE_RETURN_IF_ERROR(w.WriteValue(c.rope_theta));
  MPCACHE_RETURN_IF_ERROR(w.WriteValue(c.norm_eps));
  const std::uint64_t total = TotalBytes(share);
  std::uint64_t done = 0;
  Status status = Status::Ok();
  share.ForEachTensor([&](const std::string&, const RingVec& t) {
    if (!status.ok()) return;
    const std::uint64_t n = t.size();
    status = w.WriteValue(n);
    if (status.ok()) status = w.Write(t.data(), t.size() * 8);
    done += 8 + 8 * n;
    if (progress) progress(done, total);
  });
  MPCACHE_RETURN_IF_ERROR(status);
  return w.Close();
}

Result<ShareFile> ReadShareFile(const std::string& path, const ProgressFn& progress) {
  MPCACHE_ASSIGN_OR_RETURN(model::FileReader r, model::FileReader::Open(path));
  char magic[8];
  MPCACHE_RETURN_IF_ERROR(r.Read(magic, sizeof(magic), "magic"));
  if (std::memcmp(magic, kMagicV1, sizeof(kMagicV1)) == 0) {
    return Unsupported(path +
                       ": a share file of the first format, without the split id that lets the "
                       "parties check their files belong together; fix: run `mpcache-model "
                       "share` again and give every party its new file");
  }
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return CorruptData(path + ": not an MPCache weight-share file (bad magic)");
  }
  ShareFile f;
  MPCACHE_ASSIGN_OR_RETURN(std::uint32_t party, r.ReadValue<std::uint32_t>("party"));
  MPCACHE_ASSIGN_OR_RETURN(std::uint32_t parties, r.ReadValue<std::uint32_t>("parties"));
  MPCACHE_ASSIGN_OR_RETURN(std::uint32_t frac, r.ReadValue<std::uint32_t>("frac_bits"));
  if (parties < 2 || parties > 16 || party >= parties || frac < 1 || frac > 30) {
    return CorruptData(path + ": bad header (party " + std::to_string(party) + " of " +
                       std::to_string(parties) + ", " + std::to_string(frac) + " frac bits)");
  }
  f.party = static_cast<int>(party);
  f.parties = static_cast<int>(parties);
  f.share.frac_bits = static_cast<int>(frac);
  MPCACHE_RETURN_IF_ERROR(
      r.Read(f.identity.split_id.data(), f.identity.split_id.size(), "split id"));
  MPCACHE_RETURN_IF_ERROR(
      r.Read(f.identity.model_hash.data(), f.identity.model_hash.size(), "model hash"));
  if (!f.identity.is_split()) return CorruptData(path + ": bad header (split id is zero)");
  model::ModelConfig& c = f.share.config;
  std::int32_t v[8];
  for (auto& x : v) {
    MPCACHE_ASSIGN_OR_RETURN(x, r.ReadValue<std::int32_t>("config"));
  }
  c.dim = v[0];
  c.hidden_dim = v[1];
  c.n_layers = v[2];
  c.n_heads = v[3];
  c.n_kv_heads = v[4];
  c.vocab_size = v[5];
  c.seq_len = v[6];
  c.shared_classifier = v[7] != 0;
  MPCACHE_ASSIGN_OR_RETURN(c.rope_theta, r.ReadValue<float>("rope_theta"));
  MPCACHE_ASSIGN_OR_RETURN(c.norm_eps, r.ReadValue<float>("norm_eps"));
  if (Status s = c.Validate(); !s.ok()) return s.error().WithContext(path);
  f.share.layers.resize(static_cast<std::size_t>(c.n_layers));
  const std::uint64_t total = r.remaining();
  Status status = Status::Ok();
  f.share.ForEachTensor([&](const std::string& name, RingVec& t) {
    if (!status.ok()) return;
    auto want = f.share.ExpectedSize(name);
    auto n = r.ReadValue<std::uint64_t>(name);
    if (!want.ok() || !n.ok()) {
      status = !want.ok() ? want.error() : n.error();
      return;
    }
    if (*n != *want) {
      status = CorruptData(path + ": tensor " + name + " has " + std::to_string(*n) +
                           " elements, the config needs " + std::to_string(*want));
      return;
    }
    if (*n * 8 > r.remaining()) {
      status = r.Truncated(name, *n * 8);
      return;
    }
    t.resize(*n);
    status = r.Read(t.data(), *n * 8, name);
    if (progress) progress(total - r.remaining(), total);
  });
  MPCACHE_RETURN_IF_ERROR(status);
  if (r.remaining() != 0) return CorruptData(path + ": trailing bytes after the last tensor");
  return f;
}

}  // namespace mpcache::infer
