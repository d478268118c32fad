// fetch.redirects in fetch-curl: the policy alone (judgeRedirect), then real fetches
// from a server on 127.0.0.1 that redirects, through the real plugin loader.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "redirect_policy.h"
#include "support/http_test_server.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::plugins::curl {
namespace {

FetchRequest requestFor(std::string url, RedirectPolicy p, std::vector<std::string> prefixes = {}) {
  FetchRequest r;
  r.url = std::move(url);
  r.redirects = p;
  r.redirect_prefixes = std::move(prefixes);
  return r;
}

TEST(RedirectPolicyTest, EachModeAllowsWhatItSays) {
  const auto prefix = requestFor("http://a.com/docs/x", RedirectPolicy::kPrefix, {"http://a.com/docs/"});
  EXPECT_TRUE(judgeRedirect(prefix, "http://a.com/docs/y", 0, 5).follow);
  EXPECT_EQ(judgeRedirect(prefix, "HTTP://A.com:80/docs/./y", 0, 5).url, "http://a.com/docs/y");
  EXPECT_FALSE(judgeRedirect(prefix, "http://a.com/other", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(prefix, "http://a.com/docs/../other", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(prefix, "http://a.com/docs/%2e%2e/other", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(prefix, "http://a.com.evil.org/docs/", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(prefix, "http://a.com@evil.org/docs/", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(prefix, "https://a.com/docs/y", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(prefix, "http://a.com/docs/y", 5, 5).follow);  // the limit
  EXPECT_FALSE(judgeRedirect(requestFor("http://a.com/docs/x", RedirectPolicy::kPrefix), "http://a.com/docs/y", 0, 5)
                   .follow);  // no prefixes given: nothing is followed

  const auto host = requestFor("http://a.com/docs/x", RedirectPolicy::kHost);
  EXPECT_TRUE(judgeRedirect(host, "http://a.com/other", 0, 5).follow);
  EXPECT_TRUE(judgeRedirect(host, "https://A.COM/other", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(host, "http://b.com/docs/x", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(host, "http://a.com.evil.org/", 0, 5).follow);
  EXPECT_FALSE(judgeRedirect(host, "ftp://a.com/x", 0, 5).follow);

  const auto none = requestFor("http://a.com/docs/x", RedirectPolicy::kNone, {"http://a.com/"});
  RedirectVerdict v = judgeRedirect(none, "http://a.com/docs/y", 0, 5);
  EXPECT_FALSE(v.follow);
  EXPECT_NE(v.why.find("none"), std::string::npos) << v.why;
}

class Waiter {
 public:
  FetchDone callback() {
    return [this](const FetchResult& r) {
      std::lock_guard<std::mutex> l(mu_);
      results_[r.id] = r;
      cv_.notify_all();
    };
  }
  FetchResult get(std::uint64_t id) {
    std::unique_lock<std::mutex> l(mu_);
    EXPECT_TRUE(cv_.wait_for(l, std::chrono::seconds(30), [&] { return results_.count(id) > 0; }));
    return results_[id];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, FetchResult> results_;
};

class FetchRedirectTest : public ::testing::Test {
 protected:
  FetchRedirectTest() : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}) {
    EXPECT_TRUE(server_.start().isOk());
    auto moved = [&](const std::string& where) {
      return testing::HttpTestResponse{.status = 302, .headers = {{"Location", where}}, .body = "moved"};
    };
    const std::string other_host = "http://localhost:" + std::to_string(server_.port());
    server_.serve("/docs/move", moved("/docs/a.htm"));
    server_.serve("/docs/away", moved("/other/b.htm"));
    server_.serve("/docs/dots", moved("/docs/../other/b.htm"));
    server_.serve("/docs/encoded-dots", moved("/docs/%2e%2e/other/b.htm"));
    server_.serve("/docs/offsite", moved(other_host + "/docs/a.htm"));
    for (const char* page : {"/docs/a.htm", "/other/b.htm"}) {
      server_.serve(page, {.status = 200, .headers = {{"Content-Type", "text/html"}}, .body = "page"});
    }
    auto opts = registry_.defaultOptions("fetch-curl", {{"allow_private", "true"}});
    EXPECT_TRUE(opts.isOk()) << opts.status().toString();
    auto f = registry_.makeFetcher("fetch-curl", opts.value());
    EXPECT_TRUE(f.isOk()) << f.status().toString();
    fetcher_ = std::move(f).value();
  }

  FetchResult fetch(const std::string& path, RedirectPolicy p, std::vector<std::string> prefixes = {}) {
    FetchRequest r = requestFor(server_.url(path), p, std::move(prefixes));
    r.id = ++next_id_;
    r.path = dir_.file(std::to_string(r.id) + ".body");
    EXPECT_TRUE(fetcher_->start(r, waiter_.callback()).isOk());
    return waiter_.get(r.id);
  }

  testing::SimClock clock_;
  testing::TempDir dir_;
  PluginRegistry registry_;
  testing::HttpTestServer server_;
  PluginPtr<Fetcher> fetcher_;
  Waiter waiter_;
  std::uint64_t next_id_ = 0;
};

TEST_F(FetchRedirectTest, PrefixModeFollowsOnlyWithinTheProvidersPrefixes) {
  const std::vector<std::string> docs = {server_.url("/docs/")};
  FetchResult in = fetch("/docs/move", RedirectPolicy::kPrefix, docs);
  EXPECT_TRUE(in.ok()) << in.message;
  EXPECT_EQ(server_.requestCount("/docs/a.htm"), 1u);
  for (const char* path : {"/docs/away", "/docs/dots", "/docs/encoded-dots", "/docs/offsite"}) {
    FetchResult r = fetch(path, RedirectPolicy::kPrefix, docs);
    EXPECT_EQ(r.code, ErrorCode::kRedirectError) << path << ": " << r.message;
    EXPECT_EQ(r.http_status, 302) << path;
  }
  EXPECT_EQ(server_.requestCount("/other/b.htm"), 0u) << "nothing outside the prefix is fetched";
  EXPECT_EQ(server_.requestCount("/docs/a.htm"), 1u) << "nor on another host";
}

TEST_F(FetchRedirectTest, HostModeFollowsOnTheSameHostOnly) {
  FetchResult away = fetch("/docs/away", RedirectPolicy::kHost);
  EXPECT_TRUE(away.ok()) << away.message;
  EXPECT_EQ(server_.requestCount("/other/b.htm"), 1u);
  FetchResult off = fetch("/docs/offsite", RedirectPolicy::kHost);
  EXPECT_EQ(off.code, ErrorCode::kRedirectError) << off.message;
  EXPECT_EQ(server_.requestCount("/docs/a.htm"), 0u);
}

TEST_F(FetchRedirectTest, NoneRefusesEveryRedirect) {
  FetchResult r = fetch("/docs/move", RedirectPolicy::kNone, {server_.url("/")});
  EXPECT_EQ(r.code, ErrorCode::kRedirectError) << r.message;
  EXPECT_EQ(server_.requestCount("/docs/a.htm"), 0u);
}

TEST_F(FetchRedirectTest, WhatIsFetchedIsTheNormalForm) {
  FetchResult r = fetch("/docs/x/../%61.htm", RedirectPolicy::kNone);
  EXPECT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(server_.requestCount("/docs/a.htm"), 1u);
  EXPECT_EQ(server_.requests().back().target, "/docs/a.htm");
  FetchResult bad = fetch("/docs/%00", RedirectPolicy::kNone);
  EXPECT_EQ(bad.code, ErrorCode::kInvalidUrl);
}

}  // namespace
}  // namespace lcc::plugins::curl
