// cu_server.h — the CU port (listen.cu): one XML query per connection, the answer
// streamed until the server closes (docs/protocol.md §3).
//
// Per connection, on its strand: read the query (CuQueryParser; cu.max_query_bytes,
// cu.idle_timeout -> 133), then hand it to an export worker, which runs the query
// engine into a BoundedPipe (cu.pipe_buffer) while the strand writes the pipe's
// chunks to the socket. A client that takes no bytes for cu.write_timeout is
// dropped. Past cu.max_connections or cu.max_connections_per_ip a new connection gets
// query_rejected 120 (plain port; the TLS port closes it before the handshake), and so
// does a query past cu.max_exports_per_ip exports at once from its address.
// Bad queries get query_rejected 100 (101 for limits), store failures 140.
// THREADS: Asio io threads carry bytes; cu.export_threads workers run exports.
// Timers go through lcc::Clock (SimClock in tests).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "cu/query_engine.h"
#include "lcc/clock.h"
#include "net/tls.h"

namespace lcc {
class Config;
}

namespace lcc::cu {

// Members with a config key carry no default: fromConfig() (cu_options.cc) reads the
// schema's. Tests start from CuServerOptions::fromConfig(Config::defaults()).
struct CuServerOptions {
  std::string listen;                      // listen.cu (empty: no plain port)
  std::string listen_tls;                  // listen.cu_tls (empty: none)
  Millis handshake_timeout{};              // tls.handshake_timeout
  std::size_t max_connections = 0;         // cu.max_connections
  std::size_t max_connections_per_ip = 0;  // cu.max_connections_per_ip: each port (listen.cu, listen.cu_tls) on its own
  // Exports running or waiting for a worker at once from one address; at most
  // export_threads - 1 is used (when there are two or more), so one address never
  // takes every worker.
  std::size_t max_exports_per_ip = 0;      // cu.max_exports_per_ip
  Millis idle_timeout{};                   // cu.idle_timeout
  std::size_t max_query_bytes = 0;         // cu.max_query_bytes
  Millis write_timeout{};                  // cu.write_timeout
  std::size_t pipe_buffer = 0;             // cu.pipe_buffer
  std::size_t export_threads = 0;          // cu.export_threads
  // No config key: the TLS port's context (NodeTls::server()).
  std::shared_ptr<net::TlsContextSlot> tls;

  static CuServerOptions fromConfig(const Config& config);
};

class CuServer {
 public:
  CuServer(boost::asio::io_context& io, QueryEngine& engine, Clock& clock, CuServerOptions options);
  ~CuServer();
  CuServer(const CuServer&) = delete;
  CuServer& operator=(const CuServer&) = delete;

  Status start();  // binds and accepts; port() is then known (port 0 in tests)
  // Closes the listener and every connection; waits for the export workers.
  void stop();
  std::uint16_t port() const;     // 0: no plain port
  std::uint16_t tlsPort() const;  // 0: no TLS port
  std::size_t connections() const;
  std::size_t exportsFrom(const std::string& address) const;  // running or waiting

  struct Impl;  // shared with the connections (cu_server.cc)

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace lcc::cu
