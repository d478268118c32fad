// stream_sink.h — the client side of a streamed HTTP body (server.cc): a bounded queue
// between the stream thread that produces the body and the connection's strand that
// writes it. write() blocks while the queue is full (back-pressure) and fails once
// the client is gone or the server stops.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/byte_sink.h"
#include "lcc/status.h"

namespace lcc::http {

constexpr std::size_t kMaxChunk = 64 * 1024;  // one chunk of a streamed body

// The client side of a streamed body: bounded queue between the stream thread and
// the connection's strand.
class StreamSink final : public ByteSink {
 public:
  // `chunked` false: the body is sent raw (its length announced, or an HTTP/1.0 client
  // that reads until the connection closes). `length`: the exact byte count announced.
  StreamSink(std::size_t limit, bool chunked, std::optional<std::uint64_t> length, std::function<void()> kick)
      : limit_(limit), chunked_(chunked), length_(length), kick_(std::move(kick)) {}

  Status write(std::string_view bytes) override {
    if (length_ && bytes.size() > *length_ - written_total_) {
      return Status::internal("streamed body longer than its announced " + std::to_string(*length_) + " bytes");
    }
    written_total_ += bytes.size();
    while (!bytes.empty()) {
      std::size_t n = std::min(bytes.size(), kMaxChunk);
      LCC_RETURN_IF_ERROR(enqueue(chunked_ ? chunk(bytes.substr(0, n)) : std::string(bytes.substr(0, n)), false));
      bytes.remove_prefix(n);
    }
    return Status::ok();
  }

  // Queues the last chunk and waits until everything went out (or the client left).
  Status finish() {
    if (length_ && written_total_ != *length_) {
      return Status::internal("streamed body of " + std::to_string(written_total_) + " bytes, announced " +
                              std::to_string(*length_));
    }
    if (chunked_) LCC_RETURN_IF_ERROR(enqueue("0\r\n\r\n", true));
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return failed_ || (queued_ == 0 && pending_.empty() && !writing_); });
    return failed_ ? Status::ioError("the client is gone") : Status::ok();
  }

  void fail() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      failed_ = true;
      pending_.clear();
    }
    cv_.notify_all();
  }
  bool failed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_;
  }

  // Strand side: the next buffer to write, or nothing.
  std::optional<std::string> takeNext() {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_ || writing_ || pending_.empty()) return std::nullopt;
    writing_ = true;
    std::string s = std::move(pending_.front());
    pending_.pop_front();
    return s;
  }
  void written(std::size_t n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      queued_ -= std::min(queued_, n);
    }
    cv_.notify_all();
  }

 private:
  static std::string chunk(std::string_view data) {
    char head[32];
    int len = std::snprintf(head, sizeof head, "%zx\r\n", data.size());
    std::string out;
    out.reserve(static_cast<std::size_t>(len) + data.size() + 2);
    out.append(head, static_cast<std::size_t>(len));
    out.append(data);
    out.append("\r\n");
    return out;
  }

  Status enqueue(std::string buf, bool last) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return failed_ || queued_ < limit_ || last; });
      if (failed_) return Status::ioError("the client is gone");
      queued_ += buf.size();
      pending_.push_back(std::move(buf));
    }
    kick_();
    return Status::ok();
  }

  const std::size_t limit_;
  const bool chunked_;
  const std::optional<std::uint64_t> length_;
  std::uint64_t written_total_ = 0;  // stream thread only
  std::function<void()> kick_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> pending_;
  std::size_t queued_ = 0;
  bool writing_ = false;
  bool failed_ = false;
};

}  // namespace lcc::http
