#include "s3/s3_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <strings.h>

#include <charconv>
#include <cstring>
#include <mutex>

#include "common/md5.h"
#include "http/url_codec.h"
#include "lcc/support/cu_xml_format.h"
#include "s3/s3_list.h"
#include "s3/s3_request.h"

namespace lcc::s3 {

namespace {
// libcurl's progress callback (about once a second, also while nothing moves): a
// non-zero return ends the transfer (S3Client::cancelWith).
int cancelled(void* flag, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(flag)->load() ? 1 : 0;
}
}  // namespace

std::string uriEncode(std::string_view s, bool keep_slash) {
  return http::percentEncode(s, keep_slash ? "/" : "");
}

std::string contentMd5(std::string_view md5_hex) {
  if (md5_hex.size() != 32) return {};
  std::string raw;
  for (std::size_t i = 0; i < 32; i += 2) {
    unsigned byte = 0;
    auto [end, ec] = std::from_chars(md5_hex.data() + i, md5_hex.data() + i + 2, byte, 16);
    if (ec != std::errc() || end != md5_hex.data() + i + 2) return {};
    raw.push_back(static_cast<char>(byte));
  }
  std::string out;
  proto::Base64Encoder enc;
  enc.update(raw.data(), raw.size(), out);
  enc.finish(out);
  return out;
}

S3Client::S3Client(S3Options options) : opts_(std::move(options)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
}

S3Client::~S3Client() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string S3Client::objectUrl(const S3Options& o, const std::string& key) {
  std::string url = o.endpoint;
  url.append("/").append(uriEncode(o.bucket, false)).append("/").append(uriEncode(key, true));
  return url;
}

std::string S3Client::urlFor(const std::string& key, const std::string& query) const {
  if (!key.empty()) return objectUrl(opts_, key) + (query.empty() ? std::string() : std::string("?").append(query));
  std::string url = opts_.endpoint;
  url.append("/").append(uriEncode(opts_.bucket, false));
  if (!query.empty()) url.append("?").append(query);
  return url;
}

Status S3Client::perform(Request& req) {
  last_http_ = 0;
  CURL* c = static_cast<CURL*>(curl_);
  if (c == nullptr) return Status::internal("s3: curl_easy_init failed");
  curl_easy_reset(c);
  curl_slist* hl = setupRequest(c, opts_, req);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(opts_.timeout.count()));
  if (cancel_ != nullptr) {
    if (cancel_->load()) {
      curl_slist_free_all(hl);
      return Status::aborted("s3: " + req.what + ": cancelled");
    }
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &cancelled);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, cancel_);
  }
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &last_http_);
  if (req.info != nullptr) {
    curl_off_t len = 0;
    if (curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) == CURLE_OK && len > 0) {
      req.info->size = static_cast<std::uint64_t>(len);
    }
  }
  curl_slist_free_all(hl);
  if (req.has_upload && (rc != CURLE_OK || last_http_ < 200 || last_http_ >= 300)) {
    // A store that refuses a PUT early (RGW on a bad signature) may leave the body unread
    // on the connection, and the next request on it would be read after those bytes
    // (405): the connection goes with the handle.
    curl_easy_cleanup(c);
    curl_ = curl_easy_init();
  }
  if (req.sink_stopped) return Status::aborted("s3: " + req.what + ": the reader stopped");
  if (rc == CURLE_ABORTED_BY_CALLBACK && cancel_ != nullptr && cancel_->load()) {
    return Status::aborted("s3: " + req.what + ": cancelled");
  }
  if (rc != CURLE_OK) {
    return Status::ioError("s3: " + req.what + ": " + curl_easy_strerror(rc));
  }
  return httpStatus(req, last_http_);
}

Status S3Client::createBucket() {
  Request req;
  req.method = "PUT";
  req.url = urlFor("", "");
  req.what = "create bucket " + opts_.bucket;
  Status s = perform(req);
  if (!s.isOk() && last_http_ == 409 && errorCodeOf(req.body) == "BucketAlreadyOwnedByYou") return Status::ok();
  return s;
}

Status S3Client::putFile(const std::string& key, const std::string& path, const std::string& md5_hex,
                         const std::string& head_b64) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::ioError("s3: PUT " + key + ": cannot open " + path);
  off_t size = ::lseek(fd, 0, SEEK_END);
  ::lseek(fd, 0, SEEK_SET);
  Request req;
  req.method = "PUT";
  req.url = urlFor(key, "");
  req.what = "PUT " + key;
  req.upload_fd = fd;
  req.upload_size = size < 0 ? 0 : static_cast<std::uint64_t>(size);
  req.has_upload = true;
  std::string md5 = contentMd5(md5_hex);
  if (!md5.empty()) req.headers.push_back("Content-MD5: " + md5);
  if (!head_b64.empty()) req.headers.push_back("x-amz-meta-lcc-head: " + head_b64);
  req.headers.push_back("Content-Type: application/octet-stream");
  Status s = perform(req);
  ::close(fd);
  return s;
}

Status S3Client::putBytes(const std::string& key, std::string_view bytes, const std::string& md5_hex) {
  Request req;
  req.method = "PUT";
  req.url = urlFor(key, "");
  req.what = "PUT " + key;
  req.upload_bytes = bytes;
  req.upload_size = bytes.size();
  req.has_upload = true;
  req.headers.push_back("Content-MD5: " + contentMd5(md5_hex.empty() ? Md5::of(bytes) : md5_hex));
  req.headers.push_back("Content-Type: application/octet-stream");
  return perform(req);
}

Status S3Client::get(const std::string& key, const std::function<bool(std::string_view)>& sink, S3GetInfo* info) {
  Request req;
  req.url = urlFor(key, "");
  req.what = "GET " + key;
  req.sink = &sink;
  req.info = info;
  return perform(req);
}

Result<std::string> S3Client::getString(const std::string& key, std::uint64_t max_bytes) {
  std::string out;
  bool too_big = false;
  std::function<bool(std::string_view)> sink = [&](std::string_view b) {
    if (out.size() + b.size() > max_bytes) {
      too_big = true;
      return false;
    }
    out.append(b);
    return true;
  };
  Status s = get(key, sink);
  if (too_big) return Status::invalidArgument("s3: GET " + key + ": larger than " + std::to_string(max_bytes));
  if (!s.isOk()) return s;
  return out;
}

Status S3Client::remove(const std::string& key) {
  Request req;
  req.method = "DELETE";
  req.url = urlFor(key, "");
  req.what = "DELETE " + key;
  Status s = perform(req);
  return s.isNotFound() ? Status::ok() : s;
}

Result<S3ListPage> S3Client::list(const std::string& prefix, const std::string& token, int max_keys) {
  // SigV4 signs the query in name order; libcurl 7.88 signs it as given.
  std::string q;
  if (!token.empty()) q += "continuation-token=" + uriEncode(token, false) + "&";
  q += "list-type=2&max-keys=" + std::to_string(max_keys) + "&prefix=" + uriEncode(prefix, false);
  Request req;
  req.url = urlFor("", q);
  req.what = "LIST " + prefix;
  req.body_limit = 64u << 20;  // 1000 keys are well below this
  std::string xml;
  std::function<bool(std::string_view)> sink = [&](std::string_view b) {
    if (xml.size() + b.size() > req.body_limit) return false;
    xml.append(b);
    return true;
  };
  req.sink = &sink;
  Status s = perform(req);
  if (!s.isOk()) return s;
  return parseListPage(xml);
}

}  // namespace lcc::s3
