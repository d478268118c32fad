// absorb.h — the queue logic of design document §6, written once for every storage plugin.
//
// StoreTxn gathers the changes of one step (absorbing a set, a fetch result, a slot
// merge) as a QueueBatch and a ContentBatch, with a read-your-writes overlay so a
// step sees its own earlier changes (a set naming the same URL twice, a list whose
// tail was just appended to); what it read is kept there too, until commit(), so each
// row costs one read per step (prefetch() reads many in one). commit() applies the ContentBatch first, then the
// QueueBatch (docs/architecture.md rule 2: catalog, then queue), unsynced; the QM syncs
// both at checkpoints.
//
// The functions below are the design's operations: "insert an update notification",
// "insert a removal notification", list linking per (pset, start slot), moving a row
// to the end of its set or to a time slot, merging a slot list into fetch-now, and
// storing or removing a content record. Applying the same set twice changes nothing.
// THREADS: one StoreTxn at a time, on the QM's store strand.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lcc/content_store.h"
#include "lcc/queue_store.h"
#include "qm/time_slots.h"

namespace lcc::qm {

// Meta keys the QM keeps in the QueueStore.
// Replay starts after kMetaAppliedPos (every record up to it is applied or dead);
// records up to kMetaAppliedEnd (the last record of the last set applied) that come
// after it are sets applied already (sets apply in the order of their last record).
inline constexpr const char* kMetaAppliedPos = "qm.applied_journal_pos";
inline constexpr const char* kMetaAppliedEnd = "qm.applied_journal_end";
inline constexpr const char* kMetaNextPSet = "qm.next_pset";
inline std::string metaUnsKey(const std::string& uns) { return "qm.uns." + uns; }  // highest set id applied
inline constexpr const char* kMetaLastMerge = "qm.last_merge_ms";  // wall time of the last slot merge
// The fetch lease (ms) the QM of a shared store gives; the next QM waits it out
// (fetch_lease.h). Rewritten every renewal: the write proves the QM still holds the store.
inline constexpr const char* kMetaFetchLease = "qm.fetch_lease_ms";
// Per provider: the identities it claims — held, or with a fetch queued — for the files
// quota (queue_manager_quota.cc); written with the rows that change it.
inline std::string metaClaimedKey(ProviderId pid) { return "qm.claimed." + std::to_string(pid); }
// A meta value written as a decimal number; nullopt when absent or not a number.
std::optional<std::uint64_t> parseMetaU64(const std::optional<std::string>& value);

// What a committed step asks of the rest of the QM.
struct TxnEffects {
  std::vector<DeleteRequest> deletes;                      // also put into the FSMDB by the step
  std::vector<std::pair<ProviderId, PSetId>> ready_psets;  // (pset, kSlotNow) lists that appeared
  std::map<ProviderId, std::int64_t> queued_delta;         // QDB rows added (+) / removed (-)
  struct Usage {
    std::int64_t files = 0;
    std::int64_t bytes = 0;
  };
  std::map<ProviderId, Usage> usage_delta;                 // stored content added / removed
  // Identities claimed (a live record, or an op=fetch row; the files quota) added (+)
  // / given up (-). Storing a fetched body changes nothing (the row's claim becomes the
  // record's), so the usual result writes no count.
  std::map<ProviderId, std::int64_t> claimed_delta;
  // Updates refused by the files quota (206), per provider: how many, and the first
  // notices (at most AbsorbContext::keep_refused) for the provider's error list.
  struct Refused {
    std::uint64_t count = 0;
    std::vector<UrlNotice> notices;
  };
  std::map<ProviderId, Refused> refused;
  std::uint64_t fetches_skipped = 0;                       // updates matching the stored record
  std::uint64_t removals = 0;                              // tombstones written
  void clear() { *this = TxnEffects{}; }
};

class StoreTxn {
 public:
  // `seq` is the QM's copy of ContentStore::maxSeq(); nextSeq() advances it.
  StoreTxn(QueueStore& queue, ContentStore& content, ChangeSeq& seq)
      : queue_(queue), content_(content), seq_(seq), base_seq_(seq) {}

  // Reads go to the store once per txn (kept with the writes in the overlay).
  Result<std::optional<QueueEntry>> entry(const std::string& key);
  // Reads the QDB rows and LCC DB records of `keys` not yet in the overlay, one batch
  // per store (one round trip each on storage-postgres), so a step over many URLs does
  // not pay a round trip per URL.
  Status prefetch(const std::vector<std::string>& keys);
  // The same for QPSDB lists.
  Status prefetchPSets(const std::vector<std::pair<PSetId, TimeSlot>>& lists);
  void putEntry(const QueueEntry& e);
  void removeEntry(const std::string& key);

  Result<std::optional<PSetRecord>> pset(PSetId pset, TimeSlot slot);
  void putPSet(const PSetRecord& p);
  void removePSet(PSetId pset, TimeSlot slot);

  Result<std::optional<ContentRecord>> content(const std::string& key);
  void putContent(const ContentRecord& r);
  void eraseContent(const std::string& key);

  Result<std::optional<std::string>> meta(const std::string& key);
  void putMeta(const std::string& key, const std::string& value);
  void putContentMeta(const std::string& key, const std::string& value);  // in the ContentStore (LCC DB)

  void putDelete(const DeleteRequest& d);
  void removeDelete(const std::string& machine, const std::string& filename);

  // Reads the ContentStore itself (not the overlay).
  Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) {
    return content_.scanProvider(pid, fn);
  }

  // Every QPSDB row of the QueueStore itself (not the overlay).
  Status scanPSets(const std::function<bool(const PSetRecord&)>& fn) { return queue_.scanPSets(std::nullopt, fn); }

  ChangeSeq nextSeq() { return ++seq_; }

  std::size_t pendingOps() const { return qbatch_.size() + cbatch_.size(); }
  // Applies the content batch, then the queue batch; clears the overlay. Effects stay.
  Status commit();

  TxnEffects effects;

 private:
  QueueStore& queue_;
  ContentStore& content_;
  ChangeSeq& seq_;
  QueueBatch qbatch_;
  ContentBatch cbatch_;
  std::unordered_map<std::string, std::optional<QueueEntry>> entries_;
  std::unordered_set<std::string> absent_;  // keys the QueueStore answered as absent in this txn
  std::map<std::pair<PSetId, TimeSlot>, std::optional<PSetRecord>> psets_;
  std::unordered_map<std::string, std::optional<ContentRecord>> content_overlay_;
  std::unordered_map<std::string, ChangeSeq> batch_put_seq_;  // seq of each key's put in cbatch_
  ChangeSeq base_seq_;  // seq_ when cbatch_ began: seqs above it were assigned by this batch
  std::unordered_map<std::string, std::optional<std::string>> meta_;
};

// One list of the QPSDB: (pset, start slot).
struct ListId {
  PSetId pset = 0;
  TimeSlot slot = kSlotNow;
  friend bool operator==(const ListId&, const ListId&) = default;
};

// --- list operations ---------------------------------------------------------
// Appends a new row (e.next is cleared) at the end of list (e.pset, e.slot); creates
// the QPSDB record when the list does not exist.
Status appendToList(StoreTxn& t, QueueEntry e, std::int32_t priority);
// Takes row `key` out of `list` (head or not); the row itself is not removed. Removes
// the QPSDB record when the list becomes empty.
// `found` (optional) tells whether the row was on that list.
Status unlinkFromList(StoreTxn& t, const std::string& key, ListId list, bool* found = nullptr);
// Removes the row and unlinks it (from `list`, else from its own (pset, -1) or (pset, slot)).
// A fetch row of an identity with no live record gives up its claim (effects.claimed_delta).
Status dropRow(StoreTxn& t, const std::string& key, ListId list);
// Moves a row to the end of the same list (a retryable failure: "marked bad").
Status moveToTail(StoreTxn& t, const std::string& key, ListId list, std::uint16_t bad_count);
// Moves a row to the end of (pset, slot).
Status moveToSlot(StoreTxn& t, const std::string& key, ListId from, TimeSlot slot);
// Moves set `pset` from slot `from` to slot `to`. When `to` already holds that set, the
// moved entries are appended to its list; otherwise the set itself changes slot and is
// returned (nullopt: nothing was in `from`, or it was appended).
Result<std::optional<PSetRecord>> movePSet(StoreTxn& t, PSetId pset, TimeSlot from, TimeSlot to);
// Joins list (pset, slot) onto (pset, kSlotNow) (or renames it when there is none); a
// set that becomes ready is reported in t.effects.
Status mergeIntoNow(StoreTxn& t, PSetId pset, TimeSlot slot);

// --- content -------------------------------------------------------------------
// Writes a tombstone for `key` when a live record exists (a delete request for its
// file goes to the FSMDB and effects). Returns true when something was removed.
Result<bool> removeContent(StoreTxn& t, const std::string& key, WallTime now);
// Stores a fetched record; deletes the old file when it changed. The identity's row is
// the fetch this is the result of (an op=fetch row), so its claim does not change.
Status storeContent(StoreTxn& t, ContentRecord rec);

// True when the notice declares something and all it declares equals what was
// declared at the last fetch (design: "if none are different, the url is not fetched").
bool declaredMatches(const UrlNotice& n, const ContentRecord& r);
// True when `n` leaves unchanged every field of `r` that a content user sees besides
// the content itself (view tag, browse and fetch URL): refreshing then keeps the seq.
bool visibleToContentUsersEqual(const ContentRecord& r, const UrlNotice& n);
// True when the notice declares a size or MD5 that differs from the bytes stored:
// the content changed, so a conditional fetch would be wrong.
bool declaresOtherContent(const UrlNotice& n, const ContentRecord& r);

// --- notifications ---------------------------------------------------------------
struct AbsorbContext {
  PSetId pset = 0;
  std::int32_t priority = 0;
  WallTime now{};
  const TimeSlots* slots = nullptr;
  // The files quota (0: none). An update that would add an identity (nothing stored,
  // no fetch queued) is refused when files_claimed() — the identities the provider
  // holds or has queued, as the caller counts them — has reached it.
  std::uint64_t quota_files = 0;
  std::function<std::uint64_t()> files_claimed;
  std::size_t keep_refused = 100;  // refused notices kept in effects.refused (per provider)
};

// What insertUpdate did with a notice.
enum class Absorbed {
  kKnown,      // the identity was stored or queued already: refreshed, queued again or replaced
  kQueuedNew,  // a fetch queued for an identity not held (it takes room in the files quota)
  kRefused,    // a new identity past the files quota: nothing changed (effects.refused)
};

// "Insert an update notification".
Result<Absorbed> insertUpdate(StoreTxn& t, const UrlNotice& n, const AbsorbContext& ctx);
// "Insert a removal notification".
Status insertRemoval(StoreTxn& t, const UrlNotice& n, WallTime now);
// The full-set sweep: removes every live record of `pid` whose key is not in `keep`,
// and turns every queued fetch of `pid` not in `keep` into "nothing".
// Reads the ContentStore (records put earlier in the same txn are never swept: they
// are in `keep`).
Status sweepFullSet(StoreTxn& t, ProviderId pid, const std::unordered_set<std::string>& keep, WallTime now);

}  // namespace lcc::qm
