// bounded_pipe.h — the bytes of one answer, from the export worker to the Asio side.
//
// The worker writes (ByteSink) and blocks while `capacity` bytes wait; the Asio side
// takes chunks and writes them to the socket. That is the back-pressure that keeps a
// 1M-record export in bounded memory: a slow client slows the worker, never grows a
// buffer. When the consumer finds the pipe empty it leaves a waiter, which the next
// write (or finish) calls once, from the worker's thread; the waiter posts to the
// connection's strand.
// THREADS: one producer thread, one consumer (a strand); every method is thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "lcc/byte_sink.h"

namespace lcc::cu {

class BoundedPipe final : public ByteSink {
 public:
  // capacity: bytes buffered before write() blocks; chunk: bytes per taken chunk.
  explicit BoundedPipe(std::size_t capacity, std::size_t chunk = 64 * 1024);

  // Producer.
  Status write(std::string_view bytes) override;  // Aborted once the consumer closed
  void finish(Status status);                     // no more writes; status says how it ended

  // Consumer.
  enum class Take : std::uint8_t { kData, kEmpty, kEnd };
  // kData: `out` holds the next chunk. kEmpty: nothing yet; `waiter` runs once when
  // there is (it may run at once, on this thread, if data raced in). kEnd: finished
  // and drained; finalStatus() says how.
  Take take(std::string& out, std::function<void()> waiter);
  // The consumer is gone: pending and future writes fail.
  void close();
  bool closed() const;  // the consumer is gone (a queued export need not start)
  Status finalStatus() const;
  std::size_t buffered() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const std::size_t capacity_;
  const std::size_t chunk_;
  std::deque<std::string> chunks_;
  std::size_t bytes_ = 0;
  bool closed_ = false;
  bool finished_ = false;
  Status final_;
  std::function<void()> waiter_;
};

}  // namespace lcc::cu
