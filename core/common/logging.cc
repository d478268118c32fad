#include "logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <mutex>

namespace lcc {
namespace {

std::mutex g_mu;
std::string g_file;
std::string g_level = "info";

class SpdLogger final : public Logger {
 public:
  explicit SpdLogger(std::string name) : prefix_("[" + std::move(name) + "] ") {}
  void log(LogLevel level, std::string_view message) override {
    auto lvl = level == LogLevel::kDebug  ? spdlog::level::debug
               : level == LogLevel::kInfo ? spdlog::level::info
               : level == LogLevel::kWarn ? spdlog::level::warn
                                          : spdlog::level::err;
    spdlog::log(lvl, "{}{}", prefix_, message);
  }

 private:
  std::string prefix_;
};

std::shared_ptr<spdlog::logger> makeLogger() {
  std::shared_ptr<spdlog::logger> logger;
  if (g_file.empty()) {
    logger = std::make_shared<spdlog::logger>("lcc", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    logger = std::make_shared<spdlog::logger>("lcc", std::make_shared<spdlog::sinks::basic_file_sink_mt>(g_file));
  }
  logger->set_level(spdlog::level::from_str(g_level));
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->flush_on(spdlog::level::info);
  return logger;
}

}  // namespace

Status initLogging(const std::string& level, const std::string& file) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (level != "debug" && level != "info" && level != "warn" && level != "error") {
    return Status::invalidArgument("log level must be debug, info, warn or error (got " + level + ")");
  }
  g_level = level;
  g_file = file;
  try {
    spdlog::set_default_logger(makeLogger());
  } catch (const std::exception& e) {
    return Status::ioError(std::string("cannot open log: ") + e.what());
  }
  return Status::ok();
}

void reopenLogs() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_file.empty()) return;
  try {
    spdlog::set_default_logger(makeLogger());
  } catch (const std::exception& e) {
    spdlog::error("cannot reopen log {}: {}", g_file, e.what());
  }
}

Logger* pluginLogger(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<SpdLogger>> loggers;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = loggers[name];
  if (!slot) slot = std::make_unique<SpdLogger>(name);
  return slot.get();
}

}  // namespace lcc
