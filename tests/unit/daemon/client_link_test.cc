// The client link's size limits, at the party and at the client: checked while a message
// is reassembled, so an oversized message of every type is refused naming its limit before
// it is kept; a type that is not due is refused too.
#include <gtest/gtest.h>

#include "daemon/client_protocol.h"
#include "daemon/message_limits.h"

namespace mpcache::daemon {
namespace {

namespace cp = client_proto;

// Feeds `payload` as SyncLink would send it (fragments of `fragment` bytes) to an assembler
// with `limits`. The first error, with the number of fragments taken before it.
struct Fed {
  Status status;
  std::size_t fragments_taken = 0;
  std::vector<std::uint8_t> message;
};
Fed Feed(const std::vector<std::uint8_t>& payload, const MessageLimits& limits,
         std::size_t fragment = kFragmentBytes) {
  MessageAssembler a(&limits, std::size_t{1} << 30, "the client at 127.0.0.1:5000");
  Fed f;
  for (const auto& frag : Fragment(payload, fragment)) {
    auto r = a.Add(frag);
    if (!r.ok()) {
      f.status = r.error();
      return f;
    }
    ++f.fragments_taken;
    if (*r) f.message = a.Take();
  }
  return f;
}

std::vector<std::uint8_t> Grow(std::vector<std::uint8_t> b, std::size_t extra) {
  b.resize(b.size() + extra, 0);
  return b;
}

void ExpectRefused(const Fed& f, const std::string& what) {
  ASSERT_FALSE(f.status.ok()) << "accepted";
  EXPECT_EQ(f.status.error().code(), ErrorCode::kProtocol);
  EXPECT_NE(f.status.error().message().find(what), std::string::npos) << f.status.error().message();
  EXPECT_NE(f.status.error().message().find("127.0.0.1:5000"), std::string::npos);
}

TEST(ClientLinkLimits, EveryClientMessageAtItsLimitPassesAndOneByteMoreIsRefused) {
  const std::vector<std::pair<std::vector<std::uint8_t>, MessageLimits>> cases{
      {cp::Encode(cp::Generate{1, 5, 64, 512}), cp::GenerateLimits()},
      {cp::Encode(cp::Prompt{1, std::vector<std::uint64_t>(5 * 512, 7)}),
       cp::PromptLimits(cp::Generate{1, 5, 64, 512})},
      // Sampling: the prompt plus vocab noise values for each of positions 4 .. 63.
      {cp::Encode(cp::Prompt{1, std::vector<std::uint64_t>((5 + 60) * 512, 7)}),
       cp::PromptLimits(cp::Generate{1, 5, 64, 512, 0.9, 0.9, 0})},
      {cp::Encode(cp::Continue{1, 6, true}), cp::ContinueLimits()},
  };
  for (const auto& [bytes, limits] : cases) {
    SCOPED_TRACE(cp::TypeName(bytes[0]));
    const Fed ok = Feed(bytes, limits);
    ASSERT_TRUE(ok.status.ok()) << ok.status.error().ToString();
    EXPECT_EQ(ok.message, bytes);
    ExpectRefused(Feed(Grow(bytes, 1), limits), "sent a " + cp::TypeName(bytes[0]) +
                                                    " message of more than " +
                                                    std::to_string(bytes.size()) + " bytes");
  }
}

// The masked prompt's limit comes from the request (prompt_len) and the model (vocab), and
// the refusal says so; a message far over it is refused at its first fragment, before
// anything beyond the limit is kept.
TEST(ClientLinkLimits, OversizedPromptIsRefusedAtItsFirstFragmentNamingTheLimit) {
  const MessageLimits limits = cp::PromptLimits(cp::Generate{1, 5, 64, 512});
  const auto big = cp::Encode(cp::Prompt{1, std::vector<std::uint64_t>(3 << 20, 1)});  // 24 MiB
  const Fed f = Feed(big, limits);
  ExpectRefused(f, "more than " + std::to_string(17 + 8 * 5 * 512) + " bytes");
  EXPECT_EQ(f.fragments_taken, 0u);
  const std::string& m = f.status.error().message();
  EXPECT_NE(m.find("prompt_len 5"), std::string::npos) << m;
  EXPECT_NE(m.find("model.checkpoint"), std::string::npos) << m;
  // The same bytes dripped in 1-byte fragments: refused once the limit is passed.
  const auto over = Grow(cp::Encode(cp::Prompt{1, std::vector<std::uint64_t>(5 * 512, 1)}), 8);
  const Fed drip = Feed(over, limits, 1);
  ExpectRefused(drip, "Prompt message of more than");
  EXPECT_EQ(drip.fragments_taken, over.size() - 8);
}

TEST(ClientLinkLimits, UnexpectedTypesAndBadFragmentsAreRefused) {
  // A Prompt where a Continue is due, a Generate mid-request, an unknown type, nothing.
  ExpectRefused(Feed(cp::Encode(cp::Prompt{1, {1, 2}}), cp::ContinueLimits()),
                "sent a Prompt message where Continue was expected");
  ExpectRefused(Feed(cp::Encode(cp::Generate{1, 5, 64, 512}), cp::ContinueLimits()),
                "sent a Generate message where Continue was expected");
  ExpectRefused(Feed({99, 1, 2, 3}, cp::GenerateLimits()), "unknown (type 99)");
  ExpectRefused(Feed({}, cp::GenerateLimits()), "where Generate was expected");
  const MessageLimits any = cp::ContinueLimits();
  MessageAssembler a(&any, 1 << 20, "the client");
  EXPECT_FALSE(a.Add({1}).ok());                 // an empty non-final fragment
  EXPECT_FALSE(a.Add({2, cp::kContinue}).ok());  // continuation byte 2
  EXPECT_FALSE(a.Add({}).ok());
}

// Reassembly keeps big fragments as they come and joins them once; a peer that cuts a message
// into the smallest fragments there are (one byte each) gets them appended to one part, not
// a vector per byte; mixed sizes come back in order.
TEST(ClientLinkLimits, TinyFragmentsAreCoalescedAndMixedOnesJoinInOrder) {
  const MessageLimits any = cp::GenerateLimits();
  std::vector<std::uint8_t> payload = cp::Encode(cp::Generate{1, 5, 64, 512});
  {
    MessageAssembler a(&any, std::size_t{1} << 20, "the client");
    const auto frags = Fragment(payload, 1);
    ASSERT_EQ(frags.size(), payload.size());
    for (std::size_t i = 0; i < frags.size(); ++i) {
      auto r = a.Add(frags[i]);
      ASSERT_TRUE(r.ok()) << r.error().ToString();
      EXPECT_EQ(*r, i + 1 == frags.size());
      EXPECT_EQ(a.parts_kept(), 1u);
    }
    EXPECT_EQ(a.Take(), payload);
  }
  // Big and small fragments mixed (a Bits-sized message, no limits): the same bytes back, and
  // one part per big fragment plus the first.
  std::vector<std::uint8_t> big(3 * MessageAssembler::kKeptFragmentBytes + 12345);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 131 + 7);
  MessageAssembler a(nullptr, std::size_t{1} << 30, "the dealer");
  std::size_t at = 0, kept = 0;
  for (const std::size_t n :
       {std::size_t{3}, MessageAssembler::kKeptFragmentBytes + 1, std::size_t{5}, std::size_t{7},
        2 * MessageAssembler::kKeptFragmentBytes, std::size_t{12345 - 16 - 1}, std::size_t{1}}) {
    ASSERT_LE(at + n, big.size());
    std::vector<std::uint8_t> f{static_cast<std::uint8_t>(at + n < big.size() ? 1 : 0)};
    f.insert(f.end(), big.begin() + static_cast<std::ptrdiff_t>(at),
             big.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    if (n >= MessageAssembler::kKeptFragmentBytes || kept == 0) ++kept;
    auto r = a.Add(std::move(f));
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(a.parts_kept(), kept);
  }
  ASSERT_EQ(at, big.size());
  EXPECT_EQ(a.Take(), big);
}

// The client's side: what a party may send it.
TEST(ClientLinkLimits, EveryPartyMessageAtItsLimitPassesAndOneByteMoreIsRefused) {
  const MessageLimits limits = cp::PartyMessageLimits();
  cp::ErrorMsg longest{1, 0, 2, std::string(cp::kMaxErrorText, 'x')};
  const std::vector<std::vector<std::uint8_t>> all{
      cp::Encode(cp::SeedShare{}), cp::Encode(cp::Progress{1, 3}),
      cp::Encode(cp::Token{1, 5, 5, 77}), cp::Encode(cp::Done{}), cp::Encode(longest)};
  for (const auto& bytes : all) {
    SCOPED_TRACE(cp::TypeName(bytes[0]));
    ASSERT_TRUE(Feed(bytes, limits).status.ok());
    ExpectRefused(Feed(Grow(bytes, 1), limits), "message of more than");
  }
  ExpectRefused(Feed(cp::Encode(cp::Continue{}), limits), "sent a Continue message where");
}

}  // namespace
}  // namespace mpcache::daemon
