// http_test_server.h — a tiny real HTTP/1.1 server on 127.0.0.1 for tests (fetchers,
// the RS secret fetch, HTTP clients). Plain sockets, a thread per connection, one
// request per connection (answers carry "Connection: close").
//
//   HttpTestServer server;
//   ASSERT_TRUE(server.start().isOk());
//   server.serve("/a.htm", {.status = 200, .headers = {{"Content-Type", "text/html"}}, .body = "hi"});
//   server.url("/a.htm?x=1")  -> "http://127.0.0.1:PORT/a.htm?x=1"
//
// Routes match the path without the query. Unrouted paths get 404. A response can be
// chunked, can stall (before the headers, after the headers, or half-way through the
// body) until releaseStalls() or stop(), or can close the connection without an answer.
// Every request is recorded. THREADS: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "lcc/status.h"

namespace lcc::testing {

struct HttpTestRequest {
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;    // without the query
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpTestResponse {
  enum class Stall { kNone, kBeforeHeaders, kAfterHeaders, kMidBody };

  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Length is added unless chunked
  std::string body;
  bool chunked = false;            // Transfer-Encoding: chunked
  std::size_t chunk_size = 1024;
  Stall stall = Stall::kNone;
  bool close_without_response = false;
};

using HttpTestHandler = std::function<HttpTestResponse(const HttpTestRequest&)>;

class HttpTestServer {
 public:
  HttpTestServer();
  ~HttpTestServer();
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  // Listens on 127.0.0.1, port chosen by the kernel.
  Status start();
  // Closes the listener and every connection (stalls end), joins the threads. Idempotent.
  void stop();

  std::uint16_t port() const { return port_; }
  std::string url(std::string_view path_and_query) const;

  void serve(const std::string& path, HttpTestResponse response);
  void handle(const std::string& path, HttpTestHandler handler);
  void setDefault(HttpTestHandler handler);

  void releaseStalls();
  // Connections currently held in a stall (poll it with a deadline, never sleep).
  std::size_t stalledNow() const;
  std::vector<HttpTestRequest> requests() const;
  std::size_t requestCount(const std::string& path) const;

 private:
  void acceptLoop();
  void serveConnection(int fd);
  bool stallUntilReleased();  // false when the server is stopping

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  bool stopping_ = false;
  std::uint64_t release_gen_ = 0;
  std::size_t stalled_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  std::set<int> open_fds_;
  std::map<std::string, HttpTestHandler> routes_;
  HttpTestHandler default_;
  std::vector<HttpTestRequest> requests_;
};

// A blocking one-shot HTTP/1.1 client for tests: sends `method target` to
// 127.0.0.1:port with "Connection: close" and reads the whole answer. Status 0 when
// the connection failed. The body is returned as sent (chunked bodies are not decoded).
struct HttpTestReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};
HttpTestReply httpTestRequest(std::uint16_t port, const std::string& method, const std::string& target,
                              const std::vector<std::pair<std::string, std::string>>& headers = {},
                              const std::string& body = "");

}  // namespace lcc::testing
