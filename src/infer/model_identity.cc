#include "infer/model_identity.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "common/prg.h"

namespace mpcache::infer {
namespace {

std::string Hex(const std::uint8_t* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

constexpr std::size_t kWireBytes = 16 + 32;

}  // namespace

bool ModelIdentity::is_split() const {
  for (std::uint8_t b : split_id) {
    if (b != 0) return true;
  }
  return false;
}

std::string ModelIdentity::ToString() const {
  return (is_split() ? "split " + Hex(split_id.data(), 8) + " of " : std::string("public ")) +
         "model " + Hex(model_hash.data(), 8);
}

std::array<std::uint8_t, 32> ModelHash(const RingModel& model) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  const auto put = [&](const void* p, std::size_t n) { EVP_DigestUpdate(ctx.get(), p, n); };
  static constexpr char kDomain[] = "mpcache ring model v1";
  static constexpr char kCompactDomain[] = "mpcache compact model v1";
  if (model.is_compact()) {
    put(kCompactDomain, sizeof(kCompactDomain));
  } else {
    put(kDomain, sizeof(kDomain));
  }
  const model::ModelConfig& c = model.config;
  for (std::int32_t v :
       {static_cast<std::int32_t>(model.frac_bits), c.dim, c.hidden_dim, c.n_layers, c.n_heads,
        c.n_kv_heads, c.vocab_size, c.seq_len, c.shared_classifier ? 1 : 0}) {
    put(&v, sizeof(v));
  }
  put(&c.rope_theta, sizeof(c.rope_theta));
  put(&c.norm_eps, sizeof(c.norm_eps));
  if (model.is_compact()) {
    // The mapped file's bytes (hashed when it was opened) stand for every tensor.
    put(model.compact->file_sha256.data(), model.compact->file_sha256.size());
    const auto layers = static_cast<std::uint64_t>(model.layers.size());
    put(&layers, sizeof(layers));
  }
  model.ForEachTensor([&](const std::string& name, const RingVec& t) {
    const std::uint64_t n = t.size();
    put(name.data(), name.size() + 1);
    put(&n, sizeof(n));
    put(t.data(), t.size() * sizeof(std::uint64_t));
  });
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), out.data(), &len);
  return out;
}

Result<ModelIdentity> NewSplit(const RingModel& model) {
  ModelIdentity id;
  MPCACHE_ASSIGN_OR_RETURN(Seed s, OsSeed());
  std::memcpy(id.split_id.data(), s.data(), id.split_id.size());
  id.split_id[0] |= 1;  // never all zero (that means "public weights")
  id.model_hash = ModelHash(model);
  return id;
}

Status CompareIdentities(const std::vector<ModelIdentity>& ids, int self,
                         const std::string& my_file) {
  if (ids.size() != 3 || self < 0 || self >= 3) {
    return InvalidArgument("model identities: three parties expected");
  }
  if (ids[0] == ids[1] && ids[1] == ids[2]) return Status::Ok();
  // The odd one out: the party whose identity differs from the two others (which agree).
  int odd = -1;
  for (int p = 0; p < 3; ++p) {
    const auto& a = ids[static_cast<std::size_t>((p + 1) % 3)];
    const auto& b = ids[static_cast<std::size_t>((p + 2) % 3)];
    if (a == b) odd = p;
  }
  const std::string mine = "this party (" + std::to_string(self) + ") loaded " + my_file + " (" +
                           ids[static_cast<std::size_t>(self)].ToString() + ")";
  const std::string fix =
      "fix: give every party the share file of ONE `mpcache-model share` run "
      "(party<i>.mpcw for party i), or the same checkpoint and model.frac_bits for public "
      "weights";
  if (odd >= 0) {
    const int a = (odd + 1) % 3, b = (odd + 2) % 3;
    const auto& odd_id = ids[static_cast<std::size_t>(odd)];
    const auto& agreed = ids[static_cast<std::size_t>(a)];
    const std::string who = "party " + std::to_string(odd);
    return InvalidArgument("the parties' model files differ: " + who + " holds " +
                           odd_id.ToString() + " while parties " + std::to_string(std::min(a, b)) +
                           " and " + std::to_string(std::max(a, b)) + " hold " + agreed.ToString() +
                           " (" + who + "'s file comes from " +
                           (odd_id.model_hash != agreed.model_hash
                                ? "a different model or precision"
                                : "another split of the same model") +
                           "); " + mine + "; " + fix);
  }
  std::string all;
  for (int p = 0; p < 3; ++p) {
    all += (p ? ", " : "") + std::string("party ") + std::to_string(p) + " holds " +
           ids[static_cast<std::size_t>(p)].ToString();
  }
  return InvalidArgument("the parties' model files differ, no two alike: " + all + "; " + mine +
                         "; " + fix);
}

Status AgreeOnModel(net::Channel& channel, const ModelIdentity& mine, const std::string& my_file) {
  const int n = channel.num_parties();
  const int self = channel.self();
  if (n != 3) return InvalidArgument("model identities: three parties expected");
  std::array<std::uint8_t, kWireBytes> out{};
  std::memcpy(out.data(), mine.split_id.data(), 16);
  std::memcpy(out.data() + 16, mine.model_hash.data(), 32);
  MPCACHE_ASSIGN_OR_RETURN(const auto all, net::ExchangeWithPeers(channel, out));
  std::vector<ModelIdentity> ids(3);
  for (int p = 0; p < n; ++p) {
    const auto& in = all[static_cast<std::size_t>(p)];
    auto& id = ids[static_cast<std::size_t>(p)];
    std::memcpy(id.split_id.data(), in.data(), 16);
    std::memcpy(id.model_hash.data(), in.data() + 16, 32);
  }
  return CompareIdentities(ids, self, my_file);
}

}  // namespace mpcache::infer
