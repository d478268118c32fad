// sqlite_test_util.h — shared helpers of the storage-sqlite tests: a fixture that
// loads the plugin through the real loader, and record builders.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::testing {

class SqliteStoreTest : public ::testing::Test {
 protected:
  SqliteStoreTest() : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}) {}

  OptionsView options(const std::map<std::string, std::string>& overrides = {}) {
    auto o = registry_.defaultOptions("storage-sqlite", overrides);
    EXPECT_TRUE(o.isOk()) << o.status().toString();
    return o.isOk() ? *o : OptionsView();
  }
  PluginPtr<QueueStore> openQueue(const std::map<std::string, std::string>& overrides = {}) {
    auto s = registry_.makeQueueStore("storage-sqlite", options(overrides));
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(*s) : nullptr;
  }
  PluginPtr<ContentStore> openContent(const std::map<std::string, std::string>& overrides = {}) {
    auto s = registry_.makeContentStore("storage-sqlite", options(overrides));
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(*s) : nullptr;
  }
  PluginPtr<ProviderStore> openProviders(const std::map<std::string, std::string>& overrides = {}) {
    auto s = registry_.makeProviderStore("storage-sqlite", options(overrides));
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(*s) : nullptr;
  }

  TempDir dir_;
  SimClock clock_;
  PluginRegistry registry_;
};

inline QueueEntry makeEntry(ProviderId pid, const std::string& url, PSetId pset = 1, TimeSlot slot = kSlotNow) {
  QueueEntry e;
  e.notice.key = UrlKey{pid, url, "text/html"};
  e.notice.view_tag = "v";
  e.notice.md5 = "0123456789abcdef0123456789abcdef";
  e.notice.mtime = 1714564800;
  e.notice.size = 5120;
  e.notice.tod = "0-8,22-24";
  e.pset = pset;
  e.slot = slot;
  e.queued = fromUnixMillis(1714564800123);
  return e;
}

inline ContentRecord makeRecord(ProviderId pid, const std::string& url, ChangeSeq seq) {
  ContentRecord r;
  r.key = UrlKey{pid, url, "text/html"};
  r.seq = seq;
  r.view_tag = "t";
  r.fetch = url + "?f";
  r.mtime = 1714564800;
  r.size = 100 + seq;
  r.md5 = "0123456789abcdef0123456789abcdef";
  r.machine = "m1";
  r.filename = "00/00/" + std::to_string(seq);
  r.stored = fromUnixMillis(1714564800000 + static_cast<std::int64_t>(seq));
  r.refreshed = r.stored;
  r.declared_size = 100;
  return r;
}

}  // namespace lcc::testing
