// Metrics of one daemon in the Prometheus text format (version 0.0.4): counters and
// gauges keyed by name and label set, rendered by the HTTP endpoint (/metrics).
// Thread-safe; owned by the daemon and passed to whoever records.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace mpcache::daemon {

class Metrics {
 public:
  // `labels` is the inside of {...}, e.g. phase="attention" (empty for none).
  void Describe(const std::string& name, const std::string& type, const std::string& help);
  void Add(const std::string& name, double delta, const std::string& labels = "");
  void Set(const std::string& name, double value, const std::string& labels = "");
  double Get(const std::string& name, const std::string& labels = "") const;
  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::string>> meta_;  // name -> type, help
  std::map<std::string, std::map<std::string, double>> values_;      // name -> labels -> v
};

// `key="value"` with the value escaped for the text format.
std::string Label(const std::string& key, const std::string& value);

}  // namespace mpcache::daemon
