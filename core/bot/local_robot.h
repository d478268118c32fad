// local_robot.h — robots inside the BOT-M's own process (lccd with roles botm and bot).
//
// A robot of lcc-bot speaks the robot protocol (protocol.md §4) over TCP. A robot that
// runs in the same lccd as its BOT-M takes the same fetches and gives the same results
// as structs through LocalRobotHost: no socket, no XML, no extra thread hand-off. The
// BOT-M treats it like any robot (slots, failover with the same filename, capacity).
// `bot.in_process: false` makes lccd's robots use TCP instead.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bot/robot.h"
#include "proto/robot.h"

namespace lcc::bot {

// Implemented by the BOT-M. Every call may come from any thread.
class LocalRobotHost {
 public:
  virtual ~LocalRobotHost() = default;
  // Runs on the host's strand with a robot's fetches; must not block.
  using Deliver = std::function<void(const std::vector<proto::RobotFetch>&)>;
  // Returns the batch of results to take (called on the host's strand).
  using Take = std::function<std::vector<proto::RobotResult>()>;

  // An id for a robot about to attach (never 0), so it knows its id before any fetch.
  virtual std::uint64_t newRobotId() = 0;
  // Robot `id` with `slots` parallel fetches joins.
  virtual void attachRobot(std::uint64_t id, const std::string& name, std::uint32_t slots, Deliver deliver) = 0;
  // Robot `id` has results: the host calls take() on its strand (one call per batch).
  virtual void robotResults(std::uint64_t id, Take take) = 0;
  // Robot `id` leaves: results it has not given yet are not coming; the host hands
  // those fetches to other robots with the same filenames.
  virtual void detachRobot(std::uint64_t id) = 0;
};

class LocalRobot : public std::enable_shared_from_this<LocalRobot> {
 public:
  LocalRobot(LocalRobotHost& host, Fetcher& fetcher, Env& env, RobotOptions options,
             RobotCounters* counters = nullptr);

  void start();
  // Cancels the fetches in flight (they are not answered) and leaves the host.
  void stop();
  std::size_t inFlight() const { return core_ ? core_->inFlight() : 0; }
  bool attached() const { return id_.load() != 0; }

 private:
  LocalRobotHost& host_;
  Fetcher& fetcher_;
  Env& env_;
  RobotOptions opts_;
  RobotCounters* counters_;
  std::shared_ptr<RobotCore> core_;
  HandOff<proto::RobotResult> results_;
  std::atomic<std::uint64_t> id_{0};
};

}  // namespace lcc::bot
