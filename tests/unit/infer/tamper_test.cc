// Malicious security of the whole session: a party that flips one bit of one message it
// sends (an opening of a Beaver product, truncation, comparison or fixed-mask product) makes
// the session abort at the next MAC check — before the token is released to the client.
#include <gtest/gtest.h>

#include <mutex>

#include "infer/in_process.h"
#include "model/synth.h"

namespace mpcache::infer {
namespace {

// Forwards to the party's channel; flips the lowest bit of the `target`-th message sent.
class TamperChannel final : public net::Channel {
 public:
  TamperChannel(net::Channel& inner, std::size_t target) : inner_(inner), target_(target) {}
  net::PartyId self() const override { return inner_.self(); }
  int num_parties() const override { return inner_.num_parties(); }
  Status Flush() override { return inner_.Flush(); }
  bool tampered() const { return count_ > target_; }

 protected:
  Status DoSend(net::PartyId peer, std::span<const std::uint8_t> data) override {
    if (count_++ != target_ || data.empty()) return inner_.Send(peer, data);
    std::vector<std::uint8_t> bad(data.begin(), data.end());
    bad[0] ^= 1;
    return inner_.Send(peer, bad);
  }
  Status DoRecv(net::PartyId peer, std::span<std::uint8_t> data) override {
    return inner_.Recv(peer, data);
  }

 private:
  net::Channel& inner_;
  std::size_t target_;
  std::size_t count_ = 0;
};

TEST(SecureTamper, FlippedBitAbortsBeforeRelease) {
  auto config = model::ParseDims("16x1x2x2x32x20x8");
  ASSERT_TRUE(config.ok());
  auto w = model::MakeSyntheticWeights(*config, 4);
  ASSERT_TRUE(w.ok());
  auto model = EncodeModel(*w, kRecommendedFracBits);
  ASSERT_TRUE(model.ok());
  for (std::size_t target : {40u, 400u, 1500u}) {
    SCOPED_TRACE("tampered message " + std::to_string(target));
    std::unique_ptr<TamperChannel> tamper;
    InProcessOptions o;
    o.wrap_channel = [&](net::Channel& inner, int party) -> net::Channel& {
      if (party != 1) return inner;
      tamper = std::make_unique<TamperChannel>(inner, target);
      return *tamper;
    };
    auto run = RunInProcess<mpc::Spdz2k>(*model, {1, 3}, 1, 6, o);
    ASSERT_TRUE(tamper && tamper->tampered()) << "the run ended before the tampered message";
    ASSERT_FALSE(run.ok());
    EXPECT_TRUE(run.error().code() == ErrorCode::kMacCheckFailed ||
                run.error().code() == ErrorCode::kAborted)
        << run.error().ToString();
  }
}

}  // namespace
}  // namespace mpcache::infer
