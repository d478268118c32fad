// storage-sqlite ProviderStore: ids, round trip, atomic modify, durability flags.
#include <thread>

#include "sqlite_test_util.h"

namespace lcc::testing {
namespace {

using SqliteProviderTest = SqliteStoreTest;

ProviderRecord makeProvider() {
  ProviderRecord p;
  p.state = ProviderState::kActive;
  p.password_hash = "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA";
  p.prefixes = {"http://www.server.com/", std::string("http://b/\x00\xff", 11), ""};
  p.priority = -5;
  p.bandwidth = 1 << 20;
  p.quota_files = 1000;
  p.quota_bytes = std::uint64_t{1} << 40;
  p.used_files = 3;
  p.used_bytes = 4096;
  p.secret = "s3cret";
  p.secret_url = "http://www.server.com/lcc-secret.txt";
  p.contact = "ops@server.com";
  p.state_reason = "re-verification: the secret file is gone";
  p.reg_expires = fromUnixMillis(1714564800000);
  p.conn_seq = 17;
  p.last_ip = "192.0.2.1";
  p.last_connect = fromUnixMillis(1714564801000);
  p.fullsets_used = 2;
  p.fullset_period_start = fromUnixMillis(1714500000000);
  p.fullset_wanted = true;
  p.fullset_reason = FullSetReason::kCacheCrash;
  p.error_total = 9;
  FetchErrorEntry e;
  e.notice.key = UrlKey{1, "http://www.server.com/gone", "text/html"};
  e.notice.browse = "";
  e.notice.mtime = -1;
  e.notice.size = 0;
  e.notice.md5 = "0123456789abcdef0123456789abcdef";
  e.code = ErrorCode::kNotFound;
  e.http_status = 404;
  e.message = std::string("not found \x01\xfe", 12);
  e.when = fromUnixMillis(1714564802000);
  p.errors = {e, e};
  p.errors[1].notice.op = UrlOp::kDelete;
  p.errors[1].notice.browse.reset();
  p.created = fromUnixMillis(1714400000000);
  return p;
}

TEST_F(SqliteProviderTest, RecordsRoundTripAcrossReopen) {
  ProviderRecord p = makeProvider();
  ProviderId id = 0;
  {
    auto s = openProviders();
    ASSERT_TRUE(s);
    auto made = s->create(p);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    id = *made;
    EXPECT_EQ(id, 1u);
    ASSERT_TRUE(s->close().isOk());
  }
  auto s = openProviders();
  ASSERT_TRUE(s);
  auto got = s->get(id);
  ASSERT_TRUE(got.isOk() && got->has_value());
  p.id = id;
  EXPECT_EQ(**got, p);
  EXPECT_FALSE(s->get(id + 1)->has_value());
}

TEST_F(SqliteProviderTest, IdsAreNeverReusedEvenAfterRemovingTheHighest) {
  {
    auto s = openProviders();
    ASSERT_TRUE(s);
    EXPECT_EQ(*s->create(ProviderRecord{}), 1u);
    EXPECT_EQ(*s->create(ProviderRecord{}), 2u);
    ASSERT_TRUE(s->remove(2).isOk());
    EXPECT_EQ(s->remove(2).code(), StatusCode::kNotFound);
    EXPECT_EQ(*s->create(ProviderRecord{}), 3u);
    ASSERT_TRUE(s->remove(3).isOk());
  }  // unclean on purpose
  auto s = openProviders();
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->create(ProviderRecord{}), 4u);
  std::vector<ProviderId> ids;
  ASSERT_TRUE(s->scan([&](const ProviderRecord& r) {
                 ids.push_back(r.id);
                 return true;
               }).isOk());
  EXPECT_EQ(ids, (std::vector<ProviderId>{1, 4}));
}

TEST_F(SqliteProviderTest, PutAndModifyOfAnUnknownIdAreNotFoundAndHarmless) {
  auto s = openProviders();
  ASSERT_TRUE(s);
  ProviderRecord p;
  p.id = 5;
  EXPECT_EQ(s->put(p).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->modify(5, [](ProviderRecord&) { return Status::ok(); }).code(), StatusCode::kNotFound);
  // Not a store failure: writes still work.
  EXPECT_TRUE(s->create(p).isOk());
  // A modify function that says no changes nothing and does not fail the store.
  ASSERT_TRUE(s->modify(1, [](ProviderRecord& r) {
                 r.priority = 99;
                 return Status::busy("no");
               }).code() == StatusCode::kBusy);
  EXPECT_EQ((*s->get(1))->priority, 0);
  ASSERT_TRUE(s->modify(1, [](ProviderRecord& r) {
                 r.priority = 7;
                 r.id = 1234;  // ignored: modify keeps the id
                 return Status::ok();
               }).isOk());
  EXPECT_EQ((*s->get(1))->priority, 7);
  EXPECT_FALSE(s->get(1234)->has_value());
}

TEST_F(SqliteProviderTest, ConcurrentModifiesAreAtomic) {
  auto s = openProviders();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->create(ProviderRecord{}).isOk());
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        EXPECT_TRUE(s->modify(1, [](ProviderRecord& r) {
                       ++r.conn_seq;
                       return Status::ok();
                     }, WriteOptions{.durable = false}).isOk());
        EXPECT_TRUE(s->get(1).isOk());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ((*s->get(1))->conn_seq, static_cast<std::uint64_t>(kThreads * kEach));
}

TEST_F(SqliteProviderTest, NonDurableWritesBecomeDurableAtClose) {
  {
    auto s = openProviders();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->create(ProviderRecord{}).isOk());
    ProviderRecord p = **s->get(1);
    p.used_bytes = 77;
    ASSERT_TRUE(s->put(p, WriteOptions{.durable = false}).isOk());
    ASSERT_TRUE(s->close().isOk());
  }
  auto s = openProviders();
  EXPECT_EQ((*s->get(1))->used_bytes, 77u);
}

TEST_F(SqliteProviderTest, ScanCallbackMayUseTheStore) {
  auto s = openProviders();
  ASSERT_TRUE(s);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(s->create(ProviderRecord{}).isOk());
  int n = 0;
  ASSERT_TRUE(s->scan([&](const ProviderRecord& r) {
                 ++n;
                 EXPECT_TRUE(s->modify(r.id, [](ProviderRecord& x) {
                                ++x.error_total;
                                return Status::ok();
                              }, WriteOptions{.durable = false}).isOk());
                 return true;
               }).isOk());
  EXPECT_EQ(n, 300);
  EXPECT_EQ((*s->get(300))->error_total, 1u);
}

}  // namespace
}  // namespace lcc::testing
