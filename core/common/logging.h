// logging.h — process logging (spdlog). Components log with spdlog::info/warn/...;
// plugins log through the lcc::Logger this file adapts.
#pragma once

#include <string>

#include "lcc/logger.h"
#include "lcc/status.h"

namespace lcc {

// Sets the default spdlog logger: to `file` (append) or stderr when empty.
// level: debug, info, warn, error.
Status initLogging(const std::string& level, const std::string& file);
// SIGHUP: reopen the log file (after logrotate moved it).
void reopenLogs();
// A Logger for plugin `name` ("[storage-kyoto] ..." lines).
Logger* pluginLogger(const std::string& name);

}  // namespace lcc
