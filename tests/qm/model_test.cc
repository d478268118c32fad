// A randomized model test: random sets (partial and full), duplicates, removals and
// fetch results of every kind, against a simple model of what the LCC DB must hold
// at the end; and the same final LCC DB on every storage plugin.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "common/config/config.h"
#include "qm/queue_manager.h"
#include "qm_test_util.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;
using lcc::testing::SimClock;
using lcc::testing::TempDir;

struct ModelUrl {
  std::uint64_t version = 0;
  std::optional<UrlNotice> last;  // nullopt: never mentioned
  bool errored = false;           // a final fetch error after the last notice
};

struct Outstanding {
  LinkId link;
  FetchRequest order;
  std::string key;
  std::uint64_t version;
};

// Runs one random history on `plugin`; returns a digest of the final LCC DB.
std::string runHistory(const std::string& plugin, unsigned seed) {
  SimClock clock;
  TempDir dir;
  Stores stores(plugin, dir.path(), &clock, posixEnv());
  EXPECT_TRUE(stores.open().isOk());
  addProviders(*stores.providers, 3);
  auto journal = Journal::open(posixEnv(), dir.file("journal"));
  EXPECT_TRUE(journal.isOk());
  RecordingBotm botm;
  QmOptions o = QmOptions::fromConfig(Config::defaults());
  o.max_retries = 1000;
  o.retry_delay = Millis(0);
  o.provider_error_delay = Millis(1000);
  o.bandwidth_tick = Millis(500);
  o.botm_overload_pct = 100;
  o.checkpoint_interval = Millis(5000);
  QmDeps deps{stores.queue.get(), stores.content.get(), stores.providers.get(), journal.value().get(), &clock,
              nullptr, &botm, nullptr};
  QueueManager qm(deps, o);
  EXPECT_TRUE(qm.open().isOk());
  qm.startTimers();
  qm.linkUp(1, "m1", 3);

  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::map<std::string, ModelUrl> model;
  std::map<std::string, std::string> key_of_url;
  std::vector<Outstanding> out;
  std::set<std::string> files_made, files_deleted;
  int file_no = 0;
  std::uint64_t set_id = 0;

  auto collect = [&]() {
    for (auto& f : botm.takeFetches()) {
      std::string key = key_of_url.at(f.order.url);
      out.push_back({f.link, f.order, key, model[key].version});
    }
    for (auto& d : botm.takeDeletes()) {
      EXPECT_TRUE(files_deleted.insert(d.file).second) << "file deleted twice: " << d.file;
      qm.onDeleted(d.link, d.id, true, "");
    }
  };
  auto noteNotice = [&](const UrlNotice& n) {
    auto& m = model[encodeUrlKey(n.key)];
    m.version += 1;
    m.last = n;
    m.errored = false;
  };
  auto urlOf = [](ProviderId p, int i) { return "http://p" + std::to_string(p) + "/u" + std::to_string(i); };
  for (ProviderId p = 1; p <= 3; ++p) {
    for (int i = 0; i < 8; ++i) key_of_url[urlOf(p, i)] = encodeUrlKey({p, urlOf(p, i), "text/html"});
  }
  auto randomUpdate = [&](ProviderId p, int i) {
    UrlNotice n = update(p, urlOf(p, i));
    if (pick(4) != 0) n.mtime = 1 + pick(3);
    if (pick(2) == 0) n.size = static_cast<std::uint64_t>(10 * (1 + pick(2)));
    return n;
  };

  for (int step = 0; step < 500; ++step) {
    int r = pick(100);
    if (r < 35) {
      ProviderId p = static_cast<ProviderId>(1 + pick(3));
      std::vector<UrlNotice> urls;
      int n = 1 + pick(5);
      for (int k = 0; k < n; ++k) {
        int i = pick(8);
        urls.push_back(pick(4) == 0 ? removal(p, urlOf(p, i)) : randomUpdate(p, i));
      }
      for (const auto& u : urls) noteNotice(u);
      qm.submit(makeSet(p, urls, ++set_id), nullptr);
      if (pick(10) == 0) qm.submit(makeSet(p, urls, set_id), nullptr);  // a replayed set
    } else if (r < 40) {
      ProviderId p = static_cast<ProviderId>(1 + pick(3));
      std::vector<UrlNotice> urls;
      std::set<std::string> in;
      for (int i = 0; i < 8; ++i) {
        if (pick(2) == 0) {
          urls.push_back(randomUpdate(p, i));
          in.insert(key_of_url[urlOf(p, i)]);
        }
      }
      for (const auto& u : urls) noteNotice(u);
      for (int i = 0; i < 8; ++i) {
        const std::string& k = key_of_url[urlOf(p, i)];
        if (!in.count(k) && model[k].last && model[k].last->op == UrlOp::kUpdate) noteNotice(removal(p, urlOf(p, i)));
      }
      qm.submit(makeSet(p, urls, ++set_id, SetKind::kFull), nullptr);
    } else if (r < 90) {
      if (out.empty()) continue;
      std::size_t idx = static_cast<std::size_t>(pick(static_cast<int>(out.size())));
      Outstanding f = out[idx];
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(idx));
      int kind = pick(100);
      if (kind < 60) {
        std::string file = "f" + std::to_string(++file_no);
        files_made.insert(file);
        qm.onResult(f.link, okResult(f.order.id, file, 100));
      } else if (kind < 70 && f.order.if_modified_since) {
        FetchResult u;
        u.id = f.order.id;
        u.unchanged = true;
        u.http_status = 304;
        qm.onResult(f.link, u);
      } else if (kind < 85) {
        qm.onResult(f.link, errResult(f.order.id, ErrorCode::kServerError, 500));
      } else if (kind < 90) {
        qm.onResult(f.link, errResult(f.order.id, ErrorCode::kConnectFailure));
      } else {
        if (model[f.key].version == f.version) model[f.key].errored = true;
        qm.onResult(f.link, errResult(f.order.id, ErrorCode::kNotFound, 404));
      }
    } else {
      clock.advance(Millis(2000));
    }
    collect();
  }
  // Drain: everything still queued succeeds.
  for (int round = 0; round < 500 && (qm.queued() > 0 || !out.empty()); ++round) {
    auto batch = std::move(out);
    out.clear();
    for (const auto& f : batch) {
      std::string file = "f" + std::to_string(++file_no);
      files_made.insert(file);
      qm.onResult(f.link, okResult(f.order.id, file, 100));
      collect();
    }
    clock.advance(Millis(2000));
    collect();
  }
  EXPECT_EQ(qm.queued(), 0u) << plugin << " seed " << seed;
  EXPECT_EQ(qm.inFlight(), 0u);

  // The model: present iff the last notice was an update and no final error followed.
  std::set<std::string> live_files;
  std::string digest;
  for (const auto& [key, m] : model) {
    auto rec = stores.content->get(key);
    EXPECT_TRUE(rec.isOk());
    const auto& r = rec.value();
    bool live = r && !r->deleted;
    bool want = m.last && m.last->op == UrlOp::kUpdate && !m.errored;
    EXPECT_EQ(live, want) << plugin << " seed " << seed << " " << decodeUrlKey(key)->url;
    if (live && want) {
      EXPECT_EQ(r->declared_mtime, m.last->mtime) << decodeUrlKey(key)->url;
      EXPECT_EQ(r->declared_size, m.last->size) << decodeUrlKey(key)->url;
      EXPECT_TRUE(live_files.insert(r->filename).second) << "two records share a file";
    }
    if (r) {
      digest += decodeUrlKey(key)->url + (r->deleted ? " deleted" : " live") + " seq=" + std::to_string(r->seq) +
                " file=" + r->filename + " mt=" + std::to_string(r->declared_mtime.value_or(-1)) + "\n";
    }
  }
  // Every file made is either referenced by exactly one live record or deleted once.
  for (const auto& f : files_made) {
    EXPECT_NE(live_files.count(f) != 0, files_deleted.count(f) != 0) << "file " << f << " leaked or deleted while live";
  }
  std::size_t fsm = 0;
  EXPECT_TRUE(stores.queue->scanDeletes(std::nullopt, [&](const DeleteRequest&) { return ++fsm, true; }).isOk());
  EXPECT_EQ(fsm, 0u) << "deletes left in the FSMDB";
  qm.stopTimers();
  EXPECT_TRUE(qm.close().isOk());
  (void)stores.close();
  return digest;
}

TEST(QmModel, RandomHistoriesMatchTheModelAndAgreeAcrossPlugins) {
  for (unsigned seed : {1u, 2u}) {
    std::string first;
    std::string first_plugin;
    for (const auto& plugin : storePlugins()) {
      std::string d = runHistory(plugin, seed);
      if (first_plugin.empty()) {
        first = d;
        first_plugin = plugin;
      } else {
        EXPECT_EQ(d, first) << plugin << " and " << first_plugin << " disagree (seed " << seed << ")";
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace lcc::qm
