// http_server.h — the daemon's HTTP port (Boost.Beast): RS pages, /cu/query,
// /status, /metrics and the admin API (docs/protocol.md §7).
//
// Roles register routes on a Router before the server starts. Handlers run on the
// server's worker threads, never on an io thread, so they may block on stores.
// A handler answers with a whole body, or with `stream`: the server sends the status
// line and headers (chunked transfer encoding) and then calls `stream` on a worker
// thread with a ByteSink; write() blocks while the client is slow (back-pressure)
// and fails once the client is gone.
// THREADS: Router is filled on the main thread before start(), then read-only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lcc/byte_sink.h"
#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::net {
class TlsContextSlot;
}

namespace lcc {
class Config;
class Metrics;
}

namespace lcc::http {

struct Request {
  std::string method;  // "GET", "POST"
  std::string target;  // as sent: "/cu/query?format=xml"
  std::string path;    // decoded path without the query: "/cu/query"
  std::multimap<std::string, std::string> query;    // decoded query parameters (and form fields of a urlencoded POST)
  std::map<std::string, std::string> headers;       // lower-case names
  std::string body;
  std::string remote_ip;
  bool remote_loopback = false;

  // First value of a query/form parameter, or `fallback`.
  std::string param(const std::string& name, const std::string& fallback = "") const {
    auto it = query.find(name);
    return it == query.end() ? fallback : it->second;
  }
  std::vector<std::string> params(const std::string& name) const {
    std::vector<std::string> out;
    auto [b, e] = query.equal_range(name);
    for (auto it = b; it != e; ++it) out.push_back(it->second);
    return out;
  }
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::function<Status(ByteSink&)> stream;  // when set, body is ignored
  // A streamed body of exactly this many bytes: sent with Content-Length instead of
  // chunked, so the connection stays reusable. A stream that writes another count is
  // cut and the connection closed (the client sees a short body, never a wrong one).
  std::optional<std::uint64_t> stream_length;

  static Response text(int status, std::string body) {
    Response r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }
  static Response json(int status, std::string body) {
    Response r;
    r.status = status;
    r.content_type = "application/json";
    r.body = std::move(body);
    return r;
  }
  static Response html(int status, std::string body) {
    Response r;
    r.status = status;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::move(body);
    return r;
  }
};

using Handler = std::function<Response(const Request&)>;

class Router {
 public:
  // Exact path match, or every path under `path` when it ends with '/'.
  void add(const std::string& method, const std::string& path, Handler handler);
  // Exactly `path`, even when it ends with '/' (GET / is the home page, not a catch-all).
  void addExact(const std::string& method, const std::string& path, Handler handler);
  // The handler for a request; a 404/405 handler when none.
  Response dispatch(const Request& req) const;
  bool empty() const { return routes_.empty(); }

 private:
  struct Route {
    std::string method;
    std::string path;
    Handler handler;
    bool exact = false;
  };
  std::vector<Route> routes_;
};

// Every member with a config key is named after it and has no default of its own: the
// default is the schema's (core/common/config/schema.cc), read by fromConfig() (in
// server_config.cc). Tests start from ServerOptions::fromConfig(Config::defaults()).
struct ServerOptions {
  std::string listen;                       // listen.http (the HTTPS server: listen.https)
  std::size_t max_body = 0;                 // http.max_body
  Millis idle_timeout{};                    // http.idle_timeout: waiting for a request; each body read and write
  std::size_t workers = 0;                  // http.workers
  std::size_t max_connections = 0;          // http.max_connections: beyond, an idle connection is closed for it, else refused
  std::size_t stream_workers = 0;           // http.stream_workers: threads running streamed bodies
  std::size_t stream_buffer = 0;            // http.stream_buffer: bytes queued per streamed body before write() blocks
  std::size_t max_header = 0;               // http.max_header: request line + header fields (431 beyond)
  Millis header_timeout{};                  // http.header_timeout: first byte to end of header (at most idle_timeout)
  // Per source address (issue 25): one address cannot take what every client shares.
  std::size_t max_connections_per_ip = 0;   // http.max_connections_per_ip: more are refused at once (503; HTTPS: closed before the handshake)
  std::size_t max_handlers_per_ip = 0;      // http.max_handlers_per_ip: its requests in the handler pool at once (more: 503 + Retry-After)
  std::size_t max_streams_per_ip = 0;       // http.max_streams_per_ip: its streamed answers at once (more: 503 + Retry-After)
  Millis write_timeout{};                   // http.write_timeout: a write that moves no byte this long cuts the connection
  // No config key:
  Metrics* metrics = nullptr;               // lcc_http_* counters when set
  // HTTPS (listen.https): every connection does a TLS handshake first with the slot's
  // current context (null: plain HTTP).
  std::shared_ptr<net::TlsContextSlot> tls;

  // listen.http and http.*; `metrics` (may be null) receives the lcc_http_* counters.
  static ServerOptions fromConfig(const Config& config, Metrics* metrics = nullptr);
};

class Server {
 public:
  Server(boost::asio::io_context& io, const Router& router, ServerOptions options);
  ~Server();
  Status start();   // binds; the port is then known (port 0 in tests)
  void stop();      // closes the listener and every connection
  std::uint16_t port() const;
  // Connections waiting for a request with nothing received (those the total limit may close).
  std::size_t idleConnectionsForTest() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lcc::http
