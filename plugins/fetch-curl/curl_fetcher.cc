#include "curl_fetcher.h"

#include <pthread.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "address_policy.h"
#include "redirect_policy.h"
#include "lcc/support/url_norm.h"

namespace lcc::plugins::curl {

namespace {

std::string hex(const unsigned char* d, unsigned n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (unsigned i = 0; i < n; ++i) {
    s.push_back(k[d[i] >> 4]);
    s.push_back(k[d[i] & 15]);
  }
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool mimeMatches(std::string_view expected, std::string_view got) {
  if (expected.empty() || got.empty()) return true;  // nothing declared, or nothing said
  if (expected == "*/*" || expected == "*") return true;
  if (expected.size() > 2 && expected.substr(expected.size() - 2) == "/*") {
    auto type = expected.substr(0, expected.size() - 1);
    return got.size() > type.size() && iequals(got.substr(0, type.size()), type);
  }
  return iequals(expected, got);
}

FetchResult failure(std::uint64_t id, ErrorCode code, int http, std::string message) {
  FetchResult r;
  r.id = id;
  r.code = code;
  r.http_status = http;
  r.message = std::move(message);
  return r;
}

}  // namespace

// ---- the file side -------------------------------------------------------------
struct CurlFetcher::Sink {
  Env* env = nullptr;
  std::string path;
  std::unique_ptr<WritableFile> file;  // through the host Env
  int fd = -1;                         // when there is no Env
  EVP_MD_CTX* md = nullptr;
  std::uint64_t size = 0;
  std::string error;

  ~Sink() {
    if (file) (void)file->close();
    if (fd >= 0) ::close(fd);
    if (md) EVP_MD_CTX_free(md);
  }

  bool open() {
    if (file || fd >= 0) return true;
    md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_md5(), nullptr);
    if (env) {
      auto f = env->openWritable(path, OpenMode::kTruncate);
      if (!f.isOk()) {
        error = f.status().message();
        return false;
      }
      file = std::move(f).value();
      return true;
    }
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      error = path + ": " + std::strerror(errno);
      return false;
    }
    return true;
  }

  void write(std::string_view data) {
    if (!error.empty() || !open()) return;
    EVP_DigestUpdate(md, data.data(), data.size());
    size += data.size();
    if (file) {
      Status s = file->append(data);
      if (!s.isOk()) error = s.message();
      return;
    }
    while (!data.empty()) {
      ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        error = path + ": " + std::strerror(errno);
        return;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // Closes the file; returns the MD5 or sets error.
  std::string close() {
    if (!open()) return {};
    if (file) {
      Status s = file->close();
      if (!s.isOk() && error.empty()) error = s.message();
      file.reset();
    }
    if (fd >= 0) {
      if (::close(fd) != 0 && error.empty()) error = path + ": " + std::strerror(errno);
      fd = -1;
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(md, d, &n);
    return hex(d, n);
  }
};

// ---- writer threads ------------------------------------------------------------
class CurlFetcher::Writer {
 public:
  Writer() : thread_([this] {
    ::pthread_setname_np(::pthread_self(), "lcc-curl-write");
    run();
  }) {}
  ~Writer() { stop(); }
  void post(std::function<void()> job) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake = jobs_.empty();  // otherwise the writer is awake, or already woken
      jobs_.push_back(std::move(job));
    }
    if (wake) cv_.notify_one();
  }
  // Runs every queued job, then joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
        return;
      }
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::deque<std::function<void()>> batch;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty() && stopping_) return;
      batch.swap(jobs_);  // everything queued, for one lock round
      lock.unlock();
      for (auto& job : batch) job();
      batch.clear();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

// ---- one transfer on the curl thread -------------------------------------------
struct CurlFetcher::Transfer {
  CurlFetcher* owner = nullptr;
  std::uint64_t seq = 0;
  FetchRequest req;
  FetchDone done;
  CURL* easy = nullptr;
  std::shared_ptr<Sink> sink;
  std::string pending;
  std::uint64_t max = 0;
  std::uint64_t received = 0;
  std::uint64_t discarded = 0;
  bool checked = false;       // status and type looked at (first body bytes)
  bool storing = false;       // a 2xx body: goes to the file
  bool too_large = false;
  bool mime_mismatch = false;
  bool discard_limit = false;
  std::string mime;
  std::string refused;        // why the address policy refused a socket
  long hops = 0;              // redirects followed
  std::string current_url;    // the URL of this hop (CURLOPT_URL points into it)
  std::optional<std::int64_t> retry_after;
  std::string head;           // this response's status line and headers (req.max_response_head)
  bool head_done = false;     // the empty line was seen: later lines are trailers
  bool head_over = false;     // larger than req.max_response_head: not kept
  std::optional<FetchResult> immediate;  // refused before any transfer (bad URL)
  std::string etag;           // this response's ETag when parseEtag() took it
  curl_slist* headers = nullptr;  // If-None-Match (CURLOPT_HTTPHEADER); freed with the transfer

  Transfer() = default;
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;
  ~Transfer() { curl_slist_free_all(headers); }
};

namespace {

constexpr std::uint64_t kMaxDiscard = 64 * 1024;  // body of an error page we read before giving up

void inspect(CurlFetcher::Transfer* t) {
  if (t->checked) return;
  t->checked = true;
  long status = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  t->storing = status >= 200 && status <= 299;
  char* ct = nullptr;
  curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
  t->mime = ct ? baseMime(ct) : std::string();
  if (t->storing && !mimeMatches(t->req.expected_mime, t->mime)) t->mime_mismatch = true;
}

size_t onWrite(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<CurlFetcher::Transfer*>(user);
  const size_t n = size * nmemb;
  inspect(t);
  if (t->mime_mismatch) return 0;
  if (!t->storing) {
    t->discarded += n;
    if (t->discarded > kMaxDiscard) {
      t->discard_limit = true;
      return 0;
    }
    return n;
  }
  t->received += n;
  if (t->received > t->max) {
    t->too_large = true;
    return 0;
  }
  t->pending.append(data, n);
  if (t->pending.size() >= t->owner->chunkBytes()) t->owner->postChunk(t);
  return n;
}

// Keeps the response's head as received, up to req.max_response_head bytes.
void keepHeadLine(CurlFetcher::Transfer* t, std::string_view line) {
  if (t->req.max_response_head == 0 || t->head_done || t->head_over) return;
  if (t->head.size() + line.size() > t->req.max_response_head) {
    t->head_over = true;
    t->head.clear();
    t->head.shrink_to_fit();
    return;
  }
  t->head.append(line);
  if (line == "\r\n" || line == "\n") t->head_done = true;
}

size_t onHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<CurlFetcher::Transfer*>(user);
  const size_t n = size * nmemb;
  std::string_view line(data, n);
  if (line.size() >= 5 && line.substr(0, 5) == "HTTP/") {
    t->retry_after.reset();  // a new response (after a redirect, or past a 1xx)
    t->etag.clear();
    if (!t->checked) {       // not a trailer line sent after the body
      t->head.clear();
      t->head_done = t->head_over = false;
    }
  } else if (line.size() > 12 && iequals(line.substr(0, 12), "retry-after:")) {
    t->retry_after = parseRetryAfter(line.substr(12), static_cast<std::int64_t>(::time(nullptr)));
  } else if (!t->checked && line.size() > 5 && iequals(line.substr(0, 5), "etag:")) {
    // The head's, not a trailer's; one that is not valid is not kept.
    t->etag = parseEtag(line.substr(5)).value_or(std::string());
  }
  keepHeadLine(t, line);
  return n;
}

curl_socket_t onOpenSocket(void* user, curlsocktype purpose, struct curl_sockaddr* a) {
  auto* t = static_cast<CurlFetcher::Transfer*>(user);
  AddressClass c = classifyAddress(&a->addr, a->addrlen);
  if (c != AddressClass::kAllowed && !t->owner->peers().allows(&a->addr, a->addrlen)) {
    t->refused = "address " + formatAddress(&a->addr, a->addrlen) + " refused by policy (" + addressClassName(c) + ")";
    return CURL_SOCKET_BAD;
  }
  return ::socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

}  // namespace

// ---- the fetcher ---------------------------------------------------------------
CurlFetcher::CurlFetcher(const HostContext& host, CurlOptions options) : host_(host), opts_(std::move(options)) {
  multi_ = curl_multi_init();
  curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, opts_.max_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, opts_.max_connections);
  const int n = opts_.io_threads < 1 ? 1 : opts_.io_threads;
  for (int i = 0; i < n; ++i) writers_.push_back(std::make_unique<Writer>());
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "lcc-curl");
    run();
  });
}

CurlFetcher::~CurlFetcher() {
  stop();
  for (void* e : easy_pool_) curl_easy_cleanup(static_cast<CURL*>(e));
  curl_multi_cleanup(multi_);
}

CurlFetcher::Writer& CurlFetcher::writerFor(std::uint64_t seq) { return *writers_[seq % writers_.size()]; }

Status CurlFetcher::start(const FetchRequest& request, FetchDone done) {
  if (!done) return Status::invalidArgument("fetch-curl: no completion callback");
  if (request.path.empty()) return Status::invalidArgument("fetch-curl: no file path");
  auto t = std::make_unique<Transfer>();
  t->owner = this;
  t->req = request;
  t->done = std::move(done);
  t->max = request.max_size != 0 ? request.max_size : opts_.max_size;
  // What is fetched is exactly the normal form (url/url_norm.h), which libcurl then
  // sends as it is (CURLOPT_PATH_AS_IS); the prefixes are judged in normal form too.
  auto normal = url::normalizeUrl(request.url);
  if (normal.isOk()) t->req.url = std::move(normal).value();
  t->req.redirect_prefixes.clear();
  for (const auto& p : request.redirect_prefixes) {
    if (auto n = url::normalizePrefix(p); n.isOk()) t->req.redirect_prefixes.push_back(std::move(n).value());
  }
  CURLU* u = curl_url();
  char* scheme = nullptr;
  CURLUcode uc = curl_url_set(u, CURLUPART_URL, t->req.url.c_str(), CURLU_PATH_AS_IS);
  if (uc == CURLUE_OK) uc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
  if (!normal.isOk()) {
    t->immediate = failure(request.id, ErrorCode::kInvalidUrl, 0, "invalid URL: " + normal.status().message());
  } else if (uc != CURLUE_OK) {
    t->immediate = failure(request.id, ErrorCode::kInvalidUrl, 0,
                           std::string("invalid URL: ") + curl_url_strerror(uc));
  } else if (!iequals(scheme, "http") && !iequals(scheme, "https")) {
    t->immediate = failure(request.id, ErrorCode::kInvalidUrl, 0, std::string("scheme not allowed: ") + scheme);
  } else if (!request.if_none_match.empty() && !isValidEtag(request.if_none_match)) {
    // It would go into a request header: never one with CR, LF or other control bytes.
    t->immediate = failure(request.id, ErrorCode::kInternal, 0, "If-None-Match is not a valid entity tag");
  }
  curl_free(scheme);
  curl_url_cleanup(u);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Status::aborted("fetch-curl: stopped");
    t->seq = next_seq_++;
    incoming_.push_back(std::move(t));
    in_flight_.fetch_add(1);
  }
  if (!wake_pending_.exchange(true)) curl_multi_wakeup(multi_);
  return Status::ok();
}

void CurlFetcher::cancel(std::uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    cancels_.push_back(id);
  }
  curl_multi_wakeup(multi_);
}

std::size_t CurlFetcher::inFlight() const { return in_flight_.load(); }

void CurlFetcher::stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  if (stopped_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  curl_multi_wakeup(multi_);
  if (thread_.joinable()) thread_.join();
  for (auto& w : writers_) w->stop();
  stopped_ = true;
}

void CurlFetcher::addTransfer(std::unique_ptr<Transfer> t) {
  if (t->immediate) {
    FetchResult r = *t->immediate;
    finish(std::move(t), std::move(r));
    return;
  }
  CURL* e;
  if (!easy_pool_.empty()) {
    e = static_cast<CURL*>(easy_pool_.back());
    easy_pool_.pop_back();
    curl_easy_reset(e);
  } else {
    e = curl_easy_init();
  }
  t->easy = e;
  t->sink = std::make_shared<Sink>();
  t->sink->env = host_.env;
  t->sink->path = t->req.path;
  t->current_url = t->req.url;
  curl_easy_setopt(e, CURLOPT_URL, t->current_url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // redirects are judged and followed in complete()
  curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);      // the URL is in normal form: send it as it is
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts_.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(opts_.timeout.count()));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, opts_.user_agent.c_str());
  curl_easy_setopt(e, CURLOPT_PROXY, "");  // never an environment proxy: the policy judges the real peer
  curl_easy_setopt(e, CURLOPT_FILETIME, 1L);
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(t->max));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &onWrite);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &onHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  if (!opts_.allow_private) {
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &onOpenSocket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t.get());
  }
  if (t->req.if_modified_since) {
    curl_easy_setopt(e, CURLOPT_TIMECONDITION, static_cast<long>(CURL_TIMECOND_IFMODSINCE));
    curl_easy_setopt(e, CURLOPT_TIMEVALUE_LARGE, static_cast<curl_off_t>(*t->req.if_modified_since));
  }
  if (!t->req.if_none_match.empty()) {  // checked by start()
    t->headers = curl_slist_append(nullptr, ("If-None-Match: " + t->req.if_none_match).c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  }
  CURLMcode mc = curl_multi_add_handle(multi_, e);
  if (mc != CURLM_OK) {
    FetchResult r = failure(t->req.id, ErrorCode::kInternal, 0, std::string("curl: ") + curl_multi_strerror(mc));
    finish(std::move(t), std::move(r));
    return;
  }
  const std::uint64_t seq = t->seq;
  active_.emplace(seq, std::move(t));
}

CurlFetcher::Hop CurlFetcher::redirect(Transfer* t, int code, FetchResult* refused) {
  const auto cc = static_cast<CURLcode>(code);
  long status = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  char* location = nullptr;
  curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &location);
  const bool read_out = cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && t->discard_limit);
  if (!read_out || status < 300 || status > 399 || location == nullptr) return Hop::kNone;
  RedirectVerdict v = judgeRedirect(t->req, location, t->hops, opts_.max_redirects);
  if (!v.follow) {
    *refused = failure(t->req.id, ErrorCode::kRedirectError, static_cast<int>(status), v.why);
    return Hop::kRefused;
  }
  // The same handle again, on the new URL: only the state of one response is reset.
  curl_multi_remove_handle(multi_, t->easy);
  ++t->hops;
  t->checked = t->storing = t->too_large = t->mime_mismatch = t->discard_limit = false;
  t->discarded = t->received = 0;
  t->pending.clear();
  t->mime.clear();
  t->refused.clear();
  t->retry_after.reset();
  t->etag.clear();
  t->head.clear();
  t->head_done = t->head_over = false;
  t->current_url = std::move(v.url);
  curl_easy_setopt(t->easy, CURLOPT_URL, t->current_url.c_str());
  CURLMcode mc = curl_multi_add_handle(multi_, t->easy);
  if (mc != CURLM_OK) {
    *refused = failure(t->req.id, ErrorCode::kInternal, 0, std::string("curl: ") + curl_multi_strerror(mc));
    return Hop::kRefused;
  }
  return Hop::kFollowed;
}

void CurlFetcher::complete(Transfer* t, int code) {
  auto it = active_.find(t->seq);
  if (it == active_.end()) return;
  FetchResult refused;
  const Hop hop = redirect(t, code, &refused);
  if (hop == Hop::kFollowed) return;
  std::unique_ptr<Transfer> owned = std::move(it->second);
  active_.erase(it);
  CURL* e = t->easy;
  curl_multi_remove_handle(multi_, e);
  if (hop == Hop::kRefused) {
    easy_pool_.push_back(e);
    owned->easy = nullptr;
    finish(std::move(owned), std::move(refused));
    return;
  }
  const auto cc = static_cast<CURLcode>(code);
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  const long redirects = t->hops;
  const bool conditional = t->req.if_modified_since.has_value() || !t->req.if_none_match.empty();
  const int http = static_cast<int>(status);
  const std::uint64_t id = t->req.id;

  FetchResult r;
  r.id = id;
  r.http_status = http;
  if (cc == CURLE_OK) {
    inspect(t);  // an empty body never reached onWrite
    long unmet = 0;
    curl_easy_getinfo(e, CURLINFO_CONDITION_UNMET, &unmet);
    if (conditional && (status == 304 || unmet)) {
      r.unchanged = true;
      r.http_status = 304;
      r.etag = std::move(t->etag);
    } else if (status >= 200 && status <= 299) {
      if (t->mime_mismatch) {
        r = failure(id, ErrorCode::kMimeMismatch, http, "returned type " + t->mime + ", declared " + t->req.expected_mime);
      } else {
        r.mime = t->mime.empty() ? t->req.expected_mime : t->mime;
        curl_off_t ft = -1;
        curl_easy_getinfo(e, CURLINFO_FILETIME_T, &ft);
        if (ft >= 0) r.last_modified = static_cast<std::int64_t>(ft);
        r.etag = std::move(t->etag);
        if (t->head_done) r.response_head = std::move(t->head);
      }
    } else {
      ErrorCode c = classifyHttpStatus(status, conditional);
      r = failure(id, c, http, "HTTP " + std::to_string(status));
    }
  } else if (cc == CURLE_WRITE_ERROR && t->too_large) {
    r = failure(id, ErrorCode::kTooLarge, http, "content larger than " + std::to_string(t->max) + " bytes");
  } else if (cc == CURLE_WRITE_ERROR && t->mime_mismatch) {
    r = failure(id, ErrorCode::kMimeMismatch, http, "returned type " + t->mime + ", declared " + t->req.expected_mime);
  } else if (cc == CURLE_WRITE_ERROR && t->discard_limit) {
    r = failure(id, classifyHttpStatus(status, conditional), http, "HTTP " + std::to_string(status));
  } else if (!t->refused.empty() && (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)) {
    r = failure(id, ErrorCode::kAddressRefused, 0, t->refused);
  } else {
    ErrorCode c = ErrorCode::kConnectFailure;
    switch (cc) {
      case CURLE_FILESIZE_EXCEEDED: c = ErrorCode::kTooLarge; break;
      case CURLE_OPERATION_TIMEDOUT: c = ErrorCode::kFetchTimeout; break;
      case CURLE_COULDNT_RESOLVE_HOST: c = ErrorCode::kDnsFailure; break;
      case CURLE_TOO_MANY_REDIRECTS: c = ErrorCode::kRedirectError; break;
      case CURLE_UNSUPPORTED_PROTOCOL: c = ErrorCode::kRedirectError; break;
      case CURLE_URL_MALFORMAT: c = redirects > 0 ? ErrorCode::kRedirectError : ErrorCode::kInvalidUrl; break;
      default: c = ErrorCode::kConnectFailure; break;
    }
    r = failure(id, c, http, curl_easy_strerror(cc));
  }
  if (t->retry_after && (status == 429 || status == 503)) r.retry_after = Millis(*t->retry_after * 1000);
  easy_pool_.push_back(e);
  owned->easy = nullptr;
  finish(std::move(owned), std::move(r));
}

void CurlFetcher::postChunk(Transfer* t) {
  writerFor(t->seq).post([sink = t->sink, data = std::move(t->pending)] { sink->write(data); });
  t->pending = std::string();
  t->pending.reserve(opts_.write_chunk);
}

void CurlFetcher::finish(std::unique_ptr<Transfer> t, FetchResult result) {
  const bool verify = opts_.verify_md5;
  auto job = [this, sink = std::move(t->sink), data = std::move(t->pending), done = std::move(t->done),
              expected_md5 = t->req.expected_md5, r = std::move(result), verify]() mutable {
    if (r.ok() && !r.unchanged && sink) {
      sink->write(data);
      std::string md5 = sink->close();
      if (!sink->error.empty()) {
        r = failure(r.id, ErrorCode::kInternal, r.http_status, "writing the content failed: " + sink->error);
      } else {
        r.size = sink->size;
        r.md5 = std::move(md5);
        if (verify && !expected_md5.empty() && !iequals(expected_md5, r.md5)) {
          r = failure(r.id, ErrorCode::kMd5Mismatch, r.http_status, "MD5 " + r.md5 + ", declared " + expected_md5);
        }
      }
    }
    sink.reset();  // closes a partial file
    in_flight_.fetch_sub(1);
    done(r);
  };
  writerFor(t->seq).post(std::move(job));
}

void CurlFetcher::run() {
  for (;;) {
    std::vector<std::unique_ptr<Transfer>> incoming;
    std::vector<std::uint64_t> cancels;
    bool stopping;
    wake_pending_.store(false);  // before taking the queues: a later start() wakes us again
    {
      std::lock_guard<std::mutex> lock(mu_);
      incoming.swap(incoming_);
      cancels.swap(cancels_);
      stopping = stopping_;
    }
    for (auto& t : incoming) addTransfer(std::move(t));
    auto cancelOne = [&](std::unordered_map<std::uint64_t, std::unique_ptr<Transfer>>::iterator it) {
      std::unique_ptr<Transfer> t = std::move(it->second);
      active_.erase(it);
      curl_multi_remove_handle(multi_, t->easy);
      easy_pool_.push_back(t->easy);
      t->easy = nullptr;
      const std::uint64_t id = t->req.id;
      finish(std::move(t), failure(id, ErrorCode::kInternal, 0, "cancelled"));
    };
    for (std::uint64_t id : cancels) {
      for (auto it = active_.begin(); it != active_.end(); ++it) {
        if (it->second->req.id == id) {
          cancelOne(it);
          break;
        }
      }
    }
    if (stopping) {
      while (!active_.empty()) cancelOne(active_.begin());
      return;
    }
    int running = 0;
    curl_multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      if (t) complete(t, m->data.result);
    }
    curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
  }
}

}  // namespace lcc::plugins::curl
