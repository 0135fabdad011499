// A malicious client that enters something other than one-hot vectors through its input
// masks (two ones, no one, a 2, -1 and 2 that add up to 1, fixed-point fractions, garbage,
// and the best attack on the ring: 2^63 + 1 and 2^63, which add up to 1 and whose
// x (x - 1) is 2^63, invisible to half of all random combinations) is refused at the
// parties' one-hot check, naming the position; honest one-hots pass; a corrupt party that
// tampers with the check's opening is caught by the MAC check, not blamed on the client.
#include "infer/input_check.h"

#include <gtest/gtest.h>

#include <thread>

#include "infer/in_process.h"
#include "mpc/io.h"
#include "preproc/local_parties.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

constexpr std::size_t kWidth = 8;
constexpr std::uint64_t kHalf = std::uint64_t{1} << 63;

using Row = std::vector<std::uint64_t>;

Row OneHot(std::size_t i) {
  Row x(kWidth, 0);
  x[i] = 1;
  return x;
}

// Flips the low bit of the first message of `size` bytes a party sends (corrupt party).
class TamperChannel final : public net::Channel {
 public:
  TamperChannel(net::Channel& inner, std::size_t size) : inner_(inner), size_(size) {}
  net::PartyId self() const override { return inner_.self(); }
  int num_parties() const override { return inner_.num_parties(); }
  Status Flush() override { return inner_.Flush(); }
  bool tampered() const { return done_; }

 protected:
  Status DoSend(net::PartyId peer, std::span<const std::uint8_t> data) override {
    if (done_ || data.size() != size_) return inner_.Send(peer, data);
    done_ = true;
    std::vector<std::uint8_t> bad(data.begin(), data.end());
    bad[0] ^= 1;
    return inner_.Send(peer, bad);
  }
  Status DoRecv(net::PartyId peer, std::span<std::uint8_t> data) override {
    return inner_.Recv(peer, data);
  }

 private:
  net::Channel& inner_;
  std::size_t size_;
  bool done_ = false;
};

// The client enters `rows` (x = d + r) at prompt positions 0.., the three parties run the
// check on them. One Status per party. `tamper_size`: party 1 flips a bit of its first
// message of that many bytes.
template <typename P>
std::vector<Status> Check(const std::vector<Row>& rows, std::uint64_t seed,
                          std::size_t tamper_size = 0) {
  // The shared harness's mesh and dealers; the parties run in plain threads (no abort on a
  // peer's refusal: every party must reach its own).
  preproc::LocalPartiesOptions lo = preproc::LocalPartiesFromSeed(seed);
  lo.recv_timeout = std::chrono::seconds(20);
  auto local = preproc::LocalParties<P>::Create(lo).value();
  net::MemMesh* mesh = &local->mesh();
  preproc::InProcessDealer<P>* dealer = &local->dealer();
  preproc::InProcessBitDealer<P>* bits = &local->bit_dealer();
  InProcessClient client(
      std::vector<int>(rows.size(), 0), static_cast<int>(kWidth), 1,
      [&dealer] { return dealer->NextClientMasks(); }, 3,
      [&rows](int pos, Row& x) { x = rows[static_cast<std::size_t>(pos)]; });
  std::vector<Status> out(3);
  std::vector<std::thread> threads;
  for (int p = 0; p < 3; ++p) {
    threads.emplace_back([&, p] {
      out[static_cast<std::size_t>(p)] = [&]() -> Status {
        TamperChannel tamper(mesh->party(p), tamper_size);
        net::Channel& ch = p == 1 && tamper_size ? tamper : mesh->party(p);
        MPCACHE_ASSIGN_OR_RETURN(auto ctx,
                                 mpc::Context<P>::Create(ch, dealer->store(p), TestSeed(100 + p)));
        MPCACHE_ASSIGN_OR_RETURN(
            auto bctx, mpc::BinaryContext<P>::Create(*ctx, bits->store(p), TestSeed(200 + p)));
        mpc::Shares<P> x;
        for (std::size_t r = 0; r < rows.size(); ++r) {
          MPCACHE_ASSIGN_OR_RETURN(auto masks, ctx->prep().GetInputMasks(kWidth, mpc::kClient));
          MPCACHE_ASSIGN_OR_RETURN(auto d,
                                   client.Link(p).PromptInput(static_cast<int>(r), r, kWidth));
          MPCACHE_ASSIGN_OR_RETURN(auto row, mpc::InputFromClient<P>(*ctx, std::move(masks), d));
          x.Append(row);
        }
        MPCACHE_RETURN_IF_ERROR(CheckOneHotRows<P>(*bctx, x, kWidth, 0));
        // What follows the check at the first release: the MAC check of everything.
        return mpc::CheckAllMacs<P>(*bctx);
      }();
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

template <typename P>
void ExpectRefused(const std::vector<Row>& rows, int bad_pos, const std::string& why,
                   std::uint64_t seed = 1) {
  const auto r = Check<P>(rows, seed);
  for (int p = 0; p < 3; ++p) {
    const Status& s = r[static_cast<std::size_t>(p)];
    ASSERT_FALSE(s.ok()) << "party " << p << " accepted it";
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument) << s.error().ToString();
    const std::string& m = s.error().message();
    EXPECT_NE(m.find("prompt position " + std::to_string(bad_pos) + " is not a one-hot"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
  }
}

template <typename P>
void ExpectAccepted(const std::vector<Row>& rows, std::uint64_t seed = 1) {
  for (const Status& s : Check<P>(rows, seed)) EXPECT_TRUE(s.ok()) << s.error().ToString();
}

template <typename P>
void PlayEveryAttack() {
  ExpectAccepted<P>({OneHot(0), OneHot(7), OneHot(3)});
  const std::string not_01 = "an entry is neither 0 nor 1";
  const std::string not_1 = "do not add up to 1";
  Row two_ones = OneHot(2);
  two_ones[5] = 1;
  ExpectRefused<P>({OneHot(1), two_ones}, 1, not_1);
  ExpectRefused<P>({Row(kWidth, 0)}, 0, not_1);
  Row a_two(kWidth, 0);
  a_two[4] = 2;
  ExpectRefused<P>({a_two}, 0, not_01);
  Row balanced(kWidth, 0);  // 2 + (-1) = 1: the sum alone does not see it
  balanced[0] = 2;
  balanced[1] = ~std::uint64_t{0};
  ExpectRefused<P>({OneHot(0), OneHot(1), balanced}, 2, not_01);
  Row half(kWidth, 0);  // 0.5 + 0.5 in fixed point (18 fractional bits)
  half[2] = half[3] = std::uint64_t{1} << 17;
  ExpectRefused<P>({half}, 0, "");
  Row garbage(kWidth);
  Prg prg(TestSeed(99));
  prg.FillValues(std::span<std::uint64_t>(garbage));
  ExpectRefused<P>({garbage, OneHot(1)}, 0, "");
}

TEST(OneHotCheck, RefusesEveryNonOneHotInputMalicious) {
  PlayEveryAttack<mpc::Spdz2k>();
}
TEST(OneHotCheck, RefusesEveryNonOneHotInputSemiHonest) {
  PlayEveryAttack<mpc::SemiHonest>();
}

// The best attack on Z_2^64: entries 2^63 + 1 and 2^63 add up to 1 (mod 2^64) and
// x (x - 1) = 2^63 for both, so one random combination sum rho_i e_i = 2^63 (rho_a + rho_b)
// is 0 for half of all rho. With kOneHotChecks = 40 combinations it passes with
// probability 2^-40: refused under 24 different coins. (With a single combination, each run
// would pass with probability 1/2.)
TEST(OneHotCheck, RefusesTheTwoToThe63Attack) {
  Row x(kWidth, 0);
  x[3] = kHalf + 1;
  x[6] = kHalf;
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE("coin seed " + std::to_string(seed));
    ExpectRefused<mpc::Spdz2k>({x}, 0, "an entry is neither 0 nor 1", seed);
  }
}

// A corrupt party that flips a bit of its share of the check values (second opening:
// 1 row x 41 values x 16 bytes to each peer) makes an honest client's input look bad: the
// parties must not blame the client — the MAC check catches the party first.
TEST(OneHotCheck, TamperedCheckIsAMacFailureNotTheClients) {
  const auto r =
      Check<mpc::Spdz2k>({OneHot(5)}, 3, (1 + kOneHotChecks) * mpc::OpenBytes<mpc::Spdz2k>());
  for (int p = 0; p < 3; ++p) {
    const Status& s = r[static_cast<std::size_t>(p)];
    ASSERT_FALSE(s.ok()) << "party " << p;
    EXPECT_EQ(s.error().code(), ErrorCode::kMacCheckFailed) << s.error().ToString();
    EXPECT_EQ(s.error().message().find("client"), std::string::npos) << s.error().ToString();
  }
}

// The whole session: a client that enters two ones at position 1 gets nothing; the
// parties stop before the first forward pass that would use it.
TEST(OneHotCheck, SessionRefusesAMaliciousClient) {
  auto model = testing::SyntheticRingModel("16x1x2x2x32x20x8", 4);
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  InProcessOptions o;
  o.client_input = [](int pos, Row& x) {
    if (pos == 1) x[7] += 1;
  };
  auto run = RunInProcess<mpc::Spdz2k>(*model, {1, 3, 5}, 1, 6, o);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message().find("prompt position 1 is not a one-hot vector"),
            std::string::npos)
      << run.error().ToString();
  o.client_input = {};
  auto honest = RunInProcess<mpc::Spdz2k>(*model, {1, 3, 5}, 1, 6, o);
  ASSERT_TRUE(honest.ok()) << honest.error().ToString();
  // Its cost, as docs/secure-llama.md states it: 2 rounds; R = 3 rows of V = 20 values:
  // B (R V + 2) + B x 41 R bytes to each of the 2 peers (B = 16 bytes per opened value).
  const std::size_t rows = 3, vocab = 20, B = mpc::OpenBytes<mpc::Spdz2k>();
  for (const auto& phases : honest->phases) {
    const auto& c = phases.at("input_check");
    EXPECT_EQ(c.rounds, 2u);
    EXPECT_EQ(c.bytes_sent, 2 * (B * (rows * vocab + 2) + B * (1 + kOneHotChecks) * rows));
  }
}

}  // namespace
}  // namespace mpcache::infer
