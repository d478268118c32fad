// lcc-bot — a robot for a BOT-M (docs/commands.md, docs/protocol.md §4).
//
//   lcc-bot --connect HOST:PORT [--slots N] [-c FILE]   connect (and reconnect) to a BOT-M
//   lcc-bot --listen PORT [--slots N]                   wait for one connection (nc, tests)
//
// SIGHUP reopens the log file and, with --connect tls://, reads the TLS files again
// (tls.cert_file, tls.key_file, tls.peer_ca_file): the next connection uses them; the
// open one keeps its own. A file that does not load leaves the old ones in use.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <functional>
#include <iostream>
#include <spdlog/spdlog.h>

#include "app/version_text.h"
#include "bot/robot.h"
#include "net/host_port.h"
#include "common/tls_config.h"
#include "common/config/config.h"
#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "common/system_clock.h"

namespace {

namespace asio = boost::asio;

// The TLS of --connect tls://: the robot shows tls.cert_file and checks the BOT-M
// against tls.peer_ca_file of -c FILE. Null for a plain address.
lcc::Result<std::shared_ptr<lcc::NodeTls>> robotTls(const std::string& connect, const std::optional<lcc::Config>& cfg) {
  if (!lcc::net::splitLinkAddress(connect).tls) return std::shared_ptr<lcc::NodeTls>();
  if (!cfg) return lcc::Status::invalidArgument("--connect tls:// needs -c FILE with the tls.* keys");
  return lcc::NodeTls::linkClientOnly(*cfg);
}

// SIGHUP: the log file reopened, the TLS files read again (see the top of this file).
void reloadOnHangup(lcc::NodeTls* tls) {
  lcc::reopenLogs();
  spdlog::info("lcc-bot: SIGHUP: log reopened");
  if (tls == nullptr) return;
  if (lcc::Status st = tls->reload(); st.isOk()) {
    spdlog::info("lcc-bot: SIGHUP: TLS certificates reloaded (the next connection uses them)");
  } else {
    spdlog::error("lcc-bot: SIGHUP: TLS certificates not reloaded, the old ones stay: {}", st.message());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string connect, listen, config_file, name, content_dir, plugin_dir, fetcher_name = "fetch-curl";
  std::uint32_t slots = 8;
  bool allow_private = false, sync_files = false;
  CLI::App app{"lcc-bot — an LCC robot: fetches what its BOT-M asks (docs/protocol.md §4)"};
  app.set_version_flag("--version", [] { return lcc::versionText("lcc-bot"); },
                       "print the version, git commit, plugin ABI and libraries, exit 0");
  auto* c_opt = app.add_option("--connect", connect, "BOT-M robot port to connect to (HOST:PORT)");
  auto* l_opt = app.add_option("--listen", listen, "wait for one connection on PORT or HOST:PORT (127.0.0.1 by default)");
  c_opt->excludes(l_opt);
  app.add_option("--slots", slots, "parallel fetches announced to the BOT-M")->check(CLI::Range(1, 4096));
  app.add_option("-c,--config", config_file, "an lcc.yaml: fetcher plugin and options, plugin folder, log level");
  app.add_option("--name", name, "robot name announced (default: host-pid)");
  app.add_option("--content-dir", content_dir, "refuse files outside this folder");
  app.add_option("--plugin-dir", plugin_dir, "where <plugin>.so files are (without -c)");
  app.add_option("--fetcher", fetcher_name, "fetcher plugin (without -c; default fetch-curl)");
  app.add_flag("--allow-private", allow_private, "let the fetcher reach loopback/private addresses (without -c)");
  app.add_flag("--sync", sync_files, "fsync each file before answering ok");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (connect.empty() && listen.empty()) {
    std::cerr << "lcc-bot: give --connect HOST:PORT or --listen PORT\n";
    return 2;
  }

  std::string log_level = "info", log_file;
  std::optional<lcc::Config> cfg;
  if (!config_file.empty()) {
    std::vector<lcc::ConfigProblem> problems;
    auto loaded = lcc::Config::load(config_file, {}, &problems);
    if (!loaded.isOk()) {
      for (const auto& p : problems) std::cerr << p.toString() << "\n";
      return 2;
    }
    cfg = std::move(loaded).value();
    log_level = cfg->getString("log.level");
    log_file = cfg->getString("log.file");
    if (plugin_dir.empty()) plugin_dir = cfg->getString("storage.plugin_dir");
  }
  if (lcc::Status s = lcc::initLogging(log_level, log_file); !s.isOk()) {
    std::cerr << "lcc-bot: " << s.message() << "\n";
    return 2;
  }
  if (plugin_dir.empty()) plugin_dir = lcc::defaultPluginDir();

  lcc::SystemClock clock;
  lcc::Env* env = lcc::posixEnv();
  const std::string data_dir = cfg ? lcc::Config::absolutePath(cfg->getString("node.data_dir")) : std::string(".");
  lcc::HostContext host{&clock, env, lcc::pluginLogger("fetcher"), data_dir,
                        cfg ? cfg->getString("node.machine_id") : std::string("robot")};
  lcc::PluginRegistry registry(plugin_dir, host);
  lcc::Result<lcc::PluginPtr<lcc::Fetcher>> made = lcc::Status::internal("no fetcher");
  if (cfg) {
    std::vector<lcc::ConfigProblem> problems;
    made = registry.makeFetcher(*cfg, cfg->getPlugin("fetcher"), &problems);
    for (const auto& p : problems) std::cerr << p.toString() << "\n";
  } else {
    std::map<std::string, std::string> overrides;
    if (allow_private && fetcher_name == "fetch-curl") overrides["allow_private"] = "true";
    auto opts = registry.defaultOptions(fetcher_name, overrides);
    made = opts.isOk() ? registry.makeFetcher(fetcher_name, opts.value()) : lcc::Result<lcc::PluginPtr<lcc::Fetcher>>(opts.status());
  }
  if (!made.isOk()) {
    std::cerr << "lcc-bot: cannot make the fetcher: " << made.status().message() << "\n";
    return 2;
  }
  lcc::PluginPtr<lcc::Fetcher> fetcher = std::move(made).value();

  // bot.sync_files and bot.max_response_head from -c (else the schema's); --slots and
  // --sync are the command line's.
  lcc::bot::RobotOptions ro = lcc::bot::RobotOptions::fromConfig(cfg ? *cfg : lcc::Config::defaults());
  auto made_tls = robotTls(connect, cfg);
  if (!made_tls.isOk()) {
    std::cerr << "lcc-bot: " << made_tls.status().message() << "\n";
    return 2;
  }
  std::shared_ptr<lcc::NodeTls> tls = std::move(made_tls).value();
  ro.tls = lcc::linkConnecting(tls, &clock);
  ro.clock = &clock;  // fetch leases (issue 27 §3)
  ro.slots = slots;
  ro.name = name;
  ro.sync_files = ro.sync_files || sync_files;
  if (!content_dir.empty()) ro.content_root = lcc::Config::absolutePath(content_dir);
  // The s3.* keys of -c: fetched bodies go to the object store (core/s3/README.md).
  auto s3 = lcc::s3::S3Options::fromConfig(cfg ? *cfg : lcc::Config::defaults(), data_dir);
  if (!s3.isOk()) {
    std::cerr << "lcc-bot: " << s3.status().message() << "\n";
    return 2;
  }
  if (s3->enabled()) {
    if (s3->upload_threads == 0) s3->upload_threads = ro.slots;  // one per slot (core/s3/README.md)
    ro.uploader = std::make_shared<lcc::s3::Uploader>(*s3);
  }

  int rc = 0;
  {
    asio::io_context io;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    asio::signal_set hangup(io, SIGHUP);
    asio::steady_timer grace(io);
    std::function<void(const boost::system::error_code&, int)> on_hangup = [&](const boost::system::error_code& ec,
                                                                                 int) {
      if (ec) return;
      reloadOnHangup(tls.get());
      hangup.async_wait(on_hangup);
    };
    hangup.async_wait(on_hangup);
    std::shared_ptr<lcc::bot::RobotClient> client;
    std::shared_ptr<lcc::bot::RobotSession> session;
    std::unique_ptr<asio::ip::tcp::acceptor> acceptor;

    if (!connect.empty()) {
      client = std::make_shared<lcc::bot::RobotClient>(io, clock, *fetcher, *env, connect, ro,
                                                       lcc::Millis(200), lcc::Millis(30000));
      client->start();
      spdlog::info("lcc-bot: connecting to BOT-M {} with {} slots", connect, slots);
    } else {
      auto hp = lcc::net::HostPort::parse(listen.find(':') == std::string::npos ? "127.0.0.1:" + listen : listen);
      if (!hp.isOk()) {
        std::cerr << "lcc-bot: --listen wants PORT or HOST:PORT: " << hp.status().message() << "\n";
        return 2;
      }
      std::string host = hp->resolverHost(), port = hp->portString();
      try {
        asio::ip::tcp::endpoint ep(asio::ip::make_address(host), static_cast<unsigned short>(std::stoi(port)));
        acceptor = std::make_unique<asio::ip::tcp::acceptor>(io, ep);
      } catch (const std::exception& e) {
        std::cerr << "lcc-bot: cannot listen on " << host << ":" << port << ": " << e.what() << "\n";
        return 1;
      }
      std::cerr << "lcc-bot: waiting for one connection on " << host << ":" << acceptor->local_endpoint().port()
                << "\n";
      acceptor->async_accept([&](boost::system::error_code ec, asio::ip::tcp::socket sock) {
        acceptor->close();
        if (ec) {
          io.stop();
          return;
        }
        auto stream = lcc::net::Connection::overTcp(io, std::move(sock));
        session = std::make_shared<lcc::bot::RobotSession>(stream, *fetcher, *env, ro);
        session->start([&](const std::string& why) {
          spdlog::info("lcc-bot: connection ended: {}", why);
          // Nothing is left to wait for: the loop runs dry and io.run() returns. Not
          // io.stop(): the connection drops its handlers (and the session they hold) in a
          // later turn of its strand, and a stopped loop would leave that cycle leaked.
          signals.cancel();
          hangup.cancel();
          grace.cancel();
        });
      });
    }
    signals.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      spdlog::info("lcc-bot: stopping");
      hangup.cancel();
      if (client) client->stop();
      if (session) session->stop();
      if (acceptor) acceptor->close();
      if (!client && !session) {
        io.stop();
        return;
      }
      // The session closes after flushing; the loop then runs dry, or gives up after 2 s.
      // A timer of the loop's own, so it cannot fire once the loop is gone.
      grace.expires_after(std::chrono::seconds(2));
      grace.async_wait([&io](const boost::system::error_code& ec) {
        if (!ec) io.stop();
      });
    });
    io.run();
    fetcher->stop();
    if (ro.uploader) ro.uploader->stop();  // after the fetcher: no new upload comes
  }
  return rc;
}
