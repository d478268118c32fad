#include "support/http_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lcc::testing {
namespace {

const char* reasonFor(int status) {
  switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 410: return "Gone";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
  }
  return "Status";
}

bool sendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

}  // namespace

HttpTestServer::HttpTestServer() {
  default_ = [](const HttpTestRequest&) {
    HttpTestResponse r;
    r.status = 404;
    r.headers = {{"Content-Type", "text/plain"}};
    r.body = "not found\n";
    return r;
  };
}

HttpTestServer::~HttpTestServer() { stop(); }

Status HttpTestServer::start() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::ioError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    int err = errno;
    ::close(fd);
    return Status::ioError(std::string("bind/listen: ") + std::strerror(err));
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  listen_fd_ = fd;
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
  return Status::ok();
}

void HttpTestServer::stop() {
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || listen_fd_ < 0) {
      stopping_ = true;
      return;
    }
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    cv_.notify_all();
  }
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  ::close(listen_fd_);
}

std::string HttpTestServer::url(std::string_view path_and_query) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path_and_query);
}

void HttpTestServer::serve(const std::string& path, HttpTestResponse response) {
  handle(path, [response](const HttpTestRequest&) { return response; });
}

void HttpTestServer::handle(const std::string& path, HttpTestHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  routes_[path] = std::move(handler);
}

void HttpTestServer::setDefault(HttpTestHandler handler) {
  std::lock_guard<std::mutex> lock(mu_);
  default_ = std::move(handler);
}

void HttpTestServer::releaseStalls() {
  std::lock_guard<std::mutex> lock(mu_);
  ++release_gen_;
  cv_.notify_all();
}

std::size_t HttpTestServer::stalledNow() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stalled_;
}

std::vector<HttpTestRequest> HttpTestServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::size_t HttpTestServer::requestCount(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<std::size_t>(
      std::count_if(requests_.begin(), requests_.end(), [&](const HttpTestRequest& r) { return r.path == path; }));
}

void HttpTestServer::acceptLoop() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    std::lock_guard<std::mutex> lock(mu_);
    if (fd < 0) {
      if (stopping_) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    if (stopping_) {
      ::close(fd);
      return;
    }
    open_fds_.insert(fd);
    workers_.emplace_back([this, fd] { serveConnection(fd); });
  }
}

bool HttpTestServer::stallUntilReleased() {
  std::unique_lock<std::mutex> lock(mu_);
  const std::uint64_t gen = release_gen_;
  ++stalled_;
  cv_.wait(lock, [&] { return stopping_ || release_gen_ != gen; });
  --stalled_;
  return !stopping_;
}

void HttpTestServer::serveConnection(int fd) {
  auto finish = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(fd);
    ::close(fd);
  };
  // Read the head.
  std::string data;
  char buf[8192];
  std::size_t head_end = std::string::npos;
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0 || data.size() > 1 << 20) return finish();
    data.append(buf, static_cast<std::size_t>(n));
  }
  HttpTestRequest req;
  std::size_t line_end = data.find("\r\n");
  std::string request_line = data.substr(0, line_end);
  auto sp1 = request_line.find(' ');
  auto sp2 = request_line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return finish();
  req.method = request_line.substr(0, sp1);
  req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  req.path = req.target.substr(0, req.target.find('?'));
  std::size_t pos = line_end + 2;
  while (pos < head_end) {
    std::size_t e = data.find("\r\n", pos);
    std::string line = data.substr(pos, e - pos);
    pos = e + 2;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    req.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  std::size_t want = 0;
  if (auto cl = req.header("content-length"); !cl.empty()) want = std::stoul(cl);
  req.body = data.substr(head_end + 4);
  while (req.body.size() < want) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return finish();
    req.body.append(buf, static_cast<std::size_t>(n));
  }
  HttpTestHandler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(req);
    auto it = routes_.find(req.path);
    handler = it != routes_.end() ? it->second : default_;
  }
  HttpTestResponse r = handler(req);
  if (r.close_without_response) return finish();
  if (r.stall == HttpTestResponse::Stall::kBeforeHeaders && !stallUntilReleased()) return finish();

  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + reasonFor(r.status) + "\r\n";
  bool has_length = false;
  for (const auto& [k, v] : r.headers) {
    head += k + ": " + v + "\r\n";
    has_length = has_length || lower(k) == "content-length";
  }
  const bool no_body = r.status == 304 || r.status == 204 || req.method == "HEAD";
  if (r.chunked && !no_body) {
    head += "Transfer-Encoding: chunked\r\n";
  } else if (!has_length && !no_body) {
    head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  head += "Connection: close\r\n\r\n";
  if (!sendAll(fd, head)) return finish();
  if (r.stall == HttpTestResponse::Stall::kAfterHeaders && !stallUntilReleased()) return finish();
  if (!no_body) {
    const std::size_t half = r.body.size() / 2;
    std::string_view body = r.body;
    auto sendBody = [&](std::string_view part) {
      if (!r.chunked) return sendAll(fd, part);
      const std::size_t step = std::max<std::size_t>(1, r.chunk_size);
      for (std::size_t i = 0; i < part.size(); i += step) {
        std::string_view c = part.substr(i, step);
        char size_line[32];
        std::snprintf(size_line, sizeof size_line, "%zx\r\n", c.size());
        if (!sendAll(fd, size_line) || !sendAll(fd, c) || !sendAll(fd, "\r\n")) return false;
      }
      return true;
    };
    if (r.stall == HttpTestResponse::Stall::kMidBody) {
      if (!sendBody(body.substr(0, half)) || !stallUntilReleased()) return finish();
      if (!sendBody(body.substr(half))) return finish();
    } else if (!sendBody(body)) {
      return finish();
    }
    if (r.chunked) sendAll(fd, "0\r\n\r\n");
  }
  ::shutdown(fd, SHUT_WR);
  // Drain until the client closes, so it reads everything before the RST of a close.
  while (::recv(fd, buf, sizeof buf, 0) > 0) {
  }
  finish();
}

HttpTestReply httpTestRequest(std::uint16_t port, const std::string& method, const std::string& target,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              const std::string& body) {
  HttpTestReply reply;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return reply;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return reply;
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty()) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "Connection: close\r\n\r\n" + body;
  if (!sendAll(fd, req)) {
    ::close(fd);
    return reply;
  }
  std::string data;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const std::size_t head_end = data.find("\r\n\r\n");
  if (data.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return reply;
  reply.status = std::atoi(data.c_str() + 9);
  std::size_t pos = data.find("\r\n") + 2;
  while (pos < head_end) {
    std::size_t e = data.find("\r\n", pos);
    std::string line = data.substr(pos, e - pos);
    pos = e + 2;
    auto colon = line.find(':');
    if (colon != std::string::npos) reply.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  reply.body = data.substr(head_end + 4);
  return reply;
}

}  // namespace lcc::testing
