#include "pg_content_store.h"

#include <limits>

namespace lcc::plugins::postgres {
namespace {

constexpr std::int64_t kScanChunk = 512;  // rows per read round trip

#define LCC_LCC_COLS                                                                                       \
  "key, seq, deleted, view_tag, browse, fetch_url, mtime, size, md5, machine, filename, stored, refreshed, " \
  "declared_mtime, declared_size, declared_md5, created_seq, pid, etag"

PgParams recordParams(const std::string& key, const ContentRecord& r) {
  PgParams p;
  p.bytes(key).u64(r.seq).i64(r.deleted ? 1 : 0).bytes(r.view_tag).optBytes(r.browse).bytes(r.fetch);
  p.optI64(r.mtime).u64(r.size).bytes(r.md5).bytes(r.machine).bytes(r.filename).i64(toUnixMillis(r.stored));
  p.i64(toUnixMillis(r.refreshed)).optI64(r.declared_mtime).optU64(r.declared_size).bytes(r.declared_md5);
  p.u64(r.created_seq).i64(r.key.pid).bytes(r.etag);
  return p;
}

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
  LCC_ASSIGN_OR_RETURN(PgResult n, conn->run("SELECT count(*) FROM lcc", PgParams()));
  const std::int64_t rows = n.i64(0, 0);
  LCC_ASSIGN_OR_RETURN(std::int64_t max_seq, readCounter(*conn, StoreKind::kContent, "max_seq"));
  return new PgContentStore(host, opts, std::move(conn), std::move(info), rows, max_seq);
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
  return failed_;
}

void PgContentStore::corruptRow(const std::string& what) {
  const std::uint64_t n = ++corrupt_rows_;
  if (host_.logger != nullptr) {
    host_.logger->warn(conn_->what() + ": skipped a corrupt " + what + " (" + std::to_string(n) + " so far)");
  }
}

Status PgContentStore::apply(const ContentBatch& batch) {
  LCC_RETURN_IF_ERROR(writable());
  if (batch.empty()) return Status::ok();
  std::int64_t rows = rows_, max_seq = max_seq_;
  Status s = conn_->begin(opts_.full_sync);
  for (std::size_t i = 0; s.isOk() && i < batch.ops().size(); ++i) s = applyOp(batch.ops()[i], &rows, &max_seq);
  if (s.isOk() && max_seq != max_seq_) s = writeCounter(*conn_, StoreKind::kContent, "max_seq", max_seq);
  if (s.isOk()) s = conn_->commit();
  if (!s.isOk()) {
    conn_->rollback();
    failed_ = s.withContext("content store apply failed, store is now read-only until restart");
    return failed_;
  }
  rows_ = rows;
  max_seq_ = max_seq;
  if (!opts_.full_sync) unsynced_ = true;
  return Status::ok();
}

Status PgContentStore::applyOp(const ContentBatch::Op& op, std::int64_t* rows, std::int64_t* max_seq) {
  if (const auto* put = std::get_if<ContentBatch::Put>(&op)) return putRecord(put->record, rows, max_seq);
  if (const auto* er = std::get_if<ContentBatch::Erase>(&op)) {
    if (!decodeUrlKey(er->key)) return Status::invalidArgument("content erase of a key that is not an encoded UrlKey");
    LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("DELETE FROM lcc WHERE key = $1", PgParams().bytes(er->key)));
    *rows -= r.affected();
    return Status::ok();
  }
  if (const auto* pm = std::get_if<ContentBatch::PutMeta>(&op)) {
    return conn_->run("INSERT INTO meta (store, key, value) VALUES ('content', $1, $2) "
                      "ON CONFLICT (store, key) DO UPDATE SET value=EXCLUDED.value",
                      PgParams().bytes(pm->key).bytes(pm->value)).status();
  }
  return Status::ok();
}

Status PgContentStore::putRecord(const ContentRecord& put, std::int64_t* rows, std::int64_t* max_seq) {
  const std::string key = encodeUrlKey(put.key);
  LCC_ASSIGN_OR_RETURN(PgResult held, conn_->run("SELECT seq, deleted, created_seq FROM lcc WHERE key = $1",
                                                 PgParams().bytes(key)));
  const bool has = held.rows() == 1;
  // The change feed needs seqs that only grow: a seq at or below the highest is
  // allowed only as an in-place refresh of the record that holds it.
  const bool in_place = has && held.u64(0, 0) == put.seq;
  if (!in_place && (put.seq > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
                    static_cast<std::int64_t>(put.seq) <= *max_seq)) {
    return Status::invalidArgument("content record seq " + std::to_string(put.seq) +
                                   " is not above the highest seq so far (" + std::to_string(*max_seq) + ")");
  }
  ContentRecord r = put;
  r.created_seq = (has && held.i64(0, 1) == 0) ? held.u64(0, 2) : r.seq;
  if (has) {
    LCC_RETURN_IF_ERROR(conn_->run(
        "UPDATE lcc SET seq=$2, deleted=$3, view_tag=$4, browse=$5, fetch_url=$6, mtime=$7, size=$8, md5=$9, "
        "machine=$10, filename=$11, stored=$12, refreshed=$13, declared_mtime=$14, declared_size=$15, "
        "declared_md5=$16, created_seq=$17, pid=$18, etag=$19 WHERE key=$1", recordParams(key, r)).status());
  } else {
    LCC_RETURN_IF_ERROR(conn_->run("INSERT INTO lcc (" LCC_LCC_COLS ") VALUES "
                                   "($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)",
                                   recordParams(key, r)).status());
    ++*rows;
  }
  *max_seq = std::max(*max_seq, static_cast<std::int64_t>(r.seq));
  return Status::ok();
}

Status PgContentStore::sync() {
  LCC_RETURN_IF_ERROR(writable());
  if (!unsynced_) return Status::ok();
  Status s = syncCommitted(*conn_, StoreKind::kContent);
  if (!s.isOk()) {
    failed_ = s.withContext("content store sync failed, store is now read-only until restart");
    return failed_;
  }
  unsynced_ = false;
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
  return markClean(*conn_, StoreKind::kContent);
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

Result<ChangeSeq> PgContentStore::maxSeq() {
  if (closed_) return Status::aborted(conn_->what() + ": the content store is closed");
  return static_cast<ChangeSeq>(max_seq_.load());
}

Result<std::uint64_t> PgContentStore::count() {
  if (closed_) return Status::aborted(conn_->what() + ": the content store is closed");
  return static_cast<std::uint64_t>(rows_.load());
}

Result<std::optional<std::string>> PgContentStore::getMeta(std::string_view key) {
  LCC_ASSIGN_OR_RETURN(Reader r, acquire());
  LCC_ASSIGN_OR_RETURN(PgResult res, r->run("SELECT value FROM meta WHERE store = 'content' AND key = $1",
                                            PgParams().bytes(key)));
  if (res.rows() == 0) return std::optional<std::string>();
  return std::optional<std::string>(res.bytes(0, 0));
}

}  // namespace lcc::plugins::postgres
