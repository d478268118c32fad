// intake_server.h — the QM's listen.qm port: UNSes connect and pipeline sets
// (docs/internal-protocols.md §1). Bytes only: each decoded set goes to `submit`,
// whose ack callback (called once, in order) writes <ack> back on that connection.
// Overload (rule 6): setAccepting(false) closes the listener and closes every UNS
// connection once its earlier sets are acknowledged; setAccepting(true) listens again.
// A peer that breaks the framing is logged and disconnected.
// THREADS: thread-safe; one strand per connection.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "lcc/clock.h"
#include "lcc/error_codes.h"
#include "lcc/status.h"
#include "net/tls.h"
#include "qm/intake_set.h"

namespace lcc::qm {

struct IntakeServerOptions {
  std::string listen = "127.0.0.1:7701";  // host:port, or tls://host:port (then `tls` is set)
  net::TlsLink tls;                        // for tls:// (common/tls_config.h)
  std::size_t max_attribute_length = 8192;
  std::uint64_t max_set_urls = 1'000'000;
};

class IntakeServer {
 public:
  using AckFn = std::function<void(bool ok, ErrorCode code, const std::string& reason)>;
  using SubmitFn = std::function<void(IntakeSet set, AckFn ack)>;

  IntakeServer(boost::asio::io_context& io, IntakeServerOptions options, SubmitFn submit);
  ~IntakeServer();

  Status start();  // binds and accepts
  void stop();     // closes the listener and every connection
  void setAccepting(bool accepting);

  std::uint16_t port() const;        // the bound port (after start)
  std::size_t connections() const;
  bool listening() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lcc::qm
