// fetch-stub's scripted outcomes, through the real loader (what QM/BOT-M tests rely on).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>

#include "common/md5.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

using testing::SimClock;
using testing::TempDir;

// Collects done() calls; waits with a deadline (the worker thread calls done).
class Results {
 public:
  FetchDone callback() {
    return [this](const FetchResult& r) {
      std::lock_guard<std::mutex> l(mu_);
      calls_[r.id]++;
      results_[r.id] = r;
      cv_.notify_all();
    };
  }
  bool waitFor(std::uint64_t id, std::chrono::seconds limit = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, limit, [&] { return results_.count(id) > 0; });
  }
  FetchResult get(std::uint64_t id) {
    EXPECT_TRUE(waitFor(id)) << "no result for fetch " << id;
    std::lock_guard<std::mutex> l(mu_);
    return results_[id];
  }
  bool has(std::uint64_t id) {
    std::lock_guard<std::mutex> l(mu_);
    return results_.count(id) > 0;
  }
  int calls(std::uint64_t id) {
    std::lock_guard<std::mutex> l(mu_);
    return calls_[id];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, FetchResult> results_;
  std::map<std::uint64_t, int> calls_;
};

class FetchStubTest : public ::testing::Test {
 protected:
  FetchStubTest() : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}) {}

  PluginPtr<Fetcher> make(std::map<std::string, std::string> overrides = {}) {
    auto opts = registry_.defaultOptions("fetch-stub", overrides);
    EXPECT_TRUE(opts.isOk()) << opts.status().toString();
    auto f = registry_.makeFetcher("fetch-stub", opts.value());
    EXPECT_TRUE(f.isOk()) << f.status().toString();
    return std::move(f).value();
  }

  FetchRequest req(std::uint64_t id, std::string url) {
    FetchRequest r;
    r.id = id;
    r.url = std::move(url);
    r.path = dir_.file("f" + std::to_string(id));
    return r;
  }

  std::string readFile(const std::string& path) {
    auto s = posixEnv()->readFile(path);
    return s.isOk() ? s.value() : std::string("<missing>");
  }

  TempDir dir_;
  SimClock clock_;
  PluginRegistry registry_;
  Results results_;
};

TEST_F(FetchStubTest, WritesDeterministicBodyWithSizeAndMd5) {
  auto f = make();
  auto r1 = req(1, "http://example.org/a.htm?stub_size=1000");
  ASSERT_TRUE(f->start(r1, results_.callback()).isOk());
  FetchResult r = results_.get(1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.size, 1000u);
  std::string body = readFile(r1.path);
  EXPECT_EQ(body.size(), 1000u);
  EXPECT_EQ(body.rfind("fetch-stub http://example.org/a.htm?stub_size=1000\n", 0), 0u);
  EXPECT_EQ(r.md5, Md5::of(body));
  EXPECT_EQ(r.mime, "text/html");
  EXPECT_EQ(results_.calls(1), 1);
  EXPECT_EQ(f->inFlight(), 0u);
}

TEST_F(FetchStubTest, HttpStatusesMapToProtocolCodes) {
  auto f = make();
  const std::vector<std::pair<int, ErrorCode>> cases = {
      {404, ErrorCode::kNotFound},    {410, ErrorCode::kNotFound},    {403, ErrorCode::kAccessDenied},
      {401, ErrorCode::kAccessDenied}, {500, ErrorCode::kServerError}, {503, ErrorCode::kServerError},
      {400, ErrorCode::kHttpOther},   {302, ErrorCode::kRedirectError}};
  std::uint64_t id = 10;
  for (const auto& [status, code] : cases) {
    ASSERT_TRUE(f->start(req(id, "http://h/x?stub_status=" + std::to_string(status)), results_.callback()).isOk());
    FetchResult r = results_.get(id);
    EXPECT_EQ(r.code, code) << status;
    EXPECT_EQ(r.http_status, status);
    ++id;
  }
}

TEST_F(FetchStubTest, ProtocolCodeAndRetryAfter) {
  auto f = make();
  ASSERT_TRUE(f->start(req(1, "http://h/x?stub_code=305"), results_.callback()).isOk());
  EXPECT_EQ(results_.get(1).code, ErrorCode::kDnsFailure);
  ASSERT_TRUE(f->start(req(2, "http://h/x?stub_status=503&stub_retry_after=120"), results_.callback()).isOk());
  FetchResult r = results_.get(2);
  EXPECT_EQ(r.code, ErrorCode::kServerError);
  ASSERT_TRUE(r.retry_after.has_value());
  EXPECT_EQ(*r.retry_after, Millis(120000));
}

TEST_F(FetchStubTest, MimeMismatchAndSizeCap) {
  auto f = make();
  auto a = req(1, "http://h/x?stub_mime=text/plain");
  a.expected_mime = "text/html";
  ASSERT_TRUE(f->start(a, results_.callback()).isOk());
  FetchResult r = results_.get(1);
  EXPECT_EQ(r.code, ErrorCode::kMimeMismatch);
  EXPECT_EQ(r.mime, "text/plain");

  auto b = req(2, "http://h/x?stub_mime=text/html;%20charset=utf-8");
  b.expected_mime = "text/html";
  ASSERT_TRUE(f->start(b, results_.callback()).isOk());
  EXPECT_TRUE(results_.get(2).ok());

  auto c = req(3, "http://h/x?stub_size=2000");
  c.max_size = 1999;
  ASSERT_TRUE(f->start(c, results_.callback()).isOk());
  EXPECT_EQ(results_.get(3).code, ErrorCode::kTooLarge);
}

TEST_F(FetchStubTest, LastModifiedAndConditionalFetch) {
  auto f = make();
  const std::string url = "http://h/x?stub_lm=2024-05-01T10:00:00Z";
  auto a = req(1, url);
  ASSERT_TRUE(f->start(a, results_.callback()).isOk());
  FetchResult r = results_.get(1);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r.last_modified.has_value());
  EXPECT_EQ(*r.last_modified, 1714557600);

  auto b = req(2, url);
  b.if_modified_since = 1714557600LL;
  ASSERT_TRUE(posixEnv()->writeFileAtomic(b.path, "old").isOk());
  ASSERT_TRUE(f->start(b, results_.callback()).isOk());
  r = results_.get(2);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.unchanged);
  EXPECT_EQ(r.http_status, 304);
  EXPECT_EQ(readFile(b.path), "old");

  auto c = req(3, url);
  c.if_modified_since = 1714557599LL;
  ASSERT_TRUE(f->start(c, results_.callback()).isOk());
  EXPECT_FALSE(results_.get(3).unchanged);
}

TEST_F(FetchStubTest, DelayRunsOnTheInjectedClock) {
  auto f = make();
  ASSERT_TRUE(f->start(req(1, "http://h/x?stub_delay=500ms"), results_.callback()).isOk());
  EXPECT_EQ(f->inFlight(), 1u);
  clock_.advance(Millis(499));
  EXPECT_FALSE(results_.waitFor(1, std::chrono::seconds(0)));
  clock_.advance(Millis(1));
  EXPECT_TRUE(results_.get(1).ok());
}

TEST_F(FetchStubTest, CancelAndStopCallDoneOnceWithCancelled) {
  auto f = make();
  ASSERT_TRUE(f->start(req(1, "http://h/x?stub_delay=1h"), results_.callback()).isOk());
  ASSERT_TRUE(f->start(req(2, "http://h/x?stub_hang=yes"), results_.callback()).isOk());
  ASSERT_TRUE(f->start(req(3, "http://h/x?stub_hang=yes"), results_.callback()).isOk());
  EXPECT_FALSE(f->start(req(3, "http://h/y"), results_.callback()).isOk()) << "duplicate id in flight";
  f->cancel(1);
  FetchResult r = results_.get(1);
  EXPECT_EQ(r.code, ErrorCode::kInternal);
  EXPECT_EQ(r.message, "cancelled");
  f->cancel(2);
  EXPECT_EQ(results_.get(2).message, "cancelled");
  f->stop();
  EXPECT_EQ(results_.get(3).message, "cancelled");
  f->stop();  // idempotent
  clock_.advance(Millis(3600 * 1000));  // the cancelled timer must not fire anything
  EXPECT_EQ(results_.calls(1), 1);
  EXPECT_EQ(results_.calls(2), 1);
  EXPECT_EQ(results_.calls(3), 1);
  EXPECT_FALSE(f->start(req(4, "http://h/x"), results_.callback()).isOk());
}

TEST_F(FetchStubTest, ScriptFileWithPrefixesAndTimes) {
  const std::string script = dir_.file("stub.script");
  std::ofstream(script) << "# retries\n"
                           "http://a/ok status=503 times=2\n"
                           "http://a/ size=10   # afterwards, and for the rest of http://a/\n"
                           "http://b/ stub_code=306 delay=1s\n";
  auto f = make({{"script", script}});
  for (std::uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(f->start(req(id, "http://a/ok"), results_.callback()).isOk());
    results_.waitFor(id);
  }
  EXPECT_EQ(results_.get(1).code, ErrorCode::kServerError);
  EXPECT_EQ(results_.get(2).code, ErrorCode::kServerError);
  FetchResult third = results_.get(3);
  EXPECT_TRUE(third.ok());
  EXPECT_EQ(third.size, 10u);
  ASSERT_TRUE(f->start(req(4, "http://b/z"), results_.callback()).isOk());
  clock_.advance(Millis(1000));
  EXPECT_EQ(results_.get(4).code, ErrorCode::kConnectFailure);
}

TEST_F(FetchStubTest, BadScriptAndUnknownOptionAreRefused) {
  const std::string script = dir_.file("bad.script");
  std::ofstream(script) << "http://a/ status=abc\n";
  auto opts = registry_.defaultOptions("fetch-stub", {{"script", script}});
  ASSERT_TRUE(opts.isOk());
  auto f = registry_.makeFetcher("fetch-stub", opts.value());
  ASSERT_FALSE(f.isOk());
  EXPECT_NE(f.status().message().find("bad.script:1: stub_status"), std::string::npos) << f.status().message();

  auto unknown = registry_.defaultOptions("fetch-stub", {{"no_such_option", "1"}});
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("no_such_option"), std::string::npos);
}

TEST_F(FetchStubTest, RefusesWhatItCannotFetch) {
  auto f = make();
  EXPECT_FALSE(f->start(req(1, "ftp://h/x"), results_.callback()).isOk());
  EXPECT_FALSE(f->start(req(2, "http://h/x?stub_nonsense=1"), results_.callback()).isOk());
  EXPECT_EQ(f->inFlight(), 0u);
}

TEST_F(FetchStubTest, DoneMayStartAnotherFetch) {
  auto f = make();
  Fetcher* raw = f.get();
  ASSERT_TRUE(f->start(req(1, "http://h/first"),
                       [&, raw](const FetchResult&) {
                         EXPECT_TRUE(raw->start(req(2, "http://h/second"), results_.callback()).isOk());
                       })
                  .isOk());
  EXPECT_TRUE(results_.get(2).ok());
}

}  // namespace
}  // namespace lcc
