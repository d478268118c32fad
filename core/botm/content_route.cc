#include "botm/content_route.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/ip/host_name.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "botm/botm_service.h"
#include "botm/filename_store.h"
#include "common/config/config.h"
#include "common/content_locator.h"
#include "common/posix_env.h"
#include "common/response_head.h"
#include "lcc/support/cu_xml_format.h"
#include "net/host_port.h"

namespace lcc::botm {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::uint64_t kWholeBodyMax = 64 * 1024;  // larger files are streamed

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Opens <dir>/<name> one component at a time, never following a symbolic link below
// `dir`. Returns -1 with errno set.
int openBelow(const std::string& dir, const std::string& name) {
  Fd cur(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (cur.fd < 0) return -1;
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = name.find('/', start);
    std::string part = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (slash == std::string::npos) {
      return ::openat(cur.fd, part.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    }
    int next = ::openat(cur.fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return -1;
    ::close(cur.fd);
    cur.fd = next;
    start = slash + 1;
  }
}

struct RouteState {
  ContentRouteOptions options;
  Counter* reads;
  Counter* refused;
  Counter* bytes;
};

http::Response notFound(RouteState& st) {
  st.refused->inc();
  return http::Response::text(404, "not found\n");
}

std::string base64(const std::string& bytes) {
  std::string out;
  proto::Base64Encoder enc;
  enc.update(bytes.data(), bytes.size(), out);
  enc.finish(out);
  return out;
}

// The response head the robot kept for `name` (common/response_head.h), base64, for the
// X-LCC-Response-Head header: the attribute of the open content file `content_fd`, else
// the side file; empty when there is none or it is over the bound. Sent as stored: the
// reader checks the MD5 line against its record.
std::string headHeader(const std::string& dir, const std::string& name, int content_fd) {
  auto attribute = readFdAttribute(content_fd, kResponseHeadAttribute);
  if (attribute.isOk() && attribute->has_value() && !(*attribute)->empty()) {
    return (*attribute)->size() > kMaxHeadHeaderFile ? std::string() : base64(**attribute);
  }
  Fd fd(openBelow(dir, responseHeadPath(name)));
  if (fd.fd < 0) return {};
  struct stat sb;
  if (::fstat(fd.fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
      static_cast<std::uint64_t>(sb.st_size) > kMaxHeadHeaderFile) {
    return {};
  }
  std::string bytes(static_cast<std::size_t>(sb.st_size), '\0');
  ssize_t n = ::pread(fd.fd, bytes.data(), bytes.size(), 0);
  if (n <= 0) return {};
  bytes.resize(static_cast<std::size_t>(n));
  return base64(bytes);
}

http::Response serve(const std::shared_ptr<RouteState>& state, const http::Request& req) {
  RouteState& st = *state;
  std::string_view path = req.path;
  if (path.compare(0, kContentRoutePrefix.size(), kContentRoutePrefix) != 0) return notFound(st);
  const std::string name(path.substr(kContentRoutePrefix.size()));
  // Only names this BOT-M could have issued: no traversal, no absolute path, no other
  // spelling of a number. Nothing else reaches the file system.
  if (!FilenameStore::parseName(name, st.options.fanout)) return notFound(st);
  auto fd = std::make_shared<Fd>(openBelow(st.options.content_dir, name));
  if (fd->fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      spdlog::warn("botm: content request {} from {} refused: a symbolic link or non-folder in the path",
                   req.path, req.remote_ip);
    }
    return notFound(st);
  }
  struct stat sb;
  if (::fstat(fd->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    spdlog::warn("botm: content request {} from {} refused: not a regular file", req.path, req.remote_ip);
    return notFound(st);
  }
  // Back to blocking reads (O_NONBLOCK only kept a FIFO from blocking the open).
  ::fcntl(fd->fd, F_SETFL, ::fcntl(fd->fd, F_GETFL) & ~O_NONBLOCK);
  const std::uint64_t size = static_cast<std::uint64_t>(sb.st_size);
  st.reads->inc();
  http::Response r;
  r.status = 200;
  r.content_type = "application/octet-stream";
  r.headers.emplace_back("X-LCC-Machine", st.options.machine);
  r.headers.emplace_back("X-LCC-Size", std::to_string(size));
  r.headers.emplace_back("Cache-Control", "no-store");
  if (std::string head = headHeader(st.options.content_dir, name, fd->fd); !head.empty()) {
    r.headers.emplace_back(std::string(kResponseHeadHeader), std::move(head));
  }
  std::string where = req.path;
  if (size <= kWholeBodyMax) {
    // A small file goes as one whole body with a real Content-Length: one write, no
    // hop to a stream thread (most web pages; memory: kWholeBodyMax per HTTP worker).
    r.body.resize(static_cast<std::size_t>(size));
    std::size_t off = 0;
    while (off < r.body.size()) {
      ssize_t n = ::pread(fd->fd, r.body.data() + off, r.body.size() - off, static_cast<off_t>(off));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        spdlog::warn("botm: content file {} changed while it was read; answered 503", where);
        return http::Response::text(503, "content file changed while it was read; try again\n");
      }
      off += static_cast<std::size_t>(n);
    }
    st.bytes->inc(size);
    return r;
  }
  // Streamed with its length announced (Content-Length, not chunked): the client can
  // check the size before the body, and the connection stays reusable.
  r.stream_length = size;
  r.stream = [fd, size, state, where](ByteSink& sink) -> Status {
    std::vector<char> buf(static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, std::max<std::uint64_t>(size, 1))));
    std::uint64_t off = 0;
    while (off < size) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - off));
      ssize_t n = ::pread(fd->fd, buf.data(), want, static_cast<off_t>(off));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::ioError(std::string("reading ") + where + ": " + std::strerror(errno));
      if (n == 0) {
        return Status::ioError("content file " + where + " shrank while it was sent (" + std::to_string(off) +
                               " of " + std::to_string(size) + " bytes)");
      }
      LCC_RETURN_IF_ERROR(sink.write(std::string_view(buf.data(), static_cast<std::size_t>(n))));
      off += static_cast<std::uint64_t>(n);
      state->bytes->inc(static_cast<std::uint64_t>(n));
    }
    return Status::ok();
  };
  return r;
}

}  // namespace

void addContentRoute(http::Router& router, const ContentRouteOptions& options, Metrics& metrics) {
  auto st = std::make_shared<RouteState>();
  st->options = options;
  st->reads = &metrics.counter("lcc_botm_content_reads_total", "content files served on GET /content/");
  st->refused = &metrics.counter("lcc_botm_content_refused_total", "GET /content/ answered 404 (bad or absent name)");
  st->bytes = &metrics.counter("lcc_botm_content_bytes_total", "content bytes served on GET /content/");
  router.add("GET", std::string(kContentRoutePrefix), [st](const http::Request& req) { return serve(st, req); });
}

Result<std::string> contentUrlFromConfig(const Config& cfg, bool has_http) {
  std::string url = cfg.getString("botm.content_url");
  if (url.empty()) return std::string();
  if (url == "auto") {
    if (!has_http) return std::string();
    // The plain port when it is on, else the HTTPS one (docs/security.md §3).
    std::string scheme = "http://";
    std::string listen = cfg.getString("listen.http");
    if (listen.empty()) {
      scheme = "https://";
      listen = cfg.getString("listen.https");
    }
    if (listen.empty()) return std::string();  // no HTTP port at all: not advertised
    auto hp = net::HostPort::parse(listen);
    if (hp.isOk() && hp->isWildcard()) {
      // A wildcard address is no place to connect to: use the host's name.
      boost::system::error_code ec;
      std::string name = boost::asio::ip::host_name(ec);
      if (ec || name.empty()) name = "127.0.0.1";
      listen = name + ":" + hp->portString();
    }
    url = scheme + listen;
  }
  std::string why;
  auto norm = normalizeContentUrl(url, &why);
  if (!norm) return Status::invalidArgument(why + " (got " + url + ")");
  return *norm;
}

}  // namespace lcc::botm
