// Administrator changes reaching the QM engine (queue_manager_providers.cc) on every
// storage plugin: suspend holds queued URLs, resume releases them, priority changes
// reach queued URLs, remove drops them (content kept), remove with purge writes
// tombstones and sends the file deletes, and the record goes once nothing is in flight.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/config/config.h"
#include "common/posix_env.h"
#include "lcc/provider_states.h"
#include "qm/queue_manager.h"
#include "qm_test_util.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;
using lcc::testing::SimClock;
using lcc::testing::TempDir;

class QmProvidersTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    clock_.setWall(fromUnixMillis(1714564800000));
    stores_ = std::make_unique<Stores>(GetParam(), dir_.file("stores"), &clock_, posixEnv());
    ASSERT_TRUE(posixEnv()->createDirs(dir_.file("stores")).isOk());
    ASSERT_TRUE(stores_->open().isOk());
    addProviders(*stores_->providers, 2);
    QmDeps deps;
    deps.queue = stores_->queue.get();
    deps.content = stores_->content.get();
    deps.providers = stores_->providers.get();
    deps.clock = &clock_;
    deps.botm = &botm_;
    QmOptions options = QmOptions::fromConfig(Config::defaults());
    options.checkpoint_interval = Millis(3600 * 1000);
    qm_ = std::make_unique<QueueManager>(deps, options);
    ASSERT_TRUE(qm_->open().isOk());
  }
  void TearDown() override {
    qm_.reset();
    if (stores_) (void)stores_->close();
  }
  void setState(ProviderId pid, ProviderState s) {
    ASSERT_TRUE(stores_->providers->modify(pid, [s](ProviderRecord& r) {
      r.state = s;
      return Status::ok();
    }).isOk());
  }
  void submit(IntakeSet s) {
    qm_->submit(std::move(s), [](bool ok, ErrorCode, const std::string&) { EXPECT_TRUE(ok); });
  }
  std::vector<std::string> answerAll() {
    std::vector<std::string> urls;
    for (const auto& f : botm_.takeFetches()) {
      urls.push_back(f.order.url);
      qm_->onResult(f.link, okResult(f.order.id, "file-" + std::to_string(++files_)));
    }
    return urls;
  }
  std::optional<ContentRecord> record(ProviderId pid, const std::string& url) {
    auto r = stores_->content->get(encodeUrlKey({pid, url, "text/html"}));
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r.value() : std::nullopt;
  }
  bool providerExists(ProviderId pid) {
    auto r = stores_->providers->get(pid);
    return r.isOk() && r.value().has_value();
  }

  SimClock clock_;
  TempDir dir_;
  std::unique_ptr<Stores> stores_;
  RecordingBotm botm_;
  std::unique_ptr<QueueManager> qm_;
  int files_ = 0;
};

TEST_P(QmProvidersTest, SuspendHoldsQueuedUrlsAndResumeFetchesThem) {
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2"), update(1, "http://a/3")}, 1));
  ASSERT_EQ(answerAll(), std::vector<std::string>{"http://a/1"});  // serial: one out, answered
  ASSERT_EQ(botm_.fetches.size(), 1u);                                 // the next one went out
  setState(1, ProviderState::kSuspended);
  qm_->refreshProviders();
  EXPECT_EQ(qm_->status()["providers_held"], 1);
  answerAll();  // the one in flight ends; nothing else goes out
  EXPECT_TRUE(botm_.fetches.empty());
  EXPECT_EQ(qm_->queued(1), 1u);
  qm_->refreshProviders();
  EXPECT_TRUE(botm_.fetches.empty());

  setState(1, ProviderState::kActive);
  qm_->refreshProviders();
  EXPECT_EQ(answerAll(), std::vector<std::string>{"http://a/3"});
  EXPECT_EQ(qm_->queued(1), 0u);
  EXPECT_EQ(qm_->status()["providers_held"], 0);
}

TEST_P(QmProvidersTest, PriorityChangeReachesQueuedUrls) {
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  submit(makeSet(2, {update(2, "http://b/1")}, 2));
  ASSERT_TRUE(stores_->providers->modify(2, [](ProviderRecord& r) {
    r.priority = 50;
    return Status::ok();
  }).isOk());
  qm_->refreshProviders();
  qm_->linkUp(1, "m1", 1);  // one slot: the higher priority goes first
  EXPECT_EQ(answerAll(), std::vector<std::string>{"http://b/1"});
}

TEST_P(QmProvidersTest, RemoveDropsQueuedUrlsKeepsContentAndWaitsForInFlight) {
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2"), update(1, "http://a/3")}, 1));
  answerAll();  // a/1 stored, a/2 out
  ASSERT_EQ(botm_.fetches.size(), 1u);
  setState(1, kProviderRemoving);
  qm_->refreshProviders();
  EXPECT_TRUE(providerExists(1)) << "a fetch is in flight: the removal waits for it";
  answerAll();
  EXPECT_TRUE(botm_.fetches.empty());
  qm_->refreshProviders();
  EXPECT_FALSE(providerExists(1));
  EXPECT_EQ(qm_->queued(1), 0u);
  EXPECT_EQ(qm_->queued(), 0u);
  ASSERT_TRUE(record(1, "http://a/1"));
  EXPECT_FALSE(record(1, "http://a/1")->deleted);
  EXPECT_FALSE(record(1, "http://a/3"));
  EXPECT_TRUE(botm_.takeDeletes().empty());

  // A set that was already on its way for the removed provider is dropped too.
  submit(makeSet(1, {update(1, "http://a/4")}, 2));
  EXPECT_TRUE(botm_.fetches.empty());
  qm_->refreshProviders();
  EXPECT_EQ(qm_->queued(1), 0u);
}

// A front end's slot move (queue_manager_move.cc): the source says when it holds the
// provider with nothing out, and lists its stored and queued URLs once each; the
// target takes them as an intake set, a resent chunk being a duplicate.
TEST_P(QmProvidersTest, AMoveSeesTheProviderDrainedAndGetsItsStoredAndQueuedUrls) {
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2", 5), update(1, "http://a/3")}, 1));
  submit(makeSet(2, {update(2, "http://b/1")}, 2));
  answerAll();  // a/1 and b/1 stored; a/2 out
  auto e = qm_->exportProvider(1, 0);
  ASSERT_TRUE(e.isOk());
  EXPECT_FALSE(e.value().held);
  EXPECT_EQ(e.value().in_flight, 1u);
  EXPECT_TRUE(e.value().urls.empty()) << "limit 0: the counts only";
  setState(1, ProviderState::kSuspended);
  qm_->refreshProviders();
  EXPECT_TRUE(qm_->exportProvider(1, 0).value().held);
  EXPECT_EQ(qm_->exportProvider(1, 0).value().in_flight, 1u) << "held, but a fetch is still out";
  answerAll();  // a/2 stored; a/3 stays queued (held)
  submit(makeSet(1, {update(1, "http://a/4"), removal(1, "http://a/3")}, 3));
  e = qm_->exportProvider(1, 100);
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(e.value().in_flight, 0u);
  EXPECT_EQ(e.value().unapplied, 0u);
  std::map<std::string, UrlNotice> got;
  for (const auto& n : e.value().urls) got[n.key.url] = n;
  EXPECT_EQ(got.size(), 3u) << "a/1, a/2 stored; a/4 queued; a/3's queued delete took it out; b/1 is another's";
  EXPECT_TRUE(got.count("http://a/1") && got.count("http://a/2") && got.count("http://a/4"));
  EXPECT_EQ(got["http://a/2"].mtime, std::optional<std::int64_t>(5)) << "as the CP declared it";
  EXPECT_FALSE(e.value().truncated);
  auto one = qm_->exportProvider(1, 1);
  EXPECT_TRUE(one.value().truncated);
  EXPECT_EQ(one.value().urls.size(), 1u);

  // The target: the same chunk twice is taken once.
  const std::uint64_t before = qm_->queued(2);
  const int dups = qm_->status()["sets_duplicate"].get<int>();
  submit(makeSet(2, {update(2, "http://a/1"), update(2, "http://a/4")}, 1, SetKind::kPartial, "front-move/f/1/2"));
  submit(makeSet(2, {update(2, "http://a/1"), update(2, "http://a/4")}, 1, SetKind::kPartial, "front-move/f/1/2"));
  qm_->commitPending();
  EXPECT_EQ(qm_->status()["sets_duplicate"].get<int>(), dups + 1) << qm_->status().dump();
  EXPECT_EQ(qm_->queued(2), before + 2);
}

TEST_P(QmProvidersTest, PurgeWritesTombstonesAndDeletesFiles) {
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  submit(makeSet(2, {update(2, "http://b/1")}, 2));
  for (int i = 0; i < 4; ++i) answerAll();
  ASSERT_TRUE(record(1, "http://a/2"));
  submit(makeSet(1, {update(1, "http://a/9")}, 3));
  setState(1, kProviderPurging);
  answerAll();  // a/9 may be out already: it ends, then the purge runs
  qm_->refreshProviders();
  EXPECT_FALSE(providerExists(1));
  for (const char* url : {"http://a/1", "http://a/2"}) {
    auto r = record(1, url);
    ASSERT_TRUE(r) << url;
    EXPECT_TRUE(r->deleted) << url;
  }
  EXPECT_FALSE(record(2, "http://b/1")->deleted);
  std::set<std::string> files;
  for (const auto& d : botm_.takeDeletes()) files.insert(d.file);
  EXPECT_GE(files.size(), 2u);
  EXPECT_EQ(qm_->queued(1), 0u);
}

INSTANTIATE_TEST_SUITE_P(Plugins, QmProvidersTest, ::testing::ValuesIn(storePlugins()), [](const auto& info) {
  std::string n = info.param;
  for (auto& c : n) if (c == '-') c = '_';
  return n;
});

}  // namespace
}  // namespace lcc::qm
