#include "s3/s3_request.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace lcc::s3 {

std::string errorCodeOf(const std::string& body) {
  auto a = body.find("<Code>");
  auto b = body.find("</Code>");
  if (a == std::string::npos || b == std::string::npos || b < a) return {};
  return body.substr(a + 6, b - a - 6);
}

size_t Request::onRead(char* buf, size_t size, size_t n, void* p) {
  auto* r = static_cast<Request*>(p);
  size_t want = size * n;
  if (r->upload_fd >= 0) {
    ssize_t got = ::read(r->upload_fd, buf, want);
    return got < 0 ? CURL_READFUNC_ABORT : static_cast<size_t>(got);
  }
  size_t take = std::min(want, r->upload_bytes.size());
  std::memcpy(buf, r->upload_bytes.data(), take);
  r->upload_bytes.remove_prefix(take);
  return take;
}

size_t Request::onWrite(char* data, size_t size, size_t n, void* p) {
  auto* r = static_cast<Request*>(p);
  size_t len = size * n;
  long code = 0;
  // The status is known once the body starts.
  curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &code);
  if (r->buffer != nullptr && code >= 200 && code < 300) {
    if (r->buffer->size() - r->buffer_read >= r->high_water) {
      r->paused = true;  // the bytes come again when the transfer is resumed
      return CURL_WRITEFUNC_PAUSE;
    }
    r->buffer->append(data, len);
    return len;
  }
  if (r->sink != nullptr && code >= 200 && code < 300) {
    if (!(*r->sink)(std::string_view(data, len))) {
      r->sink_stopped = true;
      return 0;
    }
    return len;
  }
  if (r->body.size() < r->body_limit) r->body.append(data, std::min(len, r->body_limit - r->body.size()));
  return len;
}

size_t Request::onHeader(char* data, size_t size, size_t n, void* p) {
  auto* r = static_cast<Request*>(p);
  std::string_view line(data, size * n);
  if (line == "\r\n" || line == "\n") r->head_done = true;
  constexpr std::string_view kHead = "x-amz-meta-lcc-head:";
  if (r->info != nullptr && line.size() > kHead.size() &&
      strncasecmp(line.data(), kHead.data(), kHead.size()) == 0) {
    std::string_view v = line.substr(kHead.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
    r->info->response_head.assign(v);
  }
  return size * n;
}

curl_slist* setupRequest(CURL* c, const S3Options& opts, Request& req) {
  req.curl = c;
  const std::string sigv4 = "aws:amz:" + opts.region + ":s3";
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method);
  curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(c, CURLOPT_USERNAME, opts.access_key.c_str());
  curl_easy_setopt(c, CURLOPT_PASSWORD, opts.secret_key.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Request::onWrite);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &req);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &Request::onHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &req);
  if (std::string_view(req.method) == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  struct curl_slist* hl = nullptr;
  hl = curl_slist_append(hl, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  // No waiting for "100 Continue" before a body. (Clearing the Expect header instead
  // breaks the signature: libcurl 7.88 signs the empty header it then does not send.)
  curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  for (const auto& h : req.headers) hl = curl_slist_append(hl, h.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  if (req.has_upload) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, &Request::onRead);
    curl_easy_setopt(c, CURLOPT_READDATA, &req);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.upload_size));
  }
  return hl;
}

Status httpStatus(const Request& req, long http) {
  if (http >= 200 && http < 300) return Status::ok();
  std::string msg = "s3: " + req.what + ": HTTP " + std::to_string(http);
  std::string code = errorCodeOf(req.body);
  if (!code.empty()) msg += " (" + code + ")";
  if (http == 404) return Status::notFound(msg);
  return Status::ioError(msg);
}

}  // namespace lcc::s3
