#include "common/config_section.h"

#include <fstream>
#include <iterator>

namespace mpcache::config::detail {

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

}  // namespace mpcache::config::detail
