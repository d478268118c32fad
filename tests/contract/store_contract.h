// store_contract.h — what the store contract suites share: the plugins under test
// (LCC_STORE_PLUGINS, filled by each plugin's CMakeLists), row builders with every field
// set (so a lost field shows), and the fixture that loads a plugin through the real
// PluginRegistry with a fresh TempDir as data_dir. storage-memory is the reference;
// persistent plugins also run the restart cases (close, reopen in the same data_dir).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <set>
#include <sstream>
#include <thread>

#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "server_store_options.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "support/plugin_list.h"

namespace lcc::contract {

using testing::SimClock;
using testing::TempDir;

inline std::vector<std::string> storePlugins() {
  return lcc::testing::splitList(LCC_STORE_PLUGINS);
}

// --- row builders: every field set, so a lost field shows ---------------------------

inline UrlNotice notice(ProviderId pid, const std::string& url, const std::string& mime = "text/html") {
  UrlNotice n;
  n.key = {pid, url, mime};
  n.op = UrlOp::kUpdate;
  n.view_tag = "tag-" + url;
  n.browse = "http://browse/" + url;
  n.fetch = "http://fetch/" + url;
  n.mtime = 1714564800;
  n.size = 12345;
  n.md5 = "0123456789abcdef0123456789abcdef";
  n.tod = "0-8,22-24";
  return n;
}

inline QueueEntry entry(ProviderId pid, const std::string& url, PSetId pset = 7, TimeSlot slot = 3) {
  QueueEntry e;
  e.notice = notice(pid, url);
  e.op = QueueOp::kFetch;
  e.pset = pset;
  e.slot = slot;
  e.next = encodeUrlKey({pid, url + "-next", "text/html"});
  e.bad_count = 2;
  e.queued = fromUnixMillis(1714564800123);
  return e;
}

inline PSetRecord pset(PSetId id, TimeSlot slot, ProviderId pid = 1) {
  PSetRecord p;
  p.pset = id;
  p.slot = slot;
  p.pid = pid;
  p.priority = -5;
  p.first = encodeUrlKey({pid, "first", "text/html"});
  p.last = encodeUrlKey({pid, "last", "text/html"});
  p.count = 42;
  return p;
}

inline ContentRecord record(ProviderId pid, const std::string& url, ChangeSeq seq, const std::string& mime = "text/html") {
  ContentRecord r;
  r.key = {pid, url, mime};
  r.seq = seq;
  r.deleted = false;
  r.view_tag = "v";
  r.browse = "http://b/" + url;
  r.fetch = "http://f/" + url;
  r.mtime = 1714500000;
  r.size = 4096 + seq;
  r.md5 = "md5-of-" + std::to_string(seq);
  r.machine = "m1";
  r.filename = "00/01/" + std::to_string(seq);
  r.stored = fromUnixMillis(1714564800000 + static_cast<std::int64_t>(seq) * 1000);
  r.refreshed = fromUnixMillis(1714564900000);
  r.declared_mtime = 1714400000;
  r.declared_size = 4000;
  r.declared_md5 = "fedcba9876543210fedcba9876543210";
  r.created_seq = seq;  // what the store sets for a new URL (content_created_test.cc)
  r.etag = "W/\"etag-" + std::to_string(seq) + "\"";
  return r;
}

inline ProviderRecord provider(const std::string& contact) {
  ProviderRecord p;
  p.id = 999;  // ignored by create()
  p.state = ProviderState::kActive;
  p.password_hash = "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA";
  p.prefixes = {"http://www.example.org/", "https://cdn.example.org/a/"};
  p.priority = 3;
  p.bandwidth = 1000000;
  p.quota_files = 100;
  p.quota_bytes = 1 << 30;
  p.used_files = 5;
  p.used_bytes = 5000;
  p.secret = "s3cr3t";
  p.secret_url = "http://www.example.org/lococa-secret.txt";
  p.contact = contact;
  p.state_reason = "re-verification: the secret file is gone";
  p.sitemap_url = "http://www.server.com/sitemap.xml.gz";
  p.sitemap_interval = Millis(6 * 3600 * 1000);
  p.reg_expires = fromUnixMillis(1715000000000);
  p.conn_seq = 17;
  p.last_ip = "192.0.2.1";
  p.last_connect = fromUnixMillis(1714564000000);
  p.fullsets_used = 1;
  p.fullset_period_start = fromUnixMillis(1714000000000);
  p.fullset_wanted = true;
  p.fullset_reason = FullSetReason::kOldFiles;
  p.error_total = 2;
  FetchErrorEntry e;
  e.notice = notice(1, "broken.htm");
  e.code = ErrorCode::kNotFound;
  e.http_status = 404;
  e.message = "not found";
  e.when = fromUnixMillis(1714564700000);
  p.errors = {e, e};
  p.errors[1].code = ErrorCode::kServerError;
  p.errors[1].notice.op = UrlOp::kCheck;  // an IndexNow URL that failed otherwise
  p.created = fromUnixMillis(1714000000000);
  return p;
}

template <typename T, typename Scan>
inline std::vector<T> collect(Scan&& scan) {
  std::vector<T> out;
  Status s = scan([&](const T& v) {
    out.push_back(v);
    return true;
  });
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out;
}

// --- fixture ------------------------------------------------------------------------

class StoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  StoreContractTest() { reopenRegistry(); }
  void SetUp() override {
    const std::string why = testing::serverStoreSkipReason(GetParam());
    if (!why.empty()) GTEST_SKIP() << why;
  }

  void reopenRegistry() {
    registry_.reset();
    registry_ = std::make_unique<PluginRegistry>(
        LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger(GetParam()), dir_.path(), "m1"});
  }
  OptionsView options() {
    auto o = registry_->defaultOptions(GetParam());
    EXPECT_TRUE(o.isOk()) << o.status().toString();
    return o.isOk() ? testing::serverStoreOptions(GetParam(), o.value(), schema_) : OptionsView();
  }
  PluginPtr<QueueStore> queue() {
    auto s = registry_->makeQueueStore(GetParam(), options());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }
  PluginPtr<ContentStore> content() {
    auto s = registry_->makeContentStore(GetParam(), options());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }
  PluginPtr<ProviderStore> providers() {
    auto s = registry_->makeProviderStore(GetParam(), options());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }

  static std::vector<std::string> seqKeys(ContentStore& s, ChangeSeq after, const ContentFilter& f = {}) {
    std::vector<std::string> out;
    ChangeSeq last = after;
    Status st = s.scanSince(after, f, [&](const ContentRecord& r) {
      EXPECT_GT(r.seq, last) << "scanSince must be in ascending seq order";
      last = r.seq;
      out.push_back(r.key.url + "@" + std::to_string(r.seq));
      return true;
    });
    EXPECT_TRUE(st.isOk()) << st.toString();
    return out;
  }

  TempDir dir_;
  SimClock clock_;
  std::unique_ptr<PluginRegistry> registry_;
  const std::string schema_ = testing::freshSchemaName();  // server store plugins only
};

// The instantiation each suite executable makes once: one run per store plugin, named
// after it.
inline std::string pluginTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

}  // namespace lcc::contract
