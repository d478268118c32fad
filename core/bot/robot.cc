#include "bot/robot.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace lcc::bot {

namespace asio = boost::asio;

namespace {
std::atomic<std::uint64_t> g_next_fetcher_id{1};

std::string parentOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Status fsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::ioError(path + ": cannot open to sync");
  int rc = ::fdatasync(fd);
  ::close(fd);
  return rc == 0 ? Status::ok() : Status::ioError(path + ": fdatasync failed");
}
}  // namespace

std::string defaultRobotName() {
  char host[256] = "robot";
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + "-" + std::to_string(::getpid());
}

std::string tempNameFor(const std::string& file) {
  // Unique per process and fetch, so a robot that lost its connection but still
  // finishes a transfer never shares a temporary file with the robot the fetch was
  // handed to next.
  static std::atomic<std::uint64_t> seq{0};
  static const std::string pid = std::to_string(::getpid());
  std::string out;
  out.reserve(file.size() + 32);
  out.append(file).append(".").append(pid).append("-").append(std::to_string(seq.fetch_add(1))).append(".tmp");
  return out;
}

// ---- RobotCore --------------------------------------------------------------------

RobotCore::RobotCore(Fetcher& fetcher, Env& env, RobotOptions options, RobotCounters* counters, Reply reply)
    : fetcher_(fetcher), env_(env), opts_(std::move(options)), counters_(counters), reply_(std::move(reply)) {}

Status RobotCore::checkPath(const std::string& file) const {
  if (file.empty() || file.front() != '/') return Status::invalidArgument("file is not an absolute path");
  if (file.find("/../") != std::string::npos || file.find("/./") != std::string::npos ||
      (file.size() >= 3 && file.compare(file.size() - 3, 3, "/..") == 0) || file.back() == '/') {
    return Status::invalidArgument("file path is not canonical");
  }
  if (!opts_.content_root.empty()) {
    const std::string& root = opts_.content_root;
    if (file.size() <= root.size() + 1 || file.compare(0, root.size(), root) != 0 || file[root.size()] != '/') {
      return Status::invalidArgument("file outside the content folder " + root);
    }
  }
  return Status::ok();
}

void RobotCore::cancelAll() {
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    for (const auto& [fid, botm_id] : running_) ids.push_back(fid);
  }
  for (std::uint64_t fid : ids) fetcher_.cancel(fid);
}

void RobotCore::fetch(const proto::RobotFetch& f) {
  proto::RobotResult fail;
  fail.id = f.id;
  fail.ok = false;
  bool duplicate = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    for (const auto& [fid, botm_id] : running_) duplicate = duplicate || botm_id == f.id;
  }
  if (duplicate) {
    fail.code = ErrorCode::kInternal;
    fail.message = "fetch id already in flight";
    reply_(fail);
    return;
  }
  if (Status s = checkPath(f.file); !s.isOk()) {
    fail.code = ErrorCode::kInternal;
    fail.message = s.message();
    if (counters_) counters_->refused++;
    reply_(fail);
    return;
  }
  std::string dir = parentOf(f.file);
  if (!known_dirs_.count(dir)) {  // one stat per folder, not per fetch
    if (!env_.exists(dir)) (void)env_.createDirs(dir);
    if (known_dirs_.size() > 4096) known_dirs_.clear();
    known_dirs_.insert(std::move(dir));
  }

  FetchRequest req;
  req.id = g_next_fetcher_id.fetch_add(1);
  req.url = f.url;
  req.path = tempNameFor(f.file);
  req.expected_mime = f.mime;
  if (f.since) req.if_modified_since = fromUnixMillis(*f.since * 1000);
  req.max_size = f.max_size;
  req.redirects = f.scope.redirects;
  req.redirect_prefixes = f.scope.prefixes;

  const std::uint64_t fid = req.id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;  // cancelAll() ran meanwhile: start nothing it could miss
    running_.emplace(fid, f.id);
  }
  in_flight_++;
  auto self = shared_from_this();
  const bool sync = opts_.sync_files;
  Status s = fetcher_.start(req, [self, fid, botm_id = f.id, file = f.file, tmp = req.path, sync](const FetchResult& r) {
    // Fetcher thread: the file work, then the answer.
    proto::RobotResult out;
    out.id = botm_id;
    out.http = r.http_status;
    if (r.retry_after) out.retry_after = r.retry_after->count() / 1000;
    if (r.ok() && r.unchanged) {
      out.ok = true;
      out.unchanged = true;
      if (out.http == 0) out.http = 304;
    } else if (r.ok()) {
      Status st = sync ? fsyncPath(tmp) : Status::ok();
      if (st.isOk()) st = self->env_.rename(tmp, file);
      if (st.isOk() && sync) st = self->env_.syncDir(parentOf(file));
      if (st.isOk()) {
        out.ok = true;
        out.mime = r.mime;
        out.size = r.size;
        out.md5 = r.md5;
        out.mtime = r.last_modified;
      } else {
        (void)self->env_.removeFile(tmp);
        out.code = ErrorCode::kInternal;
        out.message = "storing the file failed: " + st.message();
      }
    } else {
      if (self->env_.exists(tmp)) (void)self->env_.removeFile(tmp);
      out.code = r.code;
      out.message = r.message.empty() ? std::string(errorCodeMessage(r.code)) : r.message;
    }
    if (self->counters_) {
      if (!out.ok) {
        self->counters_->failed++;
      } else if (out.unchanged) {
        self->counters_->unchanged++;
      } else {
        self->counters_->fetched++;
        self->counters_->bytes += out.size;
      }
    }
    self->finished(fid, out);
  });
  if (!s.isOk()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.erase(fid);
    }
    in_flight_--;
    fail.code = s.code() == StatusCode::kInvalidArgument ? ErrorCode::kInvalidUrl : ErrorCode::kInternal;
    fail.message = s.message();
    if (counters_) counters_->failed++;
    reply_(fail);
  }
}

void RobotCore::finished(std::uint64_t fid, const proto::RobotResult& r) {
  bool answer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(fid);
    answer = !cancelled_;
  }
  if (answer) reply_(r);
  in_flight_--;  // last: whoever waits for zero may destroy the fetcher next
}

// ---- RobotSession ---------------------------------------------------------------

RobotSession::RobotSession(std::shared_ptr<StreamSocket> socket, Fetcher& fetcher, Env& env, RobotOptions options,
                           RobotCounters* counters)
    : socket_(std::move(socket)),
      fetcher_(fetcher),
      env_(env),
      opts_(std::move(options)),
      counters_(counters),
      decoder_(proto::linkLimits(opts_.max_value_length)) {
  if (opts_.name.empty()) opts_.name = defaultRobotName();
}

RobotSession::~RobotSession() = default;

void RobotSession::start(std::function<void(const std::string&)> on_end) {
  on_end_ = std::move(on_end);
  std::weak_ptr<RobotSession> weak = shared_from_this();
  // Answers finished close together share one hand-off to the strand and one write.
  core_ = std::make_shared<RobotCore>(fetcher_, env_, opts_, counters_, [weak](const proto::RobotResult& r) {
    auto self = weak.lock();
    if (!self) return;  // the session is gone: the BOT-M re-hands the fetch
    if (self->answers_.push(r)) asio::post(self->socket_->strand(), [self] { self->sendAnswers(); });
  });
  auto self = shared_from_this();
  socket_->send(proto::encodeRobotOpen({opts_.slots, opts_.name}));
  socket_->start([self](std::string_view b) { self->onData(b); }, [self](const std::string& why) { self->ended(why); });
}

void RobotSession::stop() {
  auto self = shared_from_this();
  asio::post(socket_->strand(), [self] {
    if (self->ended_ || self->closing_) return;
    self->closing_ = true;
    if (self->core_) self->core_->cancelAll();
    self->socket_->closeAfterFlush(proto::encodeRobotClose());
  });
}

void RobotSession::ended(const std::string& why) {
  if (ended_) return;
  ended_ = true;
  if (core_) core_->cancelAll();
  if (on_end_) {
    auto cb = std::move(on_end_);
    on_end_ = nullptr;
    cb(why);
  }
}

void RobotSession::sendAnswers() {
  std::string bytes;
  for (const auto& r : answers_.drain()) proto::appendRobotResult(bytes, r);
  if (!bytes.empty() && !ended_ && !closing_ && !socket_->closed()) socket_->send(std::move(bytes));
}

void RobotSession::onData(std::string_view bytes) {
  std::vector<proto::ToRobotMessage> msgs;
  bool ok = decoder_.feed(bytes, &msgs);
  for (auto& m : msgs) {
    if (ended_ || closing_ || socket_->closed()) return;
    if (auto* h = std::get_if<proto::RobotBotmHello>(&m)) {
      hello_seen_ = true;
      spdlog::info("robot {}: BOT-M {} (machine {}) accepted us", opts_.name, socket_->peer(), h->machine);
    } else if (auto* f = std::get_if<proto::RobotFetch>(&m)) {
      core_->fetch(*f);
    } else if (std::holds_alternative<proto::LinkPing>(m)) {
      socket_->send(proto::encodeLinkPong());
    } else if (std::holds_alternative<proto::RobotEnd>(m)) {
      closing_ = true;
      core_->cancelAll();
      socket_->closeAfterFlush(proto::encodeRobotClose());
      return;
    }
  }
  if (!ok) {
    spdlog::warn("robot {}: BOT-M {} broke the protocol ({}): {}; disconnecting", opts_.name, socket_->peer(),
                 static_cast<int>(decoder_.error()), decoder_.errorMessage());
    socket_->close("protocol error");
  }
}

// ---- RobotClient ----------------------------------------------------------------

RobotClient::RobotClient(asio::io_context& io, Clock& clock, Fetcher& fetcher, Env& env, std::string target,
                         RobotOptions options, Millis retry_min, Millis retry_max, RobotCounters* counters)
    : io_(io),
      clock_(clock),
      fetcher_(fetcher),
      env_(env),
      target_(std::move(target)),
      opts_(std::move(options)),
      retry_min_(retry_min),
      retry_max_(retry_max),
      delay_(retry_min),
      counters_(counters) {}

void RobotClient::start() { connect(); }

std::size_t RobotClient::inFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_ ? session_->inFlight() : 0;
}

void RobotClient::stop() {
  std::shared_ptr<RobotSession> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (timer_ != 0) clock_.cancel(timer_);
    timer_ = 0;
    s = session_;
  }
  if (s) s->stop();
}

void RobotClient::retryLater() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  Millis d = delay_;
  delay_ = std::min(retry_max_, delay_ * 2);
  std::weak_ptr<RobotClient> weak = shared_from_this();
  timer_ = clock_.schedule(d, [weak] {
    if (auto self = weak.lock()) asio::post(self->io_, [self] { self->connect(); });
  });
}

void RobotClient::connect() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    timer_ = 0;
  }
  std::string host, port;
  if (!splitHostPort(target_, &host, &port)) {
    spdlog::error("robot: bad BOT-M address {}", target_);
    return;
  }
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io_);
  auto self = shared_from_this();
  resolver->async_resolve(host, port, [self, resolver](boost::system::error_code ec,
                                                       asio::ip::tcp::resolver::results_type results) {
    if (ec) {
      self->retryLater();
      return;
    }
    auto sock = std::make_shared<asio::ip::tcp::socket>(self->io_);
    asio::async_connect(*sock, results, [self, sock](boost::system::error_code ec2, const asio::ip::tcp::endpoint&) {
      if (ec2) {
        self->retryLater();
        return;
      }
      auto stream = std::make_shared<StreamSocket>(self->io_, std::move(*sock));
      auto session = std::make_shared<RobotSession>(stream, self->fetcher_, self->env_, self->opts_, self->counters_);
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        if (self->stopping_) {
          stream->close("stopping");
          return;
        }
        self->session_ = session;
        self->delay_ = self->retry_min_;
      }
      self->connected_ = true;
      session->start([self](const std::string& why) {
        self->connected_ = false;
        spdlog::info("robot: connection to BOT-M {} ended: {}", self->target_, why);
        self->retryLater();
      });
    });
  });
}

}  // namespace lcc::bot
