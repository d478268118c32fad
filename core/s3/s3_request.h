// s3_request.h — one S3 request on a curl handle (internal to core/s3): what it sends,
// where its answer goes, the SigV4 signing options, and the answer's Status.
#pragma once

#include <curl/curl.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"
#include "s3/s3_client.h"

namespace lcc::s3 {

inline constexpr std::size_t kMaxErrorBody = 4096;  // an error answer's XML kept for the message

struct Request {
  const char* method = "GET";
  std::string url;
  std::vector<std::string> headers;
  int upload_fd = -1;             // PUT of a file
  std::string_view upload_bytes;  // PUT of bytes
  std::uint64_t upload_size = 0;
  bool has_upload = false;
  const std::function<bool(std::string_view)>* sink = nullptr;  // a 2xx body goes here...
  std::string* buffer = nullptr;  // ...or here, up to `high_water` unread bytes (then the transfer pauses)
  std::size_t buffer_read = 0;    // bytes of *buffer already taken
  std::size_t high_water = 0;
  bool paused = false;
  bool head_done = false;         // the answer's header block ended
  std::string body;               // a non-2xx body (bounded)
  std::size_t body_limit = kMaxErrorBody;
  bool sink_stopped = false;
  S3GetInfo* info = nullptr;
  std::string what;               // "PUT key", for messages
  CURL* curl = nullptr;

  static size_t onRead(char* buf, size_t size, size_t n, void* p);
  static size_t onWrite(char* data, size_t size, size_t n, void* p);
  static size_t onHeader(char* data, size_t size, size_t n, void* p);
};

// Sets `c` (just reset) up for `req`: URL, method, SigV4 (the secret goes to libcurl
// only), connect timeout, the callbacks, the upload. Returns the header list, which the
// caller frees after the transfer. The whole-request timeout is the caller's choice.
curl_slist* setupRequest(CURL* c, const S3Options& opts, Request& req);
// The Status of an answered request: OK for 2xx, NotFound for 404, else IOError
// naming the HTTP status and the S3 error code.
Status httpStatus(const Request& req, long http);
// The <Code> of an S3 error answer, or empty.
std::string errorCodeOf(const std::string& body);

}  // namespace lcc::s3
