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

namespace mpcache::config {
namespace {

namespace fs = std::filesystem;

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t prev = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

// Where we are: the file, its folder (for relative paths) and the load options.
struct Context {
  std::string file;
  fs::path base_dir;
  LoadOptions options;
};

// One YAML mapping. Each getter records the key it was asked for; Finish() rejects any
// key nobody asked for. Errors read "<file>: field '<a.b>': <problem>; fix: <fix>".
class Section {
 public:
  Section(const Context& ctx, const YAML::Node& node, std::string path)
      : ctx_(ctx), node_(node), path_(std::move(path)) {}

  Error Fail(std::string_view key, const std::string& problem, const std::string& fix) const {
    return InvalidArgument(ctx_.file + ": field '" + Join(key) + "': " + problem +
                           (problem == "missing" ? MisspeltAs(key) : std::string()) +
                           "; fix: " + fix);
  }

  // For a missing field: a key of this mapping that is probably it, misspelt (the unknown-key
  // check runs only after every field was read, so a misspelt required key would otherwise
  // get no hint).
  std::string MisspeltAs(std::string_view key) const {
    if (!node_ || !node_.IsMap()) return "";
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const std::string k = it->first.Scalar();
      if (k != key && EditDistance(k, key) <= 2) {
        return " (the file has '" + Join(k) + "': did you mean '" + Join(key) + "'?)";
      }
    }
    return "";
  }

  // Whether the mapping has `key` with a value (the key counts as read).
  bool Has(std::string_view key) {
    const YAML::Node n = Get(key);
    return n && !n.IsNull();
  }

  Status CheckIsMap() const {
    if (!node_ || node_.IsNull() || node_.IsMap()) return Status::Ok();
    return InvalidArgument(ctx_.file + ": '" + (path_.empty() ? "top level" : path_) +
                           "' must be a mapping of 'key: value' lines");
  }

  Result<Section> Sub(std::string_view key) {
    YAML::Node n = Get(key);
    Section s(ctx_, n, Join(key));
    if (n && !n.IsNull() && !n.IsMap()) {
      return Fail(key, "expected a section of 'key: value' lines",
                  "indent the section's fields under '" + std::string(key) + ":'");
    }
    return s;
  }

  Result<std::string> Str(std::string_view key, std::optional<std::string> def,
                          const std::string& fix) {
    YAML::Node n = Get(key);
    if (!n || n.IsNull()) {
      if (def) return *def;
      return Fail(key, "missing", fix);
    }
    if (!n.IsScalar()) return Fail(key, "expected a single value", fix);
    return n.Scalar();
  }

  Result<std::int64_t> Int(std::string_view key, std::int64_t def, std::int64_t lo, std::int64_t hi,
                           bool required = false) {
    const std::string fix =
        "write a whole number in " + std::to_string(lo) + ".." + std::to_string(hi);
    MPCACHE_ASSIGN_OR_RETURN(
        auto s, Str(key, required ? std::nullopt : std::optional(std::to_string(def)), fix));
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
      return Fail(key, "'" + s + "' is not a whole number", fix);
    }
    if (v < lo || v > hi) return Fail(key, std::to_string(v) + " is out of range", fix);
    return v;
  }

  Result<double> Real(std::string_view key, double def, double lo, double hi, bool open_lo) {
    const std::string fix =
        "write a number in " + std::string(open_lo ? "(" : "[") + Num(lo) + ", " + Num(hi) + "]";
    MPCACHE_ASSIGN_OR_RETURN(auto s, Str(key, Num(def), fix));
    double v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
      return Fail(key, "'" + s + "' is not a number", fix);
    }
    if (v < lo || v > hi || (open_lo && v == lo)) return Fail(key, s + " is out of range", fix);
    return v;
  }

  Result<bool> Bool(std::string_view key, bool def) {
    MPCACHE_ASSIGN_OR_RETURN(auto s, Str(key, def ? "true" : "false", "write true or false"));
    if (s == "true") return true;
    if (s == "false") return false;
    return Fail(key, "'" + s + "' is not a boolean", "write true or false");
  }

  // One of `choices`; returns its index.
  Result<int> Choice(std::string_view key, std::initializer_list<std::string_view> choices,
                     int def) {
    std::string list;
    for (auto c : choices) list += (list.empty() ? "" : " | ") + std::string(c);
    MPCACHE_ASSIGN_OR_RETURN(
        auto s, Str(key, std::string(*(choices.begin() + def)), "write one of " + list));
    int i = 0;
    for (auto c : choices) {
      if (s == c) return i;
      ++i;
    }
    std::string hint;
    for (auto c : choices) {
      if (EditDistance(s, c) <= 2) hint = " (did you mean '" + std::string(c) + "'?)";
    }
    return Fail(key, "'" + s + "' is not allowed" + hint, "write one of " + list);
  }

  Result<HostPort> Address(std::string_view key, bool required, std::string_view example) {
    const std::string fix = "write host:port, e.g. " + std::string(example);
    MPCACHE_ASSIGN_OR_RETURN(
        auto s, Str(key, required ? std::nullopt : std::optional<std::string>(""), fix));
    if (s.empty()) return HostPort{};
    auto hp = ParseHostPort(s);
    if (!hp.ok()) return Fail(key, hp.error().message(), fix);
    return hp;
  }

  // Exactly kNumParties addresses, index = party id.
  Result<std::vector<HostPort>> PartyAddresses(std::string_view key, int base_port) {
    std::string example = "[";
    for (int i = 0; i < kNumParties; ++i) {
      example += (i ? ", 127.0.0.1:" : "127.0.0.1:") + std::to_string(base_port + i);
    }
    example += "]";
    const std::string fix = "list the " + std::to_string(kNumParties) +
                            " parties' host:port in party-id order, e.g. " + example;
    YAML::Node n = Get(key);
    if (!n || n.IsNull()) return Fail(key, "missing", fix);
    if (!n.IsSequence() || n.size() != static_cast<std::size_t>(kNumParties)) {
      return Fail(key, "expected a list of " + std::to_string(kNumParties) + " addresses", fix);
    }
    std::vector<HostPort> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string item = std::string(key) + "[" + std::to_string(i) + "]";
      if (!n[i].IsScalar()) return Fail(item, "expected host:port", fix);
      auto hp = ParseHostPort(n[i].Scalar());
      if (!hp.ok()) return Fail(item, hp.error().message(), fix);
      if (!seen.insert(hp->ToString()).second) {
        return Fail(item, hp->ToString() + " is listed twice", "give every party its own port");
      }
      out.push_back(*hp);
    }
    return out;
  }

  // A file path: ${VAR} expanded, relative to the YAML's folder. `must_exist` only when
  // the load checks files.
  Result<std::string> Path(std::string_view key, bool required, const std::string& fix) {
    MPCACHE_ASSIGN_OR_RETURN(
        auto raw, Str(key, required ? std::nullopt : std::optional<std::string>(""), fix));
    if (raw.empty()) return raw;
    std::string expanded;
    for (std::size_t i = 0; i < raw.size();) {
      if (raw.compare(i, 2, "${") != 0) {
        expanded += raw[i++];
        continue;
      }
      const auto close = raw.find('}', i);
      if (close == std::string::npos) {
        return Fail(key, "unclosed '${' in '" + raw + "'", "write ${NAME} or ${NAME:-default}");
      }
      std::string name = raw.substr(i + 2, close - i - 2);
      std::optional<std::string> def;
      if (const auto d = name.find(":-"); d != std::string::npos) {
        def = name.substr(d + 2);
        name = name.substr(0, d);
      }
      const char* value = std::getenv(name.c_str());
      if (value != nullptr && *value != '\0') {
        expanded += value;
      } else if (def) {
        expanded += *def;
      } else {
        // NOLINTBEGIN(performance-inefficient-string-concatenation): error path
        return Fail(key, "environment variable " + name + " is not set",
                    "set " + name + " or write ${" + name + ":-default}");
        // NOLINTEND(performance-inefficient-string-concatenation)
      }
      i = close + 1;
    }
    fs::path p(expanded);
    if (p.is_relative()) p = ctx_.base_dir / p;
    p = p.lexically_normal();
    if (ctx_.options.check_files) {
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) {
        return Fail(key, "file '" + p.string() + "' does not exist", fix);
      }
    }
    return p.string();
  }

  Result<TlsPaths> Tls(std::string_view role_file) {
    MPCACHE_ASSIGN_OR_RETURN(auto s, Sub("tls"));
    const std::string fix = "run deploy/gen-certs.sh DIR and point tls.cert, tls.key and " +
                            std::string("tls.ca at DIR/") + std::string(role_file) + ".crt, DIR/" +
                            std::string(role_file) + ".key and DIR/ca.crt";
    TlsPaths t;
    MPCACHE_ASSIGN_OR_RETURN(t.cert, s.Path("cert", true, fix));
    MPCACHE_ASSIGN_OR_RETURN(t.key, s.Path("key", true, fix));
    MPCACHE_ASSIGN_OR_RETURN(t.ca, s.Path("ca", true, fix));
    MPCACHE_RETURN_IF_ERROR(s.Finish());
    return t;
  }

  Result<Timeouts> ReadTimeouts() {
    MPCACHE_ASSIGN_OR_RETURN(auto s, Sub("timeouts"));
    Timeouts t;
    constexpr std::int64_t kDay = 86400000;
    MPCACHE_ASSIGN_OR_RETURN(auto c, s.Int("connect_ms", t.connect_ms, 1, kDay));
    MPCACHE_ASSIGN_OR_RETURN(auto h, s.Int("handshake_ms", t.handshake_ms, 1, kDay));
    MPCACHE_ASSIGN_OR_RETURN(auto r, s.Int("recv_ms", t.recv_ms, 1, kDay));
    MPCACHE_ASSIGN_OR_RETURN(auto q, s.Int("request_ms", t.request_ms, 1, kDay));
    MPCACHE_RETURN_IF_ERROR(s.Finish());
    return Timeouts{static_cast<int>(c), static_cast<int>(h), static_cast<int>(r),
                    static_cast<int>(q)};
  }

  Result<std::string> LogLevel(const std::string& def) {
    MPCACHE_ASSIGN_OR_RETURN(auto s, Sub("logging"));
    MPCACHE_ASSIGN_OR_RETURN(auto i,
                             s.Choice("level", {"trace", "debug", "info", "warn", "error", "off"},
                                      def == "warn" ? 3 : 2));
    MPCACHE_RETURN_IF_ERROR(s.Finish());
    static constexpr const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
    return std::string(kLevels[i]);
  }

  Result<int> MetricsPort() {
    MPCACHE_ASSIGN_OR_RETURN(auto s, Sub("metrics"));
    MPCACHE_ASSIGN_OR_RETURN(auto p, s.Int("port", 0, 0, 65535));
    MPCACHE_RETURN_IF_ERROR(s.Finish());
    return static_cast<int>(p);
  }

  // Rejects keys that no getter asked for.
  Status Finish() const {
    if (!node_ || !node_.IsMap()) return Status::Ok();
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (asked_.count(key)) continue;
      std::string best;
      std::size_t best_d = 3;
      for (const auto& k : asked_) {
        const auto d = EditDistance(key, k);
        if (d < best_d) {
          best_d = d;
          best = k;
        }
      }
      std::string known;
      for (const auto& k : asked_) known += (known.empty() ? "" : ", ") + k;
      // NOLINTBEGIN(performance-inefficient-string-concatenation): error path
      return InvalidArgument(ctx_.file + ": unknown field '" + Join(key) + "'" +
                             (best.empty() ? "" : "; did you mean '" + best + "'?") +
                             " (fields here: " + known + ")");
      // NOLINTEND(performance-inefficient-string-concatenation)
    }
    return Status::Ok();
  }

 private:
  static std::string Num(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
  }
  std::string Join(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  YAML::Node Get(std::string_view key) {
    asked_.insert(std::string(key));
    if (!node_ || !node_.IsMap()) return YAML::Node();
    const YAML::Node& map = node_;
    return map[std::string(key)];
  }

  const Context& ctx_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string> asked_;
};

Result<YAML::Node> ParseYaml(std::string_view text, const std::string& file) {
  try {
    YAML::Node n = YAML::Load(std::string(text));
    if (n && !n.IsNull() && !n.IsMap()) {
      return InvalidArgument(file + ": expected 'key: value' lines at the top level");
    }
    return n;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg +
                           "; fix: check the indentation and quoting on that line");
  }
}

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return NotFound("config file '" + path + "' does not exist (see config/*.yaml)");
  }
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return IoError("cannot read config file '" + path + "'");
  return text;
}

Context MakeContext(const std::string& file, const LoadOptions& options) {
  fs::path base = fs::path(file).parent_path();
  if (base.empty()) base = ".";
  return Context{file, base, options};
}

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
    MPCACHE_ASSIGN_OR_RETURN(auto sk, b.Choice("static_king", {"none", "0", "1", "2"}, 0));
    c.balancer.static_king = sk - 1;
    MPCACHE_RETURN_IF_ERROR(b.Finish());
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
    MPCACHE_RETURN_IF_ERROR(p.Finish());
    if (batch > cap) {
      return p.Fail("batch_items", "is larger than pool.capacity_items",
                    "make batch_items at most capacity_items");
    }
    c.pool_capacity_items = static_cast<std::uint64_t>(cap);
    c.batch_items = static_cast<std::uint64_t>(batch);
    c.pool_max_matrix_elements = static_cast<std::uint64_t>(matrix);
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
