// relay.h — the front end's CP port (listen.uns, listen.uns_tls of the front role):
// reads a CP's init far enough to learn its provider (init_sniffer.h), finds the
// sub-LCC holding it (FrontCore::route, on a small pool: it may ask PostgreSQL),
// connects to that sub-LCC's UNS and relays bytes both ways until either side ends.
// The sub-LCC sees the init again with its own id for the provider (the only bytes
// changed); everything after is passed as it came, and its answers (init_accepted,
// set_result, try later) reach the CP unchanged.
// Answers of its own, as init_rejected: 110 (no such provider), 130 (the sub-LCC
// cannot be reached within front.connect_timeout, or the PMDB cannot be read), 100/101
// (a malformed or oversized init), 133 (no init within front.init_timeout), 120 (over
// uns.max_connections / uns.max_connections_per_ip).
// THREADS: each session on its CP connection's strand; the sub-LCC connection is made
// on the same strand (net::ConnectorOptions::strand).
#pragma once

#include <cstdint>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "common/metrics.h"
#include "front/front_core.h"
#include "lcc/clock.h"
#include "lcc/status.h"

namespace lcc::front {

class FrontRelay {
 public:
  FrontRelay(boost::asio::io_context& io, FrontCore& core, Clock* clock, Metrics* metrics);
  ~FrontRelay();
  Status start();
  void stop();
  std::uint16_t port() const;
  std::uint16_t tlsPort() const;
  void status(nlohmann::json& out) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lcc::front
