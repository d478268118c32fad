// The files quota at the QM (issue 25): whichever way a set came (a CP session,
// IndexNow, a sitemap poll), a new URL identity that would take the provider past
// quota_files — the files it holds plus its new URLs queued and not yet fetched — is
// not queued: it ends as error 206 in the provider's error list, which the CP reads at
// its next init. Refreshes and deletes of known URLs are never refused; a delete frees
// room.
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmFileQuota : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    setQuota(3);
    start();
    qm_->linkUp(1, "m1", 100);
  }
  void setQuota(std::uint64_t files) {
    ASSERT_TRUE(stores_.providers->modify(1, [&](ProviderRecord& r) {
      r.quota_files = files;
      return Status::ok();
    }).isOk());
  }
  static std::string url(int i) { return "http://a/" + std::to_string(i); }
  // A partial set of new URLs first..last (set id `id`).
  IntakeSet newUrls(int first, int last, std::uint64_t id) {
    std::vector<UrlNotice> urls;
    for (int i = first; i <= last; ++i) urls.push_back(update(1, url(i)));
    return makeSet(1, std::move(urls), id);
  }
  // Answers every fetch out with success; returns how many.
  std::size_t fetchAll() {
    std::size_t n = 0;
    for (int round = 0; round < 100; ++round) {
      auto f = botm_.takeFetches();
      if (f.empty()) break;
      for (const auto& x : f) {
        qm_->onResult(x.link, okResult(x.order.id, "f" + std::to_string(x.order.id)));
        ++n;
      }
    }
    return n;
  }
  bool stored(int i) {
    auto r = stores_.content->get(encodeUrlKey({1, url(i), "text/html"})).value();
    return r && !r->deleted;
  }
  ProviderRecord provider() {
    EXPECT_TRUE(qm_->checkpoint().isOk());
    return *stores_.providers->get(1).value();
  }
  std::vector<std::string> refusedUrls() {
    std::vector<std::string> out;
    for (const auto& e : provider().errors) {
      EXPECT_EQ(e.code, ErrorCode::kQuotaExceeded);
      out.push_back(e.notice.key.url);
    }
    return out;
  }
};

TEST_F(QmFileQuota, APartialSetOfEightNewUrlsQueuesThreeAndRefusesFiveWith206) {
  submit(newUrls(1, 8, 1));
  EXPECT_EQ(acks_, std::vector<bool>{true}) << "the set is acked whole; the QM decides per URL";
  EXPECT_EQ(qm_->queued(1), 3u);
  EXPECT_EQ(refusedUrls(), (std::vector<std::string>{url(4), url(5), url(6), url(7), url(8)}));
  EXPECT_EQ(provider().error_total, 5u);
  EXPECT_EQ(metrics_->snapshot()["lcc_qm_quota_refused_total"], 5);
  EXPECT_EQ(fetchAll(), 3u);
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(stored(i)) << i;
  for (int i = 4; i <= 8; ++i) EXPECT_FALSE(stored(i)) << i;
  EXPECT_EQ(provider().used_files, 3u);
}

TEST_F(QmFileQuota, NewUrlsQueuedAndNotYetFetchedCountAcrossSets) {
  submit(newUrls(1, 2, 1));
  submit(newUrls(3, 4, 2));  // 2 queued (not fetched) + 1 more fit in 3
  EXPECT_EQ(qm_->queued(1), 3u);
  EXPECT_EQ(refusedUrls(), std::vector<std::string>{url(4)});
  // A new URL named twice in one set takes one place.
  setQuota(5);
  qm_->refreshProviders();
  submit(makeSet(1, {update(1, url(5), 1), update(1, url(5), 2), update(1, url(6))}, 3));
  EXPECT_EQ(qm_->queued(1), 5u);
}

TEST_F(QmFileQuota, AtFullQuotaARefreshIsAcceptedAndANewUrlRefused) {
  submit(newUrls(1, 3, 1));
  ASSERT_EQ(fetchAll(), 3u);
  submit(makeSet(1, {update(1, url(2), 1234), update(1, url(9))}, 2));
  EXPECT_EQ(qm_->queued(1), 1u) << "the refresh of a held URL is queued";
  EXPECT_EQ(refusedUrls(), std::vector<std::string>{url(9)});
  EXPECT_EQ(fetchAll(), 1u);
  EXPECT_TRUE(stored(2));
  EXPECT_FALSE(stored(9));
}

TEST_F(QmFileQuota, ADeleteFreesRoom) {
  submit(newUrls(1, 3, 1));
  ASSERT_EQ(fetchAll(), 3u);
  submit(makeSet(1, {removal(1, url(1)), update(1, url(4))}, 2));
  EXPECT_EQ(qm_->queued(1), 1u);
  EXPECT_TRUE(provider().errors.empty());
  EXPECT_EQ(fetchAll(), 1u);
  EXPECT_TRUE(stored(4));
  EXPECT_FALSE(stored(1));
  // Deleting a new URL still queued frees its room too.
  submit(makeSet(1, {update(1, url(5))}, 3));
  EXPECT_EQ(refusedUrls(), std::vector<std::string>{url(5)});
  submit(makeSet(1, {removal(1, url(4)), update(1, url(6)), removal(1, url(6)), update(1, url(7))}, 4));
  EXPECT_EQ(refusedUrls(), std::vector<std::string>{url(5)}) << "url 6 called off, url 7 in its place";
  EXPECT_EQ(fetchAll(), 1u);
  EXPECT_TRUE(stored(7));
  EXPECT_EQ(provider().used_files, 3u);
}

TEST_F(QmFileQuota, AFinalFetchErrorFreesTheRoomOfItsUrl) {
  setQuota(1);
  qm_->refreshProviders();
  submit(newUrls(1, 1, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(f[0].link, errResult(f[0].order.id, ErrorCode::kAccessDenied, 403));
  submit(newUrls(2, 2, 2));
  EXPECT_EQ(qm_->queued(1), 1u);
  EXPECT_EQ(fetchAll(), 1u);
  EXPECT_TRUE(stored(2));
}

TEST_F(QmFileQuota, AFullSetCountsOnlyWhatItNames) {
  submit(newUrls(1, 3, 1));
  ASSERT_EQ(fetchAll(), 3u);
  // 1 and 3 are swept at the end of the set, so they do not count: 4, 2 and 5 fit
  // (2 named twice takes one place), 7 and 6 do not.
  submit(makeSet(1, {update(1, url(4)), update(1, url(2)), update(1, url(5)), update(1, url(2), 7), update(1, url(7)),
                     update(1, url(6))},
                 2, SetKind::kFull));
  EXPECT_EQ(refusedUrls(), (std::vector<std::string>{url(7), url(6)}));
  EXPECT_EQ(fetchAll(), 3u);  // 4, 2 (a refresh) and 5
  for (int i : {2, 4, 5}) EXPECT_TRUE(stored(i)) << i;
  for (int i : {1, 3, 6, 7}) EXPECT_FALSE(stored(i)) << i;
  EXPECT_EQ(provider().used_files, 3u);
}

TEST_F(QmFileQuota, TheCountOfQueuedNewUrlsSurvivesARestart) {
  submit(newUrls(1, 3, 1));  // queued, not fetched
  ASSERT_TRUE(qm_->checkpoint().isOk());
  (void)botm_.takeFetches();  // sent by the QM that stops now: their results never come
  qm_.reset();
  start();
  qm_->linkUp(1, "m1", 100);
  submit(newUrls(4, 4, 2));
  EXPECT_EQ(qm_->queued(1), 3u);
  EXPECT_EQ(refusedUrls(), std::vector<std::string>{url(4)});
  EXPECT_EQ(fetchAll(), 3u);
  submit(newUrls(5, 5, 3));
  EXPECT_EQ(qm_->queued(1), 0u);
  EXPECT_EQ(refusedUrls(), (std::vector<std::string>{url(4), url(5)}));
}

TEST_F(QmFileQuota, WithoutAQuotaNothingIsRefused) {
  setQuota(0);
  qm_->refreshProviders();
  submit(newUrls(1, 8, 1));
  EXPECT_EQ(qm_->queued(1), 8u);
  EXPECT_TRUE(provider().errors.empty());
}

}  // namespace
}  // namespace lcc::qm
