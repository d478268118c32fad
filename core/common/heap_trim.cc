#include "common/heap_trim.h"

#include <malloc.h>

#include <cstdio>
#include <unistd.h>

namespace lcc {

std::uint64_t heapFreeBytes() {
  const struct mallinfo2 mi = ::mallinfo2();
  return static_cast<std::uint64_t>(mi.fordblks);
}

std::uint64_t residentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<std::uint64_t>(::getpagesize()) : 0;
}

HeapTrimmer::Outcome HeapTrimmer::maybeTrim() {
  Outcome out;
  if (threshold_ == 0) return out;
  out.free_before = heapFreeBytes();
  if (out.free_before < threshold_) return out;
  const std::uint64_t before = residentBytes();
  ::malloc_trim(0);
  const std::uint64_t after = residentBytes();
  out.trimmed = true;
  out.released = before > after ? before - after : 0;
  return out;
}

}  // namespace lcc
