#include "bot/bot_service.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bot/robot.h"
#include "common/tls_config.h"
#include "bot/temp_sweep.h"

namespace lcc::bot {
namespace {

class BotService final : public Service {
 public:
  BotService(NodeContext& node, std::string target, RobotOptions opts, int robots, bool sweep)
      : node_(node), target_(std::move(target)), opts_(std::move(opts)), robots_(robots), sweep_(sweep) {}
  ~BotService() override {
    stopping_ = true;
    if (sweeper_.joinable()) sweeper_.join();
  }

  std::string_view name() const override { return "bot"; }

  Status start() override {
    if (!opts_.content_root.empty() && sweep_) {
      // Robots that died mid-fetch (an lccd or lcc-bot killed) left temporary files.
      sweeper_ = std::thread([this] {
        ::pthread_setname_np(::pthread_self(), "lcc-bot-sweep");
        TempSweepStats st = sweepTempFiles(*node_.env, opts_.content_root, processAlive, &stopping_);
        swept_.store(st.removed);
        if (st.removed > 0 || st.errors > 0) {
          spdlog::info("bot: removed {} temporary file(s) left by robots that died ({} of live processes kept, "
                       "{} error(s), {} folders)", st.removed, st.kept, st.errors, st.folders);
        }
      });
    }
    for (int i = 0; i < robots_; ++i) {
      RobotOptions o = opts_;
      o.name = defaultRobotName() + "-r" + std::to_string(i);
      // A BOT-M of this lccd at target_ takes the robot in process (issue 28).
      auto c = std::make_shared<RobotClient>(*node_.io, *node_.clock, *node_.fetcher, *node_.env, target_, o,
                                             Millis(200), Millis(10000), &counters_, node_.local_listeners);
      clients_.push_back(c);
      c->start();
    }
    spdlog::info("bot: {} robot(s) with {} slots each, BOT-M at {}", robots_, opts_.slots, target_);
    return Status::ok();
  }

  void stop() override {
    stopping_ = true;
    if (sweeper_.joinable()) sweeper_.join();
    for (auto& c : clients_) c->stop();
    // Cancelled fetches answer on the fetcher's thread, uploads on theirs; wait for them (bounded).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      if (inFlight() == 0 || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (opts_.uploader) opts_.uploader->stop();
  }

  std::size_t inFlight() const {
    std::size_t n = 0;
    for (const auto& c : clients_) n += c->inFlight();
    return n;
  }

  void status(nlohmann::json& out) const override {
    int connected = 0, in_process = 0;
    for (const auto& c : clients_) {
      connected += c->connected() ? 1 : 0;
      in_process += c->inProcess() ? 1 : 0;
    }
    out["robots"] = robots_;
    out["connected"] = connected;
    out["in_process"] = in_process;
    out["slots_per_robot"] = opts_.slots;
    out["in_flight"] = inFlight();
    out["fetched"] = counters_.fetched.load();
    out["unchanged"] = counters_.unchanged.load();
    out["failed"] = counters_.failed.load();
    out["refused"] = counters_.refused.load();
    out["bytes"] = counters_.bytes.load();
    out["heads_failed"] = counters_.heads_failed.load();
    out["head_files"] = counters_.head_files.load();
    out["lease_expired"] = counters_.lease_expired.load();
    out["temp_files_removed"] = swept_.load();
    out["botm"] = target_;
    if (opts_.uploader) {
      out["s3_puts"] = opts_.uploader->puts();
      out["s3_put_failures"] = opts_.uploader->failures();
      out["s3_bytes"] = opts_.uploader->bytes();
    }
  }

 private:
  NodeContext& node_;
  std::string target_;
  RobotOptions opts_;
  int robots_;
  const bool sweep_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> swept_{0};
  std::thread sweeper_;
  RobotCounters counters_;
  std::vector<std::shared_ptr<RobotClient>> clients_;
};

}  // namespace

Result<ServicePtr> makeBotService(NodeContext& node) {
  if (node.fetcher == nullptr) return Status::invalidArgument("the bot role needs a fetcher (config key fetcher)");
  const Config& cfg = *node.config;
  std::string target = cfg.getString("bot.connect");
  RobotOptions o = RobotOptions::fromConfig(cfg);
  o.tls = linkConnecting(node.tls, node.clock);
  if (target.empty()) {
    // Our own BOT-M: its files all lie in its content folder.
    target = cfg.getString("listen.robots");
    std::string dir = cfg.getString("botm.content_dir");
    o.content_root = dir.empty() ? node.data_dir + "/content" : Config::absolutePath(dir);
  }
  // Issue 31 §1: fetched bodies go to the object store (core/s3/README.md).
  auto s3 = s3::S3Options::fromConfig(cfg, node.data_dir);
  if (!s3.isOk()) return s3.status();
  if (s3->enabled()) {
    // A fetch holds its robot's slot until its PUT is answered: one thread per slot
    // lets every fetch in flight upload at once (the store is latency-bound).
    if (s3->upload_threads == 0) s3->upload_threads = o.slots * static_cast<std::uint32_t>(cfg.getInt("bot.robots"));
    o.uploader = std::make_shared<s3::Uploader>(*s3);
  }
  return ServicePtr(new BotService(node, target, o, static_cast<int>(cfg.getInt("bot.robots")),
                                   cfg.getBool("bot.sweep_temp_files")));
}

}  // namespace lcc::bot
