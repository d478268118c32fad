// exact_size_source.h — a record's content given as exactly the record's size: when
// what is read fails or ends early (a file that shrank, an object whose transfer
// broke), the rest is zero-filled and a warning logged once, so formats that announced
// the size stay readable; the record's md5 tells the difference.
#pragma once

#include <cstdint>
#include <string>

#include "common/metrics.h"
#include "lcc/byte_sink.h"

namespace lcc::cu {

class ExactSizeSource : public ContentSource {
 public:
  // `what` names the content in warnings (a path, an object key).
  ExactSizeSource(std::uint64_t size, std::string what, Counter& bytes)
      : size_(size), what_(std::move(what)), bytes_(bytes) {}

  std::uint64_t size() const final { return size_; }
  Result<std::size_t> read(char* buf, std::size_t n) final;

 protected:
  // Up to n bytes from `offset` (the bytes given so far); 0: the content ended.
  virtual Result<std::size_t> readAt(std::uint64_t offset, char* buf, std::size_t n) = 0;
  const std::string& what() const { return what_; }

 private:
  const std::uint64_t size_;
  const std::string what_;
  Counter& bytes_;
  std::uint64_t offset_ = 0;
  bool short_ = false;
};

}  // namespace lcc::cu
