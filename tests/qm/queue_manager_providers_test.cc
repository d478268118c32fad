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
#include "qm/move_copy.h"
#include "qm/qm_move_routes.h"
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
  std::map<std::string, QueueManager::ExportedUrl> at;
  for (const auto& u : e.value().urls) {
    got[u.notice.key.url] = u.notice;
    at[u.notice.key.url] = u;
  }
  EXPECT_EQ(got.size(), 3u) << "a/1, a/2 stored; a/4 queued; a/3's queued delete took it out; b/1 is another's";
  EXPECT_TRUE(got.count("http://a/1") && got.count("http://a/2") && got.count("http://a/4"));
  EXPECT_EQ(got["http://a/2"].mtime, std::optional<std::int64_t>(5)) << "as the CP declared it";
  EXPECT_FALSE(e.value().truncated);
  // Where the bytes of a stored URL are (the target takes them from there), not of a queued one.
  EXPECT_EQ(at["http://a/1"].seq, record(1, "http://a/1")->seq);
  EXPECT_EQ(at["http://a/1"].md5, record(1, "http://a/1")->md5);
  EXPECT_EQ(at["http://a/1"].size, 100u);
  EXPECT_EQ(at["http://a/4"].seq, 0u) << "queued: fetched at the target";
  EXPECT_FALSE(e.value().store_id.empty());
  // Pages of one, each from the cursor the last gave: every URL once, in key order.
  std::vector<std::string> paged;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    auto one = qm_->exportProvider(1, 1, after);
    ASSERT_TRUE(one.isOk());
    ASSERT_EQ(one.value().urls.size(), 1u);
    paged.push_back(one.value().urls[0].notice.key.url);
    if (!one.value().truncated) break;
    EXPECT_FALSE(one.value().next.empty());
    after = one.value().next;
  }
  EXPECT_EQ(paged, (std::vector<std::string>{"http://a/1", "http://a/2", "http://a/4"}));

  // The target: the same chunk twice is taken once.
  const std::uint64_t before = qm_->queued(2);
  const int dups = qm_->status()["sets_duplicate"].get<int>();
  submit(makeSet(2, {update(2, "http://a/1"), update(2, "http://a/4")}, 1, SetKind::kPartial, "front-move/f/1/2"));
  submit(makeSet(2, {update(2, "http://a/1"), update(2, "http://a/4")}, 1, SetKind::kPartial, "front-move/f/1/2"));
  qm_->commitPending();
  EXPECT_EQ(qm_->status()["sets_duplicate"].get<int>(), dups + 1) << qm_->status().dump();
  EXPECT_EQ(qm_->queued(2), before + 2);
}

// The target of a move takes a stored URL's bytes from the source (move_copy.h): the
// robot is sent to the source's /cu/content/ URL, and the record is stored with the
// URL's own fetch URL once the size and MD5 are the source's; a copy the source cannot
// give (an error, another MD5) is fetched from the site instead, the wrong body deleted.
TEST_P(QmProvidersTest, AMovedUrlIsCopiedFromTheSourceOrElseFetchedFromItsSite) {
  const std::string md5 = "0123456789abcdef0123456789abcdef";  // okResult's
  auto copy = [&](const std::string& url, const std::string& want_md5) {
    UrlNotice n = update(1, url, 7);
    n.fetch = makeCopyFetch(CopyFetch{"http://src:80/cu/content/S/" + url.substr(9) + "/k", want_md5, 100,
                                      url == "http://a/3" ? "http://a/3?raw" : ""});
    return n;
  };
  submit(makeSet(1, {copy("http://a/1", md5), copy("http://a/2", md5), copy("http://a/3", std::string(32, 'e'))}, 1,
                 SetKind::kPartial, "front-move/f/1/1"));
  qm_->commitPending();
  EXPECT_EQ(qm_->exportProvider(1, 0, {}, true).value().copies, 3u);
  qm_->linkUp(1, "m1", 4);
  // a/1 comes whole; a/2 fails at the source (404); a/3 comes with another MD5.
  std::set<std::string> site;
  for (int round = 0; round < 20 && !botm_.fetches.empty(); ++round) {
    for (const auto& f : botm_.takeFetches()) {
      auto c = parseCopyFetch(f.order.url);
      if (!c) {
        site.insert(f.order.url);
        qm_->onResult(f.link, okResult(f.order.id, "site-" + std::to_string(++files_)));
        continue;
      }
      EXPECT_EQ(f.order.url.rfind("http://src:80/cu/content/S/", 0), 0u) << f.order.url;
      EXPECT_TRUE(f.order.expected_mime.empty()) << "the source answers bytes, not the site's type";
      const std::string which = c->content_url.substr(std::string("http://src:80/cu/content/S/").size(), 1);
      qm_->onResult(f.link, which == "2" ? errResult(f.order.id, ErrorCode::kNotFound, 404)
                                         : okResult(f.order.id, "copy-" + which));
    }
  }
  ASSERT_TRUE(record(1, "http://a/1"));
  EXPECT_EQ(record(1, "http://a/1")->filename, "copy-1");
  EXPECT_EQ(record(1, "http://a/1")->md5, md5);
  EXPECT_EQ(record(1, "http://a/1")->fetch, "") << "the URL's own fetch URL, not the source's";
  EXPECT_EQ(record(1, "http://a/1")->mtime, std::optional<std::int64_t>(7));
  EXPECT_EQ(qm_->exportProvider(1, 0, {}, true).value().copies, 0u);
  // What the source could not give came from the site: a/2, and a/3 at its own fetch URL.
  EXPECT_EQ(site, (std::set<std::string>{"http://a/2", "http://a/3?raw"}));
  ASSERT_TRUE(record(1, "http://a/2"));
  ASSERT_TRUE(record(1, "http://a/3"));
  EXPECT_NE(record(1, "http://a/3")->filename, "copy-3") << "another MD5 than the source's is not stored";
  EXPECT_EQ(record(1, "http://a/3")->fetch, "http://a/3?raw");
  bool deleted = false;
  for (const auto& d : botm_.takeDeletes()) deleted = deleted || d.file == "copy-3";
  EXPECT_TRUE(deleted) << "the body with the wrong MD5 is deleted";
}

// The import route makes a copy of a URL with "cp", and only of one with a usable one.
TEST(QmMoveRoutes, AnImportedUrlWithItsBytesElsewhereIsACopy) {
  auto urls = parseMoveUrls(
      R"([{"c":"http://a/1","m":"text/html","f":"http://a/1?x","cp":{"u":"http://127.0.0.1:9/cu/content/S/4/k","md5":"0123456789abcdef0123456789abcdef","sz":12}},)"
      R"({"c":"http://a/2","m":"text/html","cp":{"u":"not a url","md5":"0123456789abcdef0123456789abcdef","sz":1}},)"
      R"({"c":"http://a/3","m":"text/html"}])",
      5);
  ASSERT_TRUE(urls.isOk()) << urls.status().message();
  ASSERT_EQ(urls.value().size(), 3u);
  auto c = parseCopyFetch(urls.value()[0].fetch);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->content_url, "http://127.0.0.1:9/cu/content/S/4/k");
  EXPECT_EQ(c->size, 12u);
  EXPECT_EQ(c->original, "http://a/1?x");
  EXPECT_EQ(storedFetch(urls.value()[0].fetch), "http://a/1?x");
  EXPECT_EQ(urls.value()[1].fetch, "") << "a copy from nowhere usable: the site";
  EXPECT_FALSE(parseCopyFetch("http://a/cu/content/x?lcc_copy=zz-1&lcc_of="));
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
