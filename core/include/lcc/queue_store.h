// lcc/queue_store.h — QDB, QPSDB, FSMDB and the queue counters (design document §6).
//
// WHO CALLS IT: the QM only, from its single store-writer strand (absorb, fetch
// results, slot merging, the delete manager). Reads may come from the same strand.
// A QueueStore holds rows; the queue logic (dedup, last-wins, list linking, slots)
// lives once in core/qm and emits QueueBatch objects, so every plugin behaves alike.
//
// THREADS: a store is used by one thread at a time (the QM serialises access).
// DURABILITY:
//  - apply() is atomic: after a crash either the whole batch is visible or none of it.
//  - apply() need not be durable; sync() returns OK only when every batch applied
//    before it is durable (survives kill -9 and power loss). Group commit is the
//    caller's: many applies, one sync. The QM's intake journal covers the gap.
//  - close() syncs and records a clean shutdown; the next open reports it.
// PRECONDITIONS:
//  REQUIRES: keys in batches are encodeUrlKey() values.
//  REQUIRES: after a non-OK apply() or sync() the store is failed: every later write
//            returns the same error (sticky), and the QM raises cache-crash.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lcc/status.h"
#include "lcc/store_common.h"
#include "lcc/types.h"

namespace lcc {

// A group of changes applied atomically by QueueStore::apply(), in order.
class QueueBatch {
 public:
  // `fresh`: the caller read this key as absent from the store (the QM's StoreTxn did,
  // in the same step), so the row is most likely new. A hint only: a store may insert
  // such rows the fast way (storage-postgres: COPY instead of an upsert), but must give
  // the same result when the row is there after all (a batch applied again after an
  // unknown outcome, a hint that was wrong): the put still replaces it.
  struct PutEntry { QueueEntry entry; bool fresh = false; };
  struct RemoveEntry { std::string key; };
  struct PutPSet { PSetRecord pset; };
  struct RemovePSet { PSetId pset; TimeSlot slot; };
  struct PutDelete { DeleteRequest request; };
  struct RemoveDelete { std::string machine; std::string filename; };
  struct PutMeta { std::string key; std::string value; };
  using Op = std::variant<PutEntry, RemoveEntry, PutPSet, RemovePSet, PutDelete, RemoveDelete, PutMeta>;

  void putEntry(QueueEntry e, bool fresh = false) { ops_.push_back(PutEntry{std::move(e), fresh}); }
  void removeEntry(std::string key) { ops_.push_back(RemoveEntry{std::move(key)}); }
  void putPSet(PSetRecord p) { ops_.push_back(PutPSet{std::move(p)}); }
  void removePSet(PSetId pset, TimeSlot slot) { ops_.push_back(RemovePSet{pset, slot}); }
  void putDelete(DeleteRequest d) { ops_.push_back(PutDelete{std::move(d)}); }
  void removeDelete(std::string machine, std::string filename) {
    ops_.push_back(RemoveDelete{std::move(machine), std::move(filename)});
  }
  // Small named values kept with the queue: counters (next pset id), the last
  // applied journal position, per-UNS last set id. Keys are the QM's.
  void putMeta(std::string key, std::string value) { ops_.push_back(PutMeta{std::move(key), std::move(value)}); }

  const std::vector<Op>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  std::size_t size() const { return ops_.size(); }
  void clear() { ops_.clear(); }

 private:
  std::vector<Op> ops_;
};

class QueueStore {
 public:
  virtual ~QueueStore() = default;
  QueueStore() = default;
  QueueStore(const QueueStore&) = delete;
  QueueStore& operator=(const QueueStore&) = delete;

  virtual const StoreOpenInfo& openInfo() const = 0;

  virtual Status apply(const QueueBatch& batch) = 0;
  virtual Status sync() = 0;
  // Syncs, marks the store cleanly closed and releases it. Later calls fail.
  virtual Status close() = 0;

  // QDB row by encoded key; nullopt when absent.
  virtual Result<std::optional<QueueEntry>> getEntry(std::string_view key) = 0;
  // The QDB rows of several keys, in the order of `keys` (nullopt when absent). A store
  // a round trip away answers them in one (storage-postgres); the default asks getEntry().
  virtual Result<std::vector<std::optional<QueueEntry>>> getEntries(const std::vector<std::string>& keys) {
    std::vector<std::optional<QueueEntry>> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
      LCC_ASSIGN_OR_RETURN(auto e, getEntry(k));
      out.push_back(std::move(e));
    }
    return out;
  }
  // Every QDB row, in no particular order (QPSDB rebuild, checks). Stop by returning false.
  virtual Status scanEntries(const std::function<bool(const QueueEntry&)>& fn) = 0;
  virtual Result<std::uint64_t> entryCount() = 0;

  virtual Result<std::optional<PSetRecord>> getPSet(PSetId pset, TimeSlot slot) = 0;
  // The QPSDB rows of several (pset, slot) lists, in the order asked (nullopt when
  // absent); one round trip on storage-postgres, getPSet() each by default.
  virtual Result<std::vector<std::optional<PSetRecord>>> getPSets(const std::vector<std::pair<PSetId, TimeSlot>>& lists) {
    std::vector<std::optional<PSetRecord>> out;
    out.reserve(lists.size());
    for (const auto& [pset, slot] : lists) {
      LCC_ASSIGN_OR_RETURN(auto p, getPSet(pset, slot));
      out.push_back(std::move(p));
    }
    return out;
  }
  // QPSDB rows with start slot `slot` (all slots when nullopt), ordered by (pset, slot):
  // "SELECT * FROM QPSDB WHERE STARTTIMESLOT = st ORDER BY PSETID".
  virtual Status scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) = 0;

  // FSMDB rows for `machine` (all machines when nullopt), ordered by (machine, filename).
  virtual Status scanDeletes(std::optional<std::string> machine,
                             const std::function<bool(const DeleteRequest&)>& fn) = 0;

  virtual Result<std::optional<std::string>> getMeta(std::string_view key) = 0;
};

}  // namespace lcc
