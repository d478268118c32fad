#include "bot/robot.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "common/config/config.h"
#include "common/response_head.h"
#include "lcc/support/cu_xml_format.h"

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

RobotOptions RobotOptions::fromConfig(const Config& cfg) {
  RobotOptions o;
  o.slots = static_cast<std::uint32_t>(cfg.getInt("bot.slots"));
  o.sync_files = cfg.getBool("bot.sync_files");
  o.max_response_head = static_cast<std::uint64_t>(cfg.getInt("bot.max_response_head"));
  o.frames = cfg.getBool("node.link_frames");
  return o;
}

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

Status keepResponseHeadAttribute(Env& env, const std::string& tmp, const std::string& md5, const std::string& head) {
  return env.setAttribute(tmp, kResponseHeadAttribute, encodeResponseHead(md5, head));
}

Status keepResponseHeadFile(Env& env, const std::string& file, const std::string& md5, const std::string& head) {
  // Written in place, not through a temporary name: a reader takes the file only when
  // it is whole and names the body's MD5 (decodeResponseHead), so a torn or concurrent
  // write costs a `resource` record, never a wrong head; one rename less per fetch.
  auto f = env.openWritable(responseHeadPath(file), OpenMode::kTruncate);
  if (!f.isOk()) return f.status();
  Status s = (*f)->append(encodeResponseHead(md5, head));
  Status c = (*f)->close();
  return s.isOk() ? c : s;
}

namespace {

bool sameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

void adoptCarriedHead(FetchResult& r) {
  if (!r.ok() || r.unchanged || r.response_head.empty()) return;
  std::string_view carried, md5;
  std::string_view rest(r.response_head);
  for (std::size_t end = rest.find("\r\n"); end != std::string_view::npos; end = rest.find("\r\n")) {
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // the status line, the empty line
    if (sameName(line.substr(0, colon), kResponseHeadHeader)) carried = trimmed(line.substr(colon + 1));
    if (sameName(line.substr(0, colon), "X-LCC-MD5")) md5 = trimmed(line.substr(colon + 1));
  }
  if (carried.empty() || md5 != r.md5) return;
  std::string file;
  proto::Base64Decoder dec;
  if (!dec.update(carried, file) || !dec.finish()) return;
  std::string head = decodeResponseHead(file, r.md5);
  if (!head.empty()) r.response_head = std::move(head);
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

void RobotCore::fetch(const FetchRequest& f) {
  FetchResult fail;
  fail.id = f.id;
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
  if (Status s = checkPath(f.path); !s.isOk()) {
    fail.code = ErrorCode::kInternal;
    fail.message = s.message();
    if (counters_) counters_->refused++;
    reply_(fail);
    return;
  }
  std::string dir = parentOf(f.path);
  if (!known_dirs_.count(dir)) {  // one stat per folder, not per fetch
    if (!env_.exists(dir)) (void)env_.createDirs(dir);
    if (known_dirs_.size() > 4096) known_dirs_.clear();
    known_dirs_.insert(std::move(dir));
  }

  FetchRequest req = f;  // the same request, with the fetcher's id, the temporary name and our head limit
  req.id = g_next_fetcher_id.fetch_add(1);
  req.path = tempNameFor(f.path);
  req.max_response_head = opts_.max_response_head;

  const std::uint64_t fid = req.id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;  // cancelAll() ran meanwhile: start nothing it could miss
    running_.emplace(fid, f.id);
    if (opts_.clock != nullptr && f.lease.count() > 0) {
      const MonoTime now = opts_.clock->monoNow();
      leases_.add(fid, now, f.lease);
      armLeaseTimer(now + f.lease);
    }
  }
  in_flight_++;
  auto self = shared_from_this();
  Status s = fetcher_.start(req, [self, fid, botm_id = f.id, file = f.path, tmp = req.path](const FetchResult& got) {
    FetchResult r = got;
    adoptCarriedHead(r);
    if (self->opts_.uploader && r.ok() && !r.unchanged) return self->upload(fid, r, botm_id, file, tmp);
    self->finished(fid, self->store(r, botm_id, file, tmp));
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

namespace {
// What every answer takes from the fetcher's result: the BOT-M's id, the HTTP status,
// a Retry-After, and the ETag of a stored or unchanged body.
FetchResult answerTo(const FetchResult& r, std::uint64_t botm_id) {
  FetchResult out;
  out.id = botm_id;
  out.http_status = r.http_status;
  out.retry_after = r.retry_after;
  if (r.ok()) out.etag = r.etag;
  return out;
}
}  // namespace

FetchResult RobotCore::storedAnswer(const FetchResult& r, std::uint64_t botm_id, const Status& st,
                                     const char* what) {
  FetchResult out = answerTo(r, botm_id);
  if (st.isOk()) {
    out.mime = r.mime;
    out.size = r.size;
    out.md5 = r.md5;
    out.last_modified = r.last_modified;
  } else {
    out.etag.clear();
    out.code = ErrorCode::kInternal;  // retryable: the URL is fetched again
    out.message = std::string(what) + st.message();
  }
  count(out);
  return out;
}

void RobotCore::count(const FetchResult& out) {
  if (!counters_) return;
  if (!out.ok()) {
    counters_->failed++;
  } else if (out.unchanged) {
    counters_->unchanged++;
  } else {
    counters_->fetched++;
    counters_->bytes += out.size;
  }
}

FetchResult RobotCore::store(const FetchResult& r, std::uint64_t botm_id, const std::string& file,
                               const std::string& tmp) {
  if (r.ok() && !r.unchanged) {
    // The head rides on the temporary file: the rename shows body and head together.
    // Without a head nothing is removed: a side file an earlier fetch left names that
    // body's MD5 (common/response_head.h).
    const Status attribute = r.response_head.empty() ? Status::ok()
                                                     : keepResponseHeadAttribute(env_, tmp, r.md5, r.response_head);
    Status st = opts_.sync_files ? fsyncPath(tmp) : Status::ok();
    if (st.isOk()) st = env_.rename(tmp, file);
    if (st.isOk() && opts_.sync_files) st = env_.syncDir(parentOf(file));
    if (st.isOk() && !attribute.isOk()) keepHead(r, file, attribute);
    if (!st.isOk()) (void)env_.removeFile(tmp);
    return storedAnswer(r, botm_id, st, "storing the file failed: ");
  }
  FetchResult out = answerTo(r, botm_id);
  if (r.ok()) {
    out.unchanged = true;
    if (out.http_status == 0) out.http_status = 304;
  } else {
    if (env_.exists(tmp)) (void)env_.removeFile(tmp);
    out.code = r.code;
    out.message = r.message.empty() ? std::string(errorCodeMessage(r.code)) : r.message;
  }
  count(out);
  return out;
}

// The attribute was refused: the head goes to the side file, after the body (a crash
// in between leaves an older side file, which names the older body's MD5).
void RobotCore::keepHead(const FetchResult& r, const std::string& file, const Status& attribute) {
  Status h = keepResponseHeadFile(env_, file, r.md5, r.response_head);
  if (h.isOk()) {
    if (counters_) counters_->head_files++;
    return;
  }
  if (counters_) counters_->heads_failed++;
  spdlog::warn("robot: keeping the response head of {}: {}; then {}", file, attribute.message(), h.message());
}

void RobotCore::setMachine(const std::string& machine) {
  std::lock_guard<std::mutex> lock(mu_);
  machine_ = machine;
}

namespace {
// The BOT-M's name of a content file: the last three parts of its path (<d1>/<d2>/<n>,
// core/botm/filename_store.h); empty when the path has fewer.
std::string issuedName(const std::string& file) {
  std::size_t cut = file.size();
  for (int parts = 0; parts < 3; ++parts) {
    if (cut == 0) return {};
    cut = file.rfind('/', cut - 1);
    if (cut == std::string::npos) return {};
  }
  return file.substr(cut + 1);
}

// The robot's head as object metadata: base64 of its stored form (it names the body's
// MD5, common/response_head.h); empty when it would pass what S3 allows in metadata.
constexpr std::size_t kMaxHeadMetadata = 2048;
std::string headMetadata(const FetchResult& r) {
  if (r.response_head.empty()) return {};
  const std::string stored = encodeResponseHead(r.md5, r.response_head);
  if ((stored.size() + 2) / 3 * 4 > kMaxHeadMetadata) return {};
  std::string out;
  proto::Base64Encoder enc;
  enc.update(stored.data(), stored.size(), out);
  enc.finish(out);
  return out;
}
}  // namespace

void RobotCore::upload(std::uint64_t fid, const FetchResult& r, std::uint64_t botm_id, const std::string& file,
                       const std::string& tmp) {
  std::string machine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    machine = machine_;
  }
  const std::string name = issuedName(file);
  if (machine.empty() || name.empty()) {
    (void)env_.removeFile(tmp);
    finished(fid, storedAnswer(r, botm_id, Status::invalidArgument("no object key for " + file),
                               "storing the object failed: "));
    return;
  }
  s3::UploadJob job;
  job.key = opts_.uploader->options().objectKey(machine, name);
  job.path = tmp;
  job.md5 = r.md5;
  job.head_b64 = headMetadata(r);
  if (!r.response_head.empty() && job.head_b64.empty() && counters_) counters_->heads_failed++;
  auto self = shared_from_this();
  job.done = [self, fid, r, botm_id, tmp](const Status& st) {
    // The PUT has been answered: the object exists (or not) before the BOT-M hears of it.
    (void)self->env_.removeFile(tmp);
    self->finished(fid, self->storedAnswer(r, botm_id, st, "storing the object failed: "));
  };
  opts_.uploader->submit(std::move(job));
}

void RobotCore::finished(std::uint64_t fid, const FetchResult& r) {
  bool answer;
  bool lease_ran_out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(fid);
    leases_.remove(fid);
    lease_ran_out = lease_cancelled_.erase(fid) != 0;
    answer = !cancelled_;
  }
  if (answer && lease_ran_out && !r.ok()) {
    // Nothing fetched: the QM, if it still lives, queues the URL again (retryable).
    FetchResult out = r;
    out.code = ErrorCode::kOffline;
    out.message = "fetch lease expired; cancelled";
    reply_(out);
  } else if (answer) {
    reply_(r);
  }
  in_flight_--;  // last: whoever waits for zero may destroy the fetcher next
}

void RobotCore::renewLeases(Millis lease) {
  if (opts_.clock == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  leases_.renew(opts_.clock->monoNow(), lease);
}

void RobotCore::armLeaseTimer(MonoTime at) {
  if (lease_timer_at_ && *lease_timer_at_ <= at) return;  // an earlier one checks first
  if (lease_timer_ != 0) opts_.clock->cancel(lease_timer_);
  lease_timer_at_ = at;
  const Millis in = std::max(Millis(0), std::chrono::ceil<Millis>(at - opts_.clock->monoNow()));
  lease_timer_ = opts_.clock->schedule(in, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->checkLeases();
  });
}

void RobotCore::checkLeases() {
  std::vector<std::uint64_t> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_timer_ = 0;
    lease_timer_at_.reset();
    expired = leases_.expired(opts_.clock->monoNow());
    for (std::uint64_t fid : expired) lease_cancelled_.insert(fid);
    if (auto next = leases_.earliest()) armLeaseTimer(*next);
  }
  for (std::uint64_t fid : expired) {
    spdlog::warn("robot {}: a fetch's lease ran out (its QM stopped renewing it); cancelled", opts_.name);
    if (counters_) counters_->lease_expired++;
    fetcher_.cancel(fid);
  }
}

// ---- RobotSession ---------------------------------------------------------------

RobotStream::RobotStream(Fetcher& fetcher, Env& env, RobotOptions options, RobotCounters* counters)
    : fetcher_(fetcher), env_(env), opts_(std::move(options)), counters_(counters) {
  if (opts_.name.empty()) opts_.name = defaultRobotName();
}

void RobotStream::ended(const std::string& why) {
  if (ended_) return;
  ended_ = true;
  if (core_) core_->cancelAll();
  if (on_end_) {
    auto cb = std::move(on_end_);
    on_end_ = nullptr;
    cb(why);
  }
}

RobotSession::RobotSession(std::shared_ptr<net::Connection> socket, Fetcher& fetcher, Env& env, RobotOptions options,
                           RobotCounters* counters)
    : RobotStream(fetcher, env, std::move(options), counters),
      socket_(std::move(socket)),
      decoder_(proto::linkLimits(opts_.max_value_length), opts_.frames) {}

RobotSession::~RobotSession() = default;

void RobotSession::start(std::function<void(const std::string&)> on_end) {
  on_end_ = std::move(on_end);
  std::weak_ptr<RobotSession> weak = shared_from_this();
  // Answers finished close together share one hand-off to the strand and one write.
  core_ = std::make_shared<RobotCore>(fetcher_, env_, opts_, counters_, [weak](const FetchResult& r) {
    auto self = weak.lock();
    if (!self) return;  // the session is gone: the BOT-M re-hands the fetch
    if (self->answers_.push(r)) asio::post(self->socket_->strand(), [self] { self->sendAnswers(); });
  });
  auto self = shared_from_this();
  socket_->send(proto::encodeRobotOpen({opts_.slots, opts_.name, opts_.frames ? proto::kFramesVersion : 0}));
  net::Connection::Handlers h;
  h.on_bytes = [self](std::string_view b) { self->onData(b); };
  h.on_close = [self](net::CloseReason, const std::string& why) { self->ended(why); };
  socket_->start(std::move(h));
}

void RobotSession::stop() {
  auto self = shared_from_this();
  asio::post(socket_->strand(), [self] {
    if (self->ended_ || self->closing_) return;
    self->closing_ = true;
    if (self->core_) self->core_->cancelAll();
    self->socket_->closeAfterFlush(proto::encodeMessage(proto::FromRobotMessage{proto::RobotEnd{}}, self->form_));
  });
}

void RobotSession::sendAnswers() {
  std::string bytes;
  proto::appendResults(bytes, answers_.drain(), false, form_);  // one batch frame on a framed link
  if (!bytes.empty() && !ended_ && !closing_ && !socket_->closed()) socket_->send(std::move(bytes));
}

void RobotSession::onData(std::string_view bytes) {
  std::vector<proto::ToRobotMessage> msgs;
  bool ok = decoder_.feed(bytes, &msgs);
  for (auto& m : msgs) {
    if (ended_ || closing_ || socket_->closed()) return;
    if (auto* h = std::get_if<proto::RobotBotmHello>(&m)) {
      hello_seen_ = true;
      core_->setMachine(h->machine);
      if (proto::agreedFrames(h->frames, opts_.frames) != 0 && form_ == proto::LinkForm::kXml) {
        socket_->send(proto::encodeFramesSwitch());  // what follows from us is frames
        form_ = proto::LinkForm::kFrames;
      }
      spdlog::info("robot {}: BOT-M {} (machine {}) accepted us{}", opts_.name, socket_->peer(), h->machine,
                   form_ == proto::LinkForm::kFrames ? " (compact frames)" : "");
    } else if (auto* f = std::get_if<FetchRequest>(&m)) {
      core_->fetch(*f);
    } else if (const auto* ping = std::get_if<proto::LinkPing>(&m)) {
      core_->renewLeases(ping->lease);
      socket_->send(proto::encodeMessage(proto::FromRobotMessage{proto::LinkPong{}}, form_));
    } else if (std::holds_alternative<proto::RobotEnd>(m)) {
      closing_ = true;
      core_->cancelAll();
      socket_->closeAfterFlush(proto::encodeMessage(proto::FromRobotMessage{proto::RobotEnd{}}, form_));
      return;
    }
  }
  if (!ok) {
    spdlog::warn("robot {}: BOT-M {} broke the protocol ({}): {}; disconnecting", opts_.name, socket_->peer(),
                 static_cast<int>(decoder_.error()), decoder_.errorMessage());
    socket_->close(net::CloseReason::kProtocolError);
  }
}

// ---- LocalRobotSession ----------------------------------------------------------

LocalRobotSession::LocalRobotSession(std::shared_ptr<proto::LocalRobotEnd> end, Fetcher& fetcher, Env& env,
                                     RobotOptions options, RobotCounters* counters)
    : RobotStream(fetcher, env, std::move(options), counters), end_(std::move(end)) {}

void LocalRobotSession::start(std::function<void(const std::string&)> on_end) {
  on_end_ = std::move(on_end);
  std::weak_ptr<proto::LocalRobotEnd> weak_end = end_;
  // Answers go into the link from the fetcher's thread; the link batches them.
  core_ = std::make_shared<RobotCore>(fetcher_, env_, opts_, counters_, [weak_end](const FetchResult& r) {
    auto end = weak_end.lock();
    if (!end) return;  // the session is gone: the BOT-M re-hands the fetch
    proto::FromRobotMessage m = r;
    proto::asOnWire(m);
    end->send(std::move(m));
  });
  auto self = shared_from_this();
  proto::LocalRobotEnd::Handlers h;
  h.on_messages = [self](std::vector<proto::ToRobotMessage>& msgs) { self->onMessages(msgs); };
  h.on_close = [self](net::CloseReason reason, const std::string& why) {
    self->ended(why.empty() ? std::string(net::closeReasonName(reason)) : why);
  };
  end_->start(std::move(h));
  end_->send(proto::RobotHello{opts_.slots, opts_.name});
}

void LocalRobotSession::stop() {
  // On the end's strand, where the fetches start (RobotCore: one thread at a time).
  asio::post(end_->strand(), [self = shared_from_this()] { self->close(); });
}

void LocalRobotSession::close() {
  if (closing_.exchange(true)) return;
  if (core_) core_->cancelAll();
  end_->send(proto::RobotEnd{});
  end_->close(net::CloseReason::kShutdown);
}

void LocalRobotSession::onMessages(std::vector<proto::ToRobotMessage>& msgs) {
  for (auto& m : msgs) {
    if (ended_ || closing_) return;
    if (auto* h = std::get_if<proto::RobotBotmHello>(&m)) {
      core_->setMachine(h->machine);
      spdlog::info("robot {}: BOT-M (machine {}) accepted us, in process", opts_.name, h->machine);
    } else if (auto* f = std::get_if<FetchRequest>(&m)) {
      core_->fetch(*f);
    } else if (const auto* ping = std::get_if<proto::LinkPing>(&m)) {
      core_->renewLeases(ping->lease);
      end_->send(proto::LinkPong{});
    } else if (std::holds_alternative<proto::RobotEnd>(m)) {
      return close();
    }
  }
}

// ---- RobotClient ----------------------------------------------------------------

RobotClient::RobotClient(asio::io_context& io, Clock& clock, Fetcher& fetcher, Env& env, std::string target,
                         RobotOptions options, Millis retry_min, Millis retry_max, RobotCounters* counters,
                         net::LocalListeners* local)
    : fetcher_(fetcher),
      env_(env),
      target_(target),
      opts_(std::move(options)),
      counters_(counters),
      io_(io),
      clock_(clock),
      retry_min_(retry_min),
      local_(local) {
  if (opts_.clock == nullptr) opts_.clock = &clock;  // fetch leases on the node's clock
  net::ConnectorOptions co;
  co.what = "BOT-M address";
  address_ = net::setTargetAddress(co, target, opts_.tls);
  co.back_off = {retry_min, retry_max};
  connector_ = std::make_shared<net::Connector>(io, clock, std::move(co));
}

void RobotClient::start() {
  if (local_ != nullptr && local_->listening(target_)) return linkLocal();
  std::weak_ptr<RobotClient> weak = shared_from_this();
  Status s = address_;
  if (s.isOk()) s = connector_->start([weak](std::shared_ptr<net::Connection> c) {
    if (auto self = weak.lock()) self->connected(std::move(c));
  });
  if (!s.isOk()) spdlog::error("robot: {}", s.message());
}

// In process, to the BOT-M of this lccd (issue 28). Any thread.
void RobotClient::linkLocal() {
  auto end = local_->connect<proto::FromRobotMessage, proto::ToRobotMessage>(target_, asio::make_strand(io_));
  if (!end) {
    spdlog::error("robot: BOT-M {} takes no in-process links any more", target_);
    return;
  }
  auto session = std::make_shared<LocalRobotSession>(end, fetcher_, env_, opts_, counters_);
  std::weak_ptr<RobotClient> weak = shared_from_this();
  session->start([weak](const std::string& why) {
    auto self = weak.lock();
    if (!self) return;
    self->connected_ = false;
    self->in_process_ = false;
    std::lock_guard<std::mutex> lock(self->mu_);
    if (self->stopping_) return;
    spdlog::info("robot: in-process link to BOT-M {} ended: {}; linking again in {} ms", self->target_, why,
                 self->retry_min_.count());
    self->relink_ = self->clock_.schedule(self->retry_min_, [weak] {
      if (auto s = weak.lock()) s->linkLocal();
    });
  });
  bool stopped_meanwhile;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_meanwhile = stopping_;
    local_session_ = session;
    connected_ = true;
    in_process_ = true;
  }
  if (stopped_meanwhile) session->stop();
}

std::size_t RobotClient::inFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (session_ ? session_->inFlight() : 0) + (local_session_ ? local_session_->inFlight() : 0);
}

void RobotClient::stop() {
  std::shared_ptr<RobotSession> s;
  std::shared_ptr<LocalRobotSession> ls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    s = session_;
    ls = local_session_;
    if (relink_) clock_.cancel(relink_);
    relink_ = 0;
  }
  connector_->stop();
  if (s) s->stop();
  if (ls) ls->stop();
}

void RobotClient::connected(std::shared_ptr<net::Connection> conn) {
  auto session = std::make_shared<RobotSession>(conn, fetcher_, env_, opts_, counters_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      conn->close(net::CloseReason::kShutdown);
      return;
    }
  }
  connected_ = true;
  auto self = shared_from_this();
  // Started before it is published under mu_: inFlight(), called from other threads
  // (the status page, the stop's drain), reads what start() sets up (ThreadSanitizer).
  session->start([self](const std::string& why) {
    self->connected_ = false;
    spdlog::info("robot: connection to BOT-M {} ended: {}", self->target_, why);
    self->connector_->retry();
  });
  bool stopped_meanwhile = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_meanwhile = stopping_;
    session_ = session;
  }
  if (stopped_meanwhile) session->stop();  // stop() ran between the two locks: it did not see it
}

}  // namespace lcc::bot
