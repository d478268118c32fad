// lcc cu query --cu URL --cu URL …: several LCCs' answers merged here, by the code a
// node with cu.peers runs (cu/merged_query.h, cu/merged_export.h), written in the asked
// format by the exporter plugins of --config (else the schema's `exporters`), loaded
// from its storage.plugin_dir, or from the plugin folder beside this program.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "app/cli_cu_merged.h"
#include "app/progress.h"
#include "common/config/config.h"
#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "common/system_clock.h"
#include "cu/merged_export.h"
#include "net/tls.h"

namespace lcc::cli {
namespace {

constexpr const char* kWho = "lcc cu query";

// The exporters of the configuration, and what keeps their libraries loaded.
struct LoadedExporters {
  SystemClock clock;
  std::optional<Config> config;
  std::unique_ptr<PluginRegistry> registry;
  std::vector<PluginPtr<Exporter>> exporters;

  Exporter* find(std::string_view format) const {
    for (const auto& e : exporters) {
      if (e->format() == format) return e.get();
    }
    return nullptr;
  }
};

// Loads every exporter --config names (the schema's list without one); false after saying why.
bool loadExporters(const Globals& g, LoadedExporters* out) {
  std::vector<ConfigProblem> problems;
  if (std::filesystem::exists(g.config_file)) {
    auto cfg = Config::load(g.config_file, {}, &problems);
    if (!cfg.isOk()) {
      for (const auto& p : problems) std::cerr << kWho << ": " << p.toString() << "\n";
      return false;
    }
    out->config.emplace(std::move(cfg).value());
  } else {
    out->config.emplace(Config::defaults());
  }
  const Config& cfg = *out->config;
  std::error_code ec;
  std::string dir = cfg.getString("storage.plugin_dir");
  if (!std::filesystem::is_directory(dir, ec)) dir = defaultPluginDir();
  HostContext host{&out->clock, posixEnv(), pluginLogger("plugin"), std::filesystem::current_path(ec).string(),
                   cfg.getString("node.machine_id")};
  out->registry = std::make_unique<PluginRegistry>(dir, host);
  for (const auto& ref : cfg.getPluginList("exporters")) {
    auto made = out->registry->makeExporter(cfg, ref, &problems);
    if (made.isOk()) out->exporters.push_back(std::move(made).value());
  }
  for (const auto& p : problems) std::cerr << kWho << ": " << p.toString() << "\n";
  return problems.empty();
}

// The answer's bytes into -o's FILE.part or stdout, with the progress line.
class OutputSink final : public ByteSink {
 public:
  OutputSink(std::ostream& out, std::uint64_t records) : out_(out), records_(records) {}
  Status write(std::string_view b) override {
    out_.write(b.data(), static_cast<std::streamsize>(b.size()));
    if (!out_) return Status::ioError("writing the output failed");
    bytes_ += b.size();
    progress_.update([this] { return line(); });
    return Status::ok();
  }
  Status flush() override {
    out_.flush();
    return out_ ? Status::ok() : Status::ioError("writing the output failed");
  }
  void done() { progress_.done(line()); }

 private:
  std::string line() const { return std::to_string(bytes_) + " bytes, " + std::to_string(records_) + " records"; }

  std::ostream& out_;
  const std::uint64_t records_;
  std::uint64_t bytes_ = 0;
  TtyProgress progress_;  // repainted at most four times a second, on a terminal only
};

// The peers of --cu, with their TLS context; nullopt after saying why.
std::optional<cu::PeerOptions> peerOptions(const MergedQueryArgs& a) {
  std::vector<std::string> problems;
  cu::PeerOptions o = cu::PeerOptions::fromConfig(Config::defaults());
  o.peers = cu::parsePeerUrls(a.cus, &problems);
  o.timeout_ms = a.timeout_s * 1000;
  for (const auto& why : problems) std::cerr << kWho << ": --cu: " << why << "\n";
  if (!problems.empty()) return std::nullopt;
  if (std::any_of(o.peers.begin(), o.peers.end(), [](const std::string& u) { return u.rfind("https://", 0) == 0; })) {
    auto made = tlsContext(a.tls);
    if (!made.isOk()) {
      std::cerr << kWho << ": " << made.status().message() << "\n";
      return std::nullopt;
    }
    o.tls = std::make_shared<net::TlsContextSlot>(made.value());
  }
  return o;
}

// Streams `exp` to -o FILE (through FILE.part, renamed when complete) or stdout.
int writeExport(const MergedQueryArgs& a, cu::MergedExport& exp) {
  const std::string part = a.out.empty() ? std::string() : a.out + ".part";
  std::ofstream file;
  if (!part.empty()) {
    file.open(part, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << kWho << ": cannot write " << part << "\n";
      return 2;
    }
  }
  OutputSink sink(part.empty() ? std::cout : file, exp.header().count);
  Status s = exp.stream(sink);
  sink.done();
  if (s.isOk()) s = sink.flush();
  if (!s.isOk()) {
    if (!part.empty()) std::filesystem::remove(part);
    std::cerr << kWho << ": " << s.message() << "\n";
    return 1;
  }
  if (part.empty()) return 0;
  file.close();
  std::error_code ec;
  std::filesystem::rename(part, a.out, ec);
  if (ec) std::cerr << kWho << ": renaming " << part << ": " << ec.message() << "\n";
  return ec ? 1 : 0;
}

}  // namespace

int runMergedCuQuery(const Globals& g, const MergedQueryArgs& a, const proto::CuQuery& q) {
  (void)initLogging("warn", "");  // stderr: the answer may go to stdout
  std::optional<cu::PeerOptions> peers = peerOptions(a);
  if (!peers) return 2;
  LoadedExporters loaded;
  if (!loadExporters(g, &loaded)) return 2;
  Exporter* exporter = loaded.find(q.format);
  if (exporter == nullptr) {
    std::cerr << kWho << ": no exporter plugin for format " << q.format << " (the configuration's `exporters`)\n";
    return 2;
  }
  auto merged = cu::runMergedQuery(q, nullptr, *peers, 0);
  if (!merged.isOk()) {
    std::cerr << kWho << ": rejected: " << merged.status().message() << "\n";
    return 1;
  }
  for (const auto& u : merged->answer.unreachable) {
    std::cerr << kWho << ": left out (its part of the cursor is kept): " << u << "\n";
  }
  cu::MergedExportOptions o;
  o.machine_id = loaded.config->getString("node.machine_id");
  std::error_code ec;
  const std::filesystem::path out_dir = std::filesystem::absolute(a.out.empty() ? "." : a.out, ec).parent_path();
  o.temp_dir = a.out.empty() ? std::filesystem::temp_directory_path(ec).string() : out_dir.string();
  o.remote = cu::RemoteOptions::fromConfig(*loaded.config);
  o.remote.remote_connect_timeout = o.remote.remote_read_timeout = Millis(a.timeout_s * 1000);
  o.remote.tls = peers->tls;
  cu::MergedExport exp(std::move(merged).value(), *exporter, q.content, nullptr, std::move(o));
  return writeExport(a, exp);
}

}  // namespace lcc::cli
