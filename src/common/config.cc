#include "common/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <set>

#include "common/config_section.h"

namespace mpcache::config {
namespace {

using detail::Context;
using detail::MakeContext;
using detail::ParseYaml;
using detail::ReadFile;
using detail::Section;

Result<MpcacheKnobs> ReadMpcache(Section& top, bool debug) {
  MPCACHE_ASSIGN_OR_RETURN(auto s, top.Sub("mpcache"));
  MpcacheKnobs k;
  MPCACHE_ASSIGN_OR_RETURN(auto cache, s.Choice("cache", {"full", "mpcache"}, 0));
  k.cache = cache == 0 ? CacheMode::kFull : CacheMode::kMpcache;
  MPCACHE_ASSIGN_OR_RETURN(k.static_keep_ratio,
                           s.Real("static_keep_ratio", k.static_keep_ratio, 0, 1, true));
  MPCACHE_ASSIGN_OR_RETURN(k.observation_window,
                           s.Real("observation_window", k.observation_window, 0, 1, true));
  MPCACHE_ASSIGN_OR_RETURN(k.impact_weight, s.Real("impact_weight", k.impact_weight, 0, 16, false));
  MPCACHE_ASSIGN_OR_RETURN(auto eviction_score,
                           s.Choice("eviction_score", {"softmax", "sigmoid"}, 0));
  k.sigmoid_eviction = eviction_score == 1;
  MPCACHE_ASSIGN_OR_RETURN(auto l1, s.Int("level1_cluster_tokens", 32, 1, 4096));
  MPCACHE_ASSIGN_OR_RETURN(k.level1_keep_ratio,
                           s.Real("level1_keep_ratio", k.level1_keep_ratio, 0, 1, true));
  MPCACHE_ASSIGN_OR_RETURN(auto l2, s.Int("level2_cluster_tokens", 16, 1, 4096));
  MPCACHE_ASSIGN_OR_RETURN(k.level2_keep_ratio,
                           s.Real("level2_keep_ratio", k.level2_keep_ratio, 0, 1, true));
  MPCACHE_ASSIGN_OR_RETURN(k.alpha, s.Real("alpha", k.alpha, 0, 1, false));
  MPCACHE_ASSIGN_OR_RETURN(auto rep, s.Choice("representative", {"minmax", "mean"}, 0));
  k.mean_representative = rep == 1;
  MPCACHE_ASSIGN_OR_RETURN(k.share_layers, s.Bool("share_layers", false));
  MPCACHE_ASSIGN_OR_RETURN(k.residual_path, s.Bool("residual_path", false));
  MPCACHE_ASSIGN_OR_RETURN(k.layer_share_decay,
                           s.Real("layer_share_decay", k.layer_share_decay, 0, 1, false));
  MPCACHE_ASSIGN_OR_RETURN(auto reveal, s.Choice("reveal", {"none", "dp", "plain"}, 0));
  k.reveal = static_cast<Reveal>(reveal);
  MPCACHE_ASSIGN_OR_RETURN(k.dp_epsilon, s.Real("dp_epsilon", k.dp_epsilon, 0, 1000, true));
  MPCACHE_ASSIGN_OR_RETURN(k.dp_sensitivity,
                           s.Real("dp_sensitivity", k.dp_sensitivity, 0, 1e9, true));
  MPCACHE_RETURN_IF_ERROR(s.Finish());
  if (l1 % l2 != 0) {
    return s.Fail(
        "level2_cluster_tokens",
        std::to_string(l2) + " does not divide level1_cluster_tokens " + std::to_string(l1),
        "pick a divisor of level1_cluster_tokens, e.g. " + std::to_string(l1 / 2));
  }
  if (k.reveal == Reveal::kPlain && !debug) {
    return s.Fail("reveal",
                  "'plain' shows every party which tokens were selected and is for debugging "
                  "only",
                  "use none (default) or dp, or set debug: true on a test deployment");
  }
  k.level1_cluster_tokens = static_cast<int>(l1);
  k.level2_cluster_tokens = static_cast<int>(l2);
  return k;
}

}  // namespace

Result<HostPort> ParseHostPort(std::string_view text, bool allow_zero) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return InvalidArgument("'" + std::string(text) + "' is not host:port");
  }
  std::string host(text.substr(0, colon));
  if (host.front() == '[') {
    if (host.back() != ']') return InvalidArgument("'" + std::string(text) + "': unclosed '['");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return InvalidArgument("'" + std::string(text) + "': write IPv6 hosts as [addr]:port");
  }
  const auto port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535 ||
      (port == 0 && !allow_zero)) {
    return InvalidArgument("port '" + std::string(port_text) + "' is not in 1..65535");
  }
  return HostPort{host, static_cast<std::uint16_t>(port)};
}

std::string_view ToString(Security s) {
  return s == Security::kMalicious ? "malicious" : "semi-honest";
}
std::string_view ToString(Weights w) {
  return w == Weights::kPublic ? "public" : "private";
}
std::string_view ToString(CacheMode c) {
  return c == CacheMode::kFull ? "full" : "mpcache";
}
std::string_view ToString(Reveal r) {
  return r == Reveal::kNone ? "none" : r == Reveal::kDp ? "dp" : "plain";
}

Result<MpcacheKnobs> ParseMpcacheFragment(std::string_view yaml, const std::string& file,
                                          const LoadOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(auto root, ParseYaml(yaml, file));
  const Context ctx = MakeContext(file, options);
  Section top(ctx, root, "");
  MPCACHE_ASSIGN_OR_RETURN(MpcacheKnobs k, ReadMpcache(top, false));
  MPCACHE_RETURN_IF_ERROR(top.Finish());
  return k;
}

Result<PartyConfig> ParsePartyConfig(std::string_view yaml, const std::string& file,
                                     const LoadOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(auto root, ParseYaml(yaml, file));
  const Context ctx = MakeContext(file, options);
  Section top(ctx, root, "");
  PartyConfig c;
  c.file = file;
  MPCACHE_ASSIGN_OR_RETURN(auto id, top.Int("party_id", 0, 0, kNumParties - 1, true));
  c.party_id = static_cast<int>(id);
  MPCACHE_ASSIGN_OR_RETURN(auto sec, top.Choice("security", {"malicious", "semi-honest"}, 0));
  c.security = static_cast<Security>(sec);
  MPCACHE_ASSIGN_OR_RETURN(auto w, top.Choice("weights", {"public", "private"}, 0));
  c.weights = static_cast<Weights>(w);
  MPCACHE_ASSIGN_OR_RETURN(c.debug, top.Bool("debug", false));
  {
    MPCACHE_ASSIGN_OR_RETURN(auto net, top.Sub("network"));
    MPCACHE_ASSIGN_OR_RETURN(c.parties, net.PartyAddresses("parties", 7100));
    MPCACHE_ASSIGN_OR_RETURN(c.dealer, net.Address("dealer", true, "127.0.0.1:7200"));
    MPCACHE_ASSIGN_OR_RETURN(c.client_listen, net.Address("client_listen", true, "127.0.0.1:7110"));
    MPCACHE_ASSIGN_OR_RETURN(auto mf, net.Int("max_frame_bytes", 16 << 20, 4096, 1 << 30));
    c.max_frame_bytes = static_cast<std::uint64_t>(mf);
    MPCACHE_RETURN_IF_ERROR(net.Finish());
    if (c.client_listen.ToString() == c.parties[static_cast<std::size_t>(id)].ToString()) {
      return net.Fail("client_listen", "is the same address as this party's mesh address",
                      "give clients their own port");
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(c.timeouts, top.ReadTimeouts());
  MPCACHE_ASSIGN_OR_RETURN(c.tls, top.Tls("party" + std::to_string(id)));
  {
    MPCACHE_ASSIGN_OR_RETURN(auto m, top.Sub("model"));
    const std::string fix = "point it at a llama2.c .bin or .gguf file (see MPCACHE_MODEL_DIR)";
    MPCACHE_ASSIGN_OR_RETURN(c.model.checkpoint, m.Path("checkpoint", true, fix));
    MPCACHE_ASSIGN_OR_RETURN(c.model.tokenizer, m.Path("tokenizer", false, fix));
    MPCACHE_ASSIGN_OR_RETURN(auto fb, m.Int("frac_bits", 18, 8, 30));
    c.model.frac_bits = static_cast<int>(fb);
    MPCACHE_ASSIGN_OR_RETURN(auto th, m.Int("threads", 1, 1, 256));
    c.model.threads = static_cast<int>(th);
    MPCACHE_RETURN_IF_ERROR(m.Finish());
  }
  MPCACHE_ASSIGN_OR_RETURN(c.mpcache, ReadMpcache(top, c.debug));
  {
    MPCACHE_ASSIGN_OR_RETURN(auto l, top.Sub("limits"));
    MPCACHE_ASSIGN_OR_RETURN(auto q, l.Int("max_queued_clients", 16, 1, 4096));
    MPCACHE_ASSIGN_OR_RETURN(auto pc, l.Int("max_queued_per_client", 4, 1, 4096));
    MPCACHE_ASSIGN_OR_RETURN(auto qt, l.Int("queue_timeout_ms", 600000, 1, 86400000));
    MPCACHE_RETURN_IF_ERROR(l.Finish());
    c.limits = {static_cast<int>(q), static_cast<int>(pc), static_cast<int>(qt)};
  }
  {
    MPCACHE_ASSIGN_OR_RETURN(auto b, top.Sub("balancer"));
    MPCACHE_ASSIGN_OR_RETURN(c.balancer.enabled, b.Bool("enabled", false));
    MPCACHE_ASSIGN_OR_RETURN(auto ri, b.Int("reauction_interval_steps", 8, 1, 1000000));
    c.balancer.reauction_interval_steps = static_cast<int>(ri);
    MPCACHE_ASSIGN_OR_RETURN(c.balancer.max_spread, b.Real("max_spread", 0.15, 0, 1, false));
    MPCACHE_ASSIGN_OR_RETURN(auto bt, b.Int("bid_timeout_ms", 10000, 1, 86400000));
    c.balancer.bid_timeout_ms = static_cast<int>(bt);
    MPCACHE_ASSIGN_OR_RETURN(auto sc, b.Int("static_corrector", 2, 0, 2));
    c.balancer.static_corrector = static_cast<int>(sc);
    MPCACHE_ASSIGN_OR_RETURN(auto sk, b.Choice("static_king", {"none", "0", "1", "2", "split"}, 0));
    c.balancer.static_king = sk == 4 ? -2 : sk - 1;
    MPCACHE_RETURN_IF_ERROR(b.Finish());
  }
  {
    MPCACHE_ASSIGN_OR_RETURN(auto k, top.Sub("kernels"));
    const KernelPrices d;
    for (const KernelPriceField& f : kKernelPriceFields) {
      MPCACHE_ASSIGN_OR_RETURN(auto price, k.Int(f.key, d.*f.price, 0, kMaxRoundCost));
      c.kernels.*f.price = static_cast<int>(price);
    }
    MPCACHE_RETURN_IF_ERROR(k.Finish());
  }
  MPCACHE_ASSIGN_OR_RETURN(c.log_level, top.LogLevel("info"));
  MPCACHE_ASSIGN_OR_RETURN(c.metrics_port, top.MetricsPort());
  MPCACHE_RETURN_IF_ERROR(top.Finish());
  return c;
}

Result<DealerConfig> ParseDealerConfig(std::string_view yaml, const std::string& file,
                                       const LoadOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(auto root, ParseYaml(yaml, file));
  const Context ctx = MakeContext(file, options);
  Section top(ctx, root, "");
  DealerConfig c;
  c.file = file;
  MPCACHE_ASSIGN_OR_RETURN(auto sec, top.Choice("security", {"malicious", "semi-honest"}, 0));
  c.security = static_cast<Security>(sec);
  // Older dealer.yaml files carry frac_bits: still checked, never used (a truncation pair's
  // shift comes with each party's request), and named at start so that it is removed.
  if (top.Has("frac_bits")) {
    if (auto fb = top.Int("frac_bits", 18, 8, 30); !fb.ok()) return fb.error();
    c.unused_fields.emplace_back("frac_bits");
  }
  {
    MPCACHE_ASSIGN_OR_RETURN(auto net, top.Sub("network"));
    MPCACHE_ASSIGN_OR_RETURN(c.listen, net.Address("listen", true, "127.0.0.1:7200"));
    MPCACHE_ASSIGN_OR_RETURN(auto mf, net.Int("max_frame_bytes", 16 << 20, 4096, 1 << 30));
    c.max_frame_bytes = static_cast<std::uint64_t>(mf);
    MPCACHE_RETURN_IF_ERROR(net.Finish());
  }
  {
    MPCACHE_ASSIGN_OR_RETURN(auto p, top.Sub("pool"));
    MPCACHE_ASSIGN_OR_RETURN(auto cap, p.Int("capacity_items", 1 << 22, 64, std::int64_t{1} << 40));
    MPCACHE_ASSIGN_OR_RETURN(auto batch, p.Int("batch_items", 1 << 16, 64, std::int64_t{1} << 32));
    MPCACHE_ASSIGN_OR_RETURN(auto matrix,
                             p.Int("max_matrix_elements", 1 << 28, 1, std::int64_t{1} << 31));
    MPCACHE_ASSIGN_OR_RETURN(auto threads, p.Int("threads", 2, 1, 64));
    MPCACHE_RETURN_IF_ERROR(p.Finish());
    if (batch > cap) {
      return p.Fail("batch_items", "is larger than pool.capacity_items",
                    "make batch_items at most capacity_items");
    }
    c.pool_capacity_items = static_cast<std::uint64_t>(cap);
    c.batch_items = static_cast<std::uint64_t>(batch);
    c.pool_max_matrix_elements = static_cast<std::uint64_t>(matrix);
    c.pool_threads = static_cast<int>(threads);
  }
  MPCACHE_ASSIGN_OR_RETURN(c.timeouts, top.ReadTimeouts());
  {
    MPCACHE_ASSIGN_OR_RETURN(auto l, top.Sub("limits"));
    MPCACHE_ASSIGN_OR_RETURN(auto ms, l.Int("max_sessions", 8, 1, 1024));
    MPCACHE_RETURN_IF_ERROR(l.Finish());
    c.max_sessions = static_cast<int>(ms);
  }
  MPCACHE_ASSIGN_OR_RETURN(c.tls, top.Tls("dealer"));
  MPCACHE_ASSIGN_OR_RETURN(c.log_level, top.LogLevel("info"));
  MPCACHE_ASSIGN_OR_RETURN(c.metrics_port, top.MetricsPort());
  MPCACHE_RETURN_IF_ERROR(top.Finish());
  return c;
}

Result<ClientConfig> ParseClientConfig(std::string_view yaml, const std::string& file,
                                       const LoadOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(auto root, ParseYaml(yaml, file));
  const Context ctx = MakeContext(file, options);
  Section top(ctx, root, "");
  ClientConfig c;
  c.file = file;
  {
    MPCACHE_ASSIGN_OR_RETURN(auto net, top.Sub("network"));
    MPCACHE_ASSIGN_OR_RETURN(c.parties, net.PartyAddresses("parties", 7110));
    MPCACHE_RETURN_IF_ERROR(net.Finish());
  }
  MPCACHE_ASSIGN_OR_RETURN(c.timeouts, top.ReadTimeouts());
  MPCACHE_ASSIGN_OR_RETURN(c.tls, top.Tls("client"));
  {
    MPCACHE_ASSIGN_OR_RETURN(auto m, top.Sub("model"));
    MPCACHE_ASSIGN_OR_RETURN(
        c.tokenizer, m.Path("tokenizer", true, "point it at the model's llama2.c tokenizer"));
    MPCACHE_RETURN_IF_ERROR(m.Finish());
  }
  MPCACHE_ASSIGN_OR_RETURN(c.log_level, top.LogLevel("warn"));
  MPCACHE_RETURN_IF_ERROR(top.Finish());
  return c;
}

Result<PartyConfig> LoadPartyConfig(const std::string& path, const LoadOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(auto text, ReadFile(path));
  return ParsePartyConfig(text, path, options);
}

Result<DealerConfig> LoadDealerConfig(const std::string& path, const LoadOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(auto text, ReadFile(path));
  return ParseDealerConfig(text, path, options);
}

Result<ClientConfig> LoadClientConfig(const std::string& path, const LoadOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(auto text, ReadFile(path));
  return ParseClientConfig(text, path, options);
}

}  // namespace mpcache::config
