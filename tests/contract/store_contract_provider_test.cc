// The store contract suite, provider store and the three stores together: the SAME
// cases on every store plugin (store_contract.h).
#include "store_contract.h"

namespace lcc::contract {
namespace {

// =================================== ProviderStore ===================================

TEST_P(StoreContractTest, ProviderCreateAssignsIdsFromOne) {
  auto p = providers();
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->openInfo().created);
  EXPECT_EQ(p->create(provider("a")).value(), 1u);
  EXPECT_EQ(p->create(provider("b")).value(), 2u);
  auto got = p->get(1).value();
  ASSERT_TRUE(got.has_value());
  ProviderRecord want = provider("a");
  want.id = 1;
  EXPECT_EQ(*got, want) << "every field round-trips; record.id is replaced";
  EXPECT_EQ(p->get(3).value(), std::nullopt);
  EXPECT_EQ(p->get(0).value(), std::nullopt);
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderPutModifyRemove) {
  auto p = providers();
  ASSERT_TRUE(p);
  ProviderId id = p->create(provider("a")).value();
  ProviderRecord r = p->get(id).value().value();
  r.state = ProviderState::kSuspended;
  r.errors.clear();
  r.last_connect.reset();
  ASSERT_TRUE(p->put(r).isOk());
  EXPECT_EQ(p->get(id).value(), r);
  ProviderRecord ghost = r;
  ghost.id = 77;
  EXPECT_TRUE(p->put(ghost).isNotFound());
  EXPECT_EQ(p->get(77).value(), std::nullopt) << "put does not create";

  ASSERT_TRUE(p->modify(id, [](ProviderRecord& x) {
                 x.used_files += 10;
                 return Status::ok();
               }).isOk());
  EXPECT_EQ(p->get(id).value()->used_files, r.used_files + 10);
  Status refused = p->modify(id, [](ProviderRecord& x) {
    x.used_files = 0;
    return Status::invalidArgument("no");
  });
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p->get(id).value()->used_files, r.used_files + 10) << "a refused modify stores nothing";
  EXPECT_TRUE(p->modify(77, [](ProviderRecord&) { return Status::ok(); }).isNotFound());

  ASSERT_TRUE(p->put(r, WriteOptions{.durable = false}).isOk());
  ASSERT_TRUE(p->sync().isOk());
  ASSERT_TRUE(p->remove(id).isOk());
  EXPECT_EQ(p->get(id).value(), std::nullopt);
  Status again = p->remove(id);
  EXPECT_TRUE(again.isOk() || again.isNotFound()) << again.toString();
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderIdsAreNeverReused) {
  auto p = providers();
  ASSERT_TRUE(p);
  ProviderId a = p->create(provider("a")).value();
  ProviderId b = p->create(provider("b")).value();
  ASSERT_TRUE(p->remove(b).isOk());
  ProviderId c = p->create(provider("c")).value();
  EXPECT_GT(c, b);
  ASSERT_TRUE(p->remove(a).isOk());
  EXPECT_GT(p->create(provider("d")).value(), c);
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderScanInIdOrder) {
  auto p = providers();
  ASSERT_TRUE(p);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(p->create(provider("p" + std::to_string(i))).isOk());
  ASSERT_TRUE(p->remove(100).isOk());
  auto all = collect<ProviderRecord>([&](auto fn) { return p->scan(fn); });
  ASSERT_EQ(all.size(), 299u);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].id, all[i].id);
  EXPECT_EQ(all[0].contact, "p0");
  EXPECT_EQ(all[255].id, 257u) << "ids across a byte boundary stay in numeric order";
  int calls = 0;
  ASSERT_TRUE(p->scan([&](const ProviderRecord&) { return ++calls < 3; }).isOk());
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderIsThreadSafeAndModifyIsAtomic) {
  auto p = providers();
  ASSERT_TRUE(p);
  ProviderId id = p->create(provider("shared")).value();
  ASSERT_TRUE(p->modify(id, [](ProviderRecord& r) {
                 r.conn_seq = 0;
                 return Status::ok();
               }).isOk());
  constexpr int kThreads = 4, kEach = 100;
  std::vector<std::thread> threads;
  std::mutex ids_mu;
  std::set<ProviderId> ids;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Status s = p->modify(
            id,
            [](ProviderRecord& r) {
              ++r.conn_seq;
              return Status::ok();
            },
            WriteOptions{.durable = i % 10 == 0});
        if (!s.isOk()) ++failures;
        if (i % 25 == 0) {
          auto made = p->create(provider("t" + std::to_string(t)));
          if (!made.isOk()) {
            ++failures;
          } else {
            std::lock_guard<std::mutex> l(ids_mu);
            if (!ids.insert(made.value()).second) ++failures;
          }
        }
        if (!p->get(id).isOk()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(p->get(id).value()->conn_seq, static_cast<std::uint64_t>(kThreads * kEach));
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads * 4));
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderCallsAfterCloseFail) {
  auto p = providers();
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->close().isOk());
  EXPECT_FALSE(p->create(provider("a")).isOk());
  EXPECT_FALSE(p->get(1).isOk());
}

TEST_P(StoreContractTest, ProviderRestartKeepsRecordsAndIdCounter) {
  auto p = providers();
  ASSERT_TRUE(p);
  if (!p->openInfo().persistent) GTEST_SKIP() << GetParam() << " is not persistent";
  ProviderId a = p->create(provider("a")).value();
  ProviderId b = p->create(provider("b")).value();
  ASSERT_TRUE(p->modify(a, [](ProviderRecord& r) {
                 r.used_bytes = 7;
                 return Status::ok();
               }, WriteOptions{.durable = false}).isOk());
  ASSERT_TRUE(p->remove(b).isOk());  // the highest id is gone: it still must not come back
  ASSERT_TRUE(p->close().isOk());
  p.reset();
  p = providers();
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->openInfo().created);
  EXPECT_TRUE(p->openInfo().clean_shutdown);
  auto got = p->get(a).value();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->used_bytes, 7u) << "a non-durable write is durable after close()";
  EXPECT_EQ(got->contact, "a");
  EXPECT_EQ(p->get(b).value(), std::nullopt);
  EXPECT_GT(p->create(provider("c")).value(), b) << "ids are never reused, also across restarts";
  EXPECT_TRUE(p->close().isOk());
}

// All three stores of one plugin in the same data_dir at once (lccd opens them so).
TEST_P(StoreContractTest, AllThreeStoresShareADataDir) {
  auto q = queue();
  auto c = content();
  auto p = providers();
  ASSERT_TRUE(q && c && p);
  QueueBatch qb;
  qb.putMeta("k", "queue");
  ContentBatch cb;
  cb.putMeta("k", "content");
  ASSERT_TRUE(q->apply(qb).isOk());
  ASSERT_TRUE(c->apply(cb).isOk());
  EXPECT_EQ(q->getMeta("k").value(), std::optional<std::string>("queue"));
  EXPECT_EQ(c->getMeta("k").value(), std::optional<std::string>("content"));
  EXPECT_TRUE(q->close().isOk());
  EXPECT_TRUE(c->close().isOk());
  EXPECT_TRUE(p->close().isOk());
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContractTest, ::testing::ValuesIn(storePlugins()), pluginTestName);

}  // namespace
}  // namespace lcc::contract
