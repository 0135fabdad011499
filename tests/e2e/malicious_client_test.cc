// A malicious client against the real daemons (SPEC §3, §9; issue 10): it speaks the
// client protocol itself (daemon/client_protocol.h over TLS with the client certificate)
// and sends what an honest client never would — oversized messages of every type, a
// request beyond the model's context, prompt rows that are not one-hot, a replayed session
// and a replayed prompt, Continues for the wrong session or position or of the wrong type.
// Each is refused by every party with a clear error, and the daemons serve the next
// request (an honest raw request in the middle, the CLI at the end).
#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>

#include "common/config.h"
#include "daemon/client_protocol.h"
#include "daemon/sync_link.h"
#include "e2e/cluster.h"
#include "e2e/raw_request.h"
#include "net/tls/mesh_config.h"
#include "net/tls/tls_context.h"
#include "preproc/in_process_dealer.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;

void ExpectAllRefuse(RawRequest& r, const std::string& what) {
  const auto errors = r.Errors();
  for (int p = 0; p < 3; ++p) {
    EXPECT_NE(errors[static_cast<std::size_t>(p)].find(what), std::string::npos)
        << "party " << p << ": '" << errors[static_cast<std::size_t>(p)] << "'";
  }
}

class MaliciousClient : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartAll()) << cluster_.dir();
    ASSERT_TRUE(client_.Open(cluster_.client_config()));
  }
  std::unique_ptr<RawRequest> Request(std::uint64_t session) { return client_.Request(session); }
  // Starts a request of prompt {1, 403} (BOS and one token), 4 positions, up to the first
  // released token (position 2).
  std::unique_ptr<RawRequest> UpToFirstToken(std::uint64_t session) {
    auto r = Request(session);
    if (!r->ok()) return r;
    r->Generate(2, 4);
    EXPECT_TRUE(r->ReadSeed(2, 4));
    r->SendAll(cp::Encode(r->MaskedPrompt({1, 403})));
    EXPECT_GE(r->ReadTokens(2), 0);
    return r;
  }

  Cluster cluster_;
  RawClient client_;
};

TEST_F(MaliciousClient, EveryBogusMessageIsRefusedAndTheDaemonsServeOn) {
  std::uint64_t next_session = 0x7e57000000000001;
  {
    SCOPED_TRACE("oversized Generate");
    auto r = Request(next_session++);
    ASSERT_TRUE(r->ok());
    auto bytes = cp::Encode(cp::Generate{r->session(), 2, 4, kVocab});
    bytes.resize(bytes.size() + (std::size_t{1} << 20), 0xee);  // 1 MiB of padding
    r->SendAll(bytes);
    ExpectAllRefuse(*r, "sent a Generate message of more than " +
                            std::to_string(cp::FixedSize<cp::Generate>()) + " bytes");
  }
  {
    SCOPED_TRACE("a Continue instead of a Generate");
    auto r = Request(next_session++);
    ASSERT_TRUE(r->ok());
    r->SendAll(cp::Encode(cp::Continue{r->session(), 2, true}));
    ExpectAllRefuse(*r, "sent a Continue message where Generate was expected");
  }
  {
    SCOPED_TRACE("beyond the context");
    auto r = Request(next_session++);
    ASSERT_TRUE(r->ok());
    r->Generate(2, 100000);
    ExpectAllRefuse(*r, "more than the model's context of 512 positions");
  }
  {
    SCOPED_TRACE("oversized Prompt");
    auto r = Request(next_session++);
    ASSERT_TRUE(r->ok());
    r->Generate(2, 4);
    ASSERT_TRUE(r->ReadSeed(2, 4));
    cp::Prompt p = r->MaskedPrompt({1, 403});
    p.d.resize(p.d.size() + std::size_t{3} * kVocab);  // three rows more than announced
    r->SendAll(cp::Encode(p));
    ExpectAllRefuse(*r, "sent a Prompt message of more than " +
                            std::to_string(17 + 8 * 2 * kVocab) +
                            " bytes (the limit: 8 bytes x "
                            "prompt_len 2");
  }
  {
    SCOPED_TRACE("two ones in prompt row 1");
    auto r = Request(next_session++);
    ASSERT_TRUE(r->ok());
    r->Generate(2, 4);
    ASSERT_TRUE(r->ReadSeed(2, 4));
    r->SendAll(cp::Encode(r->MaskedPrompt({1, 403}, [](auto& x) { x[kVocab + 7] += 1; })));
    ExpectAllRefuse(*r, "the client's input for prompt position 1 is not a one-hot vector");
  }
  // An honest request by hand, to completion (the daemons serve after all of the above).
  const std::uint64_t honest = next_session++;
  std::vector<std::uint8_t> old_prompt;
  {
    SCOPED_TRACE("honest");
    auto r = Request(honest);
    ASSERT_TRUE(r->ok());
    r->Generate(2, 4);
    ASSERT_TRUE(r->ReadSeed(2, 4));
    old_prompt = cp::Encode(r->MaskedPrompt({1, 403}));
    r->SendAll(old_prompt);
    for (std::uint32_t pos = 2; pos <= 4; ++pos) {  // 4 positions release 2, 3 and 4
      ASSERT_GE(r->ReadTokens(pos), 0) << "position " << pos;
      r->SendAll(cp::Encode(cp::Continue{honest, pos, true}));
    }
    for (int p = 0; p < 3; ++p) {
      auto m = r->RecvPastProgress(p);
      ASSERT_TRUE(m.ok());
      EXPECT_EQ(cp::TypeOf(*m), cp::kDone) << "party " << p;
    }
  }
  {
    SCOPED_TRACE("replayed session id");
    auto r = Request(honest);
    ASSERT_TRUE(r->ok());
    r->Generate(2, 4);
    ExpectAllRefuse(*r, "was already used by an earlier request");
  }
  {
    SCOPED_TRACE("replayed prompt, as it was");
    auto r = Request(next_session++);
    ASSERT_TRUE(r->ok());
    r->Generate(2, 4);
    ASSERT_TRUE(r->ReadSeed(2, 4));
    r->SendAll(old_prompt);
    ExpectAllRefuse(*r, "the client's Prompt is for session");
  }
  {
    SCOPED_TRACE("replayed prompt under the new session id: fresh masks, so no one-hots");
    auto r = Request(next_session++);
    ASSERT_TRUE(r->ok());
    r->Generate(2, 4);
    ASSERT_TRUE(r->ReadSeed(2, 4));
    auto replayed = cp::Decode<cp::Prompt>(old_prompt);
    ASSERT_TRUE(replayed.ok());
    replayed->session = r->session();
    r->SendAll(cp::Encode(*replayed));
    ExpectAllRefuse(*r, "is not a one-hot vector");
  }
  struct BadContinue {
    const char* name;
    std::function<std::vector<std::uint8_t>(std::uint64_t session)> message;
    std::string refusal;
  };
  const std::vector<BadContinue> continues{
      {"wrong position",
       [](std::uint64_t s) {
         return cp::Encode(cp::Continue{s, 3, true});
       },
       "the client's Continue is for position 3, but the token just released is position 2"},
      {"wrong session",
       [](std::uint64_t s) {
         return cp::Encode(cp::Continue{s + 1, 2, true});
       },
       "the client's Continue is for session"},
      {"a Prompt instead",
       [](std::uint64_t s) {
         return cp::Encode(cp::Prompt{s, {1, 2, 3}});
       },
       "sent a Prompt message where Continue was expected"},
      {"oversized",
       [](std::uint64_t s) {
         auto b = cp::Encode(cp::Continue{s, 2, true});
         b.resize(64 << 10);
         return b;
       },
       "sent a Continue message of more than " + std::to_string(cp::FixedSize<cp::Continue>()) +
           " bytes"},
  };
  for (const auto& bad : continues) {
    SCOPED_TRACE(bad.name);
    const std::uint64_t s = next_session++;
    auto r = UpToFirstToken(s);
    ASSERT_TRUE(r->ok());
    r->SendAll(bad.message(s));
    ExpectAllRefuse(*r, bad.refusal);
  }
  // The CLI against the same daemons: the golden prefix.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cluster_.party(i)->running()) << "party " << i;
  const std::string out = cluster_.dir() + "/after.out", err = cluster_.dir() + "/after.err";
  Process client({MPCACHE_CLIENT_BIN, "generate", "--config", cluster_.client_config(), "--prompt",
                  "Once upon a time", "--max-tokens", "8"},
                 out, err);
  ASSERT_EQ(client.Wait(120s), 0) << ReadFile(err);
  EXPECT_EQ(ReadFile(out).rfind("Once upon a time, there was", 0), 0u) << ReadFile(out);
}

// Task: a request beyond the model's context comes back at once with the limit named,
// instead of running until timeouts.request_ms.
TEST_F(MaliciousClient, MaxTokensBeyondTheContextIsRefusedWithinSeconds) {
  const std::string out = cluster_.dir() + "/ctx.out", err = cluster_.dir() + "/ctx.err";
  const auto t0 = std::chrono::steady_clock::now();
  Process client({MPCACHE_CLIENT_BIN, "generate", "--config", cluster_.client_config(), "--prompt",
                  "Once upon a time", "--max-tokens", "100000"},
                 out, err);
  const auto code = client.Wait(60s);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  EXPECT_LT(took, 10s);
  const std::string msg = ReadFile(err);
  EXPECT_NE(msg.find("100000 positions"), std::string::npos) << msg;
  EXPECT_NE(msg.find("context of 512 positions (seq_len of"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--max-tokens 512 or less"), std::string::npos) << msg;
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 1) << msg;
}

}  // namespace
}  // namespace mpcache::e2e
