// Re-verification on simulated time: the provider's site is a real HTTP server on
// 127.0.0.1 and the secret is fetched by fetch-curl. Past rs.reverify_interval the RS
// fetches the secret file again; gone or changed suspends the provider with the reason
// (its init then gets 111 with it, and the admin's provider record says so); a site
// that only fails to answer is suspended after rs.reverify_failures rounds in a row.
#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "../http/http_test_client.h"
#include "common/config/config.h"
#include "http/admin_api.h"
#include "rs_fixture.h"
#include "uns/uns_core.h"
#include "uns/uns_test_util.h"

namespace lcc::rs {
namespace {

using testing_rs::RsTest;
using uns::testing::eventually;

constexpr Millis kMinute{60 * 1000};
constexpr Millis kDay{24 * 3600 * 1000};

// A provider's site: each folder serves its lococa-secret.txt as the test says.
class Site {
 public:
  struct File {
    int status = 200;
    std::string body;
  };
  Site() {
    router_.add("GET", "/", [this](const http::Request& req) {
      std::lock_guard<std::mutex> lock(mu_);
      ++fetches_[req.path];
      auto it = files_.find(req.path);
      if (it == files_.end()) return http::Response::text(404, "no such file\n");
      return http::Response::text(it->second.status, it->second.body);
    });
    fx_ = std::make_unique<http::testing::ServerFixture>(router_);
  }
  bool started() { return fx_->startStatus().isOk(); }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(fx_->port()); }
  void serve(const std::string& path, File f) {
    std::lock_guard<std::mutex> lock(mu_);
    files_[path] = std::move(f);
  }
  void remove(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    files_.erase(path);
  }
  int fetches(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    return fetches_[path];
  }

 private:
  std::mutex mu_;
  std::map<std::string, File> files_;
  std::map<std::string, int> fetches_;
  http::Router router_;
  std::unique_ptr<http::testing::ServerFixture> fx_;
};

class ReverifyTest : public RsTest {
 protected:
  ReverifyTest() {
    options_.reverify_interval = kDay;
    options_.sweep_interval = Millis(10 * kMinute);
    options_.reverify_failures = 2;
    options_.reverify_grace = Millis(0);  // suspended at once; the grace has its own tests
    options_.metrics = &metrics_;
  }
  // Registers `folder` on the site and verifies it.
  Registration activate(Registrar& reg, const std::string& folder) {
    auto g = reg.registerProvider(site_.base() + folder, "").value();
    site_.serve(folder + "lococa-secret.txt", {200, g.secret + "\n"});
    Verification v = reg.verify(g.id, g.password);
    EXPECT_EQ(v.http_status, 200) << v.reason;
    return g;
  }
  // Moves simulated time; the sweeps that fall due start re-verifications, which end
  // on the fetcher's thread: wait until none is left.
  void advanceAndSettle(Registrar& reg, Millis d) {
    clock_.advance(d);
    ASSERT_TRUE(eventually([&] { return reg.reverifyPending() == 0; }));
  }
  uns::AuthResult login(const Registration& g) {
    uns::CoreConfig c = uns::CoreConfig::fromConfig(Config::defaults());
    c.passwords = options_.passwords;
    uns::UnsCore core(c, store_.get(), &clock_, nullptr);
    uns::AuthResult r = core.authenticate({std::to_string(g.id), g.password}, "127.0.0.1");
    if (r.code == ErrorCode::kNone) core.releaseProvider(g.id);
    return r;
  }
  std::int64_t metric(const std::string& name) { return metrics_.snapshot()[name]; }
  // fetch-curl and a Registrar over it; both are stopped at the end of the test.
  Registrar& start() {
    EXPECT_TRUE(site_.started());
    fetcher_ = makeCurl();
    reg_ = makeRegistrar(*fetcher_);
    return *reg_;
  }
  void TearDown() override {
    if (reg_) reg_->stop();
    if (fetcher_) fetcher_->stop();
  }

  Metrics metrics_;
  Site site_;
  PluginPtr<Fetcher> fetcher_;
  std::shared_ptr<Registrar> reg_;
};

TEST_F(ReverifyTest, AFileStillInPlaceKeepsTheProviderActiveUntilTheNextInterval) {
  Registrar* reg = &start();
  auto g = activate(*reg, "/good/");
  EXPECT_EQ(site_.fetches("/good/lococa-secret.txt"), 1);
  reg->startSweeping(nullptr);
  advanceAndSettle(*reg, kDay - Millis(11 * kMinute));
  EXPECT_EQ(site_.fetches("/good/lococa-secret.txt"), 1) << "not due before the interval";
  advanceAndSettle(*reg, Millis(11 * kMinute));
  EXPECT_EQ(site_.fetches("/good/lococa-secret.txt"), 2);
  ProviderRecord p = stored(g.id);
  EXPECT_EQ(p.state, ProviderState::kActive);
  EXPECT_GT(p.reg_expires, clock_.now() + kDay - Millis(11 * kMinute));
  EXPECT_EQ(metric("lcc_rs_reverified_total"), 1);
  EXPECT_EQ(login(g).code, ErrorCode::kNone);
  advanceAndSettle(*reg, kDay);
  EXPECT_EQ(site_.fetches("/good/lococa-secret.txt"), 3);
  EXPECT_EQ(stored(g.id).state, ProviderState::kActive);
}

TEST_F(ReverifyTest, AChangedOrRemovedSecretSuspendsTheProviderWithTheReason) {
  Registrar* reg = &start();
  auto changed = activate(*reg, "/changed/");
  auto removed = activate(*reg, "/removed/");
  auto kept = activate(*reg, "/kept/");
  reg->startSweeping(nullptr);
  site_.serve("/changed/lococa-secret.txt", {200, "someone else's secret\n"});
  site_.remove("/removed/lococa-secret.txt");
  advanceAndSettle(*reg, kDay);  // the sweep at exactly kDay is the last one

  ProviderRecord c = stored(changed.id);
  EXPECT_EQ(c.state, ProviderState::kSuspended);
  EXPECT_NE(c.state_reason.find("no longer holds the provider's secret"), std::string::npos) << c.state_reason;
  ProviderRecord r = stored(removed.id);
  EXPECT_EQ(r.state, ProviderState::kSuspended);
  EXPECT_NE(r.state_reason.find("is gone (301"), std::string::npos) << r.state_reason;
  EXPECT_NE(r.state_reason.find("HTTP 404"), std::string::npos) << r.state_reason;
  EXPECT_EQ(stored(kept.id).state, ProviderState::kActive);
  EXPECT_EQ(metric("lcc_rs_reverify_suspended_total"), 2);

  // Its sessions get 111 with the reason ...
  uns::AuthResult refused = login(removed);
  EXPECT_EQ(refused.code, ErrorCode::kNotActive);
  EXPECT_NE(refused.message.find("suspended: re-verification"), std::string::npos) << refused.message;
  EXPECT_NE(refused.message.find("is gone"), std::string::npos) << refused.message;
  EXPECT_EQ(login(kept).code, ErrorCode::kNone);
  // ... the administrator's view of the provider says so ...
  nlohmann::json shown = http::providerToJson(c);
  EXPECT_EQ(shown["state"], "suspended");
  EXPECT_EQ(shown["state_reason"], c.state_reason);
  // ... and step two fetches again: still gone, still suspended ...
  Verification again = reg->verify(removed.id, removed.password);
  EXPECT_EQ(again.http_status, 422);
  EXPECT_NE(again.reason.find("not found"), std::string::npos) << again.reason;
  EXPECT_EQ(stored(removed.id).state, ProviderState::kSuspended);
  EXPECT_EQ(reg->verify(changed.id, "wrong").http_status, 403);
  // ... and once the file holds the secret again, the provider is active again.
  site_.serve("/changed/lococa-secret.txt", {200, changed.secret + "\n"});
  Verification back = reg->verify(changed.id, changed.password);
  EXPECT_EQ(back.http_status, 200) << back.reason;
  EXPECT_EQ(stored(changed.id).state, ProviderState::kActive);
  EXPECT_EQ(stored(changed.id).state_reason, "");
  EXPECT_EQ(login(changed).code, ErrorCode::kNone);

  // A suspended provider is not fetched again.
  const int before = site_.fetches("/removed/lococa-secret.txt");
  advanceAndSettle(*reg, 2 * kDay);
  EXPECT_EQ(site_.fetches("/removed/lococa-secret.txt"), before);

  // The administrator resumes it: the reason goes, and the next sweep checks again —
  // the file is still gone, so it is suspended again.
  http::AdminContext admin;
  admin.options = http::AdminOptions::fromConfig(Config::defaults());
  admin.providers = store_.get();
  http::Request req;
  req.remote_ip = "127.0.0.1";
  ASSERT_EQ(http::adminSuspendProvider(admin, removed.id, false, req).status, 200);
  EXPECT_EQ(stored(removed.id).state, ProviderState::kActive);
  EXPECT_EQ(stored(removed.id).state_reason, "");
  advanceAndSettle(*reg, Millis(10 * kMinute));
  EXPECT_EQ(site_.fetches("/removed/lococa-secret.txt"), before + 1);
  EXPECT_EQ(stored(removed.id).state, ProviderState::kSuspended);
  EXPECT_NE(stored(removed.id).state_reason.find("is gone"), std::string::npos);
  // An administrator's suspension has no reason.
  ASSERT_EQ(http::adminSuspendProvider(admin, kept.id, true, req).status, 200);
  EXPECT_EQ(stored(kept.id).state_reason, "");
  EXPECT_EQ(login(kept).message, "provider not active (suspended)");
  // Step two does not lift an administrator's suspension.
  Verification admins = reg->verify(kept.id, kept.password);
  EXPECT_EQ(admins.http_status, 403);
  EXPECT_NE(admins.reason.find("by an administrator"), std::string::npos) << admins.reason;
  EXPECT_EQ(stored(kept.id).state, ProviderState::kSuspended);
}

TEST_F(ReverifyTest, ASiteThatFailsToAnswerIsSuspendedOnlyAfterFailuresInARow) {
  Registrar* reg = &start();
  auto flaky = activate(*reg, "/flaky/");
  auto down = activate(*reg, "/down/");
  const std::string flaky_secret = stored(flaky.id).secret;
  reg->startSweeping(nullptr);
  site_.serve("/flaky/lococa-secret.txt", {503, "busy\n"});
  site_.serve("/down/lococa-secret.txt", {503, "busy\n"});
  advanceAndSettle(*reg, kDay);  // the sweep at exactly kDay is the last one
  EXPECT_EQ(stored(flaky.id).state, ProviderState::kActive) << "one failure is not enough";
  EXPECT_EQ(stored(down.id).state, ProviderState::kActive);
  EXPECT_EQ(metric("lcc_rs_reverify_unreachable_total"), 2);

  // The flaky site answers at the next sweep: its count starts again.
  site_.serve("/flaky/lococa-secret.txt", {200, flaky_secret});
  advanceAndSettle(*reg, Millis(10 * kMinute));
  EXPECT_EQ(stored(flaky.id).state, ProviderState::kActive);
  ProviderRecord d = stored(down.id);
  EXPECT_EQ(d.state, ProviderState::kSuspended);
  EXPECT_NE(d.state_reason.find("could not be fetched 2 times in a row"), std::string::npos) << d.state_reason;
  EXPECT_NE(d.state_reason.find("303"), std::string::npos) << d.state_reason;
  EXPECT_EQ(metric("lcc_rs_reverified_total"), 1);
  EXPECT_EQ(site_.fetches("/flaky/lococa-secret.txt"), 3);
}

// Providers without a secret (added by an administrator, or verified before secrets
// were kept) and an interval of 0 fetch nothing.
TEST_F(ReverifyTest, NothingIsFetchedWithoutASecretOrWhenTurnedOff) {
  Registrar* reg = &start();
  ProviderRecord added;
  added.state = ProviderState::kActive;
  added.prefixes = {site_.base() + "/admin-added/"};
  ASSERT_TRUE(store_->create(added).isOk());
  EXPECT_EQ(reg->reverifyDue(), 0u);
  auto g = activate(*reg, "/off/");
  options_.reverify_interval = Millis(0);
  auto off = makeRegistrar(*fetcher_);
  clock_.advance(2 * kDay);
  EXPECT_EQ(off->reverifyDue(), 0u);
  EXPECT_EQ(site_.fetches("/off/lococa-secret.txt"), 1);
  EXPECT_EQ(reg->reverifyDue(), 1u);  // with the interval on, it is due
  ASSERT_TRUE(eventually([&] { return reg->reverifyPending() == 0; }));
  EXPECT_EQ(site_.fetches("/off/lococa-secret.txt"), 2);
  EXPECT_EQ(stored(g.id).state, ProviderState::kActive);
}

// Issue 29: a secret file that is gone first only warns (the notifier mails the owner
// from secretsMissing()); the provider is suspended once rs.reverify_grace passed, and
// the grace survives a restart of the RS.
TEST_F(ReverifyTest, AGoneSecretFileSuspendsOnlyAfterTheGrace) {
  options_.reverify_grace = 2 * kDay;
  Registrar* reg = &start();
  auto g = activate(*reg, "/grace/");
  auto back = activate(*reg, "/back/");
  reg->startSweeping(nullptr);
  site_.remove("/grace/lococa-secret.txt");
  site_.remove("/back/lococa-secret.txt");
  const WallTime first = clock_.now() + kDay;
  advanceAndSettle(*reg, kDay);
  EXPECT_EQ(stored(g.id).state, ProviderState::kActive) << "within the grace";
  auto missing = reg->secretsMissing();
  ASSERT_EQ(missing.count(g.id), 1u);
  EXPECT_EQ(missing[g.id].since, first);
  EXPECT_EQ(missing[g.id].suspend_at, first + 2 * kDay);
  EXPECT_EQ(login(g).code, ErrorCode::kNone);
  // The file comes back for one of them: the warning ends.
  site_.serve("/back/lococa-secret.txt", {200, back.secret + "\n"});
  advanceAndSettle(*reg, Millis(10 * kMinute));
  EXPECT_EQ(reg->secretsMissing().count(back.id), 0u);
  EXPECT_EQ(reg->secretsMissing().count(g.id), 1u);
  // A new RS (a restart) keeps the time the file was first found gone.
  reg->stop();
  reg_ = makeRegistrar(*fetcher_);
  reg = reg_.get();
  reg->startSweeping(nullptr);
  EXPECT_EQ(reg->secretsMissing()[g.id].since, first);
  advanceAndSettle(*reg, kDay);
  EXPECT_EQ(stored(g.id).state, ProviderState::kActive) << "one day of two";
  advanceAndSettle(*reg, kDay);
  ProviderRecord p = stored(g.id);
  EXPECT_EQ(p.state, ProviderState::kSuspended);
  EXPECT_NE(p.state_reason.find("is gone"), std::string::npos) << p.state_reason;
  EXPECT_NE(p.state_reason.find("since"), std::string::npos) << p.state_reason;
  EXPECT_TRUE(reg->secretsMissing().empty());
  EXPECT_EQ(stored(back.id).state, ProviderState::kActive);
}

TEST_F(ReverifyTest, ReverificationIsOffByDefault) {
  EXPECT_EQ(RsOptions::fromConfig(Config::defaults()).reverify_interval.count(), 0);
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("roles: [rs]\n", "test.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk()) << cfg.status().toString();
  EXPECT_EQ(cfg.value().getInt("rs.reverify_interval"), 0);
  EXPECT_EQ(cfg.value().getInt("rs.reverify_grace"), 7 * kDay.count());
}

TEST(ReverifyVerdict, OnlyADefiniteAnswerSuspendsAtOnce) {
  SecretFetch ok;
  ok.matches = true;
  EXPECT_EQ(reverifyVerdict(ok), ReverifyVerdict::kConfirmed);
  SecretFetch other;
  EXPECT_EQ(reverifyVerdict(other), ReverifyVerdict::kChanged);
  SecretFetch gone;
  gone.result.code = ErrorCode::kNotFound;
  gone.result.http_status = 410;
  EXPECT_EQ(reverifyVerdict(gone), ReverifyVerdict::kGone);
  for (ErrorCode c : {ErrorCode::kServerError, ErrorCode::kAccessDenied, ErrorCode::kFetchTimeout,
                      ErrorCode::kDnsFailure, ErrorCode::kConnectFailure, ErrorCode::kRedirectError,
                      ErrorCode::kTooLarge, ErrorCode::kInternal}) {
    SecretFetch f;
    f.result.code = c;
    EXPECT_EQ(reverifyVerdict(f), ReverifyVerdict::kUnreachable) << static_cast<int>(c);
  }
  SecretFetch unreadable;
  unreadable.read_error = "disk";
  EXPECT_EQ(reverifyVerdict(unreadable), ReverifyVerdict::kUnreachable);
}

}  // namespace
}  // namespace lcc::rs
