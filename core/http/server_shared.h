// server_shared.h — what the HTTP server's connections share (server.cc,
// server_connection.h): options, worker pools, the connection table, the per-address
// slots, the metrics. Internal to core/http.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/metrics.h"
#include "http/address_slots.h"
#include "http/http_server.h"
#include "http/request_reader.h"
#include "http/stream_sink.h"

namespace lcc::http {

// What the server needs of a connection, plain or TLS.
struct ConnBase {
  virtual ~ConnBase() = default;
  // Closes on the connection's strand (from any thread).
  virtual void closeFromOutside() = 0;
  // Non-zero while the connection waits for a request with nothing received: the
  // order in which connections became idle (the smallest went idle first).
  std::atomic<std::uint64_t> idle_since{0};
};

// Outlives the Server object while any connection or queued task still refers to it.
struct Shared {
  const Router* router = nullptr;
  ServerOptions options;
  RequestLimits limits;
  boost::asio::thread_pool workers;
  boost::asio::thread_pool stream_workers;
  std::shared_ptr<AddressSlots> slots = std::make_shared<AddressSlots>();
  std::atomic<bool> stopped{false};
  std::atomic<bool> io_seen_running{false};  // an io thread ran one of our handlers
  std::atomic<std::size_t> open{0};
  std::atomic<std::uint64_t> idle_seq{0};
  std::mutex mu;  // guards conns, next_id, sinks
  std::unordered_map<std::uint64_t, std::weak_ptr<ConnBase>> conns;
  std::uint64_t next_id = 1;
  std::vector<std::weak_ptr<StreamSink>> sinks;

  // Counters (null without options.metrics).
  Counter* requests = nullptr;
  Counter* client_errors = nullptr;
  Counter* server_errors = nullptr;
  Counter* refused = nullptr;
  Counter* refused_per_ip = nullptr;
  Counter* evicted = nullptr;
  Counter* busy = nullptr;
  Counter* streams_cut = nullptr;
  Gauge* open_gauge = nullptr;

  Shared(const Router* r, ServerOptions o);
  void countStatus(int status);
  // Remembers a sink so that stop() can unblock its stream thread; fails it at once
  // when the server is already stopping.
  void registerSink(const std::shared_ptr<StreamSink>& sink);
  void failAllSinks();
  // Closes the connection that has waited longest for a request; false when none waits.
  bool evictIdle();
};

}  // namespace lcc::http
