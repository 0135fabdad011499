// The config loader's reader of one YAML mapping (internal to common/config.cc): typed
// getters that name the field, its file and the fix in every error, and reject keys nobody
// asked for (with a "did you mean" from the edit distance).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"

namespace mpcache::config::detail {

namespace fs = std::filesystem;

// Levenshtein distance (for "did you mean" hints).
std::size_t EditDistance(std::string_view a, std::string_view b);

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

// The top-level mapping of `text` (kInvalidArgument naming the line and column when it is
// not YAML, or not a mapping).
Result<YAML::Node> ParseYaml(std::string_view text, const std::string& file);
Result<std::string> ReadFile(const std::string& path);
Context MakeContext(const std::string& file, const LoadOptions& options);

}  // namespace mpcache::config::detail
