// connector.h — the client side: connect to a HostPort, and reconnect with capped
// exponential back-off (with jitter) while the owner wants the link.
//
// BackOff is the rule alone (no I/O, no clock): next() gives min, 2·min, 4·min, ...
// capped at max, each shortened by up to `jitter` (a fraction) using the injected
// random source, so that many clients do not retry in step. reset() after a success.
//
// Connector resolves and connects; on success it hands a new (not yet started)
// Connection to on_connected and resets the back-off; on failure it reports why and
// tries again after the next back-off delay. After a connection ends, the owner calls
// retry() to connect again after the next delay (or reconnectNow()).
// THREADS: thread-safe. Callbacks run on the connector's strand; timers go through the
// injected lcc::Clock.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lcc/clock.h"
#include "net/connection.h"
#include "net/host_port.h"
#include "net/tls.h"

namespace lcc::net {

struct BackOffOptions {
  Millis min{200};
  Millis max{30000};
  double jitter = 0.2;  // each delay is shortened by up to this fraction (0: none)
};

class BackOff {
 public:
  // `random` returns a number in [0, 1); the default is a seeded Mersenne Twister.
  explicit BackOff(BackOffOptions options, std::function<double()> random = nullptr);
  Millis next();
  void reset() { attempt_ = 0; }
  std::uint32_t attempts() const { return attempt_; }

 private:
  BackOffOptions options_;
  std::function<double()> random_;
  std::uint32_t attempt_ = 0;
};

struct ConnectorOptions {
  std::string what = "link";  // for messages ("url source", "QM")
  std::string target;         // host:port
  BackOffOptions back_off;
  ConnectionOptions connection;
  std::function<double()> random;  // for the jitter (tests inject one)
  // The strand connections are made on (default: a new one each). An owner whose state
  // lives on one strand passes it, so the connection's handlers need no hop.
  std::optional<Strand> strand;
  // TLS: each connection does a client handshake with the slot's current context and
  // checks the server's certificate for `server_name` (empty: the target's host).
  std::shared_ptr<TlsContextSlot> tls;
  std::string server_name;
};

// A link target, "host:port" or "tls://host:port", into `co` (target, and for tls://
// the context and handshake deadline of `link`). Error: tls:// and no context.
Status setTargetAddress(ConnectorOptions& co, const std::string& address, const TlsLink& link);

class Connector : public std::enable_shared_from_this<Connector> {
 public:
  using OnConnected = std::function<void(std::shared_ptr<Connection>)>;
  // A failed attempt: why, and the delay until the next one.
  using OnFailed = std::function<void(const std::string& why, Millis retry_in)>;

  Connector(boost::asio::io_context& io, Clock& clock, ConnectorOptions options);
  ~Connector();

  // Parses the target (a bad one is returned here and nothing starts), then connects.
  // (Port 0 is taken: connecting to it fails and is retried, as any refused attempt.)
  // A target may list several addresses, "a:1,b:2": each attempt takes the next one, in
  // turn (an active QM and its standby: whichever listens answers).
  Status start(OnConnected on_connected, OnFailed on_failed = nullptr);
  // Connects again after the next back-off delay (after a connection ended).
  void retry();
  // Stops connecting; a connection already handed over is the owner's.
  void stop();
  const HostPort& target() const { return target_; }

 private:
  void connect();           // strand
  void failed(const std::string& why);  // strand
  std::unique_ptr<ByteStream> makeStream(Strand strand, boost::asio::ip::tcp::socket socket);
  void schedule(Millis delay);          // strand

  boost::asio::io_context& io_;
  Clock& clock_;
  Strand strand_;
  ConnectorOptions options_;
  HostPort target_;              // of the attempt under way
  std::vector<HostPort> targets_;  // the target's addresses, tried in turn
  std::size_t next_target_ = 0;
  BackOff back_off_;
  OnConnected on_connected_;
  OnFailed on_failed_;
  std::uint64_t generation_ = 0;  // strand: a stop() or a new attempt voids older ones
  bool stopped_ = false, attempting_ = false;
  std::mutex timer_mu_;
  TimerId timer_ = 0;
};

}  // namespace lcc::net
