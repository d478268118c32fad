// s3_client.h — the S3 API of an object store, spoken through libcurl (no SDK):
// PUT (a file, with Content-MD5), GET (streamed), DELETE, ListObjectsV2, bucket create.
//
// Requests are path-style (<endpoint>/<bucket>/<key>), signed with SigV4 by libcurl
// (CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3") over the header
// `x-amz-content-sha256: UNSIGNED-PAYLOAD`: the body is not hashed (the PUT's
// Content-MD5 is what the store checks it against). Query parameters are sent in
// SigV4's canonical order, since libcurl 7.88 signs them as given.
// THREADS: one S3Client per thread at a time (it keeps one curl handle, so its
// connection to the store is reused). Every request is bounded by s3.connect_timeout
// and s3.timeout. The secret key is never logged, nor put in a Status message.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"
#include "s3/s3_options.h"

namespace lcc::s3 {

struct S3Object {
  std::string key;
  std::uint64_t size = 0;
};

struct S3ListPage {
  std::vector<S3Object> objects;
  std::string next_token;  // empty: the last page
};

// Headers of a GET answer that a reader may want.
struct S3GetInfo {
  std::uint64_t size = 0;      // Content-Length of the answer
  std::string response_head;   // x-amz-meta-lcc-head: the robot's stored head, base64 (or empty)
};

struct Request;  // s3_request.h

class S3Client {
 public:
  explicit S3Client(S3Options options);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // Creates the bucket; one that exists already (and is ours) is OK.
  Status createBucket();
  // PUT of the file at `path` under `key`. `md5_hex` (32 hex digits, of the file's
  // bytes) goes as Content-MD5, so the store refuses bytes that are not those (400).
  // `head_b64` (may be empty) is kept as the object's metadata x-amz-meta-lcc-head.
  Status putFile(const std::string& key, const std::string& path, const std::string& md5_hex,
                 const std::string& head_b64 = {});
  // PUT of `bytes` (tests, small objects); `md5_hex` empty: computed.
  Status putBytes(const std::string& key, std::string_view bytes, const std::string& md5_hex = {});
  // GET: the body goes to `sink` piece by piece (false from it stops the transfer: Aborted).
  // NotFound when there is no such object.
  Status get(const std::string& key, const std::function<bool(std::string_view)>& sink, S3GetInfo* info = nullptr);
  // GET of a whole object of at most `max_bytes`.
  Result<std::string> getString(const std::string& key, std::uint64_t max_bytes);
  // DELETE; an object that is not there is OK (S3 answers 204 either way).
  Status remove(const std::string& key);
  // One page of ListObjectsV2 under `prefix`, after `token` (empty: the first page).
  Result<S3ListPage> list(const std::string& prefix, const std::string& token, int max_keys = 1000);

  // <endpoint>/<bucket>/<key>, the key URI-encoded.
  static std::string objectUrl(const S3Options& options, const std::string& key);

  // While `*cancel` is true, a request under way ends (Aborted) within about a second
  // (libcurl's progress callback), and a new one fails at once. Null: never cancelled.
  void cancelWith(const std::atomic<bool>* cancel) { cancel_ = cancel; }

  // The HTTP status of the last request (0: no answer).
  long lastHttpStatus() const { return last_http_; }
  const S3Options& options() const { return opts_; }

 private:
  Status perform(Request& req);
  std::string urlFor(const std::string& key, const std::string& query) const;  // key empty: the bucket

  S3Options opts_;
  void* curl_ = nullptr;  // CURL*, kept for connection reuse
  const std::atomic<bool>* cancel_ = nullptr;
  long last_http_ = 0;
};

// RFC 3986 encoding as SigV4 wants it: unreserved characters stay, everything else is
// %XX; with keep_slash, '/' stays too (an object key in a path).
std::string uriEncode(std::string_view s, bool keep_slash);
// Content-MD5's value: base64 of the 16 bytes that `md5_hex` spells; empty when it is
// not 32 hex digits.
std::string contentMd5(std::string_view md5_hex);

}  // namespace lcc::s3
