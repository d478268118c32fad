// The byte quota on real bytes (issue 15 §1): the QM counts the bytes it stores per
// provider, and a fetch whose body would take the provider past its quota_bytes is not
// stored: it ends with 313 (provider quota exceeded) in the provider's error list (the
// CP sees it at its next init), its file is deleted, and what the URL held is removed.
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmQuota : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    ASSERT_TRUE(stores_.providers->modify(1, [](ProviderRecord& r) {
      r.quota_bytes = 1000;
      return Status::ok();
    }).isOk());
    start();
    qm_->linkUp(1, "m1", 4);
  }
  // Fetches `url` (a new notice, set id `id`) and answers it with `size` bytes in `file`.
  void fetch(const std::string& url, std::uint64_t id, std::uint64_t size, const std::string& file) {
    submit(makeSet(1, {update(1, url, static_cast<std::int64_t>(id))}, id));
    auto f = botm_.takeFetches();
    ASSERT_EQ(f.size(), 1u);
    qm_->onResult(f[0].link, okResult(f[0].order.id, file, size));
  }
  std::optional<ContentRecord> record(const std::string& url) {
    return stores_.content->get(encodeUrlKey({1, url, "text/html"})).value();
  }
  ProviderRecord provider() { return *stores_.providers->get(1).value(); }
};

TEST_F(QmQuota, AFetchPastTheByteQuotaEndsWith313AndIsNotStored) {
  fetch("http://a/1", 1, 600, "f1");
  ASSERT_TRUE(record("http://a/1"));
  fetch("http://a/2", 2, 500, "f2");  // 600 + 500 > 1000
  EXPECT_FALSE(record("http://a/2") && !record("http://a/2")->deleted) << "stored past the quota";
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u) << "the fetched file stays on disk";
  EXPECT_EQ(d[0].file, "f2");
  ASSERT_TRUE(qm_->checkpoint().isOk());
  const ProviderRecord p = provider();
  EXPECT_EQ(p.used_bytes, 600u);
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].code, ErrorCode::kProviderQuotaExceeded);
  EXPECT_EQ(p.errors[0].notice.key.url, "http://a/2");
  EXPECT_EQ(metrics_->snapshot()["lcc_qm_fetch_errors_total{code=\"313\"}"], 1);
}

TEST_F(QmQuota, ReplacingContentCountsOnlyTheGrowthAndUsesWhatWasCheckpointed) {
  fetch("http://a/1", 1, 600, "f1");
  ASSERT_TRUE(qm_->checkpoint().isOk());  // used_bytes 600 now in the PIDB
  fetch("http://a/1", 2, 900, "f1b");     // replaces 600 by 900: 900 <= 1000
  ASSERT_TRUE(record("http://a/1"));
  EXPECT_EQ(record("http://a/1")->size, 900u);
  fetch("http://a/2", 3, 101, "f2");      // 900 + 101 > 1000, 900 only in memory so far
  EXPECT_FALSE(record("http://a/2") && !record("http://a/2")->deleted);
  fetch("http://a/3", 4, 100, "f3");      // exactly the quota
  ASSERT_TRUE(record("http://a/3"));
  ASSERT_TRUE(qm_->checkpoint().isOk());
  EXPECT_EQ(provider().used_bytes, 1000u);
}

}  // namespace
}  // namespace lcc::qm
