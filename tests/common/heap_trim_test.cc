// The heap trimmer gives a burst's freed memory back to the kernel, and only past its
// threshold (common/heap_trim.h). Its own binary: it measures this process's RSS.
#include "common/heap_trim.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace lcc {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kOwnAllocator = false;  // a sanitizer's allocator: mallinfo2 says nothing
#else
constexpr bool kOwnAllocator = true;
#endif

constexpr std::uint64_t kMiB = 1024 * 1024;

// What a large set leaves behind: many small blocks, all freed but the last one, which
// keeps the allocator from giving the space back by itself (it only shrinks its top).
std::unique_ptr<char[]> burstOfSmallBlocks(std::size_t count, std::size_t size) {
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    blocks.emplace_back(new char[size]);
    std::memset(blocks.back().get(), 0x5a, size);  // resident, not just reserved
  }
  std::unique_ptr<char[]> last = std::move(blocks.back());
  blocks.pop_back();
  return last;  // the rest is freed here
}

TEST(HeapTrim, AThresholdOfZeroNeverTrims) {
  auto pin = burstOfSmallBlocks(20000, 1000);
  EXPECT_FALSE(HeapTrimmer(0).maybeTrim().trimmed);
}

TEST(HeapTrim, FreedMemoryPastTheThresholdGoesBackToTheKernel) {
  if (!kOwnAllocator) GTEST_SKIP() << "a sanitizer's allocator";
  auto pin = burstOfSmallBlocks(160000, 600);  // about 100 MB
  ASSERT_GE(heapFreeBytes(), 64 * kMiB);
  EXPECT_FALSE(HeapTrimmer(1024 * 1024 * kMiB).maybeTrim().trimmed) << "under a threshold of 1 TiB";
  const std::uint64_t before = residentBytes();
  ASSERT_GT(before, 64 * kMiB);
  const HeapTrimmer::Outcome t = HeapTrimmer(32 * kMiB).maybeTrim();
  EXPECT_TRUE(t.trimmed);
  EXPECT_GE(t.free_before, 64 * kMiB);
  EXPECT_GE(t.released, 48 * kMiB);
  EXPECT_LE(residentBytes(), before - 48 * kMiB);
  EXPECT_NE(pin[0], 0);  // the pinned block is untouched
}

}  // namespace
}  // namespace lcc
