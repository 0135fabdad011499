#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace mpcache {

Result<std::shared_ptr<spdlog::logger>> MakeStderrLogger(const std::string& name,
                                                         std::string_view level) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return InvalidArgument("unknown log level '" + std::string(level) +
                           "'; use one of trace, debug, info, warn, error, off");
  }
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_level(parsed);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  return logger;
}

}  // namespace mpcache
