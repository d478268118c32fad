#include "s3/s3_reader.h"

#include <curl/curl.h>

#include <cstring>

#include "s3/s3_request.h"

namespace lcc::s3 {

struct S3Reader::Impl {
  S3Options opts;
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
  curl_slist* headers = nullptr;
  Request req;
  std::string buffer;
  S3GetInfo info;
  bool done = false;
  CURLcode result = CURLE_OK;
  long http = 0;

  ~Impl() {
    if (multi != nullptr && easy != nullptr) curl_multi_remove_handle(multi, easy);
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (multi != nullptr) curl_multi_cleanup(multi);
    if (headers != nullptr) curl_slist_free_all(headers);
  }

  // One turn: resume a paused transfer, move what can be moved, wait up to 200 ms.
  void turn() {
    if (req.paused && req.buffer_read == buffer.size()) {
      buffer.clear();
      req.buffer_read = 0;
      req.paused = false;
      curl_easy_pause(easy, CURLPAUSE_CONT);  // delivers the held bytes first
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg == CURLMSG_DONE) {
        done = true;
        result = m->data.result;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http);
      }
    }
    if (!done && !req.paused && req.buffer_read == buffer.size()) curl_multi_poll(multi, nullptr, 0, 200, nullptr);
  }

  Status failure() const {
    if (result != CURLE_OK) return Status::ioError("s3: " + req.what + ": " + curl_easy_strerror(result));
    return httpStatus(req, http);
  }
};

S3Reader::S3Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Reader::~S3Reader() = default;

Result<std::unique_ptr<S3Reader>> S3Reader::open(const S3Options& options, const std::string& key) {
  auto impl = std::make_unique<Impl>();
  impl->opts = options;
  impl->easy = curl_easy_init();
  impl->multi = curl_multi_init();
  if (impl->easy == nullptr || impl->multi == nullptr) return Status::internal("s3: curl init failed");
  Request& req = impl->req;
  req.url = S3Client::objectUrl(impl->opts, key);
  req.what = "GET " + key;
  req.buffer = &impl->buffer;
  req.high_water = kHighWater;
  req.info = &impl->info;
  impl->headers = setupRequest(impl->easy, impl->opts, req);
  const long stall = static_cast<long>((options.timeout.count() + 999) / 1000);
  curl_easy_setopt(impl->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(impl->easy, CURLOPT_LOW_SPEED_TIME, stall < 1 ? 1L : stall);
  curl_multi_add_handle(impl->multi, impl->easy);
  // Until the header block is in: the status decides before a byte is read. Bounded by
  // the connect timeout and the stall limit, which end the transfer.
  while (!impl->done && !req.head_done) impl->turn();
  long http = 0;
  curl_easy_getinfo(impl->easy, CURLINFO_RESPONSE_CODE, &http);
  if (!impl->done && (http < 200 || http >= 300)) {
    while (!impl->done) impl->turn();  // an error answer is small: take it whole for its message
  }
  if (impl->done && (impl->result != CURLE_OK || impl->http < 200 || impl->http >= 300)) return impl->failure();
  curl_off_t len = 0;
  if (curl_easy_getinfo(impl->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) == CURLE_OK && len > 0) {
    impl->info.size = static_cast<std::uint64_t>(len);
  }
  return std::unique_ptr<S3Reader>(new S3Reader(std::move(impl)));
}

std::uint64_t S3Reader::size() const { return impl_->info.size; }
const std::string& S3Reader::responseHeadBase64() const { return impl_->info.response_head; }

Result<std::size_t> S3Reader::read(char* buf, std::size_t n) {
  Impl& d = *impl_;
  while (d.req.buffer_read == d.buffer.size() && !d.done) d.turn();
  const std::size_t have = d.buffer.size() - d.req.buffer_read;
  if (have == 0) {
    if (d.result != CURLE_OK || d.http < 200 || d.http >= 300) return d.failure();
    return std::size_t{0};
  }
  const std::size_t take = std::min(n, have);
  std::memcpy(buf, d.buffer.data() + d.req.buffer_read, take);
  d.req.buffer_read += take;
  return take;
}

}  // namespace lcc::s3
