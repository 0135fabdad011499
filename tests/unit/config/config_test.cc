// Config loading: the shipped config/*.yaml load; every bad field gives one error that
// names the file, the field and the fix; unknown keys are rejected with a did-you-mean.
#include "common/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace mpcache::config {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const fs::path kConfigDir = fs::path(MPCACHE_SOURCE_DIR) / "config";
const LoadOptions kNoFiles{.check_files = false};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "mpcache-config-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(Config, ShippedConfigsLoad) {
  for (int i = 0; i < 3; ++i) {
    const auto file = (kConfigDir / ("party" + std::to_string(i) + ".yaml")).string();
    auto c = LoadPartyConfig(file, kNoFiles);
    ASSERT_TRUE(c.ok()) << c.error().ToString();
    EXPECT_EQ(c->party_id, i);
    ASSERT_EQ(c->parties.size(), 3u);
    EXPECT_EQ(c->parties[1].ToString(), "127.0.0.1:7101");
    EXPECT_EQ(c->security, Security::kMalicious);
    EXPECT_EQ(c->mpcache.reveal, Reveal::kNone);
    EXPECT_EQ(c->mpcache.level1_cluster_tokens, 32);
    EXPECT_DOUBLE_EQ(c->mpcache.alpha, 0.6);
    EXPECT_FALSE(c->mpcache.sigmoid_eviction);
    EXPECT_DOUBLE_EQ(c->mpcache.impact_weight, 0.0);
    EXPECT_DOUBLE_EQ(c->mpcache.layer_share_decay, 0.9);
    EXPECT_EQ(c->metrics_port, 9100 + i);
    // Relative paths are anchored at the YAML's folder.
    EXPECT_EQ(fs::path(c->tls.cert),
              (kConfigDir / ".." / "build" / "certs" / ("party" + std::to_string(i) + ".crt"))
                  .lexically_normal());
  }
  auto d = LoadDealerConfig((kConfigDir / "dealer.yaml").string(), kNoFiles);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  EXPECT_EQ(d->listen.port, 7200);
  EXPECT_EQ(d->pool_max_matrix_elements, 268435456u);
  EXPECT_EQ(d->pool_threads, 2);
  auto cl = LoadClientConfig((kConfigDir / "client.yaml").string(), kNoFiles);
  ASSERT_TRUE(cl.ok()) << cl.error().ToString();
  EXPECT_EQ(cl->parties[2].port, 7112);
}

TEST(Config, ShippedConfigsLoadWithTheirFilesPresent) {
  const char* models = std::getenv("MPCACHE_MODEL_DIR");
  if (models == nullptr || !fs::exists(fs::path(models) / "stories260K.bin")) {
    GTEST_SKIP() << "MPCACHE_MODEL_DIR with stories260K.bin not available";
  }
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  fs::create_directories(tmp.path() / "config");
  for (const char* f :
       {"party0.yaml", "party1.yaml", "party2.yaml", "dealer.yaml", "client.yaml"}) {
    fs::copy_file(kConfigDir / f, tmp.path() / "config" / f);
  }
  const std::string cmd = std::string(MPCACHE_GEN_CERTS) + " '" +
                          (tmp.path() / "build" / "certs").string() + "' 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (int i = 0; i < 3; ++i) {
    auto c = LoadPartyConfig((tmp.path() / "config" / ("party" + std::to_string(i) + ".yaml")));
    EXPECT_TRUE(c.ok()) << c.error().ToString();
  }
  auto d = LoadDealerConfig((tmp.path() / "config" / "dealer.yaml").string());
  EXPECT_TRUE(d.ok()) << d.error().ToString();
  auto cl = LoadClientConfig((tmp.path() / "config" / "client.yaml").string());
  EXPECT_TRUE(cl.ok()) << cl.error().ToString();
}

struct BadField {
  std::string from;   // text in the shipped party0.yaml...
  std::string to;     // ...replaced by this
  std::string field;  // the field the error must name
  std::string fix;    // a piece of the fix it must give
};

class PartyConfigBadField : public ::testing::TestWithParam<BadField> {};

TEST_P(PartyConfigBadField, ErrorNamesFileFieldAndFix) {
  const auto& p = GetParam();
  std::string text = ReadText(kConfigDir / "party0.yaml");
  const auto at = text.find(p.from);
  ASSERT_NE(at, std::string::npos) << p.from;
  text.replace(at, p.from.size(), p.to);
  const std::string file = (kConfigDir / "party0.yaml").string();
  auto c = ParsePartyConfig(text, file, kNoFiles);
  ASSERT_FALSE(c.ok()) << "accepted: " << p.to;
  const std::string& m = c.error().message();
  EXPECT_EQ(c.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find(file), std::string::npos) << m;
  EXPECT_NE(m.find(p.field), std::string::npos) << m;
  EXPECT_NE(m.find(p.fix), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, PartyConfigBadField,
    ::testing::Values(
        BadField{"party_id: 0", "party_id: 3", "field 'party_id'",
                 "fix: write a whole number in 0..2"},
        BadField{"party_id: 0\n", "", "field 'party_id': missing", "fix:"},
        // A misspelt required key: named with the key it probably is (issue 20).
        BadField{"party_id: 0", "partyid: 0",
                 "field 'party_id': missing (the file has 'partyid': did you mean 'party_id'?)",
                 "fix:"},
        BadField{"security: malicious", "security: paranoid", "field 'security'",
                 "malicious | semi-honest"},
        BadField{"security: malicious", "security: malicous", "did you mean 'malicious'",
                 "malicious | semi-honest"},
        BadField{"weights: public", "weights: secret", "field 'weights'", "public | private"},
        BadField{"debug: false", "debug: maybe", "field 'debug'", "true or false"},
        BadField{"[127.0.0.1:7100, 127.0.0.1:7101, 127.0.0.1:7102]",
                 "[127.0.0.1:7100, 127.0.0.1:7101]", "field 'network.parties'", "party-id order"},
        BadField{"127.0.0.1:7101, 127.0.0.1:7102]", "127.0.0.1:7101, 127.0.0.1:7101]",
                 "field 'network.parties[2]'", "its own port"},
        BadField{"127.0.0.1:7102]", "127.0.0.1:99999]", "field 'network.parties[2]'", "host:port"},
        BadField{"dealer: 127.0.0.1:7200", "dealer: 127.0.0.1", "field 'network.dealer'",
                 "host:port"},
        BadField{"client_listen: 127.0.0.1:7110", "client_listen: 127.0.0.1:7100",
                 "field 'network.client_listen'", "own port"},
        BadField{"max_frame_bytes: 16777216", "max_frame_bytes: 12", "network.max_frame_bytes",
                 "4096.."},
        BadField{"recv_ms: 30000", "recv_ms: soon", "field 'timeouts.recv_ms'", "whole number"},
        BadField{"connect_ms: 10000", "connect_ms: 0", "field 'timeouts.connect_ms'", "1.."},
        BadField{"  cert: ../build/certs/party0.crt\n", "", "field 'tls.cert': missing",
                 "gen-certs.sh"},
        BadField{"frac_bits: 18", "frac_bits: 40", "field 'model.frac_bits'", "8..30"},
        BadField{"threads: 1 ", "threads: 0 ", "field 'model.threads'", "1..256"},
        BadField{"cache: full", "cache: half", "field 'mpcache.cache'", "full | mpcache"},
        BadField{"alpha: 0.6", "alpha: 1.5", "field 'mpcache.alpha'", "[0, 1]"},
        BadField{"level1_keep_ratio: 0.5", "level1_keep_ratio: 0", "mpcache.level1_keep_ratio",
                 "(0, 1]"},
        BadField{"level2_cluster_tokens: 16", "level2_cluster_tokens: 10",
                 "field 'mpcache.level2_cluster_tokens'", "divisor"},
        BadField{"eviction_score: softmax", "eviction_score: tanh",
                 "field 'mpcache.eviction_score'", "softmax | sigmoid"},
        BadField{"impact_weight: 0", "impact_weight: -1", "field 'mpcache.impact_weight'",
                 "[0, 16]"},
        BadField{"layer_share_decay: 0.9", "layer_share_decay: 1.2",
                 "field 'mpcache.layer_share_decay'", "[0, 1]"},
        BadField{"reveal: none", "reveal: plain", "field 'mpcache.reveal'", "debug: true"},
        BadField{"reveal: none", "reveal: all", "field 'mpcache.reveal'", "none | dp | plain"},
        BadField{"max_queued_clients: 16", "max_queued_clients: 0",
                 "field 'limits.max_queued_clients'", "1..4096"},
        BadField{"max_queued_per_client: 4", "max_queued_per_client: 5000",
                 "field 'limits.max_queued_per_client'", "1..4096"},
        BadField{"queue_timeout_ms: 600000", "queue_timeout_ms: later",
                 "field 'limits.queue_timeout_ms'", "whole number"},
        BadField{"reauction_interval_steps: 8", "reauction_interval_steps: -1",
                 "field 'balancer.reauction_interval_steps'", "whole number"},
        BadField{"level: info", "level: loud", "field 'logging.level'", "trace | debug"},
        BadField{"port: 9100", "port: 70000", "field 'metrics.port'", "0..65535"},
        BadField{"  alpha: 0.6", "  alpah: 0.6", "unknown field 'mpcache.alpah'",
                 "did you mean 'alpha'"},
        BadField{"balancer:", "colour: red\nbalancer:", "unknown field 'colour'", "fields here"},
        BadField{"balancer:                    # who does the asymmetric work (docs/balancer.md); "
                 "same at all 3\n  enabled: false             # true: sealed-bid auctions of the "
                 "dealer-correction role\n  reauction_interval_steps: 8  # decoding positions "
                 "between auctions\n  max_spread: 0.15           # the auction keeps the parties' "
                 "loads within this fraction\n  bid_timeout_ms: 10000      # the longest wait "
                 "for a peer's bids\n  static_corrector: 2        # off (and before the first "
                 "auction): who gets the corrections\n  static_king: none          # none "
                 "(all-to-all openings) | 0 | 1 | 2 | split\n",
                 "balancer: 8\n", "field 'balancer'", "indent"},
        BadField{"static_corrector: 2", "static_corrector: 3", "field 'balancer.static_corrector'",
                 "0..2"},
        BadField{"static_king: none", "static_king: 4", "field 'balancer.static_king'",
                 "none | 0 | 1 | 2"},
        BadField{"max_spread: 0.15", "max_spread: 1.5", "field 'balancer.max_spread'", "[0, 1]"},
        BadField{"bid_timeout_ms: 10000", "bid_timeout_ms: 0", "field 'balancer.bid_timeout_ms'",
                 "1..86400000"},
        BadField{"  enabled: false             # true: sealed", "  enabled: yes  # true: sealed",
                 "field 'balancer.enabled'", "true or false"},
        BadField{"rank_round_cost: 4096", "rank_round_cost: -1", "field 'kernels.rank_round_cost'",
                 "0..16777216"},
        BadField{"argmax_round_cost: 1024", "argmax_round_cost: 99999999",
                 "field 'kernels.argmax_round_cost'", "0..16777216"},
        BadField{"silu_round_cost: 1024", "silu_round_cost: cheap",
                 "field 'kernels.silu_round_cost'", "whole number"},
        BadField{"  silu_round_cost: 1024", "  silu_cost: 1024",
                 "unknown field 'kernels.silu_cost'",
                 "fields here: argmax_round_cost, rank_round_cost, silu_round_cost"},
        BadField{"network:\n", "network: [\n", "not valid YAML", "fix: check the indentation"},
        BadField{"stories260K.bin", "${MPCACHE_SURELY_UNSET_VAR}/x.bin", "model.checkpoint",
                 "set MPCACHE_SURELY_UNSET_VAR"}));

TEST(Config, SplitKingsAreAStaticKing) {
  std::string text = ReadText(kConfigDir / "party0.yaml");
  text.replace(text.find("static_king: none"), 17, "static_king: split");
  auto c = ParsePartyConfig(text, "party0.yaml", kNoFiles);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->balancer.static_king, -2);  // mpc::kSplitKing
}

// The kernels' prices: the shipped values are FixedMathParams' defaults (what the in-process
// tools run with), and a LAN's cheap rounds are read as given; a config without the section
// gets the defaults.
TEST(Config, KernelPrices) {
  std::string text = ReadText(kConfigDir / "party0.yaml");
  auto shipped = ParsePartyConfig(text, "party0.yaml", kNoFiles);
  ASSERT_TRUE(shipped.ok()) << shipped.error().ToString();
  const FixedMathParams d;
  EXPECT_EQ(shipped->kernels.rank_round_cost, d.rank_round_cost);
  EXPECT_EQ(shipped->kernels.argmax_round_cost, d.argmax_round_cost);
  EXPECT_EQ(shipped->kernels.silu_round_cost, d.silu_round_cost);
  text.replace(text.find("rank_round_cost: 4096"), 21, "rank_round_cost: 64");
  text.replace(text.find("argmax_round_cost: 1024"), 23, "argmax_round_cost: 0");
  text.replace(text.find("silu_round_cost: 1024"), 21, "silu_round_cost: 16777216");
  auto lan = ParsePartyConfig(text, "party0.yaml", kNoFiles);
  ASSERT_TRUE(lan.ok()) << lan.error().ToString();
  EXPECT_EQ(lan->kernels, (KernelPrices{64, 0, 16777216}));
  const auto at = text.find("kernels:");
  text.erase(at, text.find("\n\n", at) - at);
  auto none = ParsePartyConfig(text, "party0.yaml", kNoFiles);
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_EQ(none->kernels, KernelPrices{});
}

TEST(Config, PlainRevealAllowedInDebug) {
  std::string text = ReadText(kConfigDir / "party0.yaml");
  text.replace(text.find("reveal: none"), 12, "reveal: plain");
  text.replace(text.find("debug: false"), 12, "debug: true");
  auto c = ParsePartyConfig(text, "party0.yaml", kNoFiles);
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->mpcache.reveal, Reveal::kPlain);
}

TEST(Config, MissingFilesAreNamedWhenChecked) {
  const std::string file = (kConfigDir / "party1.yaml").string();
  std::string text = ReadText(file);
  text.replace(text.find("${MPCACHE_MODEL_DIR:-../../shared/models}/stories260K.bin"),
               std::string("${MPCACHE_MODEL_DIR:-../../shared/models}/stories260K.bin").size(),
               "/nonexistent/model.bin");
  text.replace(text.find("../build/certs/party1.crt"), 25, "/nonexistent/party1.crt");
  auto c = ParsePartyConfig(text, file, LoadOptions{});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("field 'tls.cert'"), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("/nonexistent/party1.crt"), std::string::npos);
  EXPECT_NE(c.error().message().find("gen-certs.sh"), std::string::npos);
}

TEST(Config, DealerAndClientValidation) {
  std::string d = ReadText(kConfigDir / "dealer.yaml");
  d.replace(d.find("batch_items: 65536"), 18, "batch_items: 99999999");
  auto dc = ParseDealerConfig(d, "dealer.yaml", kNoFiles);
  ASSERT_FALSE(dc.ok());
  EXPECT_NE(dc.error().message().find("field 'pool.batch_items'"), std::string::npos)
      << dc.error().message();
  d = ReadText(kConfigDir / "dealer.yaml");
  d.replace(d.find("max_matrix_elements: 268435456"), 30, "max_matrix_elements: 0");
  dc = ParseDealerConfig(d, "dealer.yaml", kNoFiles);
  ASSERT_FALSE(dc.ok());
  EXPECT_NE(dc.error().message().find("field 'pool.max_matrix_elements'"), std::string::npos)
      << dc.error().message();
  d = ReadText(kConfigDir / "dealer.yaml");
  d.replace(d.find("threads: 2"), 10, "threads: 65");
  dc = ParseDealerConfig(d, "dealer.yaml", kNoFiles);
  ASSERT_FALSE(dc.ok());
  EXPECT_NE(dc.error().message().find("field 'pool.threads'"), std::string::npos)
      << dc.error().message();
  d = ReadText(kConfigDir / "dealer.yaml");
  d.replace(d.find("max_sessions: 8"), 15, "max_sessions: 0");
  dc = ParseDealerConfig(d, "dealer.yaml", kNoFiles);
  ASSERT_FALSE(dc.ok());
  EXPECT_NE(dc.error().message().find("field 'limits.max_sessions'"), std::string::npos)
      << dc.error().message();
  // The dealer does not use frac_bits (truncation shifts come with each request): the shipped
  // file has none; an old file's is range-checked and listed as unused (warned at start).
  d = ReadText(kConfigDir / "dealer.yaml");
  EXPECT_EQ(d.find("frac_bits"), std::string::npos) << d;
  dc = ParseDealerConfig(d, "dealer.yaml", kNoFiles);
  ASSERT_TRUE(dc.ok()) << dc.error().ToString();
  EXPECT_TRUE(dc->unused_fields.empty());
  dc = ParseDealerConfig("frac_bits: 16\n" + d, "dealer.yaml", kNoFiles);
  ASSERT_TRUE(dc.ok()) << dc.error().ToString();
  EXPECT_EQ(dc->unused_fields, std::vector<std::string>{"frac_bits"});
  dc = ParseDealerConfig("frac_bits: 99\n" + d, "dealer.yaml", kNoFiles);
  ASSERT_FALSE(dc.ok());
  EXPECT_NE(dc.error().message().find("field 'frac_bits'"), std::string::npos)
      << dc.error().message();
  std::string c = ReadText(kConfigDir / "client.yaml");
  c.replace(c.find("network:"), 8, "netwrk:");
  auto cc = ParseClientConfig(c, "client.yaml", kNoFiles);
  ASSERT_FALSE(cc.ok());
  EXPECT_NE(cc.error().message().find("client.yaml"), std::string::npos);
  EXPECT_NE(cc.error().message().find("network.parties"), std::string::npos)
      << cc.error().message();
  auto missing = LoadClientConfig("/nonexistent/client.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(Config, ParseHostPort) {
  auto a = ParseHostPort("127.0.0.1:7100");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7100);
  auto b = ParseHostPort("[::1]:80");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_TRUE(ParseHostPort("localhost:0", true).ok());
  for (const char* bad : {"", "host", ":80", "host:", "host:0", "host:65536", "::1:80", "h:8x"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace mpcache::config
