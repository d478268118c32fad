// storage-memory beyond the shared contract: refused batches change nothing and make
// the store sticky-failed (queue_store.h PRECONDITIONS); openInfo of a memory store.
#include <gtest/gtest.h>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

class StorageMemoryTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  testing::SimClock clock_;
  PluginRegistry registry_{LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}};
};

ContentRecord rec(const std::string& url, ChangeSeq seq) {
  ContentRecord r;
  r.key = {1, url, "text/html"};
  r.seq = seq;
  return r;
}

TEST_F(StorageMemoryTest, OpenInfoSaysNotPersistent) {
  auto c = registry_.makeContentStore("storage-memory", {});
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c.value()->openInfo().engine, "memory");
  EXPECT_FALSE(c.value()->openInfo().persistent);
  EXPECT_TRUE(c.value()->openInfo().created);
}

TEST_F(StorageMemoryTest, ContentBatchWithNonIncreasingSeqIsRefusedWholeAndSticky) {
  auto made = registry_.makeContentStore("storage-memory", {});
  ASSERT_TRUE(made.isOk());
  auto& c = made.value();
  ContentBatch ok;
  ok.put(rec("a", 5));
  ASSERT_TRUE(c->apply(ok).isOk());
  ContentBatch bad;
  bad.put(rec("b", 6));
  bad.put(rec("c", 6));  // not greater than the one before
  Status s = c->apply(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c->get(encodeUrlKey(rec("b", 0).key)).value(), std::nullopt) << "nothing of a refused batch applies";
  EXPECT_EQ(c->maxSeq().value(), 5u);
  ContentBatch later;
  later.put(rec("d", 7));
  EXPECT_EQ(c->apply(later), s) << "sticky";
  EXPECT_EQ(c->sync(), s);
  EXPECT_TRUE(c->get(encodeUrlKey(rec("a", 0).key)).isOk()) << "reads still work";
}

TEST_F(StorageMemoryTest, QueueBatchWithABadKeyIsRefusedWholeAndSticky) {
  auto made = registry_.makeQueueStore("storage-memory", {});
  ASSERT_TRUE(made.isOk());
  auto& q = made.value();
  QueueBatch bad;
  bad.putMeta("k", "v");
  bad.removeEntry("xy");  // not an encoded key
  EXPECT_FALSE(q->apply(bad).isOk());
  EXPECT_EQ(q->getMeta("k").value(), std::nullopt);
  QueueBatch good;
  good.putMeta("k", "v");
  EXPECT_FALSE(q->apply(good).isOk());
  EXPECT_FALSE(q->sync().isOk());
}

}  // namespace
}  // namespace lcc
