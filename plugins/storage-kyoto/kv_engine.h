// kv_engine.h — what the three Kyoto stores share: a few Kyoto Cabinet files, a redo
// journal, an in-memory overlay of not-yet-synced batches, the meta file and the
// sticky failure.
//
// HOW A BATCH BECOMES DURABLE AND ATOMIC (the store's guarantee; README.md):
//  apply(batch)  encodes the whole batch as ONE redo record and appends it to the
//                redo journal (lcc::Journal, CRC32C per record; buffered, not yet
//                written) and to the overlay (a sorted map per table). Readers see
//                overlay-then-Kyoto. Kyoto files are not touched.
//  sync()        journal commit: one write + one fdatasync for every batch since the
//                last sync. Only then are the batches written into Kyoto (plain
//                sets/removes, no Kyoto transaction) and dropped from the overlay.
//  checkpoint    when the journal holds more than `checkpoint_size` bytes, when a
//                B+ tree file needs compacting (below), and at close: Kyoto
//                synchronize(hard) on every file, then the journal is trimmed. So Kyoto on disk = state at the last checkpoint plus some
//                unordered subset of the writes of synced batches after it.
//  open          Kyoto's own repair runs on a file that was not closed (it rebuilds
//                the file from its records), then every redo record in the journal
//                is applied again. Records are blind puts/removes of whole values,
//                so re-applying a suffix of the history in order gives exactly the
//                state after the last synced batch. A torn last redo record (a crash
//                during the write) fails its checksum and is dropped whole.
//  So: a batch is in Kyoto only after its redo record is durable; a crash loses
//  either the whole batch (not synced) or nothing (synced, redone).
//
// COMPACTION (README.md, "File size"): Kyoto rewrites a B+ tree page elsewhere when it
// grows and never merges the holes it leaves (its free block pool keeps 1,024 of them,
// and small holes cannot hold a grown page), so a file under churn grows without bound.
// A B+ tree file grown past max(2x its size after the last compaction, that size +
// `compact_growth`) is compacted (Kyoto defrag, inside one Kyoto transaction: a crash
// while records move rolls the file back at the next open) by a checkpoint, which the
// next sync() runs for it.
//
// REHASH (README.md, "Hash buckets"): Kyoto fixes a HashDB's bucket count when the file
// is made, and each bucket is a tree of its rows, so a lookup costs more record reads
// the more rows share a bucket. A hash file holding more than `rehash_load` rows per
// bucket is rebuilt by a checkpoint (which the next sync() runs) with twice as many
// buckets as rows: `<file>.new` is filled from the synced file, synced and renamed
// over it. Until the rename the old file is whole; after it
// the new one is, and the redo journal (blind puts) applies over either.
//
// ROW COUNT: rowCount() of a table is Kyoto's own record count of its file plus what
// the overlay changes in it; Kyoto keeps the count in the file and recounts when it
// repairs a file that was not closed, and redo applies blind puts/removes through it,
// so the count is exact after a crash too. No lookup is made per applied row for it.
//
// ABSENT-KEY FILTER (key_filter.h): a hash table keeps a Bloom filter of its keys
// (`key_filter` bits per bucket), built at open and at every rebuild, added to by
// apply(): get()/contains() of a key it has never seen answer "absent" without Kyoto.
//
// THREADS: writes (apply/sync/close) are serialised by an internal mutex; reads may
// run concurrently with them (a shared lock over overlay + Kyoto; scans of ordered
// tables take the lock per chunk of rows, so a long scan never blocks the writer).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "key_filter.h"
#include "kyoto_files.h"
#include "lcc/support/journal.h"
#include "lcc/host.h"
#include "lcc/options.h"
#include "lcc/status.h"
#include "lcc/store_common.h"

namespace kyotocabinet {
class BasicDB;
}

namespace lcc::plugins::kyoto {

inline constexpr const char* kPluginName = "storage-kyoto";
inline constexpr int kFormatVersion = 1;

struct TableSpec {
  std::string file;  // file name under the store dir: "queue.kch", "queue.kct"
  bool ordered;      // TreeDB (ordered scans) or HashDB
};

class KvEngine {
 public:
  struct Op {
    std::uint8_t table = 0;
    std::string key;
    std::optional<std::string> value;  // nullopt: remove
  };
  using Batch = std::vector<Op>;
  using RowFn = std::function<bool(std::string_view key, std::string_view value)>;

  // `name` is the store ("queue", "content", "providers"): files are
  // <dir>/<name>.meta, <dir>/<name>.redo/ and the tables' files.
  static Result<std::unique_ptr<KvEngine>> open(const HostContext& host, const std::string& name,
                                                std::vector<TableSpec> tables, const EngineOptions& options);
  ~KvEngine();

  const StoreOpenInfo& openInfo() const { return info_; }

  Status apply(Batch batch);  // rows are moved into the overlay
  Status sync();
  Status close();
  // OK, or the sticky failure / "closed".
  Status writable() const;

  Result<std::optional<std::string>> get(std::uint8_t table, std::string_view key);
  Result<bool> contains(std::uint8_t table, std::string_view key);
  // Rows in a table, the overlay included (ROW COUNT above).
  Result<std::uint64_t> rowCount(std::uint8_t table);
  // Ordered tables: rows with from <= key < to (to empty: no bound), ascending.
  Status scanRange(std::uint8_t table, const std::string& from, const std::string& to, const RowFn& fn);
  // Any table, no particular order.
  Status scanAll(std::uint8_t table, const RowFn& fn);

  std::uint64_t redoBytes() const;

 private:
  KvEngine() = default;
  Status openImpl(const HostContext& host, const std::string& name, std::vector<TableSpec> tables,
                  const EngineOptions& options);
  Status applyToKyoto(const Batch& batch);
  Status flushOverlayLocked();
  Status checkpointLocked(bool rebuild = true);  // rebuild: may rehash (not at close)
  Status fail(Status s);
  Status writeMeta(bool clean, const std::string& boot, bool lost);

  struct Table {
    TableSpec spec;
    std::string path;
    std::unique_ptr<kyotocabinet::BasicDB> db;
    std::map<std::string, std::optional<std::string>, std::less<>> overlay;
    std::int64_t compacted_size = 0;  // Kyoto's logical file size after the last compaction (0: none yet)
    std::int64_t buckets = 0;         // hash files: the bucket count the file was made with
    bool rehash_off = false;          // a rebuild failed before its rename: not tried again until reopened
    KeyFilter filter;                 // hash files: ABSENT-KEY FILTER
  };
  bool needsCompaction(const Table& t) const;
  Status compactLocked(Table& t);
  bool needsRehash(const Table& t) const;
  Status rehashLocked(Table& t);
  Status buildFilter(Table& t);  // fills the absent-key filter from the file
  // Kyoto's answer for a key not in the overlay: absent if the filter never saw it.
  bool filterSaysAbsent(const Table& t, std::string_view key) const;

  Env* env_ = nullptr;
  Clock* clock_ = nullptr;
  Logger* logger_ = nullptr;
  std::string name_;
  std::string dir_;
  std::string meta_path_;
  std::string boot_id_;
  EngineOptions options_;
  std::vector<Table> tables_;
  std::unique_ptr<Journal> redo_;
  StoreOpenInfo info_;
  std::uint64_t overlay_bytes_ = 0;
  bool closed_ = false;
  Status failed_;
  std::mutex write_mu_;
  mutable std::shared_mutex mu_;
};

}  // namespace lcc::plugins::kyoto
