// sqlite_test_util.h — shared helpers of the storage-sqlite tests: a fixture that
// loads the plugin through the real loader, and record builders.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/store_plugin_fixture.h"

namespace lcc::testing {

class SqliteStoreTest : public StorePluginFixture {
 protected:
  SqliteStoreTest() : StorePluginFixture("storage-sqlite") {}
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
