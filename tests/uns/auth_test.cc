// Provider authentication: generated tokens on the fast keyed hash, chosen passwords
// on Argon2id with a bounded cache, and old hashes upgraded at the next login.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/config/config.h"
#include "common/password.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "uns/auth_cache.h"
#include "uns/uns_core.h"
#include "uns/uns_service.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using testing::ProviderFixture;

ProviderRecord provider(ProviderId id, std::string hash) {
  ProviderRecord p;
  p.id = id;
  p.state = ProviderState::kActive;
  p.password_hash = std::move(hash);
  p.prefixes = {"http://p" + std::to_string(id) + ".example/"};
  return p;
}

class AuthTest : public ::testing::Test {
 protected:
  std::string hashOf(ProviderId id) { return fx_->store()->get(id).value()->password_hash; }
  ErrorCode login(UnsCore& core, ProviderId id, const std::string& password) {
    AuthResult r = core.authenticate({std::to_string(id), password}, "127.0.0.1");
    if (r.code == ErrorCode::kNone) core.releaseProvider(id);
    return r.code;
  }
  CoreConfig config(std::size_t cache = 16) {
    CoreConfig c = CoreConfig::fromConfig(Config::defaults());
    c.passwords = hasher_;
    c.auth_cache_entries = cache;
    return c;
  }

  std::shared_ptr<const PasswordHasher> hasher_ = PasswordHasher::ephemeral();
  const std::string token_ = PasswordHasher::generateToken();
  const std::string legacy_token_ = "Xk4mPq7rTs9vWy2zAb3c";  // 20 characters, as earlier versions made
  std::unique_ptr<ProviderFixture> fx_ = std::make_unique<ProviderFixture>(std::vector<ProviderRecord>{
      provider(1, hasher_->hashToken(token_)),
      provider(2, hasher_->hashChosen(legacy_token_).value()),
      provider(3, hasher_->hashChosen("correct horse").value())});
  lcc::testing::SimClock clock_;
};

TEST_F(AuthTest, AGeneratedTokenIsCheckedByTheKeyedHash) {
  UnsCore core(config(), fx_->store(), &clock_, nullptr);
  EXPECT_EQ(token_.size(), PasswordHasher::kTokenLength);
  EXPECT_EQ(login(core, 1, token_), ErrorCode::kNone);
  EXPECT_EQ(login(core, 1, token_ + "x"), ErrorCode::kAuthFailed);
  EXPECT_EQ(login(core, 1, ""), ErrorCode::kAuthFailed);
  EXPECT_EQ(login(core, 99, token_), ErrorCode::kAuthFailed);  // no such provider
  // Another server key does not accept this server's hashes.
  CoreConfig other = config();
  other.passwords = PasswordHasher::ephemeral();
  UnsCore stranger(other, fx_->store(), &clock_, nullptr);
  EXPECT_EQ(login(stranger, 1, token_), ErrorCode::kAuthFailed);
}

TEST_F(AuthTest, AnArgonHashOfAGeneratedTokenIsUpgradedAtTheNextLogin) {
  UnsCore core(config(), fx_->store(), &clock_, nullptr);
  ASSERT_EQ(hashOf(2).rfind("$argon2id$", 0), 0u);
  EXPECT_EQ(login(core, 2, legacy_token_ + "!"), ErrorCode::kAuthFailed);
  EXPECT_EQ(hashOf(2).rfind("$argon2id$", 0), 0u) << "a failed login changes nothing";
  EXPECT_EQ(login(core, 2, legacy_token_), ErrorCode::kNone);
  EXPECT_EQ(hashOf(2).rfind("$lcc-b2k$", 0), 0u);
  EXPECT_EQ(login(core, 2, legacy_token_), ErrorCode::kNone);
  EXPECT_EQ(login(core, 2, legacy_token_ + "!"), ErrorCode::kAuthFailed);
}

TEST_F(AuthTest, AChosenPasswordKeepsArgonAndIsRememberedUntilItChanges) {
  UnsCore core(config(), fx_->store(), &clock_, nullptr);
  EXPECT_EQ(login(core, 3, "correct horse"), ErrorCode::kNone);
  EXPECT_EQ(login(core, 3, "correct horse"), ErrorCode::kNone);
  EXPECT_EQ(hashOf(3).rfind("$argon2id$", 0), 0u) << "a person's password is never moved to the fast hash";
  EXPECT_EQ(login(core, 3, "wrong horse"), ErrorCode::kAuthFailed) << "the cache only answers yes for the same password";
  // The administrator changes the password: the remembered check no longer counts.
  ASSERT_TRUE(fx_->store()->modify(3, [&](ProviderRecord& p) {
    p.password_hash = hasher_->hashChosen("battery staple").value();
    return Status::ok();
  }).isOk());
  EXPECT_EQ(login(core, 3, "correct horse"), ErrorCode::kAuthFailed);
  EXPECT_EQ(login(core, 3, "battery staple"), ErrorCode::kNone);
}

// The service checks a generated token on the connection's strand and hands only an
// Argon2id check (100 ms) to the auth pool.
TEST_F(AuthTest, OnlyAnArgonCheckIsHandedOff) {
  UnsCore core(config(), fx_->store(), &clock_, nullptr);
  int handed_off = 0;
  auto offload = [&](std::function<void()> task) {
    ++handed_off;
    task();
  };
  auto loginVia = [&](ProviderId id, const std::string& password) {
    AuthResult r = waitFor<AuthResult>([&](UnsCore::AuthDone done) {
      core.authenticate({std::to_string(id), password}, "127.0.0.1", std::move(done), offload);
    });
    if (r.code == ErrorCode::kNone) core.releaseProvider(id);
    return r.code;
  };
  EXPECT_EQ(loginVia(1, token_), ErrorCode::kNone);
  EXPECT_EQ(loginVia(1, "wrong"), ErrorCode::kAuthFailed);
  EXPECT_EQ(loginVia(99, token_), ErrorCode::kAuthFailed);
  EXPECT_EQ(loginVia(0, token_), ErrorCode::kAuthFailed);
  EXPECT_EQ(handed_off, 0);
  EXPECT_EQ(loginVia(3, "correct horse"), ErrorCode::kNone);
  EXPECT_EQ(loginVia(3, "wrong horse"), ErrorCode::kAuthFailed);
  EXPECT_EQ(handed_off, 2);
  EXPECT_EQ(loginVia(2, legacy_token_), ErrorCode::kNone);  // upgraded to the fast hash on the way
  EXPECT_EQ(loginVia(2, legacy_token_), ErrorCode::kNone);
  EXPECT_EQ(handed_off, 3);
}

TEST_F(AuthTest, ANewProviderIsAskedForAFullSetUntilItSendsOne) {
  UnsCore core(config(), fx_->store(), &clock_, nullptr);
  AuthResult first = core.authenticate({"1", token_}, "127.0.0.1");
  ASSERT_EQ(first.code, ErrorCode::kNone);
  core.releaseProvider(1);
  EXPECT_TRUE(first.info.fullset_wanted);
  EXPECT_EQ(first.info.fullset_reason, "first-connect");
  AuthResult again = core.authenticate({"1", token_}, "127.0.0.1");
  core.releaseProvider(1);
  EXPECT_TRUE(again.info.fullset_wanted) << "sticky until a full set arrives";
  ASSERT_TRUE(core.setAccepted(1, SetKind::kFull, true).isOk());
  AuthResult after = core.authenticate({"1", token_}, "127.0.0.1");
  core.releaseProvider(1);
  EXPECT_FALSE(after.info.fullset_wanted);
  EXPECT_FALSE(fx_->store()->get(1).value()->fullset_wanted);
}

// uns.auth_failures_per_minute: an address that failed that many inits in a minute
// gets 120 for uns.auth_cooldown, its password not even checked; others go on.
TEST_F(AuthTest, AnAddressThatKeepsFailingIsTurnedAwayUncheckedForTheCooldown) {
  CoreConfig c = config();
  c.auth_failures_per_minute = 3;
  c.auth_cooldown = Millis(5 * 60 * 1000);
  UnsCore core(c, fx_->store(), &clock_, nullptr);
  auto from = [&](const std::string& ip, ProviderId id, const std::string& pw) {
    AuthResult r = core.authenticate({std::to_string(id), pw}, ip);
    if (r.code == ErrorCode::kNone) core.releaseProvider(id);
    return r;
  };
  EXPECT_EQ(from("192.0.2.7", 1, token_).code, ErrorCode::kNone);  // successes do not count
  EXPECT_EQ(from("192.0.2.7", 1, "guess1").code, ErrorCode::kAuthFailed);
  clock_.advance(Millis(20 * 1000));
  EXPECT_EQ(from("192.0.2.7", 99, "guess2").code, ErrorCode::kAuthFailed);  // unknown ids count too
  EXPECT_EQ(from("192.0.2.7", 1, token_).code, ErrorCode::kNone);
  EXPECT_EQ(from("192.0.2.7", 1, "guess3").code, ErrorCode::kAuthFailed);
  const std::uint64_t seq = fx_->store()->get(1).value()->conn_seq;
  AuthResult refused = from("192.0.2.7", 1, token_);  // even the right password
  EXPECT_EQ(refused.code, ErrorCode::kTooManyConnections);
  EXPECT_TRUE(refused.throttled);
  EXPECT_NE(refused.message.find("too many failed authentications"), std::string::npos) << refused.message;
  EXPECT_NE(refused.message.find("300 s"), std::string::npos) << refused.message;
  EXPECT_EQ(fx_->store()->get(1).value()->conn_seq, seq) << "nothing was checked or counted";
  // Another address is not affected.
  EXPECT_EQ(from("192.0.2.8", 1, token_).code, ErrorCode::kNone);
  clock_.advance(Millis(299 * 1000));
  EXPECT_TRUE(from("192.0.2.7", 3, "correct horse").throttled);
  clock_.advance(Millis(1000));
  AuthResult after = from("192.0.2.7", 1, token_);
  EXPECT_EQ(after.code, ErrorCode::kNone);
  EXPECT_FALSE(after.throttled);
  // 0 turns the limit off.
  c.auth_failures_per_minute = 0;
  UnsCore open(c, fx_->store(), &clock_, nullptr);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(open.authenticate({"1", "guess"}, "192.0.2.9").code, ErrorCode::kAuthFailed);
}

// The limit's keys come from the YAML (schema defaults otherwise).
TEST(UnsConfig, TheFailedInitLimitIsReadFromTheYaml) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("uns:\n  auth_failures_per_minute: 7\n  auth_cooldown: 2m\n  auth_tracked_addresses: 50\n",
                              "lcc.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk()) << (problems.empty() ? cfg.status().toString() : problems[0].toString());
  UnsOptions o = UnsOptions::fromConfig(cfg.value(), "/nonexistent", "m1");
  EXPECT_EQ(o.core.auth_failures_per_minute, 7u);
  EXPECT_EQ(o.core.auth_cooldown, Millis(120000));
  EXPECT_EQ(o.core.auth_tracked_addresses, 50u);
  auto defaults = Config::loadText("", "lcc.yaml", {}, &problems);
  ASSERT_TRUE(defaults.isOk());
  UnsOptions d = UnsOptions::fromConfig(defaults.value(), "/nonexistent", "m1");
  EXPECT_EQ(d.core.auth_failures_per_minute, 30u);
  EXPECT_EQ(d.core.auth_cooldown, Millis(300000));
  EXPECT_FALSE(Config::loadText("uns:\n  auth_cooldown: 10ms\n", "lcc.yaml", {}, &problems).isOk());
}

// A provider the RS suspended (re-verification) is told why.
TEST_F(AuthTest, ASuspendedProviderIsToldTheReason) {
  UnsCore core(config(), fx_->store(), &clock_, nullptr);
  ASSERT_TRUE(fx_->store()->modify(1, [](ProviderRecord& p) {
    p.state = ProviderState::kSuspended;
    p.state_reason = "the secret file is gone";
    return Status::ok();
  }).isOk());
  AuthResult r = core.authenticate({"1", token_}, "127.0.0.1");
  EXPECT_EQ(r.code, ErrorCode::kNotActive);
  EXPECT_EQ(r.message, "provider not active (suspended: the secret file is gone)");
  ASSERT_TRUE(fx_->store()->modify(1, [](ProviderRecord& p) {
    p.state_reason.clear();
    return Status::ok();
  }).isOk());
  EXPECT_EQ(core.authenticate({"1", token_}, "127.0.0.1").message, "provider not active (suspended)");
}

// A PIDB that also holds the queue (as storage-postgres does): it answers queuedUrls.
class QueueHoldingStore final : public ProviderStore {
 public:
  QueueHoldingStore(ProviderStore* inner, Result<std::uint64_t> queued) : inner_(inner), queued_(std::move(queued)) {}
  const StoreOpenInfo& openInfo() const override { return inner_->openInfo(); }
  Result<ProviderId> create(const ProviderRecord& r) override { return inner_->create(r); }
  Result<std::optional<ProviderRecord>> get(ProviderId id) override { return inner_->get(id); }
  Status put(const ProviderRecord& r, const WriteOptions& o) override { return inner_->put(r, o); }
  Status modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn, const WriteOptions& o) override {
    return inner_->modify(id, fn, o);
  }
  Status remove(ProviderId id) override { return inner_->remove(id); }
  Status scan(const std::function<bool(const ProviderRecord&)>& fn) override { return inner_->scan(fn); }
  Result<std::uint64_t> queuedUrls(ProviderId id) override {
    asked_.push_back(id);
    return queued_;
  }
  Status sync() override { return inner_->sync(); }
  Status close() override { return Status::ok(); }
  std::vector<ProviderId> asked_;

 private:
  ProviderStore* inner_;
  Result<std::uint64_t> queued_;
};

// "processing" at init (issue 27 §1): the QM of this process's count when there is one,
// else what the shared PIDB's queue holds, else 0 (a store that cannot tell, or fails).
TEST_F(AuthTest, ProcessingComesFromTheQmElseFromTheSharedStore) {
  QueueHoldingStore shared(fx_->store(), std::uint64_t{17});
  UnsCore uns_only(config(), &shared, &clock_, nullptr);
  AuthResult r = uns_only.authenticate({"1", token_}, "127.0.0.1");
  ASSERT_EQ(r.code, ErrorCode::kNone) << r.message;
  uns_only.releaseProvider(1);
  EXPECT_EQ(r.info.processing, 17u);
  EXPECT_EQ(shared.asked_, std::vector<ProviderId>{1});

  UnsCore with_qm(config(), &shared, &clock_, [](ProviderId pid) { return pid == 1 ? 5u : 0u; });
  r = with_qm.authenticate({"1", token_}, "127.0.0.1");
  with_qm.releaseProvider(1);
  EXPECT_EQ(r.info.processing, 5u);
  EXPECT_EQ(shared.asked_.size(), 1u) << "the QM of this process is asked, not the store";

  QueueHoldingStore failing(fx_->store(), Status::busy("connection lost"));
  UnsCore cut_off(config(), &failing, &clock_, nullptr);
  r = cut_off.authenticate({"1", token_}, "127.0.0.1");
  cut_off.releaseProvider(1);
  EXPECT_EQ(r.code, ErrorCode::kNone) << "the init goes on without the figure";
  EXPECT_EQ(r.info.processing, 0u);
  UnsCore local(config(), fx_->store(), &clock_, nullptr);  // storage-memory: its queue is not in the PIDB
  EXPECT_EQ(local.authenticate({"1", token_}, "127.0.0.1").info.processing, 0u);
}

TEST(AuthCache, IsBoundedAndForgetsTheLeastRecentlyUsed) {
  AuthCache cache(2);
  cache.remember(1, "h1", "a");
  cache.remember(2, "h2", "b");
  EXPECT_TRUE(cache.knows(1, "h1", "a"));  // 1 is now the most recent
  cache.remember(3, "h3", "c");
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.knows(1, "h1", "a"));
  EXPECT_FALSE(cache.knows(2, "h2", "b"));
  EXPECT_TRUE(cache.knows(3, "h3", "c"));
  EXPECT_FALSE(cache.knows(3, "h3-changed", "c"));
  EXPECT_EQ(cache.size(), 1u) << "an entry for a changed hash is dropped";
  AuthCache none(0);
  none.remember(1, "h1", "a");
  EXPECT_FALSE(none.knows(1, "h1", "a"));
}

TEST(PasswordHasher, KeepsItsKeyInAPrivateFileAcrossRestarts) {
  lcc::testing::TempDir dir;
  const std::string path = dir.file("auth.key");
  auto first = PasswordHasher::open(*posixEnv(), path, HashCost::kInteractive);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string hash = first.value()->hashToken("tok");
  auto second = PasswordHasher::open(*posixEnv(), path, HashCost::kInteractive);
  ASSERT_TRUE(second.isOk());
  EXPECT_TRUE(second.value()->verify(hash, "tok").ok);

  ::chmod(path.c_str(), 0640);
  EXPECT_FALSE(PasswordHasher::open(*posixEnv(), path, HashCost::kInteractive).isOk());
  ::chmod(path.c_str(), 0600);
  std::ofstream(path, std::ios::trunc) << "not a key\n";
  auto bad = PasswordHasher::open(*posixEnv(), path, HashCost::kInteractive);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("auth.key"), std::string::npos);
}

TEST(PasswordHasher, RefusesWhatItCannotRead) {
  auto h = PasswordHasher::ephemeral();
  EXPECT_FALSE(h->verify("", "x").ok);
  EXPECT_FALSE(h->verify("plain", "plain").ok);
  EXPECT_FALSE(h->verify("$lcc-b2k$1$zz$zz", "x").ok);
  EXPECT_FALSE(h->verify("$lcc-b2k$1$", "").ok);
  std::string good = h->hashToken("t");
  EXPECT_FALSE(h->verify(good.substr(0, good.size() - 1), "t").ok);
}

TEST(PasswordHasher, OnlyTokenShapedPasswordsCountAsGenerated) {
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(PasswordHasher::looksGenerated(PasswordHasher::generateToken()));
  EXPECT_FALSE(PasswordHasher::looksGenerated("short"));
  EXPECT_FALSE(PasswordHasher::looksGenerated("aaaaaaaaaaaaaaaaaaaaaaaa"));
  EXPECT_FALSE(PasswordHasher::looksGenerated("correct horse battery staple"));  // a space
  EXPECT_FALSE(PasswordHasher::looksGenerated("Il0O1lIl0O1lIl0O1lIl0O"));  // look-alikes are not in the alphabet
}

}  // namespace
}  // namespace lcc::uns
