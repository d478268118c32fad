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

namespace lcc::cu {

struct CuServerOptions {
  std::string listen = "127.0.0.1:7704";  // empty: no plain port
  // The TLS port (listen.cu_tls; empty: none), its context and handshake deadline.
  std::string listen_tls;
  std::shared_ptr<net::TlsContextSlot> tls;
  Millis handshake_timeout{10000};
  std::size_t max_connections = 64;
  std::size_t max_connections_per_ip = 8;  // each port (listen.cu, listen.cu_tls) on its own
  // Exports running or waiting for a worker at once from one address; at most
  // export_threads - 1 is used (when there are two or more), so one address never
  // takes every worker.
  std::size_t max_exports_per_ip = 2;
  std::int64_t idle_timeout_ms = 30000;
  std::size_t max_query_bytes = 64 * 1024;
  std::int64_t write_timeout_ms = 300000;
  std::size_t pipe_buffer = 256 * 1024;
  std::size_t export_threads = 8;
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
