// Several clients at once (issue 15, "Concurrency"): requests are served one at a time, in
// one order the three parties agree on (daemon/session_order.h), while the others wait in a
// queue and hear their position; the queue's limits refuse with the config field's name.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "e2e/cluster.h"
#include "e2e/raw_request.h"
#include "golden/golden_texts.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

class Queue : public ::testing::Test {
 protected:
  void Start(const ClusterOptions& options = {}) {
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->StartAll()) << cluster_->dir();
    ASSERT_TRUE(client_.Open(cluster_->client_config()));
  }
  std::unique_ptr<RawRequest> Request(std::uint64_t session) {
    auto r = client_.Request(session);
    EXPECT_TRUE(r->ok());
    return r;
  }
  // A runs (held before its prompt: the parties wait recv_ms for it), then B queues behind it
  // and C comes last: what the limit tests need.
  struct ThreeRequests {
    std::unique_ptr<RawRequest> a, b, c;
  };
  ThreeRequests RunningWaitingAndOneMore(std::uint64_t base) {
    ThreeRequests t;
    t.a = Request(base + 1);
    t.a->Generate(2, 4);
    EXPECT_TRUE(t.a->ReadSeed(2, 4));
    t.b = Request(base + 2);
    t.b->Generate(2, 4);
    std::this_thread::sleep_for(300ms);
    t.c = Request(base + 3);
    t.c->Generate(2, 4);
    return t;
  }
  // The rest of a request of prompt {1, 403}, 4 positions, from the seed shares to the
  // parties' Done: its released tokens (empty on any failure).
  static std::vector<int> Finish(RawRequest& r) {
    std::vector<int> tokens;
    if (!r.ReadSeed(2, 4)) return {};
    r.SendAll(cp::Encode(r.MaskedPrompt({1, 403})));
    for (std::uint32_t pos = 2; pos <= 4; ++pos) {
      const int t = r.ReadTokens(pos);
      if (t < 0) return {};
      tokens.push_back(t);
      r.SendAll(cp::Encode(cp::Continue{r.session(), pos, true}));
    }
    for (int p = 0; p < 3; ++p) {
      auto m = r.RecvPastProgress(p);
      if (!m.ok() || cp::TypeOf(*m) != cp::kDone) return {};
    }
    return tokens;
  }

  std::unique_ptr<Cluster> cluster_;
  RawClient client_;
};

TEST_F(Queue, RequestsReachingThePartiesInOppositeOrdersAreServedInOneOrder) {
  // The adversarial schedule for a party that serves the head of its own queue: party 0
  // receives A first, parties 1 and 2 receive B first. Each party on its own would set up
  // another session than its peers, and both requests would time out. The lobby makes
  // party 0's order the order: A, then B.
  Start();
  auto a = Request(0x0a0a000000000001), b = Request(0x0b0b000000000002);
  ASSERT_TRUE(a->ok() && b->ok());
  const auto gap = [] { std::this_thread::sleep_for(150ms); };
  a->GenerateTo(0, 2, 4);
  gap();
  b->GenerateTo(2, 2, 4);
  b->GenerateTo(1, 2, 4);
  gap();
  a->GenerateTo(1, 2, 4);
  a->GenerateTo(2, 2, 4);
  gap();
  b->GenerateTo(0, 2, 4);
  std::vector<int> tb;
  std::thread tb_thread([&] { tb = Finish(*b); });
  const std::vector<int> ta = Finish(*a);
  tb_thread.join();
  ASSERT_EQ(ta.size(), 3u) << cluster_->dir();
  EXPECT_EQ(tb, ta);  // the same prompt: the same tokens
  // B waited behind A, and heard so from party 0 (whose order is the service order).
  ASSERT_TRUE(b->most_ahead(0).has_value());
  EXPECT_GE(*b->most_ahead(0), 1u);
  const std::string log0 = cluster_->Log("party0");
  EXPECT_LT(log0.find("[session 0a0a000000000001] request from"),
            log0.find("[session 0b0b000000000002] request from"));
  for (int p = 0; p < 3; ++p) {
    const std::string log = cluster_->Log("party" + std::to_string(p));
    EXPECT_EQ(log.find("] failed"), std::string::npos) << "party " << p << ":\n" << log;
  }
}

TEST_F(Queue, ThreeClisAtOnceAllGetTheStoryAndTheWaitingOnesHearTheirPlace) {
  Start();
  std::vector<std::unique_ptr<Process>> clients;
  for (int i = 0; i < 3; ++i) {
    const std::string tag = cluster_->dir() + "/cli" + std::to_string(i);
    clients.push_back(std::make_unique<Process>(
        std::vector<std::string>{MPCACHE_CLIENT_BIN, "generate", "--config",
                                 cluster_->client_config(), "--prompt", "Once upon a time",
                                 "--max-tokens", "12"},
        tag + ".out", tag + ".err"));
  }
  int heard_queued = 0;
  for (int i = 0; i < 3; ++i) {
    const auto code = clients[static_cast<std::size_t>(i)]->Wait(180s);
    const std::string tag = cluster_->dir() + "/cli" + std::to_string(i);
    const std::string err = ReadFile(tag + ".err");
    ASSERT_EQ(code, std::optional<int>(0)) << err;
    EXPECT_TRUE(golden::ContinuesTheGoldenStory(ReadFile(tag + ".out")));
    if (err.find("queued, ") != std::string::npos &&
        err.find("request(s) ahead; waiting for its turn") != std::string::npos) {
      ++heard_queued;
      EXPECT_NE(err.find("its turn came; started"), std::string::npos) << err;
    }
  }
  // Three at once: at least two of them waited, and were told.
  EXPECT_GE(heard_queued, 2);
}

TEST_F(Queue, BeyondTheQueueLimitARequestIsRefusedNamingTheField) {
  ClusterOptions o;
  o.party_yaml = "limits:\n  max_queued_clients: 1\n";
  Start(o);
  // A runs, B waits: the queue is full when C comes.
  ThreeRequests t = RunningWaitingAndOneMore(0x0a00000000000000);
  auto &a = t.a, &b = t.b, &c = t.c;
  const auto errors = c->Errors();
  for (int p = 0; p < 3; ++p) {
    EXPECT_NE(errors[static_cast<std::size_t>(p)].find(
                  "party " + std::to_string(p) +
                  ": 1 requests are queued already (limits.max_queued_clients: 1)"),
              std::string::npos)
        << errors[static_cast<std::size_t>(p)];
  }
  // A finishes, then B — the refusal took nothing from them.
  std::thread a_thread([&] {
    a->SendAll(cp::Encode(a->MaskedPrompt({1, 403})));
    for (std::uint32_t pos = 2; pos <= 4; ++pos) {
      ASSERT_GE(a->ReadTokens(pos), 0);
      a->SendAll(cp::Encode(cp::Continue{a->session(), pos, true}));
    }
  });
  EXPECT_EQ(Finish(*b).size(), 3u);
  a_thread.join();
}

TEST_F(Queue, PerClientLimitAndQueueTimeoutRefuseNamingTheirFields) {
  ClusterOptions o;
  o.party_yaml = "limits:\n  max_queued_per_client: 1\n  queue_timeout_ms: 2500\n";
  Start(o);
  // C: a second waiting request from the same address (127.0.0.1).
  ThreeRequests t = RunningWaitingAndOneMore(0x0a00000000000010);
  auto &a = t.a, &b = t.b, &c = t.c;
  for (const std::string& e : c->Errors()) {
    EXPECT_NE(e.find("1 requests from 127.0.0.1 are queued already "
                     "(limits.max_queued_per_client: 1)"),
              std::string::npos)
        << e;
  }
  // B is still behind A (held before its prompt) when its 2.5 s in the queue are up.
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& e : b->Errors()) {
    EXPECT_NE(e.find("the request waited 2500 ms in the queue without its turn coming "
                     "(limits.queue_timeout_ms)"),
              std::string::npos)
        << e;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  ASSERT_TRUE(b->most_ahead(0).has_value());
  EXPECT_EQ(*b->most_ahead(0), 1u);  // A, running
  // A was not disturbed.
  a->SendAll(cp::Encode(a->MaskedPrompt({1, 403})));
  for (std::uint32_t pos = 2; pos <= 4; ++pos) {
    ASSERT_GE(a->ReadTokens(pos), 0) << "position " << pos;
    a->SendAll(cp::Encode(cp::Continue{a->session(), pos, true}));
  }
}

}  // namespace
}  // namespace mpcache::e2e
