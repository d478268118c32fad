#include "pg_content_store.h"

#include "pg_lease.h"

#include <limits>
#include <map>

namespace lcc::plugins::postgres {
namespace {

constexpr std::int64_t kScanChunk = 512;  // rows per read round trip

#define LCC_LCC_COLS                                                                                       \
  "key, seq, deleted, view_tag, browse, fetch_url, mtime, size, md5, machine, filename, stored, refreshed, " \
  "declared_mtime, declared_size, declared_md5, created_seq, pid, etag"

std::optional<ContentRecord> recordFromRow(const PgResult& res, int i) {
  auto key = decodeUrlKey(res.bytes(i, 0));
  const std::int64_t deleted = res.i64(i, 2);
  if (!key || (deleted != 0 && deleted != 1)) return std::nullopt;
  ContentRecord r;
  r.key = std::move(*key);
  r.seq = res.u64(i, 1);
  r.deleted = deleted == 1;
  r.view_tag = res.bytes(i, 3);
  r.browse = res.optBytes(i, 4);
  r.fetch = res.bytes(i, 5);
  r.mtime = res.optI64(i, 6);
  r.size = res.u64(i, 7);
  r.md5 = res.bytes(i, 8);
  r.machine = res.bytes(i, 9);
  r.filename = res.bytes(i, 10);
  r.stored = fromUnixMillis(res.i64(i, 11));
  r.refreshed = fromUnixMillis(res.i64(i, 12));
  r.declared_mtime = res.optI64(i, 13);
  if (!res.isNull(i, 14)) r.declared_size = res.u64(i, 14);
  r.declared_md5 = res.bytes(i, 15);
  r.created_seq = res.u64(i, 16);
  r.etag = res.bytes(i, 18);
  return r;
}

}  // namespace

class PgContentStore::Reader {
 public:
  Reader(PgContentStore* store, std::unique_ptr<PgConn> conn) : store_(store), conn_(std::move(conn)) {}
  Reader(Reader&& o) noexcept : store_(o.store_), conn_(std::move(o.conn_)) {}
  Reader& operator=(Reader&&) = delete;
  ~Reader() {
    if (conn_) store_->release(std::move(conn_));
  }
  PgConn* operator->() const { return conn_.get(); }
  PgConn& operator*() const { return *conn_; }

 private:
  PgContentStore* store_;
  std::unique_ptr<PgConn> conn_;
};

Result<ContentStore*> PgContentStore::open(const HostContext& host, const StoreOptions& opts) {
  StoreOpenInfo info;
  LCC_ASSIGN_OR_RETURN(auto conn, openStore(opts, StoreKind::kContent, &info));
  std::int64_t max_seq = 0;  // a probe (lccd --check) may find no store yet
  if (!opts.probe) {
    LCC_ASSIGN_OR_RETURN(max_seq, readCounter(*conn, StoreKind::kContent, "max_seq"));
  }
  if (!opts.read_only && !opts.probe) {
    // A QM's content store: its writes check the QM lease of this process (pg_lease.h),
    // when the queue store of the same conninfo and schema holds one.
    checkLeaseAtBegin(*conn, opts);
  }
  return new PgContentStore(host, opts, std::move(conn), std::move(info), max_seq);
}

Result<PgContentStore::Reader> PgContentStore::acquire() {
  std::unique_lock<std::mutex> lk(pool_mu_);
  for (;;) {
    if (closed_) return Status::aborted(conn_->what() + ": the content store is closed");
    if (!idle_.empty()) {
      std::unique_ptr<PgConn> c = std::move(idle_.back());
      idle_.pop_back();
      return Reader(this, std::move(c));
    }
    if (open_readers_ < opts_.max_readers) break;
    pool_cv_.wait(lk);
  }
  ++open_readers_;
  lk.unlock();
  auto c = connectStore(opts_, StoreKind::kContent);
  if (!c.isOk()) {
    std::lock_guard<std::mutex> g(pool_mu_);
    --open_readers_;
    pool_cv_.notify_one();
    // The store is open, so the server was there: it is restarting or failing over.
    if (c.status().isIOError()) return Status::busy(c.status().message() + "; try again later");
    return c.status();
  }
  return Reader(this, std::move(c).value());
}

void PgContentStore::release(std::unique_ptr<PgConn> conn) {
  std::lock_guard<std::mutex> g(pool_mu_);
  idle_.push_back(std::move(conn));
  pool_cv_.notify_all();
}

Status PgContentStore::writable() const {
  if (closed_) return Status::aborted(conn_->what() + ": the content store is closed");
  if (opts_.read_only) return Status::notSupported(conn_->what() + ": opened read_only: it does not write");
  if (auto lease = PgLease::find(opts_)) LCC_RETURN_IF_ERROR(lease->fenced());
  return failed_;
}

void PgContentStore::corruptRow(const std::string& what) {
  const std::uint64_t n = ++corrupt_rows_;
  if (host_.logger != nullptr) {
    host_.logger->warn(conn_->what() + ": skipped a corrupt " + what + " (" + std::to_string(n) + " so far)");
  }
}

std::int64_t PgContentStore::noteSeen(std::int64_t max_seq) {
  std::int64_t seen = seen_max_.load();
  while (seen < max_seq && !seen_max_.compare_exchange_weak(seen, max_seq)) {
  }
  return std::max(seen, max_seq);
}

// The end state of one batch: ops in order, folded per key (the last put or erase of
// a key wins), seqs given by the store. Written with one statement per table.
struct PgContentStore::Plan {
  struct Held {
    bool exists = false;
    std::int64_t seq = 0;
    bool deleted = false;
    std::int64_t created_seq = 0;
  };
  std::map<std::string, Held> held;                            // per key: as stored, then as planned
  std::map<std::string, bool> existed;                         // per key: stored before the batch
  std::map<std::string, std::optional<ContentRecord>> rows;    // per key: final put, or nullopt = erase
  std::map<std::string, std::string> meta;
  std::int64_t max_seq = 0;     // under the row lock: the store's, then raised by the puts
  std::int64_t old_max = 0;
  std::int64_t caller_max = 0;  // the highest seq the caller put
  bool locked = false;
};

Status PgContentStore::apply(const ContentBatch& batch) {
  LCC_RETURN_IF_ERROR(writable());
  if (batch.empty()) return Status::ok();
  Plan plan;
  plan.caller_max = caller_max_;
  // BEGIN, the seq lock and the held rows (their answers decide the seqs), then every
  // write, the counters, the stamp and COMMIT in one round trip (libpq pipeline mode).
  Status s = conn_->begin(opts_.full_sync);
  if (s.isOk()) s = planBatch(batch, &plan);
  std::vector<PgStep> steps;
  if (s.isOk()) writePlan(plan, &steps);
  if (s.isOk() && !opts_.full_sync) steps.push_back(unsynced_.stampStep());
  if (s.isOk()) s = conn_->runAndCommit(steps);
  if (!s.isOk()) {
    conn_->rollback();
    // The connection went away (server restart, failover): the server rolled the
    // transaction back, or committed it if the loss came during COMMIT. Either way
    // applying the same batch again is safe (a put of the seq a record holds is an
    // in-place refresh); the next call reconnects.
    if (s.isBusy()) return s.withContext("content store apply did not complete; the same batch may be applied again");
    failed_ = s.withContext("content store apply failed, store is now read-only until restart");
    return failed_;
  }
  caller_max_ = plan.caller_max;
  noteSeen(plan.max_seq);
  // Were the commits before this one lost with a connection made again since?
  return unsynced_.afterApply(*conn_, opts_.full_sync, "content store", failed_);
}

Status PgContentStore::planBatch(const ContentBatch& batch, Plan* plan) {
  std::vector<std::optional<std::string>> keys;
  for (const auto& op : batch.ops()) {
    if (const auto* put = std::get_if<ContentBatch::Put>(&op)) keys.emplace_back(encodeUrlKey(put->record.key));
    if (const auto* er = std::get_if<ContentBatch::Erase>(&op)) {
      if (!decodeUrlKey(er->key)) return Status::invalidArgument("content erase of a key that is not an encoded UrlKey");
      keys.emplace_back(er->key);
    }
  }
  if (!keys.empty()) {
    // Every writer of this store queues here until the one before it committed.
    LCC_ASSIGN_OR_RETURN(PgResult lock, conn_->run("SELECT value FROM lcc_store WHERE store = 'content' AND "
                                                   "name = 'max_seq' FOR UPDATE", PgParams()));
    if (lock.rows() != 1) return Status::corruption(conn_->what() + ": lcc_store has no 'max_seq' row");
    plan->max_seq = plan->old_max = std::strtoll(lock.bytes(0, 0).c_str(), nullptr, 10);
    plan->locked = true;
    LCC_ASSIGN_OR_RETURN(PgResult held, conn_->run("SELECT key, seq, deleted, created_seq FROM lcc "
                                                   "WHERE key = ANY($1)", PgParams().bytesArray(keys)));
    for (int i = 0; i < held.rows(); ++i) {
      plan->held[held.bytes(i, 0)] = Plan::Held{true, held.i64(i, 1), held.i64(i, 2) != 0, held.i64(i, 3)};
    }
    for (const auto& k : keys) plan->existed.emplace(*k, plan->held[*k].exists);
  }
  for (const auto& op : batch.ops()) {
    if (const auto* put = std::get_if<ContentBatch::Put>(&op)) {
      LCC_RETURN_IF_ERROR(planPut(put->record, plan));
    } else if (const auto* er = std::get_if<ContentBatch::Erase>(&op)) {
      plan->held[er->key] = Plan::Held{};
      plan->rows[er->key] = std::nullopt;
    } else if (const auto* pm = std::get_if<ContentBatch::PutMeta>(&op)) {
      plan->meta[pm->key] = pm->value;
    }
  }
  return Status::ok();
}

Status PgContentStore::planPut(const ContentRecord& put, Plan* plan) {
  const std::string key = encodeUrlKey(put.key);
  Plan::Held& h = plan->held[key];
  ContentRecord r = put;
  // A put of the seq the record already holds is an in-place refresh.
  const bool in_place = h.exists && static_cast<std::uint64_t>(h.seq) == put.seq;
  if (!in_place) {
    // The caller's seqs only grow (the QM hands them out from maxSeq()+1): a seq at or
    // below one it put before is a bug, refused. One below what another process put
    // meanwhile is not: the record takes the next free seq.
    if (put.seq > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        static_cast<std::int64_t>(put.seq) <= plan->caller_max) {
      return Status::invalidArgument("content record seq " + std::to_string(put.seq) +
                                     " is not above the highest seq put so far (" +
                                     std::to_string(plan->caller_max) + ")");
    }
    plan->caller_max = static_cast<std::int64_t>(put.seq);
    plan->max_seq = std::max(static_cast<std::int64_t>(put.seq), plan->max_seq + 1);
    r.seq = static_cast<ChangeSeq>(plan->max_seq);
  }
  r.created_seq = (h.exists && !h.deleted) ? static_cast<ChangeSeq>(h.created_seq) : r.seq;
  h = Plan::Held{true, static_cast<std::int64_t>(r.seq), r.deleted, static_cast<std::int64_t>(r.created_seq)};
  plan->rows[key] = std::move(r);
  return Status::ok();
}

void PgContentStore::writePlan(const Plan& plan, std::vector<PgStep>* steps) {
  std::vector<std::optional<std::string>> erased;
  std::int64_t delta = 0;
  for (const auto& [key, row] : plan.rows) {
    const bool existed = plan.existed.at(key);
    if (!row) {
      if (existed) erased.emplace_back(key);
      delta -= existed ? 1 : 0;
    } else {
      delta += existed ? 0 : 1;
    }
  }
  if (!erased.empty()) steps->push_back({"DELETE FROM lcc WHERE key = ANY($1)", PgParams().bytesArray(erased)});
  writePuts(plan, steps);
  if (!plan.meta.empty()) {
    std::vector<std::optional<std::string>> keys, values;
    for (const auto& [k, v] : plan.meta) {
      keys.emplace_back(k);
      values.emplace_back(v);
    }
    steps->push_back({"INSERT INTO meta (store, key, value) SELECT 'content', k, v FROM unnest($1, $2) "
                      "AS m(k, v) ON CONFLICT (store, key) DO UPDATE SET value = EXCLUDED.value",
                      PgParams().bytesArray(keys).bytesArray(values)});
  }
  if (plan.locked && (delta != 0 || plan.max_seq != plan.old_max)) {
    steps->push_back({"UPDATE lcc_store SET value = CASE name WHEN 'max_seq' THEN $1 "
                      "ELSE (value::bigint + $2)::text END "
                      "WHERE store = 'content' AND name IN ('max_seq', 'rows')",
                      PgParams().text(std::to_string(plan.max_seq)).i64(delta)});
  }
}

void PgContentStore::writePuts(const Plan& plan, std::vector<PgStep>* steps) {
  constexpr int kCols = 19;
  std::vector<std::optional<std::string>> b[kCols];  // bytea columns (by column index)
  std::vector<std::optional<std::int64_t>> n[kCols];  // bigint columns
  std::size_t puts = 0;
  for (const auto& [key, row] : plan.rows) {
    if (!row) continue;
    const ContentRecord& r = *row;
    ++puts;
    b[0].emplace_back(key);
    n[1].emplace_back(static_cast<std::int64_t>(r.seq));
    n[2].emplace_back(r.deleted ? 1 : 0);
    b[3].emplace_back(r.view_tag);
    b[4].emplace_back(r.browse);
    b[5].emplace_back(r.fetch);
    n[6].emplace_back(r.mtime);
    n[7].emplace_back(static_cast<std::int64_t>(r.size));
    b[8].emplace_back(r.md5);
    b[9].emplace_back(r.machine);
    b[10].emplace_back(r.filename);
    n[11].emplace_back(toUnixMillis(r.stored));
    n[12].emplace_back(toUnixMillis(r.refreshed));
    n[13].emplace_back(r.declared_mtime);
    n[14].emplace_back(r.declared_size ? std::optional<std::int64_t>(static_cast<std::int64_t>(*r.declared_size))
                                       : std::nullopt);
    b[15].emplace_back(r.declared_md5);
    n[16].emplace_back(static_cast<std::int64_t>(r.created_seq));
    n[17].emplace_back(r.key.pid);
    b[18].emplace_back(r.etag);
  }
  if (puts == 0) return;
  PgParams p;
  for (int c = 0; c < kCols; ++c) {
    if (b[c].empty()) {
      p.i64Array(n[c]);
    } else {
      p.bytesArray(b[c]);
    }
  }
  steps->push_back({"INSERT INTO lcc (" LCC_LCC_COLS ") SELECT * FROM unnest($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,"
                    "$12,$13,$14,$15,$16,$17,$18,$19) ON CONFLICT (key) DO UPDATE SET seq=EXCLUDED.seq, "
                    "deleted=EXCLUDED.deleted, view_tag=EXCLUDED.view_tag, browse=EXCLUDED.browse, "
                    "fetch_url=EXCLUDED.fetch_url, mtime=EXCLUDED.mtime, size=EXCLUDED.size, md5=EXCLUDED.md5, "
                    "machine=EXCLUDED.machine, filename=EXCLUDED.filename, stored=EXCLUDED.stored, "
                    "refreshed=EXCLUDED.refreshed, declared_mtime=EXCLUDED.declared_mtime, "
                    "declared_size=EXCLUDED.declared_size, declared_md5=EXCLUDED.declared_md5, "
                    "created_seq=EXCLUDED.created_seq, pid=EXCLUDED.pid, etag=EXCLUDED.etag",
                    std::move(p)});
}

Status PgContentStore::sync() {
  LCC_RETURN_IF_ERROR(writable());
  if (!unsynced_.pending()) return Status::ok();
  Status s = syncCommitted(*conn_, StoreKind::kContent);
  // The flush covers every earlier commit the server still has; check() that it has
  // them all (a crash or failover since may have lost some).
  if (s.isOk()) s = unsynced_.check(*conn_);
  if (!s.isOk() && s.isBusy()) return s.withContext("content store sync");  // still pending: sync again
  if (!s.isOk()) {
    failed_ = s.withContext("content store sync failed, store is now read-only until restart");
    return failed_;
  }
  unsynced_.synced(*conn_);
  return s;
}

Status PgContentStore::close() {
  {
    std::unique_lock<std::mutex> lk(pool_mu_);
    if (closed_) return Status::ok();  // closing twice is harmless
    closed_ = true;
    pool_cv_.wait(lk, [&] { return static_cast<std::int64_t>(idle_.size()) == open_readers_; });
    idle_.clear();
    open_readers_ = 0;
  }
  LCC_RETURN_IF_ERROR(failed_);
  if (opts_.read_only || opts_.probe) return Status::ok();  // a reader or a probe changes nothing
  // The clean flag first: its transaction checks the QM lease (fenced: nothing written).
  LCC_RETURN_IF_ERROR(markClean(*conn_, StoreKind::kContent));
  (void)unsynced_.forget(*conn_);  // best effort: a stale row is harmless
  return Status::ok();
}

Result<std::optional<ContentRecord>> PgContentStore::get(std::string_view encoded_key) {
  LCC_ASSIGN_OR_RETURN(Reader r, acquire());
  LCC_ASSIGN_OR_RETURN(PgResult res, r->run("SELECT " LCC_LCC_COLS " FROM lcc WHERE key = $1",
                                            PgParams().bytes(encoded_key)));
  if (res.rows() == 0) return std::optional<ContentRecord>();
  auto rec = recordFromRow(res, 0);
  if (!rec) return Status::corruption(r->what() + ": the LCC DB row of this key does not decode");
  return rec;
}

Result<std::vector<std::optional<ContentRecord>>> PgContentStore::getMany(const std::vector<std::string>& keys) {
  std::vector<std::optional<ContentRecord>> out(keys.size());
  if (keys.empty()) return out;
  std::vector<std::optional<std::string>> arr(keys.begin(), keys.end());
  LCC_ASSIGN_OR_RETURN(Reader r, acquire());
  LCC_ASSIGN_OR_RETURN(PgResult res, r->run("SELECT " LCC_LCC_COLS " FROM lcc WHERE key = ANY($1)",
                                            PgParams().bytesArray(arr)));
  const auto row_of = res.rowsBy(0);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    auto it = row_of.find(keys[k]);
    if (it == row_of.end()) continue;
    out[k] = recordFromRow(res, it->second);
    if (!out[k]) return Status::corruption(r->what() + ": the LCC DB row of this key does not decode");
  }
  return out;
}

Result<bool> PgContentStore::scanChunk(const std::function<Result<PgResult>(PgConn&)>& read,
                                       const ContentFilter* filter,
                                       const std::function<bool(const ContentRecord&)>& fn, std::string* after_key,
                                       std::int64_t* after_seq) {
  std::vector<ContentRecord> chunk;
  int got = 0;
  {
    LCC_ASSIGN_OR_RETURN(Reader r, acquire());
    LCC_ASSIGN_OR_RETURN(PgResult res, read(*r));
    got = res.rows();
    for (int i = 0; i < got; ++i) {
      *after_key = res.bytes(i, 0);
      *after_seq = res.i64(i, 1);
      auto rec = recordFromRow(res, i);
      if (!rec) {
        corruptRow("LCC DB row");
      } else if (filter == nullptr || filter->matches(*rec)) {
        chunk.push_back(std::move(*rec));
      }
    }
  }
  for (const auto& rec : chunk) {
    if (!fn(rec)) return false;
  }
  return got == kScanChunk;
}

Status PgContentStore::scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) {
  std::string after;  // every key is longer than ""
  std::int64_t after_seq = 0;
  auto read = [&](PgConn& c) {
    return c.run("SELECT " LCC_LCC_COLS " FROM lcc WHERE pid = $1 AND key > $2 ORDER BY key LIMIT $3",
                 PgParams().i64(pid).bytes(after).i64(kScanChunk));
  };
  for (;;) {
    LCC_ASSIGN_OR_RETURN(bool more, scanChunk(read, nullptr, fn, &after, &after_seq));
    if (!more) return Status::ok();
  }
}

Status PgContentStore::scanSince(ChangeSeq after, const ContentFilter& filter,
                                 const std::function<bool(const ContentRecord&)>& fn) {
  if (after > static_cast<ChangeSeq>(std::numeric_limits<std::int64_t>::max())) return Status::ok();
  // A server behind a max_seq this store reported (a lagging standby after a switch)
  // would hide records below it from a caller that asks from there: try later instead.
  const std::int64_t seen = seen_max_.load();
  LCC_ASSIGN_OR_RETURN(std::int64_t server_max, readShared("max_seq"));
  if (server_max < seen) {
    return Status::busy(conn_->what() + ": this server is behind what was read before (max_seq " +
                        std::to_string(server_max) + " < " + std::to_string(seen) +
                        ": a standby catching up); try again later");
  }
  std::string after_key;
  auto after_seq = static_cast<std::int64_t>(after);
  auto read = [&](PgConn& c) {
    return c.run("SELECT " LCC_LCC_COLS " FROM lcc WHERE seq > $1 ORDER BY seq LIMIT $2",
                 PgParams().i64(after_seq).i64(kScanChunk));
  };
  for (;;) {
    LCC_ASSIGN_OR_RETURN(bool more, scanChunk(read, &filter, fn, &after_key, &after_seq));
    if (!more) return Status::ok();
  }
}

Result<std::int64_t> PgContentStore::readShared(const char* name) {
  LCC_ASSIGN_OR_RETURN(Reader r, acquire());
  return readCounter(*r, StoreKind::kContent, name);
}

Result<ChangeSeq> PgContentStore::maxSeq() {
  if (closed_) return Status::aborted(conn_->what() + ": the content store is closed");
  LCC_ASSIGN_OR_RETURN(std::int64_t server_max, readShared("max_seq"));
  // Never lower than what this store reported before (a reader switched to a standby
  // that is behind); scanSince() refuses to read past such a server meanwhile.
  return static_cast<ChangeSeq>(noteSeen(server_max));
}

Result<std::uint64_t> PgContentStore::count() {
  if (closed_) return Status::aborted(conn_->what() + ": the content store is closed");
  LCC_ASSIGN_OR_RETURN(std::int64_t rows, readShared("rows"));
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, rows));
}

Result<std::optional<std::string>> PgContentStore::getMeta(std::string_view key) {
  LCC_ASSIGN_OR_RETURN(Reader r, acquire());
  LCC_ASSIGN_OR_RETURN(PgResult res, r->run("SELECT value FROM meta WHERE store = 'content' AND key = $1",
                                            PgParams().bytes(key)));
  if (res.rows() == 0) return std::optional<std::string>();
  return std::optional<std::string>(res.bytes(0, 0));
}

}  // namespace lcc::plugins::postgres
