// test_http_server.h — a small scripted HTTP/1.1 server on 127.0.0.1 for fetch tests.
//
// Routes (by path):
//   /ok/<any>          200 text/html, 10240 bytes, Last-Modified 2024-05-01T11:58:00Z
//   /cond/<any>        304 when If-Modified-Since is sent, else as /ok
//   /status/<N>        status N with a short text/html body; 429 and 503 add Retry-After: 120
//   /redirect/<N>      302 to /redirect/<N-1>; /redirect/0 is /ok
//   /loop              302 to itself
//   /to-file           302 to file:///etc/passwd
//   /to/<url-encoded>  302 to the given absolute URL (':' and '/' may be plain)
//   /stall             reads the request and never answers
//   /chunked/<N>       N bytes, chunked transfer encoding (no Content-Length)
//   /big/<N>           N bytes with Content-Length
//   /type/<a>/<b>      200 with Content-Type a/b
//   /empty             200, Content-Length 0
//   /ua                200 text/plain whose body is the request's User-Agent
// Keep-alive is honoured. THREADS: one thread per connection (tests only).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lcc::testing {

class TestHttpServer {
 public:
  TestHttpServer();
  ~TestHttpServer();
  std::uint16_t port() const { return port_; }
  std::string url(const std::string& path) const;  // "http://127.0.0.1:<port><path>"
  std::uint64_t connections() const { return connections_.load(); }
  std::uint64_t requests() const { return requests_.load(); }
  static std::string body(std::size_t n);  // the deterministic body of /ok, /big, /chunked

 private:
  void acceptLoop();
  void serve(int fd);

  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> connections_{0}, requests_{0};
  std::mutex mu_;
  std::vector<int> clients_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace lcc::testing
