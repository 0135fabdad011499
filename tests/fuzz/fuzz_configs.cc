// The YAML configs (common/config.h): the first byte picks party, dealer or client, the
// rest is the file's text. Nothing may escape as an exception or crash; a file accepted
// once is accepted again alike (parsing is a function of the text).
#include <cstdint>
#include <string_view>

#include "common/config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  namespace config = mpcache::config;
  const std::string_view yaml(reinterpret_cast<const char*>(data + 1), size - 1);
  const config::LoadOptions options{.check_files = false};
  switch (data[0] % 3) {
    case 0: {
      auto a = config::ParsePartyConfig(yaml, "/fuzz/party.yaml", options);
      auto b = config::ParsePartyConfig(yaml, "/fuzz/party.yaml", options);
      if (a.ok() != b.ok()) mpcache::fuzz::Violated("party config parsing is deterministic");
      break;
    }
    case 1: {
      auto a = config::ParseDealerConfig(yaml, "/fuzz/dealer.yaml", options);
      if (a.ok() && !config::ParseDealerConfig(yaml, "/fuzz/dealer.yaml", options).ok()) {
        mpcache::fuzz::Violated("dealer config parsing is deterministic");
      }
      break;
    }
    default: {
      auto a = config::ParseClientConfig(yaml, "/fuzz/client.yaml", options);
      if (a.ok() && !config::ParseClientConfig(yaml, "/fuzz/client.yaml", options).ok()) {
        mpcache::fuzz::Violated("client config parsing is deterministic");
      }
      break;
    }
  }
  return 0;
}
