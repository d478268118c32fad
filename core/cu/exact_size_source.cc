#include "cu/exact_size_source.h"

#include <spdlog/spdlog.h>

#include <cstring>

namespace lcc::cu {

Result<std::size_t> ExactSizeSource::read(char* buf, std::size_t n) {
  const std::uint64_t left = size_ - offset_;
  if (n > left) n = static_cast<std::size_t>(left);
  if (n == 0) return std::size_t{0};
  std::size_t got = 0;
  if (!short_) {
    auto r = readAt(offset_, buf, n);
    if (!r.isOk()) {
      spdlog::warn("cu: reading {}: {}; the rest is zero-filled", what_, r.status().toString());
      short_ = true;
    } else if (*r == 0) {
      spdlog::warn("cu: {} is shorter than its record says ({} of {} bytes); the rest is zero-filled", what_, offset_,
                   size_);
      short_ = true;
    } else {
      got = *r;
    }
  }
  if (short_) {
    std::memset(buf, 0, n);
    got = n;
  }
  offset_ += got;
  bytes_.inc(got);
  return got;
}

}  // namespace lcc::cu
