// lcc/byte_sink.h — where an exporter writes, and where it reads content from.
//
// A ByteSink is a socket (CU over TCP), an HTTP chunked body, or a file. write()
// may block until the peer takes the bytes (that is the back-pressure that keeps a
// 1M-record export in bounded memory). A non-OK write means the peer is gone: stop.
// THREADS: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lcc/status.h"

namespace lcc {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status write(std::string_view bytes) = 0;
  virtual Status flush() { return Status::ok(); }
};

// The stored bytes of one record, read sequentially.
class ContentSource {
 public:
  virtual ~ContentSource() = default;
  // Exact size of what read() will return in total.
  virtual std::uint64_t size() const = 0;
  // Reads up to n bytes; 0 at the end.
  virtual Result<std::size_t> read(char* buf, std::size_t n) = 0;
  // The HTTP status line and header lines these bytes were fetched with, ending with
  // the empty line, as the robot kept them (FetchResult::response_head); empty when
  // none were kept (fetched before they were, over the bound, another machine's content).
  virtual std::string responseHead() { return {}; }
};

}  // namespace lcc
