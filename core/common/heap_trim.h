// heap_trim.h — gives the kernel back the heap memory the allocator keeps after a burst.
//
// glibc keeps freed memory in its arenas: after lccd applies a set of a million URLs,
// about 70 MB of freed chunks stay resident although nothing uses them (measured with
// malloc_trim(0) from gdb, docs/benchmarks.md "ingest_bench"). HeapTrimmer is called
// on the node monitor's tick (every 10 s): when the allocator holds at least
// `threshold` free bytes it calls malloc_trim(0), which returns the free pages of every
// arena to the kernel (madvise), and reports what the resident size lost.
// THREADS: maybeTrim() may run on any thread; the allocator takes its own locks.
#pragma once

#include <cstdint>

namespace lcc {

// Free bytes the allocator holds in all its arenas (glibc mallinfo2().fordblks).
std::uint64_t heapFreeBytes();

// This process's resident size in bytes (VmRSS); 0 when it cannot be read.
std::uint64_t residentBytes();

class HeapTrimmer {
 public:
  // threshold 0: never trims.
  explicit HeapTrimmer(std::uint64_t threshold) : threshold_(threshold) {}

  struct Outcome {
    bool trimmed = false;
    std::uint64_t free_before = 0;   // heapFreeBytes() when it looked
    std::uint64_t released = 0;      // resident bytes before - after (0 when it grew)
  };
  Outcome maybeTrim();

 private:
  std::uint64_t threshold_;
};

}  // namespace lcc
