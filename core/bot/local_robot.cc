#include "bot/local_robot.h"

#include <spdlog/spdlog.h>

namespace lcc::bot {

LocalRobot::LocalRobot(LocalRobotHost& host, Fetcher& fetcher, Env& env, RobotOptions options,
                       RobotCounters* counters)
    : host_(host), fetcher_(fetcher), env_(env), opts_(std::move(options)), counters_(counters) {
  if (opts_.name.empty()) opts_.name = defaultRobotName();
}

void LocalRobot::start() {
  std::weak_ptr<LocalRobot> weak = shared_from_this();
  core_ = std::make_shared<RobotCore>(fetcher_, env_, opts_, counters_, [weak](const proto::RobotResult& r) {
    auto self = weak.lock();
    if (!self || !self->results_.push(r)) return;  // gone, or a batch is already announced
    const std::uint64_t id = self->id_.load();
    if (id == 0) return;
    self->host_.robotResults(id, [weak] {
      auto s = weak.lock();
      return s ? s->results_.drain() : std::vector<proto::RobotResult>{};
    });
  });
  // The host delivers on its strand, one call at a time: RobotCore's carrier thread.
  auto core = core_;
  const std::uint64_t id = host_.newRobotId();
  id_.store(id);
  host_.attachRobot(id, opts_.name, opts_.slots, [core](const std::vector<proto::RobotFetch>& fs) {
    for (const auto& f : fs) core->fetch(f);
  });
  spdlog::info("robot {}: in-process robot of the BOT-M with {} slots", opts_.name, opts_.slots);
}

void LocalRobot::stop() {
  const std::uint64_t id = id_.exchange(0);
  if (id == 0) return;
  core_->cancelAll();
  host_.detachRobot(id);
}

}  // namespace lcc::bot
