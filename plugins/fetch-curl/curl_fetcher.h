// curl_fetcher.h — fetch-curl's Fetcher: libcurl's multi interface on one thread,
// file writes and MD5 on writer threads (see README.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "address_policy.h"
#include "lcc/fetcher.h"
#include "lcc/host.h"

namespace lcc::plugins::curl {

struct CurlOptions {
  bool allow_private = false;
  PeerAllowList allow_peers;  // reached whatever their address (allow_private off)
  Millis timeout{300'000};
  Millis connect_timeout{30'000};
  std::uint64_t max_size = 50ull << 20;
  long max_redirects = 5;  // each one judged by FetchRequest::redirects
  std::string user_agent = "lcc-robot/0.1 (Local Content Cache robot; +https://www.lococa.org/)";
  long max_connections = 256;
  int io_threads = 1;
  bool verify_md5 = false;
  std::size_t write_chunk = 256 * 1024;  // bytes gathered before a write is handed to a writer
};

// Maps an HTTP status that is not a success to a docs/protocol.md §2 code.
ErrorCode classifyHttpStatus(long status, bool conditional);
// "text/html; charset=utf-8" -> "text/html" (lower case, trimmed).
std::string baseMime(std::string_view content_type);
// Retry-After: delta seconds or an HTTP date (relative to now_unix); nullopt if unparsable.
std::optional<std::int64_t> parseRetryAfter(std::string_view value, std::int64_t now_unix);
// ETag: the header value without surrounding white space (and line end) when it is
// an entity tag the LCC keeps (lcc::isValidEtag: at most kMaxEtagBytes of printable
// ASCII, no CR, LF or other control character); nullopt otherwise.
std::optional<std::string> parseEtag(std::string_view value);

class CurlFetcher final : public Fetcher {
 public:
  CurlFetcher(const HostContext& host, CurlOptions options);
  ~CurlFetcher() override;

  Status start(const FetchRequest& request, FetchDone done) override;
  void cancel(std::uint64_t id) override;
  std::size_t inFlight() const override;
  void stop() override;

  struct Transfer;  // one fetch on the curl thread
  struct Sink;      // the file side of one fetch, on a writer thread
  // Curl thread: hands the bytes gathered so far to the transfer's writer.
  void postChunk(Transfer* t);
  std::size_t chunkBytes() const { return opts_.write_chunk; }
  // Curl thread (the socket-open callback): the peers reached whatever their address.
  const PeerAllowList& peers() const { return opts_.allow_peers; }

 private:
  class Writer;

  void run();
  void addTransfer(std::unique_ptr<Transfer> t);
  enum class Hop { kNone, kFollowed, kRefused };
  // A 3xx with a Location: judged (redirect_policy.h), then followed on the same handle
  // (kFollowed) or refused with 310 in *refused (kRefused). kNone: not a redirect.
  Hop redirect(Transfer* t, int curl_code, FetchResult* refused);
  void complete(Transfer* t, int curl_code);
  void finish(std::unique_ptr<Transfer> t, FetchResult result);
  Writer& writerFor(std::uint64_t seq);

  HostContext host_;
  CurlOptions opts_;
  void* multi_ = nullptr;  // CURLM*
  std::vector<void*> easy_pool_;  // CURL* handles kept for reuse

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Transfer>> incoming_;
  std::vector<std::uint64_t> cancels_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<bool> wake_pending_{false};  // one curl_multi_wakeup per loop turn is enough
  std::uint64_t next_seq_ = 0;

  std::unordered_map<std::uint64_t, std::unique_ptr<Transfer>> active_;  // curl thread only
  std::vector<std::unique_ptr<Writer>> writers_;
  std::thread thread_;
  std::mutex stop_mu_;
};

}  // namespace lcc::plugins::curl
