#include "test_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace lcc::testing {

namespace {
bool sendAll(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

std::string header(int status, const std::string& type, const std::string& extra, long long length) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " X\r\n";
  if (!type.empty()) h += "Content-Type: " + type + "\r\n";
  if (length >= 0) h += "Content-Length: " + std::to_string(length) + "\r\n";
  h += extra;
  h += "\r\n";
  return h;
}

constexpr const char* kLastModified = "Last-Modified: Wed, 01 May 2024 11:58:00 GMT\r\n";
}  // namespace

std::string TestHttpServer::body(std::size_t n) {
  std::string s;
  s.reserve(n);
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + (i * 7 + i / 26) % 26));
  return s;
}

TestHttpServer::TestHttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 512) != 0) {
    throw std::runtime_error("test http server: bind/listen failed");
  }
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

TestHttpServer::~TestHttpServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
  for (int fd : clients_) ::close(fd);
}

std::string TestHttpServer::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void TestHttpServer::acceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    connections_++;
    std::lock_guard<std::mutex> lock(mu_);
    clients_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void TestHttpServer::serve(int fd) {
  std::string in;
  char buf[8192];
  for (;;) {
    std::size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
    }
    std::string req = in.substr(0, end + 4);
    in.erase(0, end + 4);
    requests_++;
    auto sp1 = req.find(' ');
    auto sp2 = req.find(' ', sp1 + 1);
    std::string path = req.substr(sp1 + 1, sp2 - sp1 - 1);
    auto headerValue = [&](const std::string& name) -> std::string {
      std::string lower = req;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto p = lower.find("\r\n" + name + ":");
      if (p == std::string::npos) return {};
      p += name.size() + 3;
      auto e = req.find("\r\n", p);
      std::string v = req.substr(p, e - p);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    };
    auto starts = [&](const char* p) { return path.rfind(p, 0) == 0; };
    std::string out;
    if (starts("/redirect/")) {
      int n = std::stoi(path.substr(10));
      if (n > 0) {
        out = header(302, "text/html", "Location: /redirect/" + std::to_string(n - 1) + "\r\n", 0);
      } else {
        out = header(200, "text/html", kLastModified, 10240) + body(10240);
      }
    } else if (starts("/ok/")) {
      out = header(200, "text/html; charset=utf-8", kLastModified, 10240) + body(10240);
    } else if (starts("/cond/")) {
      if (!headerValue("if-modified-since").empty()) {
        out = header(304, "", kLastModified, -1);
      } else {
        out = header(200, "text/html", kLastModified, 10240) + body(10240);
      }
    } else if (starts("/status/")) {
      int s = std::stoi(path.substr(8));
      std::string extra = (s == 503 || s == 429) ? "Retry-After: 120\r\n" : "";
      std::string b = "<html>status " + std::to_string(s) + "</html>";
      out = header(s, "text/html", extra, static_cast<long long>(b.size())) + b;
    } else if (path == "/loop") {
      out = header(302, "text/html", "Location: /loop\r\n", 0);
    } else if (path == "/to-file") {
      out = header(302, "text/html", "Location: file:///etc/passwd\r\n", 0);
    } else if (starts("/to/")) {
      out = header(302, "text/html", "Location: " + path.substr(4) + "\r\n", 0);
    } else if (path == "/stall") {
      while (!stopping_) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) {
          if (::recv(fd, buf, sizeof buf, 0) <= 0) return;
        }
      }
      return;
    } else if (starts("/chunked/")) {
      std::size_t n = std::stoull(path.substr(9));
      if (!sendAll(fd, header(200, "text/html", "Transfer-Encoding: chunked\r\n", -1))) return;
      std::string b = body(8192);
      std::size_t sent = 0;
      while (sent < n) {
        std::size_t k = std::min<std::size_t>(8192, n - sent);
        char len[32];
        std::snprintf(len, sizeof len, "%zx\r\n", k);
        if (!sendAll(fd, std::string(len) + b.substr(0, k) + "\r\n")) return;
        sent += k;
      }
      out = "0\r\n\r\n";
    } else if (starts("/big/")) {
      std::size_t n = std::stoull(path.substr(5));
      out = header(200, "text/html", "", static_cast<long long>(n)) + body(n);
    } else if (starts("/type/")) {
      out = header(200, path.substr(6), "", 5) + "hello";
    } else if (path == "/empty") {
      out = header(200, "text/html", "", 0);
    } else if (path == "/ua") {
      std::string ua = headerValue("user-agent");
      out = header(200, "text/plain", "", static_cast<long long>(ua.size())) + ua;
    } else {
      out = header(404, "text/html", "", 0);
    }
    if (!sendAll(fd, out)) return;
  }
}

}  // namespace lcc::testing
