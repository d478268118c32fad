// intake_server.h — the QM's listen.qm port: UNSes connect and pipeline sets
// (docs/internal-protocols.md §1). Bytes only: each set is decoded as it arrives and
// handed to the IntakeSink in parts of at most `part_urls` URLs (begin, parts, then
// end or abort), so a set of any size needs memory for a few parts; the end's ack
// callback (called once, in order) writes <ack> back on that connection. A
// connection stops reading while `parts_in_flight` parts wait to be taken
// (back-pressure instead of a queue). A connection that ends inside a set aborts it.
// Overload (rule 6): setAccepting(false) closes the listener and closes every UNS
// connection once its earlier sets are acknowledged; setAccepting(true) listens again.
// A peer that breaks the framing is logged and disconnected. A UNS of the same lccd
// links in process (options.local_listeners, issue 28): the same steps, with its
// parsed notices as records (proto/uns_qm_local.h) and no XML; the window is the
// UNS's (a part's QmLocalTaken answers the sink's `taken`).
// THREADS: thread-safe; one strand per connection; the sink's functions run on it.
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

namespace lcc {
class Config;
}
namespace lcc::net {
class LocalListeners;
}

namespace lcc::qm {

// Members with a config key carry no default: fromConfig() (server_options.cc) reads
// the schema's.
struct IntakeServerOptions {
  std::string listen;                      // listen.qm: host:port, or tls://host:port (then `tls` is set)
  std::size_t max_attribute_length = 0;    // uns.max_attribute_length
  bool frames = false;                     // node.link_frames: take a UNS's offer of compact frames
  // No config key:
  net::TlsLink tls;                        // for tls:// (common/tls_config.h)
  // <url> elements per set. fromConfig() leaves no cap: the UNS holds each set to its
  // own (uns.max_set_urls, or the provider's files quota when that is more), and sets
  // stream, so the link does not cap them again.
  std::uint64_t max_set_urls = 1'000'000;
  std::size_t part_urls = 1024;       // URLs per part handed to the sink
  std::size_t parts_in_flight = 4;    // parts handed over and not yet taken, at most
  // Where a UNS of this lccd links in process (issue 28; null: node.in_process_links
  // off): the same sets as records, their notices as the UNS parsed them.
  net::LocalListeners* local_listeners = nullptr;

  static IntakeServerOptions fromConfig(const Config& config);
};

// Where decoded sets go. For one set: begin(), part()* in order, then end() or abort()
// (the connection ended inside it). `stream` is unique per server. part()'s `taken`
// must be called once (from any thread) when the part no longer needs the connection
// to wait.
struct IntakeSink {
  using AckFn = std::function<void(bool ok, ErrorCode code, const std::string& reason)>;
  std::function<void(std::uint64_t stream, IntakeHeader header)> begin;
  std::function<void(std::uint64_t stream, std::vector<UrlNotice> urls, std::function<void()> taken)> part;
  std::function<void(std::uint64_t stream, std::uint64_t count, AckFn ack)> end;
  std::function<void(std::uint64_t stream)> abort;
};

class IntakeServer {
 public:
  using AckFn = IntakeSink::AckFn;

  IntakeServer(boost::asio::io_context& io, IntakeServerOptions options, IntakeSink sink);
  ~IntakeServer();

  Status start();  // binds and accepts
  void stop();     // closes the listener and every connection
  void setAccepting(bool accepting);

  std::uint16_t port() const;        // the bound port (after start)
  std::size_t connections() const;  // TCP and in process
  std::size_t localLinks() const;   // in process
  bool listening() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lcc::qm
