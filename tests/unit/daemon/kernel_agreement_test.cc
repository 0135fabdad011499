// daemon/kernel_agreement.h: the three parties' kernel prices must be equal (they pick the
// protocol's shape); a difference in any one field stops the session at its start, naming
// the field, the party and both values; equal prices cost one round of 12 bytes per peer.
#include "daemon/kernel_agreement.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "net/mem_mesh.h"
#include "net/run_parties.h"

namespace mpcache::daemon {
namespace {

constexpr int kParties = 3;

std::unique_ptr<net::MemMesh> Mesh() {
  return net::MemMesh::Create(kParties, {.recv_timeout = std::chrono::seconds(20)}).value();
}

TEST(KernelPrices, EqualPricesAgreeInOneRoundOf12BytesPerPeer) {
  auto mesh = Mesh();
  const config::KernelPrices lan{64, 64, 64};
  auto r = net::RunParties(*mesh, [&](net::Channel& ch) -> Status {
    MPCACHE_RETURN_IF_ERROR(AgreeOnKernelPrices(ch, lan, "party.yaml"));
    const net::PhaseCounters t = ch.stats().Total();
    if (t.rounds != 1 || t.bytes_sent != 2 * 12) {
      return Internal("cost " + std::to_string(t.rounds) + " rounds, " +
                      std::to_string(t.bytes_sent) + " bytes");
    }
    return Status::Ok();
  });
  for (const auto& st : r) EXPECT_TRUE(st.ok()) << st.error().ToString();
}

struct Mismatch {
  int field;  // 0 rank, 1 argmax, 2 silu
  std::string name;
};

class KernelPricesDiffer : public ::testing::TestWithParam<Mismatch> {};

// Party 1's price of one field differs (one unit: the smallest lie a misconfiguration makes);
// every party stops and at least one names exactly that field with both values.
TEST_P(KernelPricesDiffer, TheSessionIsRefusedNamingTheField) {
  const Mismatch& m = GetParam();
  auto mesh = Mesh();
  auto r = net::RunParties(*mesh, [&](net::Channel& ch) -> Status {
    config::KernelPrices k;
    if (ch.self() == 1) {
      int* f[] = {&k.rank_round_cost, &k.argmax_round_cost, &k.silu_round_cost};
      *f[m.field] += 1;
    }
    return AgreeOnKernelPrices(ch, k, "party" + std::to_string(ch.self()) + ".yaml");
  });
  const config::KernelPrices d;
  const int base[] = {d.rank_round_cost, d.argmax_round_cost, d.silu_round_cost};
  const std::string want_theirs = std::to_string(base[m.field] + 1);
  const std::string want_ours = std::to_string(base[m.field]);
  int named = 0;
  for (int p = 0; p < kParties; ++p) {
    const Status& st = r[static_cast<std::size_t>(p)];
    ASSERT_FALSE(st.ok()) << "party " << p;
    const std::string& msg = st.error().message();
    if (msg.find(m.name) == std::string::npos) continue;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find(want_theirs), std::string::npos) << msg;
    EXPECT_NE(msg.find(want_ours), std::string::npos) << msg;
    EXPECT_NE(msg.find("party 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fix: the same kernels section"), std::string::npos) << msg;
    ++named;
  }
  EXPECT_GE(named, 1);
}

INSTANTIATE_TEST_SUITE_P(Fields, KernelPricesDiffer,
                         ::testing::Values(Mismatch{0, "kernels.rank_round_cost: "},
                                           Mismatch{1, "kernels.argmax_round_cost: "},
                                           Mismatch{2, "kernels.silu_round_cost: "}),
                         [](const ::testing::TestParamInfo<Mismatch>& info) {
                           // The field's name (a stable test name): rank_round_cost, ...
                           const std::string& n = info.param.name;
                           return n.substr(8, n.size() - 10);
                         });

TEST(KernelPrices, ApplySetsTheKernelsParameters) {
  FixedMathParams math;
  math.frac_bits = 20;
  config::KernelPrices{64, 0, 7}.ApplyTo(math);
  EXPECT_EQ(math.rank_round_cost, 64);
  EXPECT_EQ(math.argmax_round_cost, 0);
  EXPECT_EQ(math.silu_round_cost, 7);
  EXPECT_EQ(math.frac_bits, 20);  // nothing else
  EXPECT_TRUE(math.Validate().ok());
}

}  // namespace
}  // namespace mpcache::daemon
