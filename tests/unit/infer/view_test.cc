// No party's view depends on the prompt: every byte each party receives over a short
// private generation is recorded for two different prompts (same length, same seeds), and
// simple statistics cannot tell the views apart — sizes and rounds are identical, the bytes
// look uniform (mean and byte histogram), and no received 64-bit word equals a small value
// such as a token id more often than chance.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <mutex>

#include "infer/in_process.h"
#include "model/synth.h"

namespace mpcache::infer {
namespace {

// Forwards to the party's MemMesh channel, keeping a copy of every received message.
class RecordingChannel final : public net::Channel {
 public:
  explicit RecordingChannel(net::Channel& inner) : inner_(inner) {}
  net::PartyId self() const override { return inner_.self(); }
  int num_parties() const override { return inner_.num_parties(); }
  Status Flush() override { return inner_.Flush(); }
  const std::vector<std::vector<std::uint8_t>>& received() const { return received_; }

 protected:
  Status DoSend(net::PartyId peer, std::span<const std::uint8_t> data) override {
    return inner_.Send(peer, data);
  }
  Status DoRecv(net::PartyId peer, std::span<std::uint8_t> data) override {
    MPCACHE_RETURN_IF_ERROR(inner_.Recv(peer, data));
    received_.emplace_back(data.begin(), data.end());
    return Status::Ok();
  }

 private:
  net::Channel& inner_;
  std::vector<std::vector<std::uint8_t>> received_;
};

struct ViewStats {
  std::size_t messages = 0, bytes = 0, words = 0, small_words = 0, check_constants = 0;
  double word_mean = 0;  // mean of words / 2^64
  double chi2 = 0;       // byte histogram vs uniform (255 degrees of freedom)
  std::vector<std::size_t> sizes;
};

ViewStats Summarise(const RecordingChannel& ch) {
  ViewStats s;
  std::array<std::size_t, 256> hist{};
  double sum = 0;
  for (const auto& m : ch.received()) {
    ++s.messages;
    s.bytes += m.size();
    s.sizes.push_back(m.size());
    for (std::uint8_t b : m) ++hist[b];
    if (m.size() % 8 != 0) continue;
    for (std::size_t i = 0; i < m.size(); i += 8) {
      std::uint64_t w;
      std::memcpy(&w, m.data() + i, 8);
      sum += std::ldexp(static_cast<double>(w), -64);
      ++s.words;
      // Token ids and other small plaintext integers (also as negatives).
      if (w < (1u << 20) || w > ~std::uint64_t{0} - (1u << 20)) {
        // The arithmetic MAC check's messages (112 B round 1, 64 B round 4) carry constant
        // fields: the digest of the input broadcasts is all zero when there were none, and
        // the agreed z is 0 mod 2^64 whenever the check passes. Counted apart. When the
        // binary check travels in the same rounds (CheckAllMacs) its part comes first:
        // round 1 is 80 + 112 = 192 B, round 4 is 48 + 64 = 112 B.
        if (m.size() == 112 || m.size() == 64 || m.size() == 192) {
          ++s.check_constants;
        } else {
          ++s.small_words;
        }
      }
    }
  }
  s.word_mean = s.words ? sum / static_cast<double>(s.words) : 0;
  const double expect = static_cast<double>(s.bytes) / 256;
  for (std::size_t c : hist) s.chi2 += (c - expect) * (c - expect) / expect;
  return s;
}

template <typename P>
std::vector<ViewStats> Views(const std::shared_ptr<const RingModel>& model,
                             const std::vector<int>& prompt) {
  std::vector<std::unique_ptr<RecordingChannel>> recorders(3);
  std::mutex mu;
  InProcessOptions o;
  o.seed = 5;
  o.wrap_channel = [&](net::Channel& inner, int party) -> net::Channel& {
    std::lock_guard<std::mutex> lock(mu);
    recorders[static_cast<std::size_t>(party)] = std::make_unique<RecordingChannel>(inner);
    return *recorders[static_cast<std::size_t>(party)];
  };
  auto run = RunInProcess<P>(model, prompt, 1, 6, o);
  EXPECT_TRUE(run.ok()) << run.error().ToString();
  std::vector<ViewStats> out;
  for (const auto& r : recorders) out.push_back(Summarise(*r));
  return out;
}

template <typename P>
void ExpectIndependentViews() {
  auto config = model::ParseDims("32x1x4x2x64x40x16");
  ASSERT_TRUE(config.ok());
  auto w = model::MakeSyntheticWeights(*config, 9);
  ASSERT_TRUE(w.ok());
  auto model = EncodeModel(*w, kRecommendedFracBits);
  ASSERT_TRUE(model.ok());
  const auto a = Views<P>(*model, {1, 5, 9});
  const auto b = Views<P>(*model, {1, 33, 2});
  for (std::size_t p = 0; p < 3; ++p) {
    SCOPED_TRACE("party " + std::to_string(p));
    EXPECT_EQ(a[p].sizes, b[p].sizes);  // same messages, same sizes, same order
    for (const ViewStats* s : {&a[p], &b[p]}) {
      ASSERT_GT(s->words, 10000u);
      const double sd = std::sqrt(1.0 / 12 / static_cast<double>(s->words));
      EXPECT_LT(std::abs(s->word_mean - 0.5), 5 * sd);
      // chi-square(255): mean 255, sd ~22.6; 255 + 7 sd.
      EXPECT_LT(s->chi2, 255 + 7 * 22.6) << "received bytes are not uniform";
      // P(uniform word within 2^20 of 0) = 2^-43 per word: any hit is a leak.
      EXPECT_EQ(s->small_words, 0u);
    }
    EXPECT_EQ(a[p].check_constants, b[p].check_constants);
    const double sd = std::sqrt(1.0 / 12 / static_cast<double>(a[p].words));
    EXPECT_LT(std::abs(a[p].word_mean - b[p].word_mean), 7 * sd);
  }
}

TEST(SecureView, IndependentOfPromptMalicious) {
  ExpectIndependentViews<mpc::Spdz2k>();
}
TEST(SecureView, IndependentOfPromptSemiHonest) {
  ExpectIndependentViews<mpc::SemiHonest>();
}

}  // namespace
}  // namespace mpcache::infer
