// The wire transcript of today's protocol, pinned (issue 13): SHA-256 of every byte each
// party sends each peer (per directed channel, with each Send's length), of every
// arithmetic batch each party takes from the dealer (Batch::Serialize, in its order) and of
// every comparison item's words each party's pool hands out, for fixed seeds. The role
// table (mpc/roles.h) made the king of an opening and the receiver of the dealer's
// corrections data; under the static table (all-to-all openings, corrections to the last
// party) the traffic must stay byte for byte what it was before that refactor, and this
// test is the proof.
//
// When a protocol change alters the traffic ON PURPOSE (fewer rounds, another layout), the
// test fails printing the new digests: check the change is meant, then paste them below.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "model/synth.h"
#include "mpc/beaver.h"
#include "mpc/compare/compare.h"
#include "mpc/io.h"
#include "mpc/trunc.h"
#include "preproc/local_parties.h"

namespace mpcache {
namespace {

constexpr int kParties = 3;

class Sha256Stream {
 public:
  Sha256Stream() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256Stream() { EVP_MD_CTX_free(ctx_); }
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void Update(const void* data, std::size_t n) {
    EVP_DigestUpdate(ctx_, data, n);
    bytes_ += n;
  }
  void UpdateU64(std::uint64_t v) { Update(&v, sizeof v); }
  std::string Hex() const {
    EVP_MD_CTX* copy = EVP_MD_CTX_new();
    EVP_MD_CTX_copy_ex(copy, ctx_);
    std::array<unsigned char, 32> out{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(copy, out.data(), &len);
    EVP_MD_CTX_free(copy);
    std::string hex;
    char buf[3];
    for (unsigned char c : out) {
      std::snprintf(buf, sizeof buf, "%02x", c);
      hex += buf;
    }
    return hex;
  }
  std::uint64_t bytes() const { return bytes_; }

 private:
  EVP_MD_CTX* ctx_;
  std::uint64_t bytes_ = 0;
};

// Every digest of one run.
struct Transcript {
  std::mutex mu;
  Sha256Stream channel[kParties][kParties];  // [from][to]
  Sha256Stream batches[kParties];            // arithmetic batches taken by the party
  Sha256Stream bits[kParties];               // comparison items' words handed to the party

  // One line per digest: "name bytes digest".
  std::string Lines() {
    std::lock_guard<std::mutex> lock(mu);
    std::string s;
    auto line = [&](const std::string& name, const Sha256Stream& h) {
      s += name + " " + std::to_string(h.bytes()) + " " + h.Hex() + "\n";
    };
    for (int p = 0; p < kParties; ++p) {
      for (int q = 0; q < kParties; ++q) {
        if (p != q) line("channel " + std::to_string(p) + "->" + std::to_string(q), channel[p][q]);
      }
    }
    for (int p = 0; p < kParties; ++p) line("dealer batches to " + std::to_string(p), batches[p]);
    for (int p = 0; p < kParties; ++p) line("dealer bits to " + std::to_string(p), bits[p]);
    return s;
  }
  // One digest of all the lines.
  std::string Digest() {
    const std::string all = Lines();
    Sha256Stream h;
    h.Update(all.data(), all.size());
    return h.Hex();
  }

  preproc::BatchObserver BatchObserver() {
    return [this](mpc::PartyId p, const preproc::Batch& b) {
      const std::vector<std::uint8_t> bytes = b.Serialize();
      std::lock_guard<std::mutex> lock(mu);
      batches[p].UpdateU64(bytes.size());
      batches[p].Update(bytes.data(), bytes.size());
    };
  }
  preproc::BitWordsObserver BitsObserver() {
    return [this](mpc::PartyId p, preproc::BitItem item, const preproc::BitUnits& w) {
      std::lock_guard<std::mutex> lock(mu);
      Sha256Stream& h = bits[p];
      h.UpdateU64(static_cast<std::uint64_t>(item));
      std::size_t skip = w.first_offset;
      for (const auto& chunk : w.chunks) {
        h.Update(chunk.data() + skip, (chunk.size() - skip) * sizeof(std::uint64_t));
        skip = 0;
      }
    };
  }
};

// A party's channel that hashes what it sends (per peer, each Send's length first).
class HashingChannel final : public net::Channel {
 public:
  HashingChannel(net::Channel& inner, Transcript& t) : inner_(inner), t_(t) {}
  net::PartyId self() const override { return inner_.self(); }
  int num_parties() const override { return inner_.num_parties(); }
  Status Flush() override { return inner_.Flush(); }

 protected:
  Status DoSend(net::PartyId peer, std::span<const std::uint8_t> data) override {
    {
      std::lock_guard<std::mutex> lock(t_.mu);
      Sha256Stream& h = t_.channel[self()][peer];
      h.UpdateU64(data.size());
      h.Update(data.data(), data.size());
    }
    return inner_.Send(peer, data);
  }
  Status DoRecv(net::PartyId peer, std::span<std::uint8_t> data) override {
    return inner_.Recv(peer, data);
  }

 private:
  net::Channel& inner_;
  Transcript& t_;
};

model::ModelWeights Synth() {
  auto config = model::ParseDims("32x2x4x2x64x40x32");
  EXPECT_TRUE(config.ok());
  config->shared_classifier = true;
  return model::MakeSyntheticWeights(*config, 7).value();
}

// A whole private generation (the in-process harness), hashed.
template <typename P>
std::string GenerationDigest(infer::InProcessOptions o, std::vector<int>* tokens,
                             std::string* lines) {
  auto ring = infer::EncodeModel(Synth(), kRecommendedFracBits);
  EXPECT_TRUE(ring.ok());
  Transcript t;
  std::vector<std::unique_ptr<HashingChannel>> wrapped(kParties);
  o.seed = 13;
  o.wrap_channel = [&](net::Channel& inner, int p) -> net::Channel& {
    wrapped[static_cast<std::size_t>(p)] = std::make_unique<HashingChannel>(inner, t);
    return *wrapped[static_cast<std::size_t>(p)];
  };
  o.observe_batches = t.BatchObserver();
  o.observe_bits = t.BitsObserver();
  auto run = infer::RunInProcess<P>(*ring, {1, 5, 9}, 1, 9, o);
  EXPECT_TRUE(run.ok()) << run.error().ToString();
  if (!run.ok()) return "";
  *tokens = run->tokens;
  *lines = t.Lines();
  return t.Digest();
}

void ExpectPinned(const std::string& name, const std::string& got, const std::string& want,
                  const std::string& lines) {
#ifndef NDEBUG
  // The digests are those of the optimised build: with -march=native, -O2 contracts a*b + c
  // into FMAs where the kernels compute their public constants (the reciprocal's and rsqrt's
  // bucket lines, RoPE's tables) and an unoptimised build rounds a few of them differently,
  // which changes the traffic (both builds are self-consistent: every party runs the same
  // binary). Pinning both would need -ffp-contract=off project-wide (the issue-19 note).
  if (name != "king mode named by the caller") {
    std::printf("%s: digest %s (unoptimised build: not compared)\n", name.c_str(), got.c_str());
    (void)want;
    (void)lines;
    return;
  }
#endif
  EXPECT_EQ(got, want) << name
                       << ": the wire traffic changed. If that is meant (a protocol change, "
                          "not the role table), pin the new digest "
                       << got << "; per stream (name, bytes, SHA-256):\n"
                       << lines;
}

TEST(Transcript, GenerationMaliciousFullCache) {
  std::vector<int> tokens;
  std::string lines;
  const std::string d = GenerationDigest<mpc::Spdz2k>({}, &tokens, &lines);
  EXPECT_EQ(tokens.size(), 10u);
  ExpectPinned("malicious, full cache", d,
               "0c755948facb59bfda11a9879e8d66156740a0d75aa0ade2a8905ea53749b89c", lines);
}

TEST(Transcript, GenerationSemiHonestFullCache) {
  std::vector<int> tokens;
  std::string lines;
  const std::string d = GenerationDigest<mpc::SemiHonest>({}, &tokens, &lines);
  ExpectPinned("semi-honest, full cache", d,
               "ce9f57b874fe68d87bdd23d9604de2887ec7dd7899cd0a1a93532959cb1bc40b", lines);
}

TEST(Transcript, GenerationMaliciousMpcachePrivateWeights) {
  infer::InProcessOptions o;
  o.private_weights = true;
  o.session.kv_block_tokens = 4;
  model::MpcachePolicy policy;
  policy.cluster_tokens = 2;
  policy.keep_ratio = 0.4;
  o.session.mpcache = policy;
  std::vector<int> tokens;
  std::string lines;
  const std::string d = GenerationDigest<mpc::Spdz2k>(o, &tokens, &lines);
  ExpectPinned("malicious, MPCache, private weights", d,
               "3ebe948171825bf7c34b69c8a4ec33378cbbfb38dc33f3268b462694dde70d8b", lines);
}

// The protocols' king mode, named by the caller: openings, Beaver products, truncation.
TEST(Transcript, KingModeOpeningsNamedByTheCaller) {
  using P = mpc::Spdz2k;
  Transcript t;
  preproc::LocalPartiesOptions lo = preproc::LocalPartiesFromSeed(21);
  lo.observe_batches = t.BatchObserver();
  lo.observe_bits = t.BitsObserver();
  auto local = preproc::LocalParties<P>::Create(lo).value();
  std::vector<std::unique_ptr<HashingChannel>> wrapped;
  typename preproc::LocalParties<P>::Overrides over;
  for (int p = 0; p < kParties; ++p) {
    wrapped.push_back(std::make_unique<HashingChannel>(local->mesh().party(p), t));
    over.channel.push_back(wrapped.back().get());
  }
  std::vector<std::uint64_t> x(40);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (i * 0x9E3779B97F4A7C15ull) >> 20;
  auto out = local->Run(
      [&](mpc::BinaryContext<P>& bc) -> Result<std::vector<std::uint64_t>> {
        mpc::Context<P>& ctx = bc.arith();
        const std::span<const std::uint64_t> mine =
            ctx.self() == 0 ? std::span<const std::uint64_t>(x) : std::span<const std::uint64_t>();
        MPCACHE_ASSIGN_OR_RETURN(mpc::Shares<P> s, mpc::Input<P>(ctx, 0, mine, x.size()));
        MPCACHE_ASSIGN_OR_RETURN(auto a, ctx.Open(s, mpc::OpenMode::kKing, 1));
        mpc::BeaverBatch<P> batch(ctx);
        const std::size_t h = batch.Prepare(s, s);
        MPCACHE_RETURN_IF_ERROR(batch.Exchange(mpc::OpenMode::kKing, 2));
        mpc::Shares<P> sq = batch.Take(h);
        MPCACHE_ASSIGN_OR_RETURN(mpc::Shares<P> tr,
                                 mpc::Trunc(ctx, sq, 8, mpc::OpenMode::kKing, 0));
        MPCACHE_ASSIGN_OR_RETURN(mpc::Shares<P> neg, mpc::LessThanZero(bc, tr));
        (void)neg;
        MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(bc));
        return a;
      },
      over);
  for (const auto& r : out) ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(out[0].value(), x);
  const std::string lines = t.Lines();
  ExpectPinned("king mode named by the caller", t.Digest(),
               "10bb1fa6c9c141e749c20ec3774e87ac18098605f675a598ce22c79dcdc25816", lines);
}

}  // namespace
}  // namespace mpcache
