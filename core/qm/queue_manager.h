// queue_manager.h — the QM's engine: intake, absorb, fetching, results, deletes,
// checkpoints, ageing, overload and cache-crash (design document §6; docs/architecture.md rules 1–6).
// One class, one file per concern: queue_manager_<concern>.cc (core/qm/README.md); it
// composes the concerns that own their state: BotmLinks, DeleteManager, OrphanSweep.
//
// No sockets: the intake server hands it sets, the BOT-M server hands it link events
// and results, and it talks back through BotmPort. Every method runs on one thread at
// a time (the QM's store strand in lccd; the test thread in tests). Periodic work
// (bandwidth wheel, slot merging, checkpoints, ageing) runs from Clock timers that
// are posted to that thread through `post`.
//
// Durability (rule 1): a set comes in parts (beginSet, addSetPart, endSet; submit()
// for a whole one). A small set is held until its end; once it grows past
// qm_options.intake_hold_urls its URLs go to the intake journal as they come (a kBegin
// record, then kPart records, unsynced), so a set of any size needs bounded memory.
// endSet() buffers it; commitPending() appends each buffered set's last record (the
// whole set, or the kEnd of a streamed one), syncs once (group commit), acks them in
// order, then applies them to the stores in unsynced batches (a streamed set is read
// back from the journal part by part) that record the applied journal positions.
// A set cut off before its end (abortSet) is never acked nor applied.
// checkpoint() syncs the ContentStore, then the QueueStore, then the PIDB, and trims
// the journal. open() replays the journal past the recorded position.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lcc/support/journal.h"
#include "common/fetch_rate.h"
#include "common/metrics.h"
#include "lcc/clock.h"
#include "lcc/content_store.h"
#include "lcc/provider_store.h"
#include "lcc/queue_store.h"
#include "qm/absorb.h"
#include "qm/botm_links.h"
#include "qm/delete_manager.h"
#include "qm/fetch_lease.h"
#include "qm/intake_set.h"
#include "qm/orphan_sweep.h"
#include "qm/qm_options.h"
#include "qm/result_policy.h"
#include "qm/scheduler.h"
#include "qm/time_slots.h"

namespace lcc::qm {

struct CopyFetch;

// How long a Busy intake commit (no descriptor to open a journal file) waits before the next try;
// also the first delay of a Busy store's retry (doubled up to qm.store_retry_max).
inline constexpr Millis kStoreRetry{100};


class BotmPort {
 public:
  virtual ~BotmPort() = default;
  virtual void sendFetch(LinkId link, const FetchRequest& order) = 0;  // docs/internal-protocols.md §2 <fetch>
  virtual void sendDelete(LinkId link, std::uint64_t id, const std::string& machine, const std::string& file) = 0;
  // Asks the link's BOT-M(s) to list their content files (the orphan sweep).
  virtual void sendSweep(LinkId link, std::uint64_t sweep) = 0;
  // Renews the fetch lease of every fetch out on the link: <ping lease> (issue 27 §3).
  // A port that keeps no leases ignores it.
  virtual void sendLease(LinkId link, Millis lease) {
    (void)link;
    (void)lease;
  }
};

struct QmDeps {
  QueueStore* queue = nullptr;
  ContentStore* content = nullptr;
  ProviderStore* providers = nullptr;
  Journal* journal = nullptr;  // null: no intake journal (benchmarks of the queue only)
  Clock* clock = nullptr;
  Metrics* metrics = nullptr;  // optional
  BotmPort* botm = nullptr;    // optional until a BOT-M connects
  // Runs a closure on the QM's thread later (timers, group commit). Null: inline.
  std::function<void(std::function<void()>)> post;
  // A store refused a write because another QM took the lease over (storage-postgres
  // option qm_lease: "fenced: QM epoch N ..."). Called once, after the one log line;
  // lccd exits (kExitFenced). Null: the QM only fails (no cache-crash).
  std::function<void(const Status&)> on_fenced;
};

// Whether a store error says that another QM took over (storage-postgres' fencing).
bool isFencedStoreError(const Status& s);

class QueueManager {
 public:
  QueueManager(QmDeps deps, QmOptions options);
  ~QueueManager();

  // Checks the stores (rule 3), replays the journal, rebuilds the in-memory tables
  // from the QPSDB (rebuilding the QPSDB from the QDB when their counts disagree).
  Status open();
  // Stops timers, checkpoints. The stores and journal stay open (their owner closes them).
  Status close();
  // Starts the periodic timers (wheel, merge, checkpoint, ageing).
  void startTimers();
  void stopTimers();

  // --- intake (docs/internal-protocols.md §1) ---
  using AckFn = std::function<void(bool ok, ErrorCode code, const std::string& reason)>;
  // A set in parts, under a stream number the caller picks (unique among open sets,
  // below 2^63): beginSet, addSetPart* in order, then endSet (buffers it; `ack` runs
  // once, in endSet order, from commitPending()) or abortSet (cut off: nothing of it
  // is applied). Calls for an unknown stream are ignored.
  void beginSet(std::uint64_t stream, IntakeHeader header);
  void addSetPart(std::uint64_t stream, std::vector<UrlNotice> urls);
  void endSet(std::uint64_t stream, AckFn ack);
  void abortSet(std::uint64_t stream);
  // A whole set (begin, one part, end).
  void submit(IntakeSet set, AckFn ack);
  // Group commit of everything submitted so far (posted automatically by submit()).
  void commitPending();

  // --- BOT-M links (docs/internal-protocols.md §2) ---
  void linkUp(LinkId link, const std::string& machine, std::uint64_t capacity);
  void linkCapacity(LinkId link, std::uint64_t capacity);
  void linkMachines(LinkId link, const std::vector<std::string>& machines);
  void linkDown(LinkId link);
  // A BOT-M's <result> (lcc::FetchResult, decoded by botm_server.cc).
  void onResult(LinkId link, const FetchResult& outcome);
  // Results that arrived together (the engine's thread was busy meanwhile): written in
  // one StoreTxn, one apply per store (group commit), then pump() once.
  void onResults(const std::vector<std::pair<LinkId, FetchResult>>& results);
  void onDeleted(LinkId link, std::uint64_t id, bool ok, const std::string& reason);

  // --- the orphan sweep (queue_manager_sweep.cc, issue 15) ---
  // Asks every BOT-M link to list its content files; each file that no LCC DB record
  // and no pending delete names is deleted through the delete manager. Also run for
  // each machine the first time its link comes up after open(). Returns the sweep id.
  std::uint64_t sweepBotms();
  void onSweepFile(LinkId link, std::uint64_t sweep, const std::string& machine, const std::string& file,
                   std::uint64_t size);
  void onSwept(LinkId link, std::uint64_t sweep, const std::string& machine, std::uint64_t files);
  nlohmann::json sweepStatus() const;

  // --- fetch leases (queue_manager_lease.cc, fetch_lease.h; issue 27 §3) ---
  // Tests: the queue store is taken for one another QM may take over (as
  // storage-postgres), whatever its openInfo() says. Before open().
  void treatStoreAsSharedForTest() { lease_shared_for_test_ = true; }
  nlohmann::json leaseStatus() const;

  // Hands out fetches and deletes while there is room.
  void pump();

  // --- periodic work (also callable from commands and tests) ---
  void tick();           // bandwidth wheel
  Status mergeSlots();   // ready time-slot lists into fetch-now
  Status checkpoint();
  Status age();
  // Rebuilds the QPSDB from the QDB's `next` chains and reloads the tables.
  Status rebuildPSets();
  // Reads the PIDB and applies administrator changes: holds suspended providers,
  // releases resumed ones, takes new priority and bandwidth, and finishes removals
  // (queued URLs dropped; kPurging also removes the content), then deletes the record.
  // Every qm.provider_refresh (queue_manager_providers.cc).
  void refreshProviders();

  // A provider's URLs for a front end's slot move (queue_manager_move.cc): whether the
  // engine holds it, its fetches out (lost links' and Busy-held results' too), the URLs
  // of its sets not applied yet, (count_copies) its queued copies from another QM
  // (move_copy.h), and (limit > 0) one page of its stored and queued URLs in key order
  // after the key `after`, at most `limit` (truncated: there are more, from `next`).
  // A stored URL no queued row overrides names its record (seq, actual MD5 and size)
  // and `store_id`, where the target reads its bytes. On the engine strand.
  struct ExportedUrl {
    UrlNotice notice;
    ChangeSeq seq = 0;  // 0: a queued URL (fetched at the target)
    std::string md5;
    std::uint64_t size = 0;
  };
  struct ProviderExport {
    bool held = false;
    std::uint64_t in_flight = 0;
    std::uint64_t unapplied = 0;
    std::uint64_t copies = 0;
    bool truncated = false;
    std::string next;      // the cursor of the next page (its last key) when truncated
    std::string store_id;  // of the content store (empty: none written yet)
    std::vector<ExportedUrl> urls;
  };
  Result<ProviderExport> exportProvider(ProviderId pid, std::size_t limit, const std::string& after = {},
                                        bool count_copies = false);

  // --- state ---
  std::uint64_t queued() const { return queued_total_; }
  std::uint64_t queued(ProviderId pid) const;  // thread-safe (the UNS asks it)
  // A provider's results since the start and their recent rate (thread-safe; the status page).
  ProviderFetchRate fetchRate(ProviderId pid, std::int64_t unix_ms) const { return rates_.get(pid, unix_ms); }
  std::uint64_t inFlight() const { return inflight_.size(); }
  bool overloaded() const { return overloaded_; }
  bool cacheCrash() const { return cache_crash_; }
  bool failed() const { return !failed_.isOk(); }
  // A store answered Busy and work waits for it (queue_manager_store_busy.cc).
  bool storeBusy() const { return store_busy_; }
  JournalPos appliedPosition() const { return applied_pos_; }
  ChangeSeq maxSeq() const { return seq_; }
  const Scheduler& scheduler() const { return sched_; }
  // Called with false when the QM stops taking sets (overload, failure) and true when
  // it takes them again: the intake server closes / reopens its listener.
  void setIntakeListener(std::function<void(bool accepting)> fn) { intake_listener_ = std::move(fn); }
  nlohmann::json status() const;
  // Copies the counters into deps.metrics (/metrics); done at every checkpoint.

  // Raises the sticky cache-crash flag: every provider is asked for a full set.
  void raiseCacheCrash(const std::string& why);

 private:
  // qm.ack_after_store (queue_manager_acks.cc): an answer kept in arrival order until
  // the set it answers is in the stores (the UNS takes acks in order).
  struct HeldAck {
    AckFn ack;
    bool ok = true;
    ErrorCode code = ErrorCode::kNone;
    std::string reason;
    bool ready = false;   // may be sent (an applied set: its group committed)
    bool stored = false;  // answers a set applied to the stores: they are synced first
  };
  struct Pending {
    IntakeSet set;  // the URLs held in memory (all of them unless streamed)
    AckFn ack;
    enum class Kind { kApply, kDuplicate, kRejected } kind = Kind::kApply;
    std::string reason;
    JournalPos pos = 0;    // its last record (whole set or kEnd)
    JournalPos begin = 0;  // streamed: its kBegin record (0: held whole)
    std::uint64_t count = 0;
    // Its apply came back Busy (queue_manager_store_busy.cc): what is done of it.
    bool applied = false;      // its group committed with the metas: not applied again
    bool deferred = false;     // came back Busy once: its commit may have landed unseen
    std::uint64_t settled = 0;  // URLs taken off unapplied_urls_ so far (never twice)
    std::shared_ptr<HeldAck> held;  // qm.ack_after_store: its ack, sent once it is stored
  };
  std::deque<std::shared_ptr<HeldAck>> held_acks_;
  // Answers a set now, or (qm.ack_after_store) queues the answer in order.
  void answer(Pending& p, bool ok, ErrorCode code, const std::string& reason);
  // Sends the queued answers that may go, in order, after one sync of the stores.
  void flushAcks();
  // A set being applied: its context, and what it has applied so far.
  struct ApplyRun {
    IntakeHeader header;
    JournalPos pos = 0;
    AbsorbContext ctx;
    std::unordered_set<std::string> keep;  // a full set's identities (the sweep)
    std::uint64_t full_claims = 0;         // a full set's identities held or queued (files quota)
    std::uint64_t done = 0, settled = 0;   // URLs applied; of them, taken off unapplied_urls_
    Pending* src = nullptr;                // the acked set it applies (null: replay)
  };
  // The sets of one commitPending() applied in one StoreTxn (consecutive sets; a full
  // set starts a group of its own); the metas are written once, at finishGroup().
  struct ApplyGroup {
    ApplyGroup(QueueStore& q, ContentStore& c, ChangeSeq& seq) : txn(q, c, seq) {}
    StoreTxn txn;
    std::vector<ApplyRun> runs;         // applied into txn; their metas not yet written
    std::vector<ProviderId> refreshed;  // providers whose PIDB record was read for this group
  };
  struct InFlight {
    ProviderId pid = 0;
    std::string key;
    PSetId pset = 0;
    LinkId link = 0;
    UrlNotice notice;
    std::string host;  // politenessHost() of the fetch URL: its fetch counts there
  };
  // A result whose write came back Busy: kept, and written again (retryStore()).
  struct HeldResult {
    InFlight f;
    FetchResult o;
    bool counted = false;  // its outcome was counted (countResult) by an earlier try
  };
  struct ProviderInfo {
    std::int32_t priority = 0;
    std::uint64_t bandwidth = 0;
    std::vector<std::string> prefixes;
    std::uint64_t quota_files = 0;  // 0: none
    std::uint64_t used_files = 0;   // the PIDB's, kept up with flushProviderDeltas()
    std::uint64_t quota_bytes = 0;  // 0: none; taken again at every provider refresh
    std::uint64_t used_bytes = 0;   // the PIDB's, kept up with flushProviderDeltas()
  };

  // What one walk of a ready set's list came to (dispatch).
  enum class Walk {
    kNext,     // nothing of this set can go now: try the provider's next set
    kRestart,  // the list changed (a row dropped or moved): walk it again
    kDone,     // a fetch went out, or the provider waits: dispatchOne() returns true
    kStop,     // no link has room, or a store failed: dispatchOne() returns false
  };

  // intake (queue_manager_intake.cc)
  void decideIntake(Pending& p);  // rejected (failed, overloaded) or duplicate?
  bool seenBefore(const Pending& p, std::uint64_t seen) const;  // a duplicate (not a refused id sent again)
  void spillPart(Pending& p);     // the held URLs go to the journal as a kPart record
  void scheduleCommit();
  Status applyBatch(std::deque<Pending>& batch);  // the acked sets of one commit, grouped
  Status applyPending(ApplyGroup& g, Pending& p);
  // The provider's queued rows by key (nullopt: a queued delete); the copies counted.
  Status exportQueued(ProviderId pid, std::map<std::string, std::optional<UrlNotice>>& rows);
  Status applySet(const IntakeSet& set, JournalPos pos);  // a group of one (replay)
  Status applySet(ApplyGroup& g, const IntakeSet& set, JournalPos pos, Pending* src);
  Status applyStreamed(const IntakeHeader& header, JournalPos begin, JournalPos end);  // a group of one
  Status applyStreamed(ApplyGroup& g, const IntakeHeader& header, JournalPos begin, JournalPos end, Pending* src);
  // Pushes a run (src: the acked set it applies, null on replay).
  Status startApply(ApplyGroup& g, const IntakeHeader& header, JournalPos pos, Pending* src);
  Status applyUrls(ApplyGroup& g, const std::vector<UrlNotice>& urls);          // into g.runs.back()
  Status endApply(ApplyGroup& g);     // a full set's sweep
  Status flushGroup(ApplyGroup& g);   // commits what g holds (no metas); settles its runs
  Status finishGroup(ApplyGroup& g);  // metas with the last values, commit, after-effects
  void settleUnapplied(ApplyRun& run);
  void clearFullSetWanted(ProviderId pid);  // after a full set is applied
  Status finishTxn(StoreTxn& t);  // commit + effects
  Status ensureStoreId();         // writes lcc.store_id when the LCC DB has none (open())
  void applyEffects(TxnEffects& e);
  // The provider's PIDB record, cached; a failed read is routed and not cached (the
  // defaults are returned). readProviderInfo() returns the failure instead.
  ProviderInfo providerInfo(ProviderId pid);
  Result<ProviderInfo> readProviderInfo(ProviderId pid);
  // the files quota (queue_manager_quota.cc)
  // The identities the provider holds or has queued, with what `t` changed so far: the
  // count kept (metaClaimedKey, read at first need), never below the files it holds nor
  // above those plus its queued rows.
  std::uint64_t filesClaimed(ProviderId pid, const StoreTxn& t);
  // Sets the quota check of run `run` (a full set counts its own identities only).
  void armFileQuota(ApplyGroup& g, ApplyRun& run);
  // Puts the new claimed counts of `t.effects` into `t` (before its commit); returns them.
  std::vector<std::pair<ProviderId, std::uint64_t>> writeClaimed(StoreTxn& t);
  // Refused updates (206) into the PIDB error list, one write per provider.
  void recordRefused(ProviderId pid, const TxnEffects::Refused& r);
  // replay and rebuild (queue_manager_rebuild.cc)
  Status replayJournal(std::string& crash_why);
  Status loadTables();
  void reloadTables(const std::vector<PSetRecord>& lists);
  // dispatch (queue_manager_dispatch.cc)
  bool dispatchOne(ProviderId pid);  // false: nothing more can go now
  // The head rows (QPSDB list, QDB row, LCC DB record) of the providers pump() is likely
  // to pick, read in one batch per store before its turns: a store a round trip away
  // pays three per pump(), not three per fetch (only on a store whose openInfo() says
  // `remote`). Dropped at the end of pump() and at every write (finishTxn()), so what is
  // used is what the stores hold.
  struct ReadsAhead {
    std::map<PSetId, std::optional<PSetRecord>> psets;  // (pset, kSlotNow)
    std::unordered_map<std::string, std::optional<QueueEntry>> entries;
    std::unordered_map<std::string, std::optional<ContentRecord>> records;
    void clear() {
      psets.clear();
      entries.clear();
      records.clear();
    }
  };
  Status readAhead();
  Result<std::optional<PSetRecord>> headPSet(PSetId pset);
  Result<std::optional<QueueEntry>> headEntry(const std::string& key);
  Result<std::optional<ContentRecord>> headRecord(const std::string& key);
  Walk walkReadySet(ProviderId pid, PSetId pset, WallTime now, TimeSlot cur_slot);
  bool holdForRetry(ProviderId pid);  // the head row is bad and its retry time has not come
  // false: a store read failed (routed); nothing was sent
  bool sendFetch(ProviderId pid, PSetId pset, LinkId link, const std::string& key, const UrlNotice& n,
                 const std::string& host);
  Status moveProviderToSlot(ProviderId pid, Millis delay);
  // results (queue_manager_result.cc; the decision is result_policy.h)
  // `counted`: whether its outcome was counted; counted once, by the first try that
  // gets that far (a held result is written again, queue_manager_store_busy.cc).
  Status handleResult(const InFlight& f, const FetchResult& o, bool& counted);
  // What a result did inside a StoreTxn not yet committed (stageResult), and what is left
  // once it committed (finishResult: the PIDB error list, the scheduler).
  struct StagedResult {
    ResultAction action;
    std::optional<QueueEntry> row;
    bool landed = false;  // a held result whose earlier commit landed: nothing written
  };
  void writeResults(std::vector<HeldResult>& group);
  Result<StagedResult> stageResult(StoreTxn& t, const InFlight& f, const FetchResult& o, bool& counted);
  Status finishResult(const InFlight& f, const FetchResult& o, const StagedResult& st);
  Result<StagedResult> copyFailed(StoreTxn& t, const InFlight& f, const FetchResult& o, const CopyFetch& copy,
                                  StagedResult& st, bool& counted);
  void countResult(const FetchResult& o, const ResultAction& a);
  Status writeResult(StoreTxn& t, const InFlight& f, const FetchResult& o, const ResultAction& a,
                     std::optional<QueueEntry>& row, const std::optional<ContentRecord>& old, WallTime now);
  Status scheduleAfterResult(ProviderId pid, const ResultAction& a);
  Status afterResult(ProviderId pid, const ResultAction& a);  // scheduleAfterResult(); Busy there is noted, not returned
  void recordError(ProviderId pid, const UrlNotice& n, const FetchResult& o, ErrorCode code);
  // The body of `size` bytes for `key` would take the provider past its quota_bytes.
  Result<bool> overQuota(StoreTxn& t, ProviderId pid, const std::string& key, std::uint64_t size);
  // delete manager (queue_manager_deletes.cc; its state is deletes_, delete_manager.h)
  void pumpDeletes();
  // the orphan sweep (queue_manager_sweep.cc; its state is sweep_, orphan_sweep.h)
  void sweepLink(LinkId link);
  Status buildReferenced(const std::string& machine, std::unordered_set<std::string>& out);
  void sweepDeleted(const std::string& machine, const std::string& file);
  // administrator changes (queue_manager_providers.cc)
  void applyProviderState(const ProviderRecord& r);
  Status finishRemoval(ProviderId pid, bool purge);
  Status dropQueuedRows(ProviderId pid);
  // fetch leases (queue_manager_lease.cc)
  Status openLeases();        // open(): the predecessor's lease waited out, ours recorded (shared store)
  Status renewLeases();       // the timer: a proof (shared store), then <ping lease> on every busy link
  std::optional<Millis> leaseNow();  // the lease a fetch sent now carries; none: dispatch waits
  void wakeAfterHold();       // one pump when the wait after open() ends
  void leaseGiven(LinkId link, Millis lease);  // a fetch or renewal went out on the link
  // A link went down with this fetch out: true when its BOT-M may still be fetching it
  // (its lease has not run out); it then stays in flight until releaseLost().
  bool holdLost(const InFlight& f);
  void releaseLost();         // the timer: lost fetches whose lease ran out leave flight
  void armLostTimer(MonoTime now);  // releaseLost() at the first lost fetch's end
  // A one-shot timer that runs `fn` on the QM's strand (its id 0 again then).
  void armOnce(TimerId* id, Millis in, std::function<void()> fn);
  // periodic work (queue_manager_periodic.cc)
  void flushProviderDeltas();
  // store failures (queue_manager_store_failure.cc) and overload (queue_manager_overload.cc)
  void storeFailed(const Status& s);       // THE route of a store error
  void storeFenced(const Status& s);       // another QM took over: stop, no cache-crash
  Status skipJournal();                    // qm.ack_after_store: open() replays nothing
  void commitLater(std::deque<Pending> batch, const Status& why);  // the journal was Busy: retry (intake)
  void routeStoreError(const Status& s);   // storeFailed() unless the QM has failed already
  void countStoreError();
  // a Busy store (queue_manager_store_busy.cc): work kept and tried again, intake 130
  void noteStoreBusy(const Status& why);           // busy from now on; arms the retry
  void applyOrDefer(std::deque<Pending>& batch);   // applies, or queues behind the backlog
  void deferApply(std::deque<Pending>& batch, const Status& why);  // keeps what is not applied
  void holdResult(const InFlight& f, const FetchResult& o, bool counted, const Status& why);
  void armStoreRetry();
  void retryStore();                               // the timer: backlog, held results, probe
  Status retryBacklog();
  nlohmann::json storeBusyStatus() const;
  void updateOverload();
  // life cycle (queue_manager.cc) and status (queue_manager_status.cc)
  // A periodic timer: what `fn` returns goes through routeStoreError(), never dropped.
  void schedule(Millis every, std::function<Status()> fn, TimerId* id);
  void schedule(std::function<Millis()> next, std::function<Status()> fn, TimerId* id);  // next(): delay, asked each time
  Millis untilNextMerge() const;  // to the next slot boundary of the wall clock (at most qm.merge_interval)
  void post(std::function<void()> fn);
  void publishMetrics();

  QmDeps deps_;
  QmOptions options_;
  TimeSlots slots_;
  Scheduler sched_;
  Status failed_;
  bool opened_ = false;
  bool cache_crash_ = false;
  bool overloaded_ = false;
  ChangeSeq seq_ = 0;
  JournalPos applied_pos_ = 0;
  PSetId next_pset_ = 1;
  std::uint64_t queued_total_ = 0;
  mutable std::mutex queued_mu_;  // guards queued_ (writes on the QM thread, reads anywhere)
  std::unordered_map<ProviderId, std::uint64_t> queued_;
  std::unordered_map<ProviderId, std::uint64_t> unapplied_urls_;  // acked, not yet applied (queued_mu_)
  FetchRates rates_;  // results by provider (fetchRate)
  std::unordered_map<ProviderId, ProviderInfo> provider_info_;
  ReadsAhead reads_ahead_;  // valid during one pump() (dispatch)
  std::unordered_map<ProviderId, std::optional<std::uint64_t>> claimed_;  // metaClaimedKey, read lazily (nullopt: none kept)
  std::unordered_set<ProviderId> removed_;  // removed by refreshProviders(): held, late rows dropped
  std::unordered_map<std::string, std::uint64_t> uns_seen_;
  // Set ids of a UNS refused with 130 and not taken since: not duplicates when sent
  // again, though a later set of the UNS was taken (at most kMaxRefusedIds per UNS).
  std::unordered_map<std::string, std::set<std::uint64_t>> uns_refused_;
  std::unordered_map<std::string, std::uint64_t> uns_written_;  // highest qm.uns.<name> written
  std::deque<Pending> pending_;
  std::unordered_map<std::uint64_t, Pending> open_sets_;  // begun, not yet ended (by stream)
  std::uint64_t local_streams_ = 0;                       // stream numbers of submit()
  std::set<JournalPos> unapplied_begins_;  // kBegin of streamed sets not applied nor cut off
  std::uint64_t unsynced_bytes_ = 0;       // parts journaled since the last sync
  JournalPos applied_end_ = 0;             // last record of the last set applied
  bool commit_posted_ = false;
  bool commit_busy_ = false;  // the last intake commit was Busy (commitLater)
  // A store answered Busy (a lost connection, a failover): queue_manager_store_busy.cc.
  bool store_busy_ = false;
  WallTime store_busy_since_{};
  Millis store_retry_delay_ = kStoreRetry;  // doubles per failed retry up to qm.store_retry_max
  bool store_retrying_ = false;              // retryStore() runs: no second timer
  std::uint64_t store_busy_episodes_ = 0;
  std::deque<Pending> apply_backlog_;        // acked sets whose apply was Busy, in order
  std::deque<HeldResult> held_results_;      // results whose write was Busy, in order
  // Fetches in flight: bounded by the BOT-M capacity, not by the queue.
  std::unordered_map<std::uint64_t, InFlight> inflight_;
  std::unordered_set<std::string> inflight_keys_;
  std::uint64_t next_fetch_id_ = 1;
  BotmLinks links_;        // the BOT-M links and pick() (botm_links.h)
  DeleteManager deletes_;  // deletes out, window per link, back-off (delete_manager.h)
  OrphanSweep sweep_;      // the orphan sweep (orphan_sweep.h)
  FetchLease lease_;       // the fetch leases (fetch_lease.h), made again by open()
  bool lease_shared_for_test_ = false;
  TimerId lease_wake_timer_ = 0;
  std::unordered_map<LinkId, MonoTime> link_lease_end_;  // the last lease given on each link ends then
  struct LostFetch {
    ProviderId pid = 0;
    std::string key, host;
    MonoTime until{};
  };
  std::vector<LostFetch> lost_held_;  // out on a lost link, lease not run out: still in flight
  TimerId lost_timer_ = 0;
  // PIDB changes gathered between checkpoints (quota use).
  std::map<ProviderId, TxnEffects::Usage> usage_pending_;
  std::function<void(bool)> intake_listener_;
  std::shared_ptr<bool> alive_;
  TimerId tick_timer_ = 0, merge_timer_ = 0, checkpoint_timer_ = 0, age_timer_ = 0, commit_timer_ = 0, refresh_timer_ = 0,
          delete_timer_ = 0, store_retry_timer_ = 0, lease_timer_ = 0;
  bool timers_on_ = false;
  // Counters (also in /metrics when deps_.metrics is set).
  struct Stats {
    std::uint64_t sets = 0, sets_duplicate = 0, sets_rejected = 0, urls = 0, dispatched = 0, fetched = 0,
                  unchanged = 0, errors = 0, retries = 0, skipped = 0, removals = 0, deletes_sent = 0,
                  deletes_done = 0, deletes_failed = 0, orphans_reclaimed = 0, orphan_bytes_reclaimed = 0, checkpoints = 0, journal_syncs = 0, store_errors = 0,
                  quota_refused = 0, invariant_failures = 0, lease_renewals = 0, lease_waits = 0;  // the last: process-wide, lcc::invariantFailures()
  } stats_, published_;
};

}  // namespace lcc::qm
