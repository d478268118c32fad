// lcc/logger.h — the log sink handed to plugins (core uses spdlog behind it).
// THREADS: thread-safe.
#pragma once

#include <string_view>

namespace lcc {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

class Logger {
 public:
  virtual ~Logger() = default;
  virtual void log(LogLevel level, std::string_view message) = 0;
  void debug(std::string_view m) { log(LogLevel::kDebug, m); }
  void info(std::string_view m) { log(LogLevel::kInfo, m); }
  void warn(std::string_view m) { log(LogLevel::kWarn, m); }
  void error(std::string_view m) { log(LogLevel::kError, m); }
};

}  // namespace lcc
