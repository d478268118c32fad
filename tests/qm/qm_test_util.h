// qm_test_util.h — shared pieces of the QM tests: stores loaded through the real
// plugin loader, a recording BOT-M port, notice builders.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "qm/queue_manager.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "support/plugin_list.h"

namespace lcc::qm::testing {

// The storage plugins the store contract suite runs over (CMake's LCC_STORE_PLUGINS).
inline std::vector<std::string> storePlugins() {
  return lcc::testing::splitList(LCC_QM_STORE_PLUGINS);
}

// The three stores of one plugin, opened in `dir` through the real loader.
class Stores {
 public:
  Stores(const std::string& plugin, const std::string& dir, Clock* clock, Env* env)
      : plugin_(plugin), dir_(dir), registry_(LCC_PLUGIN_DIR, HostContext{clock, env, nullptr, dir, "m1"}) {}

  Status open() {
    auto opts = registry_.defaultOptions(plugin_);
    if (!opts.isOk()) return opts.status();
    auto q = registry_.makeQueueStore(plugin_, opts.value());
    if (!q.isOk()) return q.status();
    queue = std::move(q).value();
    auto c = registry_.makeContentStore(plugin_, opts.value());
    if (!c.isOk()) return c.status();
    content = std::move(c).value();
    auto p = registry_.makeProviderStore(plugin_, opts.value());
    if (!p.isOk()) return p.status();
    providers = std::move(p).value();
    return Status::ok();
  }
  Status close() {
    Status s;
    if (queue) s = queue->close();
    if (content) (void)content->close();
    if (providers) (void)providers->close();
    queue.reset();
    content.reset();
    providers.reset();
    return s;
  }
  bool persistent() const { return queue && queue->openInfo().persistent; }

  PluginPtr<QueueStore> queue;
  PluginPtr<ContentStore> content;
  PluginPtr<ProviderStore> providers;

 private:
  std::string plugin_;
  std::string dir_;
  PluginRegistry registry_;
};

// A BOT-M that records what the QM sends.
class RecordingBotm : public BotmPort {
 public:
  struct Fetch {
    LinkId link;
    FetchRequest order;
  };
  struct Delete {
    LinkId link;
    std::uint64_t id;
    std::string machine;
    std::string file;
  };
  void sendFetch(LinkId link, const FetchRequest& order) override { fetches.push_back({link, order}); }
  void sendDelete(LinkId link, std::uint64_t id, const std::string& machine, const std::string& file) override {
    deletes.push_back({link, id, machine, file});
  }
  void sendSweep(LinkId link, std::uint64_t sweep) override { sweeps.push_back({link, sweep}); }
  void sendLease(LinkId link, Millis lease) override { leases.push_back({link, lease}); }
  std::vector<Fetch> takeFetches() {
    auto out = std::move(fetches);
    fetches.clear();
    return out;
  }
  std::vector<Delete> takeDeletes() {
    auto out = std::move(deletes);
    deletes.clear();
    return out;
  }
  std::vector<Fetch> fetches;
  std::vector<Delete> deletes;
  std::vector<std::pair<LinkId, std::uint64_t>> sweeps;
  std::vector<std::pair<LinkId, Millis>> leases;  // renewals (<ping lease>)
};

inline UrlNotice update(ProviderId pid, const std::string& url, std::optional<std::int64_t> mt = std::nullopt,
                        std::string tod = {}) {
  UrlNotice n;
  n.key = {pid, url, "text/html"};
  n.op = UrlOp::kUpdate;
  n.mtime = mt;
  n.tod = std::move(tod);
  return n;
}

inline UrlNotice removal(ProviderId pid, const std::string& url) {
  UrlNotice n;
  n.key = {pid, url, "text/html"};
  n.op = UrlOp::kDelete;
  return n;
}

inline IntakeSet makeSet(ProviderId pid, std::vector<UrlNotice> urls, std::uint64_t id = 0,
                         SetKind kind = SetKind::kPartial, std::string uns = "m1/uns") {
  IntakeSet s;
  s.uns = std::move(uns);
  s.id = id;
  s.pid = pid;
  s.kind = kind;
  s.urls = std::move(urls);
  return s;
}

inline FetchResult okResult(std::uint64_t id, const std::string& file, std::uint64_t size = 100,
                            std::string machine = "m1") {
  FetchResult o;
  o.id = id;
  o.http_status = 200;
  o.machine = std::move(machine);
  o.filename = file;
  o.size = size;
  o.md5 = "0123456789abcdef0123456789abcdef";
  return o;
}

inline FetchResult errResult(std::uint64_t id, ErrorCode code, int http = 0,
                             std::optional<Millis> retry_after = std::nullopt) {
  FetchResult o;
  o.id = id;
  o.code = code;
  o.http_status = http;
  o.retry_after = retry_after;
  o.message = std::string(errorCodeMessage(code));
  return o;
}

// Creates `n` active providers (ids 1..n) with the given priorities (default 0).
inline void addProviders(ProviderStore& ps, int n, std::vector<std::int32_t> priorities = {}) {
  for (int i = 0; i < n; ++i) {
    ProviderRecord r;
    r.state = ProviderState::kActive;
    r.priority = i < static_cast<int>(priorities.size()) ? priorities[static_cast<std::size_t>(i)] : 0;
    auto id = ps.create(r);
    ASSERT_TRUE(id.isOk()) << id.status().toString();
  }
}

}  // namespace lcc::qm::testing
