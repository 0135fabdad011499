#include "daemon/metrics.h"

#include <cstdio>

namespace mpcache::daemon {

std::string Label(const std::string& key, const std::string& value) {
  std::string out = key + "=\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

void Metrics::Describe(const std::string& name, const std::string& type, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  meta_[name] = {type, help};
  values_[name];
}

void Metrics::Add(const std::string& name, double delta, const std::string& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  values_[name][labels] += delta;
}

void Metrics::Set(const std::string& name, double value, const std::string& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  values_[name][labels] = value;
}

double Metrics::Get(const std::string& name, const std::string& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(name);
  if (it == values_.end()) return 0;
  auto jt = it->second.find(labels);
  return jt == it->second.end() ? 0 : jt->second;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  char buf[64];
  for (const auto& [name, series] : values_) {
    if (auto m = meta_.find(name); m != meta_.end()) {
      out += "# HELP " + name + " " + m->second.second + "\n";
      out += "# TYPE " + name + " " + m->second.first + "\n";
    }
    if (series.empty()) {
      out += name + " 0\n";
      continue;
    }
    for (const auto& [labels, v] : series) {
      std::snprintf(buf, sizeof(buf), "%.17g", v);
      out += name;
      if (!labels.empty()) {
        out += '{';
        out += labels;
        out += '}';
      }
      out += ' ';
      out += buf;
      out += '\n';
    }
  }
  return out;
}

}  // namespace mpcache::daemon
