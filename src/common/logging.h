// Logging setup: spdlog to stderr (stdout is reserved for command output / --json).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mpcache {

// A logger named `name` writing to stderr at `level` ("trace", "debug", "info", "warn",
// "error", "off"). Not registered globally: pass it where it is needed.
Result<std::shared_ptr<spdlog::logger>> MakeStderrLogger(const std::string& name,
                                                         std::string_view level);

}  // namespace mpcache
