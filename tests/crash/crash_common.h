// crash_common.h — what the crash child writes and the crash test checks.
#pragma once

#include <map>
#include <string>

#include "lcc/queue_store.h"
#include "lcc/content_store.h"
#include "lcc/store_common.h"

namespace lcc::crash {

inline constexpr int kRows = 50;  // rows per batch

// Small files so that a crash test run stays small; per-plugin option names.
inline std::map<std::string, std::string> smallOptions(const std::string& plugin) {
  if (plugin == "storage-kyoto") {
    // A small checkpoint size and compaction step so that kills also land in
    // checkpoints, trims and compactions (Kyoto defrag); few buckets and a low
    // rehash_load so that they land in the rebuilds of queue.kch (issue 28) too.
    return {{"buckets", "16"},           {"mmap_size", "1MiB"},         {"page_cache", "1MiB"},
            {"checkpoint_size", "256KiB"}, {"compact_growth", "64KiB"}, {"rehash_load", "1"}};
  }
  if (plugin == "storage-sqlite") {
    // Frequent WAL checkpoints, so that kills also land in checkpoints.
    return {{"wal_autocheckpoint", "16"}, {"cache_size", "256KiB"}};
  }
  return {};
}

inline std::string describe(const StoreOpenInfo& i) {
  return std::string("created=") + (i.created ? "1" : "0") + " clean=" + (i.clean_shutdown ? "1" : "0") +
         " lost=" + (i.may_have_lost_synced ? "1" : "0");
}

inline std::string rowUrl(std::uint64_t batch, int i) {
  return "http://crash/" + std::to_string(batch) + "/" + std::to_string(i) + std::string(40, 'u');
}

inline void queueBatch(std::uint64_t n, QueueBatch* b) {
  for (int i = 0; i < kRows; ++i) {
    QueueEntry e;
    e.notice.key = UrlKey{1, rowUrl(n, i), "text/html"};
    e.notice.md5 = "0123456789abcdef0123456789abcdef";
    e.notice.view_tag = std::string(200, 'v');
    e.pset = n;
    e.next = i + 1 < kRows ? encodeUrlKey(UrlKey{1, rowUrl(n, i + 1), "text/html"}) : "";
    b->putEntry(std::move(e));
  }
  b->putPSet(PSetRecord{n, kSlotNow, 1, 0, encodeUrlKey(UrlKey{1, rowUrl(n, 0), "text/html"}),
                        encodeUrlKey(UrlKey{1, rowUrl(n, kRows - 1), "text/html"}), kRows});
  if (n > 3) {
    for (int i = 0; i < kRows; ++i) b->removeEntry(encodeUrlKey(UrlKey{1, rowUrl(n - 3, i), "text/html"}));
    b->removePSet(n - 3, kSlotNow);
  }
  b->putMeta("last", std::to_string(n));
}

inline void contentBatch(std::uint64_t n, ChangeSeq* seq, ContentBatch* b) {
  for (int i = 0; i < kRows; ++i) {
    ContentRecord r;
    r.key = UrlKey{1, rowUrl(n, i), "text/html"};
    r.seq = ++*seq;
    r.size = n;  // the batch number, checked by the test
    r.md5 = "0123456789abcdef0123456789abcdef";
    r.machine = "m1";
    r.filename = std::to_string(n) + "/" + std::to_string(i);
    b->put(std::move(r));
  }
  if (n > 3) {
    for (int i = 0; i < kRows; ++i) b->erase(encodeUrlKey(UrlKey{1, rowUrl(n - 3, i), "text/html"}));
  }
  b->putMeta("last", std::to_string(n));
}

}  // namespace lcc::crash
