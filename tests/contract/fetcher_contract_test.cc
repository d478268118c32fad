// The fetcher contract suite (lcc/fetcher.h) over every plugin in LCC_FETCHER_PLUGINS
// (each fetcher's CMakeLists adds itself). Every case runs against a real HTTP server
// on 127.0.0.1 (tests/support/http_test_server.h); each URL also carries fetch-stub
// directives (stub_status=..., ignored by the server), so the same case describes the
// same outcome for a networked fetcher and for fetch-stub, which never connects.
// Checks that need the network itself (what the server saw) run only for fetchers
// that are not fetch-stub.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/logging.h"
#include "common/md5.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "lcc/support/time_util.h"
#include "support/http_test_server.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "support/plugin_list.h"

namespace lcc {
namespace {

using testing::HttpTestResponse;
using testing::HttpTestServer;

std::vector<std::string> fetcherPlugins() {
  return lcc::testing::splitList(LCC_FETCHER_PLUGINS);
}

constexpr auto kWait = std::chrono::seconds(20);

class Results {
 public:
  FetchDone callback() {
    return [this](const FetchResult& r) {
      std::lock_guard<std::mutex> l(mu_);
      ++calls_[r.id];
      results_[r.id] = r;
      cv_.notify_all();
    };
  }
  FetchResult get(std::uint64_t id) {
    std::unique_lock<std::mutex> l(mu_);
    bool got = cv_.wait_for(l, kWait, [&] { return results_.count(id) > 0; });
    EXPECT_TRUE(got) << "done() never ran for fetch " << id;
    return got ? results_[id] : FetchResult{};
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

class FetcherContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.start().isOk());
    auto loaded = registry_.load(GetParam());
    ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
    // The server is on loopback: let fetchers with an address policy reach it.
    std::map<std::string, std::string> overrides;
    const PluginDescriptor* d = loaded.value()->descriptor;
    for (std::size_t i = 0; i < d->option_count; ++i) {
      if (std::string(d->options[i].name) == "allow_private") overrides["allow_private"] = "true";
    }
    auto opts = registry_.defaultOptions(GetParam(), overrides);
    ASSERT_TRUE(opts.isOk()) << opts.status().toString();
    auto f = registry_.makeFetcher(GetParam(), opts.value());
    ASSERT_TRUE(f.isOk()) << f.status().toString();
    fetcher_ = std::move(f).value();
  }
  void TearDown() override {
    if (fetcher_) fetcher_->stop();
    server_.stop();
  }

  bool networked() const { return GetParam() != "fetch-stub"; }

  FetchRequest req(std::uint64_t id, const std::string& path_and_query) {
    FetchRequest r;
    r.id = id;
    r.url = server_.url(path_and_query);
    r.path = dir_.file("fetch-" + std::to_string(id) + ".tmp");
    return r;
  }
  FetchResult fetch(const FetchRequest& r) {
    Status s = fetcher_->start(r, results_.callback());
    EXPECT_TRUE(s.isOk()) << s.toString();
    if (!s.isOk()) return {};
    return results_.get(r.id);
  }
  static std::string fileOf(const std::string& path) {
    auto r = posixEnv()->readFile(path);
    return r.isOk() ? r.value() : "<missing>";
  }
  // Waits (with a deadline) until the server holds `n` stalled connections.
  bool waitStalled(std::size_t n) {
    if (!networked()) return true;
    auto deadline = std::chrono::steady_clock::now() + kWait;
    while (server_.stalledNow() < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
  static HttpTestResponse body(int status, std::string mime, std::string bytes) {
    HttpTestResponse r;
    r.status = status;
    r.headers = {{"Content-Type", std::move(mime)}};
    r.body = std::move(bytes);
    return r;
  }

  testing::TempDir dir_;
  testing::SimClock clock_;
  PluginRegistry registry_{LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger("test"), dir_.path(), "m1"}};
  HttpTestServer server_;
  PluginPtr<Fetcher> fetcher_;
  Results results_;
};

std::string pattern(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + i % 26));
  return s;
}

TEST_P(FetcherContractTest, SuccessWritesTheBodyAndDescribesItExactly) {
  server_.serve("/a.htm", body(200, "text/html; charset=utf-8", pattern(3000)));
  FetchRequest r = req(1, "/a.htm?stub_size=3000");
  r.expected_mime = "text/html";
  FetchResult res = fetch(r);
  ASSERT_TRUE(res.ok()) << res.message;
  EXPECT_EQ(res.id, 1u);
  EXPECT_EQ(res.http_status, 200);
  EXPECT_EQ(res.mime, "text/html") << "Content-Type without parameters";
  EXPECT_FALSE(res.unchanged);
  const std::string got = fileOf(r.path);
  EXPECT_EQ(res.size, got.size());
  EXPECT_EQ(res.size, 3000u);
  EXPECT_EQ(res.md5, Md5::of(got));
  if (networked()) {
    EXPECT_EQ(got, pattern(3000));
  }
  EXPECT_EQ(results_.calls(1), 1);
  EXPECT_EQ(fetcher_->inFlight(), 0u);
}

TEST_P(FetcherContractTest, ChunkedBodyIsWhole) {
  HttpTestResponse chunked = body(200, "text/plain", pattern(5000));
  chunked.chunked = true;
  chunked.chunk_size = 700;
  server_.serve("/c.txt", chunked);
  FetchRequest r = req(1, "/c.txt?stub_size=5000&stub_mime=text/plain");
  FetchResult res = fetch(r);
  ASSERT_TRUE(res.ok()) << res.message;
  EXPECT_EQ(res.size, 5000u);
  EXPECT_EQ(res.md5, Md5::of(fileOf(r.path)));
}

TEST_P(FetcherContractTest, HttpErrorsMapToProtocolCodes) {
  // Unrouted paths are 404.
  FetchResult nf = fetch(req(1, "/missing.htm?stub_status=404"));
  EXPECT_EQ(nf.code, ErrorCode::kNotFound);
  EXPECT_EQ(nf.http_status, 404);
  server_.serve("/forbidden", body(403, "text/html", "no"));
  EXPECT_EQ(fetch(req(2, "/forbidden?stub_status=403")).code, ErrorCode::kAccessDenied);
  server_.serve("/bad", body(400, "text/html", "bad"));
  EXPECT_EQ(fetch(req(3, "/bad?stub_status=400")).code, ErrorCode::kHttpOther);
  server_.serve("/gone", body(410, "text/html", "gone"));
  EXPECT_EQ(fetch(req(4, "/gone?stub_status=410")).code, ErrorCode::kNotFound);
}

TEST_P(FetcherContractTest, ServerErrorCarriesRetryAfter) {
  HttpTestResponse busy = body(503, "text/html", "busy");
  busy.headers.emplace_back("Retry-After", "120");
  server_.serve("/busy", busy);
  FetchResult res = fetch(req(1, "/busy?stub_status=503&stub_retry_after=120"));
  EXPECT_EQ(res.code, ErrorCode::kServerError);
  EXPECT_EQ(res.http_status, 503);
  ASSERT_TRUE(res.retry_after.has_value());
  EXPECT_EQ(*res.retry_after, Millis(120000));
}

TEST_P(FetcherContractTest, MimeMismatchIs307) {
  server_.serve("/p", body(200, "text/plain", "plain"));
  FetchRequest r = req(1, "/p?stub_mime=text/plain");
  r.expected_mime = "text/html";
  FetchResult res = fetch(r);
  EXPECT_EQ(res.code, ErrorCode::kMimeMismatch);
}

TEST_P(FetcherContractTest, LargerThanMaxSizeIs308) {
  server_.serve("/big", body(200, "text/html", pattern(10000)));
  FetchRequest r = req(1, "/big?stub_size=10000");
  r.max_size = 4000;
  EXPECT_EQ(fetch(r).code, ErrorCode::kTooLarge);
}

TEST_P(FetcherContractTest, LastModifiedAndConditionalFetch) {
  const std::int64_t lm = 1714557600;  // 2024-05-01T10:00:00Z
  server_.handle("/lm", [lm](const testing::HttpTestRequest& q) {
    HttpTestResponse r;
    const std::string since = q.header("if-modified-since");
    if (!since.empty()) {
      r.status = 304;
      return r;
    }
    r.headers = {{"Content-Type", "text/html"}, {"Last-Modified", "Wed, 01 May 2024 10:00:00 GMT"}};
    r.body = "fresh";
    return r;
  });
  const std::string q = "/lm?stub_lm=" + formatRfc3339(lm) + "&stub_size=5";
  FetchResult first = fetch(req(1, q));
  ASSERT_TRUE(first.ok()) << first.message;
  ASSERT_TRUE(first.last_modified.has_value());
  EXPECT_EQ(*first.last_modified, lm);

  FetchRequest again = req(2, q);
  again.if_modified_since = lm;
  ASSERT_TRUE(posixEnv()->writeFileAtomic(again.path, "stored before").isOk());
  FetchResult second = fetch(again);
  EXPECT_TRUE(second.ok()) << second.message;
  EXPECT_TRUE(second.unchanged);
  EXPECT_EQ(second.http_status, 304);
  EXPECT_EQ(fileOf(again.path), "stored before") << "a 304 leaves the file alone";
  if (networked()) {
    auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_FALSE(reqs[1].header("if-modified-since").empty());
  }
}

TEST_P(FetcherContractTest, ConnectionRefusedIs306) {
  // A port nobody listens on: bind one, read it, close it.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  FetchRequest r = req(1, "/x");
  r.url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/x?stub_code=306";
  EXPECT_EQ(fetch(r).code, ErrorCode::kConnectFailure);
}

TEST_P(FetcherContractTest, CancelEndsAStalledFetchOnce) {
  HttpTestResponse slow = body(200, "text/html", pattern(100));
  slow.stall = HttpTestResponse::Stall::kAfterHeaders;
  server_.serve("/slow", slow);
  FetchRequest r = req(1, "/slow?stub_hang=yes");
  ASSERT_TRUE(fetcher_->start(r, results_.callback()).isOk());
  ASSERT_TRUE(waitStalled(1));
  EXPECT_EQ(fetcher_->inFlight(), 1u);
  fetcher_->cancel(1);
  FetchResult res = results_.get(1);
  EXPECT_EQ(res.code, ErrorCode::kInternal);
  EXPECT_EQ(res.message, "cancelled");
  fetcher_->cancel(1);  // unknown by now: nothing happens
  fetcher_->stop();
  EXPECT_EQ(results_.calls(1), 1);
  EXPECT_EQ(fetcher_->inFlight(), 0u);
}

TEST_P(FetcherContractTest, StopEndsEveryFetchAndRefusesNewOnes) {
  HttpTestResponse slow = body(200, "text/html", pattern(100));
  slow.stall = HttpTestResponse::Stall::kMidBody;
  server_.serve("/slow", slow);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(fetcher_->start(req(id, "/slow?stub_hang=yes"), results_.callback()).isOk());
  }
  ASSERT_TRUE(waitStalled(3));
  fetcher_->stop();
  for (std::uint64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(results_.get(id).message, "cancelled");
    EXPECT_EQ(results_.calls(id), 1);
  }
  EXPECT_FALSE(fetcher_->start(req(4, "/a"), results_.callback()).isOk());
  fetcher_->stop();
}

TEST_P(FetcherContractTest, DoneMayStartTheNextFetch) {
  server_.serve("/one", body(200, "text/html", "1"));
  server_.serve("/two", body(200, "text/html", "22"));
  Fetcher* f = fetcher_.get();
  FetchRequest second = req(2, "/two?stub_size=2");
  FetchDone on_first = [&, f, second](const FetchResult&) {
    EXPECT_TRUE(f->start(second, results_.callback()).isOk());
  };
  ASSERT_TRUE(fetcher_->start(req(1, "/one?stub_size=1"), on_first).isOk());
  FetchResult res = results_.get(2);
  EXPECT_TRUE(res.ok()) << res.message;
  EXPECT_EQ(res.size, 2u);
}

TEST_P(FetcherContractTest, ManyFetchesAtOnceEachDoneOnce) {
  for (int i = 0; i < 20; ++i) server_.serve("/m" + std::to_string(i), body(200, "text/html", pattern(100 + i)));
  for (std::uint64_t id = 1; id <= 20; ++id) {
    const int i = static_cast<int>(id - 1);
    ASSERT_TRUE(fetcher_->start(req(id, "/m" + std::to_string(i) + "?stub_size=" + std::to_string(100 + i)),
                                results_.callback())
                    .isOk());
  }
  for (std::uint64_t id = 1; id <= 20; ++id) {
    FetchResult res = results_.get(id);
    EXPECT_TRUE(res.ok()) << res.message;
    EXPECT_EQ(res.size, 100 + id - 1);
    EXPECT_EQ(results_.calls(id), 1);
  }
  EXPECT_EQ(fetcher_->inFlight(), 0u);
}

// ETags (issue 29 §5): the response's ETag is in the result (also of a 304); a request
// with if_none_match equal to it gets 304 `unchanged` and the file is left alone; one
// naming another ETag is fetched. No Last-Modified here: only the ETag can make a 304.
TEST_P(FetcherContractTest, KeepsTheEtagAndIfNoneMatchMakesA304) {
  server_.handle("/etag", [](const testing::HttpTestRequest& q) {
    HttpTestResponse r;
    r.headers = {{"ETag", "\"v1\""}};
    if (q.header("if-none-match") == "\"v1\"") {
      r.status = 304;
      return r;
    }
    r.headers.emplace_back("Content-Type", "text/html");
    r.body = "fresh";
    return r;
  });
  const std::string q = "/etag?stub_etag=%22v1%22&stub_size=5";
  FetchResult first = fetch(req(1, q));
  ASSERT_TRUE(first.ok()) << first.message;
  EXPECT_FALSE(first.unchanged);
  EXPECT_EQ(first.etag, "\"v1\"");

  FetchRequest again = req(2, q);
  again.if_none_match = "\"v1\"";
  ASSERT_TRUE(posixEnv()->writeFileAtomic(again.path, "stored before").isOk());
  FetchResult second = fetch(again);
  EXPECT_TRUE(second.ok()) << second.message;
  EXPECT_TRUE(second.unchanged);
  EXPECT_EQ(second.http_status, 304);
  EXPECT_EQ(second.etag, "\"v1\"");
  EXPECT_EQ(fileOf(again.path), "stored before") << "a 304 leaves the file alone";

  FetchRequest other = req(3, q);
  other.if_none_match = "\"v0\"";
  FetchResult third = fetch(other);
  ASSERT_TRUE(third.ok()) << third.message;
  EXPECT_FALSE(third.unchanged) << "another ETag is a change";
  EXPECT_EQ(third.size, 5u);
  if (networked()) {
    auto reqs = server_.requests();
    ASSERT_EQ(reqs.size(), 3u);
    EXPECT_EQ(reqs[0].header("if-none-match"), "");
    EXPECT_EQ(reqs[1].header("if-none-match"), "\"v1\"");
    EXPECT_EQ(reqs[2].header("if-none-match"), "\"v0\"");
  }
}

// An if_none_match that could not go into a header as it is (CR, LF, a control byte, too
// long) ends the fetch with 140 and nothing is sent: no header injection.
TEST_P(FetcherContractTest, RefusesAnIfNoneMatchThatIsNotAnEntityTag) {
  server_.serve("/inm", body(200, "text/html", "fresh"));
  const std::string bad[] = {"\"a\"\r\nX-Injected: 1", "\"a\nb\"", std::string("\"a\x01\""),
                             "\"" + std::string(kMaxEtagBytes, 'x') + "\""};
  std::uint64_t id = 0;
  for (const std::string& v : bad) {
    FetchRequest r = req(++id, "/inm?stub_size=5");
    r.if_none_match = v;
    FetchResult got = fetch(r);
    EXPECT_EQ(got.code, ErrorCode::kInternal) << v;
    EXPECT_NE(got.message.find("If-None-Match"), std::string::npos) << got.message;
  }
  if (networked()) EXPECT_EQ(server_.requests().size(), 0u) << "nothing reached the server";
}

// A hostile ETag (too long, a control byte, a lone CR, bytes above 0x7E) is not kept;
// the fetch itself succeeds. White space around a good one is not part of it.
TEST_P(FetcherContractTest, AnEtagThatIsNotAnEntityTagIsNotKept) {
  if (!networked()) GTEST_SKIP() << "a header a real server sends";
  const std::pair<std::string, std::string> cases[] = {
      {"\"" + std::string(kMaxEtagBytes, 'x') + "\"", ""},
      {std::string("\"a\x01b\""), ""},
      {"\"a\rb\"", ""},
      {"\"caf\xc3\xa9\"", ""},
      {"\"" + std::string(kMaxEtagBytes - 2, 'y') + "\"", "\"" + std::string(kMaxEtagBytes - 2, 'y') + "\""},
      {"  W/\"ok\"\t", "W/\"ok\""},
  };
  std::uint64_t id = 0;
  for (const auto& [sent, kept] : cases) {
    HttpTestResponse r = body(200, "text/html", "fresh");
    r.headers.emplace_back("ETag", sent);
    server_.serve("/hostile", r);
    FetchResult got = fetch(req(++id, "/hostile"));
    ASSERT_TRUE(got.ok()) << got.message;
    EXPECT_EQ(got.etag, kept) << sent.size() << " bytes sent";
  }
}

INSTANTIATE_TEST_SUITE_P(Fetchers, FetcherContractTest, ::testing::ValuesIn(fetcherPlugins()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace lcc
