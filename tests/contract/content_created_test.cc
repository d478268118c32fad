// ContentRecord::created_seq on every store plugin, through the real loader: the seq at
// which a URL became stored is kept while it stays stored (updates, in-place refreshes,
// across a restart), starts again after a removal, and is the store's to set.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "server_store_options.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "support/plugin_list.h"

namespace lcc {
namespace {

std::vector<std::string> storePlugins() {
  return lcc::testing::splitList(LCC_STORE_PLUGINS);
}

ContentRecord record(const std::string& url, ChangeSeq seq, bool deleted = false) {
  ContentRecord r;
  r.key = {1, url, "text/html"};
  r.seq = seq;
  r.deleted = deleted;
  r.size = deleted ? 0 : 10 + seq;
  r.stored = fromUnixMillis(1714564800000 + static_cast<std::int64_t>(seq) * 1000);
  return r;
}

class ContentCreatedTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string why = testing::serverStoreSkipReason(GetParam());
    if (!why.empty()) GTEST_SKIP() << why;
  }
  PluginPtr<ContentStore> open() {
    registry_.reset();
    registry_ = std::make_unique<PluginRegistry>(
        LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger(GetParam()), dir_.path(), "m1"});
    auto o = registry_->defaultOptions(GetParam());
    EXPECT_TRUE(o.isOk()) << o.status().toString();
    auto s = registry_->makeContentStore(
        GetParam(), o.isOk() ? testing::serverStoreOptions(GetParam(), o.value(), schema_) : OptionsView());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }
  static void put(ContentStore& c, std::vector<ContentRecord> records) {
    ContentBatch b;
    for (auto& r : records) b.put(std::move(r));
    Status s = c.apply(b);
    ASSERT_TRUE(s.isOk()) << s.toString();
  }
  static ChangeSeq created(ContentStore& c, const std::string& url) {
    auto got = c.get(encodeUrlKey(record(url, 1).key));
    EXPECT_TRUE(got.isOk() && got.value()) << url;
    return got.isOk() && got.value() ? got.value()->created_seq : 999999;
  }
  static std::map<std::string, ChangeSeq> scanned(ContentStore& c) {
    std::map<std::string, ChangeSeq> out;
    ContentFilter all;
    all.include_deleted = true;
    EXPECT_TRUE(c.scanSince(0, all, [&](const ContentRecord& r) {
                   out[r.key.url] = r.created_seq;
                   return true;
                 }).isOk());
    return out;
  }

  testing::TempDir dir_;
  testing::SimClock clock_;
  const std::string schema_ = testing::freshSchemaName();  // server store plugins only
  std::unique_ptr<PluginRegistry> registry_;
};

TEST_P(ContentCreatedTest, KeptWhileStoredNewAfterARemoval) {
  auto c = open();
  ASSERT_TRUE(c);
  ContentRecord claimed = record("b", 2);
  claimed.created_seq = 77;
  put(*c, {record("a", 1), claimed});
  EXPECT_EQ(created(*c, "a"), 1u) << "a new URL: the seq of its first put";
  EXPECT_EQ(created(*c, "b"), 2u) << "the value of a put is the store's to set";
  put(*c, {record("a", 3)});
  EXPECT_EQ(created(*c, "a"), 1u) << "an update keeps it";
  ContentRecord refresh = record("a", 3);
  refresh.size = 999;
  put(*c, {refresh});
  EXPECT_EQ(created(*c, "a"), 1u) << "an in-place refresh keeps it";
  put(*c, {record("a", 4, true)});
  put(*c, {record("a", 5)});
  EXPECT_EQ(created(*c, "a"), 5u) << "stored again after a removal: created anew";
  // Within one batch: a put sees the puts and erases before it.
  ContentBatch b;
  b.put(record("c", 6));
  b.put(record("c", 7));
  b.put(record("d", 8));
  b.erase(encodeUrlKey(record("d", 8).key));
  b.put(record("d", 9));
  ASSERT_TRUE(c->apply(b).isOk());
  EXPECT_EQ(created(*c, "c"), 6u);
  EXPECT_EQ(created(*c, "d"), 9u);
  EXPECT_EQ(scanned(*c), (std::map<std::string, ChangeSeq>{{"a", 5}, {"b", 2}, {"c", 6}, {"d", 9}}))
      << "scans give it too";
  ASSERT_TRUE(c->sync().isOk());
  const bool persistent = c->openInfo().persistent;
  ASSERT_TRUE(c->close().isOk());
  if (!persistent) return;  // storage-memory: nothing survives a restart
  c = open();
  ASSERT_TRUE(c);
  EXPECT_EQ(scanned(*c), (std::map<std::string, ChangeSeq>{{"a", 5}, {"b", 2}, {"c", 6}, {"d", 9}}))
      << "it is kept on disk";
  put(*c, {record("c", 10)});
  EXPECT_EQ(created(*c, "c"), 6u);
  EXPECT_TRUE(c->close().isOk());
}

INSTANTIATE_TEST_SUITE_P(Stores, ContentCreatedTest, ::testing::ValuesIn(storePlugins()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace lcc
