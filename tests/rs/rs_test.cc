// The registration server: step one (secret + password, pending), step two (fetch
// the secret now, activate), expiry (lazy and swept), over storage-memory through
// the real plugin loader, a scripted Fetcher, fetch-stub, and real HTTP.
#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "../http/http_test_client.h"
#include "common/logging.h"
#include "common/password.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "http/url_codec.h"
#include "rs/rs_service.h"
#include "rs_fixture.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::rs {
namespace {

using nlohmann::json;

using testing_rs::RsTest;
using testing_rs::ScriptedFetcher;

TEST(RsPrefix, IsNormalisedToAFolderAndBadOnesAreRefused) {
  EXPECT_EQ(normalizePrefix("http://www.server.com").value(), "http://www.server.com/");
  EXPECT_EQ(normalizePrefix("https://www.server.com/docs").value(), "https://www.server.com/docs/");
  EXPECT_EQ(normalizePrefix("http://h:8080/a/b/").value(), "http://h:8080/a/b/");
  for (const char* bad : {"", "ftp://h/", "http://", "http:///x", "http://h/a?x=1", "http://h/a b", "www.server.com",
                          "http://user@h/", "http://h:99999/"}) {
    EXPECT_FALSE(normalizePrefix(bad).isOk()) << bad;
  }
}

TEST_F(RsTest, StepOneStoresAPendingProviderWithSecretPasswordAndExpiry) {
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  auto r = reg->registerProvider(" http://www.server.com/docs ", "webmaster@server.com");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const Registration& g = r.value();
  EXPECT_GE(g.id, 1u);
  EXPECT_EQ(g.prefix, "http://www.server.com/docs/");
  EXPECT_EQ(g.secret_file, "lococa-secret.txt");
  EXPECT_EQ(g.secret_url, "http://www.server.com/docs/lococa-secret.txt");
  EXPECT_EQ(g.secret.size(), 32u);
  EXPECT_GE(g.password.size(), 12u);
  EXPECT_EQ(g.expires, clock_.now() + Millis(3600 * 1000));

  ProviderRecord p = stored(g.id);
  EXPECT_EQ(p.state, ProviderState::kPending);
  EXPECT_EQ(p.secret, g.secret);
  EXPECT_EQ(p.secret_url, g.secret_url);
  EXPECT_EQ(p.contact, "webmaster@server.com");
  EXPECT_EQ(p.reg_expires, g.expires);
  EXPECT_EQ(p.prefixes, std::vector<std::string>{"http://www.server.com/docs/"});
  EXPECT_EQ(p.quota_files, 500u);
  EXPECT_NE(p.password_hash, g.password);
  EXPECT_TRUE(options_.passwords->verify(p.password_hash, g.password).ok);
  EXPECT_FALSE(options_.passwords->verify(p.password_hash, g.password + "x").ok);

  // Two registrations never share a secret or a password.
  auto r2 = reg->registerProvider("http://www.server.com/docs/", "");
  ASSERT_TRUE(r2.isOk());
  EXPECT_NE(r2.value().secret, g.secret);
  EXPECT_NE(r2.value().password, g.password);
  EXPECT_NE(r2.value().id, g.id);

  EXPECT_EQ(reg->registerProvider("gopher://x/", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reg->registerProvider("http://x/", std::string(300, 'c')).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reg->registerProvider("http://x/", "a\nb").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RsTest, StepTwoFetchesTheSecretAndActivatesTheProvider) {
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  auto g = reg->registerProvider("http://site.example/", "").value();
  f.set(g.secret_url, {"\n  " + g.secret + "  \r\n"});
  Verification v = reg->verify(g.id, g.password);
  EXPECT_EQ(v.http_status, 200) << v.reason;
  EXPECT_TRUE(v.active);
  EXPECT_EQ(f.urls(), std::vector<std::string>{"http://site.example/lococa-secret.txt"});
  ProviderRecord p = stored(g.id);
  EXPECT_EQ(p.state, ProviderState::kActive);
  // The secret stays, for re-verification, due one rs.reverify_interval from now.
  EXPECT_EQ(p.secret, g.secret);
  EXPECT_EQ(p.reg_expires, clock_.now() + options_.reverify_interval);
  // The fetched file did not stay behind.
  EXPECT_TRUE(posixEnv()->listDir(options_.work_dir).value().empty());
  // Verifying again is harmless and says so; a later expiry no longer matters.
  clock_.advance(Millis(2 * 3600 * 1000));
  Verification again = reg->verify(g.id, g.password);
  EXPECT_EQ(again.http_status, 200);
  EXPECT_TRUE(again.active);
  EXPECT_NE(again.reason.find("already"), std::string::npos);
  EXPECT_EQ(reg->sweepExpired(), 0u);
  EXPECT_TRUE(exists(g.id));
}

TEST_F(RsTest, StepTwoSaysWhyNot) {
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  auto g = reg->registerProvider("http://site.example/a/", "").value();

  f.set(g.secret_url, {"not the secret\n"});
  Verification wrong = reg->verify(g.id, g.password);
  EXPECT_EQ(wrong.http_status, 422);
  EXPECT_FALSE(wrong.active);
  EXPECT_NE(wrong.reason.find("does not hold the secret"), std::string::npos) << wrong.reason;

  f.set(g.secret_url, {"", ErrorCode::kNotFound, 404});
  Verification missing = reg->verify(g.id, g.password);
  EXPECT_EQ(missing.http_status, 422);
  EXPECT_EQ(missing.fetch_code, ErrorCode::kNotFound);
  EXPECT_EQ(missing.fetch_http_status, 404);
  EXPECT_NE(missing.reason.find("not found"), std::string::npos) << missing.reason;

  f.set(g.secret_url, {"", ErrorCode::kDnsFailure, 0});
  Verification dns = reg->verify(g.id, g.password);
  EXPECT_EQ(dns.fetch_code, ErrorCode::kDnsFailure);
  EXPECT_NE(dns.reason.find("305"), std::string::npos) << dns.reason;

  f.set(g.secret_url, {std::string(10000, 'x')});  // larger than secret_max_size
  Verification big = reg->verify(g.id, g.password);
  EXPECT_EQ(big.http_status, 422);
  EXPECT_EQ(big.fetch_code, ErrorCode::kTooLarge);

  f.set(g.secret_url, {g.secret});
  Verification bad_pw = reg->verify(g.id, "guess");
  EXPECT_EQ(bad_pw.http_status, 403);
  EXPECT_EQ(reg->verify(g.id + 100, g.password).http_status, 404);
  EXPECT_EQ(stored(g.id).state, ProviderState::kPending);
  // The wrong password fetched nothing.
  EXPECT_EQ(f.urls().size(), 4u);
}

TEST_F(RsTest, AFetchThatNeverEndsTimesOutAndIsCancelled) {
  options_.verify_timeout = Millis(100);
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  auto g = reg->registerProvider("http://slow.example/", "").value();
  ScriptedFetcher::Answer hang;
  hang.hang = true;
  f.set(g.secret_url, hang);
  Verification v = reg->verify(g.id, g.password);
  EXPECT_EQ(v.http_status, 504);
  EXPECT_EQ(v.fetch_code, ErrorCode::kFetchTimeout);
  EXPECT_EQ(f.cancels(), 1);
  EXPECT_EQ(stored(g.id).state, ProviderState::kPending);
}

TEST_F(RsTest, AnExpiredRegistrationIsRemovedWhenVerified) {
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  auto g = reg->registerProvider("http://late.example/", "").value();
  f.set(g.secret_url, {g.secret});
  clock_.advance(Millis(3600 * 1000));  // exactly the TTL: expired
  Verification v = reg->verify(g.id, g.password);
  EXPECT_EQ(v.http_status, 410);
  EXPECT_NE(v.reason.find("expired"), std::string::npos);
  EXPECT_FALSE(exists(g.id));
  EXPECT_TRUE(f.urls().empty());
  EXPECT_EQ(reg->verify(g.id, g.password).http_status, 404);
}

TEST_F(RsTest, ThePeriodicSweepRemovesExpiredPendingRegistrationsOnly) {
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  auto old1 = reg->registerProvider("http://a.example/", "").value();
  auto old2 = reg->registerProvider("http://b.example/", "").value();
  auto verified = reg->registerProvider("http://c.example/", "").value();
  f.set(verified.secret_url, {verified.secret});
  ASSERT_TRUE(reg->verify(verified.id, verified.password).active);
  reg->startSweeping(nullptr);  // every 10 min, on the clock's thread (here: inside advance())
  clock_.advance(Millis(30 * 60 * 1000));
  auto young = reg->registerProvider("http://d.example/", "").value();  // expires at 90 min
  clock_.advance(Millis(29 * 60 * 1000));  // 59 min: nothing expired yet
  EXPECT_TRUE(exists(old1.id));
  EXPECT_TRUE(exists(old2.id));
  clock_.advance(Millis(1 * 60 * 1000));  // the sweep at 60 min
  EXPECT_FALSE(exists(old1.id));
  EXPECT_FALSE(exists(old2.id));
  EXPECT_TRUE(exists(verified.id));
  EXPECT_TRUE(exists(young.id));
  clock_.advance(Millis(30 * 60 * 1000));  // the sweep at 90 min
  EXPECT_FALSE(exists(young.id));
  EXPECT_TRUE(exists(verified.id));
  reg->stop();
  EXPECT_EQ(clock_.pendingTimers(), 0u);
}

// rs.max_pending: a registration past it makes the oldest unverified one give way.
TEST_F(RsTest, PastMaxPendingTheOldestWaitingRegistrationGivesWay) {
  Metrics metrics;
  options_.metrics = &metrics;
  options_.max_pending = 2;
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  auto a = reg->registerProvider("http://a.example/", "");
  ASSERT_TRUE(a.isOk());
  clock_.advance(Millis(1000));
  auto b = reg->registerProvider("http://b.example/", "");
  ASSERT_TRUE(b.isOk());
  clock_.advance(Millis(1000));
  auto c = reg->registerProvider("http://c.example/", "");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_FALSE(exists(a->id));
  EXPECT_TRUE(exists(b->id));
  EXPECT_TRUE(exists(c->id));
  EXPECT_EQ(metrics.snapshot()["lcc_rs_pending_evicted_total"], 1);
  // Verified providers are not pending: they never give way.
  f.set(b->secret_url, {b->secret});
  ASSERT_EQ(reg->verify(b->id, b->password).http_status, 200);
  ASSERT_TRUE(reg->registerProvider("http://d.example/", "").isOk());
  ASSERT_TRUE(reg->registerProvider("http://e.example/", "").isOk());
  EXPECT_TRUE(exists(b->id));
  EXPECT_FALSE(exists(c->id));
  EXPECT_EQ(metrics.snapshot()["lcc_rs_pending_evicted_total"], 2);
}

// fetch-stub through the real loader: its bodies never hold a secret, and it can
// pretend a 404 or hang — the outcomes a provider sees most.
TEST_F(RsTest, WithFetchStubMissingAndWrongFilesAreExplained) {
  std::ofstream(dir_.file("stub.script")) << "http://missing.example/ status=404\n"
                                             "http://hangs.example/ hang=yes\n";
  auto opts = registry_.defaultOptions("fetch-stub", {{"script", dir_.file("stub.script")}});
  ASSERT_TRUE(opts.isOk()) << opts.status().toString();
  auto fetcher = registry_.makeFetcher("fetch-stub", opts.value());
  ASSERT_TRUE(fetcher.isOk()) << fetcher.status().toString();
  options_.verify_timeout = Millis(200);
  auto reg = makeRegistrar(*fetcher.value());

  auto missing = reg->registerProvider("http://missing.example/", "").value();
  Verification v1 = reg->verify(missing.id, missing.password);
  EXPECT_EQ(v1.http_status, 422);
  EXPECT_EQ(v1.fetch_code, ErrorCode::kNotFound);
  EXPECT_EQ(v1.fetch_http_status, 404);

  auto wrong = reg->registerProvider("http://present.example/", "").value();
  Verification v2 = reg->verify(wrong.id, wrong.password);
  EXPECT_EQ(v2.http_status, 422);
  EXPECT_NE(v2.reason.find("does not hold the secret"), std::string::npos) << v2.reason;

  auto hangs = reg->registerProvider("http://hangs.example/", "").value();
  Verification v3 = reg->verify(hangs.id, hangs.password);
  EXPECT_EQ(v3.http_status, 504);
  EXPECT_EQ(fetcher.value()->inFlight(), 0u);
  for (auto id : {missing.id, wrong.id, hangs.id}) EXPECT_EQ(stored(id).state, ProviderState::kPending);
  fetcher.value()->stop();
}

// End to end: the provider's site is a real HTTP server on 127.0.0.1 and the secret
// is fetched by fetch-curl (allow_private, as the tests and the demo set it).
TEST_F(RsTest, WithFetchCurlAgainstARealSite) {
  std::mutex mu;
  std::string served_secret;
  http::Router site;
  site.add("GET", "/good/lococa-secret.txt", [&](const http::Request&) {
    std::lock_guard<std::mutex> lock(mu);
    return http::Response::text(200, served_secret + "\n");
  });
  site.add("GET", "/stale/lococa-secret.txt", [](const http::Request&) { return http::Response::text(200, "0123\n"); });
  http::testing::ServerFixture fx(site);
  ASSERT_TRUE(fx.startStatus().isOk());
  const std::string base = "http://127.0.0.1:" + std::to_string(fx.port());

  auto fetcher = makeCurl();
  auto reg = makeRegistrar(*fetcher);

  auto good = reg->registerProvider(base + "/good", "").value();
  {
    std::lock_guard<std::mutex> lock(mu);
    served_secret = good.secret;
  }
  Verification ok = reg->verify(good.id, good.password);
  EXPECT_EQ(ok.http_status, 200) << ok.reason;
  EXPECT_EQ(stored(good.id).state, ProviderState::kActive);

  auto missing = reg->registerProvider(base + "/nothing-here/", "").value();
  Verification nf = reg->verify(missing.id, missing.password);
  EXPECT_EQ(nf.http_status, 422) << nf.reason;
  EXPECT_EQ(nf.fetch_code, ErrorCode::kNotFound);
  EXPECT_EQ(nf.fetch_http_status, 404);

  auto stale = reg->registerProvider(base + "/stale/", "").value();
  Verification wrong = reg->verify(stale.id, stale.password);
  EXPECT_EQ(wrong.http_status, 422);
  EXPECT_NE(wrong.reason.find("does not hold the secret"), std::string::npos) << wrong.reason;
  fetcher->stop();
}

// An open redirect must not let someone who cannot write under the prefix pass: the
// secret fetch follows no redirect off the prefix (issue 14), whatever fetch.redirects says.
TEST_F(RsTest, ASecretBehindARedirectOffThePrefixDoesNotVerify) {
  std::mutex mu;
  std::string secret;
  auto redirectTo = [](std::string where) {
    return [where](const http::Request&) {
      http::Response r = http::Response::text(302, "moved\n");
      r.headers.emplace_back("Location", where);
      return r;
    };
  };
  auto serveSecret = [&](const http::Request&) {
    std::lock_guard<std::mutex> lock(mu);
    return http::Response::text(200, secret + "\n");
  };
  http::Router site;
  site.add("GET", "/docs/lococa-secret.txt", redirectTo("/uploads/anything.txt"));
  site.add("GET", "/uploads/anything.txt", serveSecret);
  site.add("GET", "/moved/lococa-secret.txt", redirectTo("/moved/v2/secret.txt"));
  site.add("GET", "/moved/v2/secret.txt", serveSecret);
  http::testing::ServerFixture fx(site);
  ASSERT_TRUE(fx.startStatus().isOk());
  const std::string base = "http://127.0.0.1:" + std::to_string(fx.port());
  auto fetcher = makeCurl();
  auto reg = makeRegistrar(*fetcher);

  auto off = reg->registerProvider(base + "/docs/", "").value();
  {
    std::lock_guard<std::mutex> lock(mu);
    secret = off.secret;
  }
  Verification refused = reg->verify(off.id, off.password);
  EXPECT_EQ(refused.http_status, 422) << refused.reason;
  EXPECT_EQ(refused.fetch_code, ErrorCode::kRedirectError) << refused.reason;
  EXPECT_EQ(stored(off.id).state, ProviderState::kPending);

  auto within = reg->registerProvider(base + "/moved/", "").value();
  {
    std::lock_guard<std::mutex> lock(mu);
    secret = within.secret;
  }
  Verification ok = reg->verify(within.id, within.password);
  EXPECT_EQ(ok.http_status, 200) << ok.reason;
  EXPECT_EQ(stored(within.id).state, ProviderState::kActive);
  fetcher->stop();
}

// The RS pages of a Registrar on a real HTTP server on 127.0.0.1, with a client.
struct RsPages {
  static http::Router routesOf(std::shared_ptr<Registrar> reg) {
    http::Router r;
    registerRsRoutes(r, std::move(reg));
    return r;
  }
  explicit RsPages(std::shared_ptr<Registrar> reg) : router(routesOf(std::move(reg))), fx(router) {}
  http::Router router;
  http::testing::ServerFixture fx;
};

// The pages over real HTTP: form, step one, step two.
TEST_F(RsTest, RegistrationOverHttp) {
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  RsPages pages(reg);
  ASSERT_TRUE(pages.fx.startStatus().isOk());
  http::testing::Client c(pages.fx.port());

  auto form = c.request("GET", "/register");
  EXPECT_EQ(form.result_int(), 200);
  EXPECT_NE(form.body().find("name=\"prefix\""), std::string::npos);
  EXPECT_NE(form.body().find("lococa-secret.txt"), std::string::npos);

  const std::vector<std::pair<std::string, std::string>> kForm = {
      {"Content-Type", "application/x-www-form-urlencoded"}};
  // HTML answer of step one carries everything the provider needs.
  auto html = c.request("POST", "/register",
                        "prefix=" + http::percentEncode("http://site.example/x/") + "&contact=me%40site.example", kForm);
  EXPECT_EQ(html.result_int(), 200);
  for (const char* id : {"id=\"id\"", "id=\"password\"", "id=\"secret\"", "id=\"secret_file\"", "id=\"expires\""}) {
    EXPECT_NE(html.body().find(id), std::string::npos) << id;
  }
  EXPECT_NE(html.body().find("http://site.example/x/lococa-secret.txt"), std::string::npos);

  auto one = c.request("POST", "/register?format=json", "prefix=" + http::percentEncode("http://site.example/y"), kForm);
  ASSERT_EQ(one.result_int(), 200) << one.body();
  json j = json::parse(one.body());
  EXPECT_EQ(j["secret_url"], "http://site.example/y/lococa-secret.txt");
  EXPECT_EQ(j["secret_file"], "lococa-secret.txt");
  EXPECT_EQ(j["expires"], "2024-05-01T13:00:00Z");
  const ProviderId id = j["id"].get<ProviderId>();
  const std::string password = j["password"];
  f.set(j["secret_url"], {j["secret"].get<std::string>() + "\n"});

  auto bad = c.request("POST", "/register/verify?format=json", "id=" + std::to_string(id) + "&password=nope", kForm);
  EXPECT_EQ(bad.result_int(), 403);
  EXPECT_EQ(json::parse(bad.body())["ok"], false);
  auto good = c.request("POST", "/register/verify", "id=" + std::to_string(id) + "&password=" + http::percentEncode(password),
                        kForm);
  EXPECT_EQ(good.result_int(), 200);
  EXPECT_NE(good.body().find("verified"), std::string::npos);
  EXPECT_EQ(stored(id).state, ProviderState::kActive);

  auto refused = c.request("POST", "/register", "prefix=ftp%3A%2F%2Fx%2F", {{"Content-Type", "application/x-www-form-urlencoded"},
                                                                          {"Accept", "application/json"}});
  EXPECT_EQ(refused.result_int(), 400);
  EXPECT_NE(json::parse(refused.body())["error"].get<std::string>().find("prefix"), std::string::npos);
  EXPECT_EQ(c.request("POST", "/register/verify", "id=abc&password=x", kForm).result_int(), 400);
}

// rs.register_per_minute: the address that sent that many registrations in the last
// minute gets 429 with Retry-After (seconds until its oldest leaves the minute).
TEST_F(RsTest, RegistrationsPerAddressAreLimitedWith429AndRetryAfter) {
  Metrics metrics;
  options_.metrics = &metrics;
  options_.register_per_minute = 3;
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  RsPages pages(reg);
  ASSERT_TRUE(pages.fx.startStatus().isOk());
  http::testing::Client c(pages.fx.port());
  const std::vector<std::pair<std::string, std::string>> kJson = {
      {"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}};
  auto post = [&](const std::string& prefix) {
    return c.request("POST", "/register", "prefix=" + http::percentEncode(prefix), kJson);
  };
  EXPECT_EQ(post("http://a.example/").result_int(), 200);
  clock_.advance(Millis(20 * 1000));
  EXPECT_EQ(post("http://b.example/").result_int(), 200);
  EXPECT_EQ(post("ftp://refused.example/").result_int(), 400);  // a refused one counts too
  auto over = post("http://c.example/");
  EXPECT_EQ(over.result_int(), 429) << over.body();
  EXPECT_EQ(over["Retry-After"], "40");
  EXPECT_NE(json::parse(over.body())["error"].get<std::string>().find("too many registrations"), std::string::npos);
  EXPECT_EQ(metrics.snapshot()["lcc_rs_register_throttled_total"], 1);
  EXPECT_EQ(metrics.snapshot()["lcc_rs_registrations_total"], 2);
  // The form page and verification are not limited.
  EXPECT_EQ(c.request("GET", "/register").result_int(), 200);
  clock_.advance(Millis(40 * 1000));  // the first leaves the minute
  EXPECT_EQ(post("http://c.example/").result_int(), 200);
  EXPECT_EQ(post("http://d.example/").result_int(), 429);
  EXPECT_EQ(metrics.snapshot()["lcc_rs_register_throttled_total"], 2);
  EXPECT_EQ(metrics.snapshot()["lcc_rs_registrations_total"], 3);
  // 0: no limit.
  options_.register_per_minute = 0;
  auto unlimited = makeRegistrar(f);
  for (int i = 0; i < 30; ++i) EXPECT_TRUE(unlimited->admitRegistration("127.0.0.1").allowed);
}

// Issue 25: 1,080 registrations from 108 addresses, each address within
// rs.register_per_minute, used to fill rs.max_pending and lock every real registrant
// out with 503 for rs.secret_ttl. Now an address and a host may keep only so many
// waiting (429 past them), and a full table makes the oldest give way.
TEST_F(RsTest, AFloodFromManyAddressesCannotLockARealRegistrantOut) {
  Metrics metrics;
  options_.metrics = &metrics;
  options_.max_pending = 1000;  // the default
  options_.register_per_minute = 10;
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  http::Router router;
  registerRsRoutes(router, reg);
  auto post = [&](const std::string& ip, const std::string& prefix) {
    http::Request req;
    req.method = "POST";
    req.path = "/register";
    req.remote_ip = ip;
    req.query = {{"prefix", prefix}, {"format", "json"}};
    return router.dispatch(req);
  };
  int accepted = 0, refused_per_address = 0;
  for (int round = 0; round < 10; ++round) {  // 10 a minute from each address: within the rate
    for (int a = 0; a < 108; ++a) {
      const std::string ip = "198.51.100." + std::to_string(a + 1);
      http::Response r = post(ip, "http://flood" + std::to_string(a) + "-" + std::to_string(round) + ".example/");
      if (r.status == 200) ++accepted;
      if (r.status == 429) ++refused_per_address;
      EXPECT_TRUE(r.status == 200 || r.status == 429) << r.status << " " << r.body;
    }
    clock_.advance(Millis(60 * 1000));
  }
  EXPECT_EQ(accepted, 108 * 5) << "rs.max_pending_per_ip (5) from each address";
  EXPECT_EQ(refused_per_address, 108 * 5);
  EXPECT_EQ(metrics.snapshot()["lcc_rs_pending_refused_total"], 108 * 5);
  EXPECT_EQ(metrics.snapshot()["lcc_rs_pending_evicted_total"], 0);
  std::map<std::string, int> waiting;
  int pending = 0;
  ASSERT_TRUE(store_->scan([&](const ProviderRecord& p) {
    if (p.state == ProviderState::kPending) ++pending, ++waiting[p.last_ip];
    return true;
  }).isOk());
  EXPECT_EQ(pending, 108 * 5);
  for (const auto& [ip, n] : waiting) EXPECT_EQ(n, 5) << ip;
  // A real registrant from another address is accepted (not 503 for rs.secret_ttl)
  // and can verify.
  http::Response real = post("203.0.113.7", "http://real.example/docs/");
  ASSERT_EQ(real.status, 200) << real.body;
  nlohmann::json j = nlohmann::json::parse(real.body);
  f.set(j["secret_url"], {j["secret"].get<std::string>()});
  EXPECT_EQ(reg->verify(j["id"].get<ProviderId>(), j["password"]).http_status, 200);
  EXPECT_EQ(stored(j["id"].get<ProviderId>()).state, ProviderState::kActive);
  EXPECT_TRUE(stored(j["id"].get<ProviderId>()).last_ip.empty()) << "the registrant's address goes at verification";
}

// rs.max_pending_per_host: registrations for one host of the prefix, from any address.
TEST_F(RsTest, RegistrationsWaitingForOneHostAreLimited) {
  options_.max_pending_per_host = 2;
  ScriptedFetcher f;
  auto reg = makeRegistrar(f);
  Millis retry{0};
  ASSERT_TRUE(reg->registerProvider("http://victim.example/a/", "", "192.0.2.1", &retry).isOk());
  ASSERT_TRUE(reg->registerProvider("http://VICTIM.example:80/b/", "", "192.0.2.2", &retry).isOk());
  auto third = reg->registerProvider("https://victim.example:8443/c/", "", "192.0.2.3", &retry);
  EXPECT_EQ(third.status().code(), StatusCode::kBusy);
  EXPECT_EQ(retry, options_.secret_ttl) << "until the oldest of them expires";
  EXPECT_TRUE(reg->registerProvider("http://other.example/", "", "192.0.2.3", &retry).isOk());
  EXPECT_EQ(prefixHost("http://[::1]:8080/x/"), "[::1]");
  EXPECT_EQ(prefixHost("https://www.example.org/"), "www.example.org");
}

TEST_F(RsTest, TheServiceIsBuiltFromTheConfigAndSweepsWhileRunning) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText(
      "rs:\n  secret_ttl: 1h\n  sweep_interval: 10m\n  secret_file: verify-me.txt\n  register_per_minute: 1\n"
      "  reverify_interval: 2d\n",
      dir_.file("lcc.yaml"), {}, &problems);
  ASSERT_TRUE(cfg.isOk()) << (problems.empty() ? cfg.status().toString() : problems[0].toString());
  ScriptedFetcher f;
  http::Router router;
  Metrics metrics;
  NodeContext node;
  node.metrics = &metrics;
  node.config = &cfg.value();
  node.clock = &clock_;
  node.env = posixEnv();
  node.providers = store_.get();
  node.fetcher = &f;
  node.http = &router;
  node.data_dir = dir_.path();
  node.passwords = PasswordHasher::ephemeral();
  auto svc = makeRsService(node);
  ASSERT_TRUE(svc.isOk()) << svc.status().toString();
  ASSERT_TRUE(svc.value()->start().isOk());
  http::Request req;
  req.method = "POST";
  req.path = "/register";
  req.query = {{"prefix", "http://svc.example/"}, {"format", "json"}};
  http::Response r = router.dispatch(req);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["secret_url"], "http://svc.example/verify-me.txt");
  const ProviderId id = j["id"];
  EXPECT_EQ(metrics.snapshot()["lcc_rs_registrations_total"], 1);
  // rs.register_per_minute: 1 from the YAML.
  http::Response over = router.dispatch(req);
  EXPECT_EQ(over.status, 429) << over.body;
  EXPECT_EQ(metrics.snapshot()["lcc_rs_register_throttled_total"], 1);
  nlohmann::json status;
  svc.value()->status(status);
  EXPECT_EQ(status["reverify_interval_s"], 2 * 24 * 3600);
  clock_.advance(Millis(70 * 60 * 1000));
  EXPECT_FALSE(exists(id));
  EXPECT_EQ(metrics.snapshot()["lcc_rs_expired_removed_total"], 1);
  svc.value()->stop();
  EXPECT_EQ(clock_.pendingTimers(), 0u);

  NodeContext missing = node;
  missing.fetcher = nullptr;
  EXPECT_FALSE(makeRsService(missing).isOk());
}

}  // namespace
}  // namespace lcc::rs
