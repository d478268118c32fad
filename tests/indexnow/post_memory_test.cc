// What reading an IndexNow POST body costs in memory (issue 25): a JSON nesting bomb
// under http.max_body (4,000,000 '[' in 3.9 MB) made the DOM parser allocate about
// 290 MB. The body is now read as SAX events and refused past depth 2, so it costs
// next to nothing; a real list of 10,000 URLs costs a small multiple of its size.
// This binary counts every heap allocation (operator new is replaced below), which is
// why it is a test program of its own.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include <gtest/gtest.h>

#include "indexnow/request.h"

namespace {

std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};

void* counted(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  const std::size_t now = g_live.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
  std::size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void uncounted(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(malloc_usable_size(p));
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) { return counted(std::malloc(n == 0 ? 1 : n)); }
void* operator new[](std::size_t n) { return counted(std::malloc(n == 0 ? 1 : n)); }
void operator delete(void* p) noexcept { uncounted(p); }
void operator delete[](void* p) noexcept { uncounted(p); }
void operator delete(void* p, std::size_t) noexcept { uncounted(p); }
void operator delete[](void* p, std::size_t) noexcept { uncounted(p); }

namespace lcc::indexnow {
namespace {

// Bytes allocated at the peak of parsePost(body) beyond what was live before, and the status.
std::pair<std::size_t, int> peakOf(const std::string& body) {
  const std::size_t before = g_live.load();
  g_peak = before;
  const Parsed parsed = parsePost(body);
  const std::size_t peak = g_peak.load() - before;
  return {peak, std::holds_alternative<Refusal>(parsed) ? std::get<Refusal>(parsed).status : 0};
}

constexpr std::size_t kMiB = 1024 * 1024;

TEST(IndexNowPostMemoryTest, ANestingBombIsRefusedForNextToNothing) {
  const std::string key = "7e3f6e8bc6b743e2a5e6a4a4c2d1a0a5";
  const std::vector<std::string> bombs = {
      std::string(4'000'000, '['),                                                   // the attack as found
      std::string(1'900'000, '[') + std::string(1'900'000, ']'),                    // closed: valid JSON
      [] {
        std::string objects;
        for (int i = 0; i < 600'000; ++i) objects += "{\"a\":";  // 3.6 MB of objects in objects
        return objects;
      }(),
      "{\"host\": \"a.example\", \"key\": \"" + key + "\", \"urlList\": " + std::string(3'000'000, '['),
      "{\"host\": \"a.example\", \"x\": " + std::string(3'000'000, '['),
  };
  for (const auto& bomb : bombs) {
    const auto [peak, status] = peakOf(bomb);
    EXPECT_EQ(status, 400) << bomb.substr(0, 60);
    EXPECT_LT(peak, kMiB) << bomb.substr(0, 60) << ": " << peak / kMiB << " MiB at the peak";
  }
}

TEST(IndexNowPostMemoryTest, TenThousandUrlsCostASmallMultipleOfTheirBody) {
  std::string body = "{\"host\": \"a.example\", \"key\": \"7e3f6e8bc6b743e2a5e6a4a4c2d1a0a5\", \"urlList\": [";
  for (int i = 0; i < 10'000; ++i) body += (i ? ",\"" : "\"") + std::string("http://a.example/docs/page-") + std::to_string(i) + ".html\"";
  body += "]}";
  const auto [peak, status] = peakOf(body);
  EXPECT_EQ(status, 0) << "accepted";
  EXPECT_LT(peak, 8 * body.size()) << peak << " bytes at the peak for a body of " << body.size();
}

}  // namespace
}  // namespace lcc::indexnow
