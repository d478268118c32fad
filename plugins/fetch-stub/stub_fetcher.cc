#include "stub_fetcher.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace lcc::plugins::stub {
namespace {

std::string lowerMime(std::string_view m) {
  if (auto semi = m.find(';'); semi != std::string_view::npos) m = m.substr(0, semi);
  while (!m.empty() && m.back() == ' ') m.remove_suffix(1);
  while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
  std::string out(m);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

ErrorCode codeForHttp(int status) {
  if (status == 404 || status == 410) return ErrorCode::kNotFound;
  if (status == 401 || status == 403) return ErrorCode::kAccessDenied;
  if (status >= 500 || status == 429) return ErrorCode::kServerError;
  if (status == 301 || status == 302 || status == 303 || status == 307 || status == 308) {
    return ErrorCode::kRedirectError;
  }
  return ErrorCode::kHttpOther;
}

class Md5Digest {
 public:
  Md5Digest() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_md5(), nullptr); }
  ~Md5Digest() { EVP_MD_CTX_free(ctx_); }
  Md5Digest(const Md5Digest&) = delete;
  Md5Digest& operator=(const Md5Digest&) = delete;
  void update(std::string_view b) { EVP_DigestUpdate(ctx_, b.data(), b.size()); }
  std::string hex() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, out, &n);
    static const char* kHex = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < n; ++i) {
      s.push_back(kHex[out[i] >> 4]);
      s.push_back(kHex[out[i] & 15]);
    }
    return s;
  }

 private:
  EVP_MD_CTX* ctx_;
};

// Writes through the host Env when there is one (so a fault-injecting Env applies).
class BodyWriter {
 public:
  BodyWriter(Env* env, const std::string& path) : path_(path) {
    if (env != nullptr) {
      auto f = env->openWritable(path, OpenMode::kTruncate);
      if (f.isOk()) {
        file_ = std::move(f).value();
      } else {
        status_ = f.status();
      }
    } else {
      fp_ = std::fopen(path.c_str(), "wb");
      if (fp_ == nullptr) status_ = Status::ioError(path + ": cannot create");
    }
  }
  ~BodyWriter() {
    if (fp_ != nullptr) std::fclose(fp_);
  }
  Status append(std::string_view b) {
    if (!status_.isOk()) return status_;
    if (file_) {
      status_ = file_->append(b);
    } else if (std::fwrite(b.data(), 1, b.size(), fp_) != b.size()) {
      status_ = Status::ioError(path_ + ": write failed");
    }
    return status_;
  }
  Status close() {
    if (!status_.isOk()) return status_;
    if (file_) return file_->close();
    int rc = std::fclose(fp_);
    fp_ = nullptr;
    return rc == 0 ? Status::ok() : Status::ioError(path_ + ": close failed");
  }

 private:
  std::string path_;
  Status status_;
  std::unique_ptr<WritableFile> file_;
  std::FILE* fp_ = nullptr;
};

}  // namespace

StubFetcher::StubFetcher(const HostContext& host, StubOptions options, Script script)
    : host_(host), options_(std::move(options)), script_(std::move(script)), state_(std::make_shared<State>()) {
  worker_ = std::thread([this] { run(); });
}

StubFetcher::~StubFetcher() { stop(); }

std::string StubFetcher::bodyFor(const std::string& url, std::uint64_t size) {
  const std::string line = "fetch-stub " + url + "\n";
  std::string out;
  out.reserve(size);
  while (out.size() < size) out.append(line, 0, std::min<std::uint64_t>(line.size(), size - out.size()));
  return out;
}

Status StubFetcher::start(const FetchRequest& request, FetchDone done) {
  if (!done) return Status::invalidArgument("fetch-stub: no done callback");
  if (request.url.rfind("http://", 0) != 0 && request.url.rfind("https://", 0) != 0) {
    return Status::invalidArgument("fetch-stub: not an http or https URL: " + request.url);
  }
  if (request.path.empty()) return Status::invalidArgument("fetch-stub: no file to write to");
  auto from_url = directivesFromUrl(request.url);
  if (!from_url.isOk()) return from_url.status().withContext("fetch-stub: " + request.url);

  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->stopping) return Status::aborted("fetch-stub: stopped");
  if (state_->fetches.count(request.id)) {
    return Status::invalidArgument("fetch-stub: fetch id " + std::to_string(request.id) + " is already in flight");
  }
  // Only an accepted fetch uses up a `times=N` script rule.
  Directives d = script_.lookup(request.url);
  d.overlay(from_url.value());
  const Millis delay = d.delay.value_or(options_.delay);
  Fetch& f = state_->fetches[request.id];
  f.request = request;
  f.done = std::move(done);
  f.directives = std::move(d);
  if (f.directives.hang.value_or(false)) {
    f.hanging = true;
  } else if (delay.count() > 0 && host_.clock != nullptr) {
    std::weak_ptr<State> weak = state_;
    const std::uint64_t id = request.id;
    f.timer = host_.clock->schedule(delay, [weak, id] {
      auto st = weak.lock();
      if (!st) return;
      std::lock_guard<std::mutex> l(st->mu);
      auto it = st->fetches.find(id);
      if (it == st->fetches.end() || it->second.timer == 0) return;
      it->second.timer = 0;
      st->ready.push_back(id);
      st->cv.notify_all();
    });
  } else {
    state_->ready.push_back(request.id);
    state_->cv.notify_all();
  }
  return Status::ok();
}

void StubFetcher::cancel(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->fetches.find(id);
  if (it == state_->fetches.end() || it->second.cancelled) return;
  Fetch& f = it->second;
  f.cancelled = true;
  if (f.timer != 0) {
    if (host_.clock != nullptr) host_.clock->cancel(f.timer);
    f.timer = 0;
    state_->ready.push_back(id);
  } else if (f.hanging) {
    f.hanging = false;
    state_->ready.push_back(id);
  }  // else: already queued for the worker; it will see `cancelled`
  state_->cv.notify_all();
}

std::size_t StubFetcher::inFlight() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->fetches.size();
}

void StubFetcher::stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  if (stopped_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  // cancel() every fetch: each one's done runs once, on the worker, with "cancelled".
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (const auto& [id, f] : state_->fetches) ids.push_back(id);
  }
  for (auto id : ids) cancel(id);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->cv.notify_all();
  }
  if (worker_.joinable()) {
    if (worker_.get_id() == std::this_thread::get_id()) {
      worker_.detach();  // stop() from inside a done callback: the worker ends by itself
    } else {
      worker_.join();
    }
  }
  stopped_ = true;
}

void StubFetcher::run() {
  std::shared_ptr<State> st = state_;
  for (;;) {
    Fetch f;
    {
      std::unique_lock<std::mutex> lock(st->mu);
      st->cv.wait(lock, [&] { return !st->ready.empty() || (st->stopping && st->fetches.empty()); });
      if (st->ready.empty()) return;  // stopping and nothing left
      const std::uint64_t id = st->ready.front();
      st->ready.pop_front();
      auto it = st->fetches.find(id);
      if (it == st->fetches.end()) continue;
      f = std::move(it->second);
      st->fetches.erase(it);
    }
    FetchResult r;
    if (f.cancelled) {
      r.id = f.request.id;
      r.code = ErrorCode::kInternal;
      r.message = "cancelled";
    } else {
      r = perform(f);
    }
    f.done(r);
  }
}

FetchResult StubFetcher::perform(const Fetch& f) {
  const FetchRequest& req = f.request;
  const Directives& d = f.directives;
  FetchResult r;
  r.id = req.id;
  r.retry_after = d.retry_after;
  auto fail = [&](ErrorCode code, std::string message) {
    r.code = code;
    r.message = std::move(message);
    return r;
  };
  if (!req.if_none_match.empty() && !isValidEtag(req.if_none_match)) {
    return fail(ErrorCode::kInternal, "If-None-Match is not a valid entity tag");  // as fetch-curl
  }
  if (d.code) {
    r.http_status = d.status.value_or(0);
    return fail(*d.code, std::string(errorCodeMessage(*d.code)));
  }
  const int status = d.status.value_or(200);
  r.http_status = status;
  if (status == 304) {
    r.unchanged = true;
    r.last_modified = d.lm;
    r.etag = d.etag.value_or(std::string());
    return r;
  }
  if (status < 200 || status >= 300) return fail(codeForHttp(status), "HTTP " + std::to_string(status));
  // If-None-Match decides when both are sent (RFC 9110 §13.2.2); a request naming an
  // ETag the URL does not have is a change even when If-Modified-Since would say 304.
  const bool match = !req.if_none_match.empty() ? d.etag && req.if_none_match == *d.etag
                                                 : d.lm && req.if_modified_since && *req.if_modified_since >= *d.lm;
  if (match) {
    r.http_status = 304;
    r.unchanged = true;
    r.last_modified = d.lm;
    r.etag = d.etag.value_or(std::string());
    return r;
  }
  r.mime = lowerMime(d.mime ? *d.mime : (req.expected_mime.empty() ? options_.default_mime : req.expected_mime));
  if (!req.expected_mime.empty() && r.mime != lowerMime(req.expected_mime)) {
    return fail(ErrorCode::kMimeMismatch, "returned " + r.mime + ", declared " + req.expected_mime);
  }
  const std::uint64_t size = d.size.value_or(options_.default_size);
  const std::uint64_t limit = req.max_size != 0 ? req.max_size : options_.max_size;
  if (size > limit) {
    return fail(ErrorCode::kTooLarge,
                "content of " + std::to_string(size) + " bytes, the limit is " + std::to_string(limit));
  }
  // Stream the body in chunks: "fetch-stub <url>\n" repeated, cut at `size`.
  BodyWriter out(host_.env, req.path);
  Md5Digest md5;
  const std::string line = "fetch-stub " + req.url + "\n";
  std::string chunk;
  while (chunk.size() < 65536) chunk += line;
  std::uint64_t left = size;
  std::uint64_t offset = 0;  // position within the repeating line pattern
  while (left > 0) {
    const std::size_t start = static_cast<std::size_t>(offset % line.size());
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size() - start));
    std::string_view piece(chunk.data() + start, n);
    if (Status s = out.append(piece); !s.isOk()) return fail(ErrorCode::kInternal, "writing: " + s.message());
    md5.update(piece);
    left -= n;
    offset += n;
  }
  if (Status s = out.close(); !s.isOk()) return fail(ErrorCode::kInternal, "writing: " + s.message());
  r.size = size;
  r.md5 = d.md5 ? *d.md5 : md5.hex();
  r.last_modified = d.lm;
  r.etag = d.etag.value_or(std::string());
  if (options_.verify_md5 && !req.expected_md5.empty()) {
    std::string want = req.expected_md5;
    for (char& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (want != r.md5) return fail(ErrorCode::kMd5Mismatch, "MD5 " + r.md5 + ", declared " + want);
  }
  return r;
}

}  // namespace lcc::plugins::stub
