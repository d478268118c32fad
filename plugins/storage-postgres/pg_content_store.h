// pg_content_store.h — ContentStore (the LCC DB) on PostgreSQL: table lcc and the
// 'content' rows of meta (schema.sql).
//
// THREADS: apply()/sync()/close() from one writer thread (the QM) on the writer
// connection. Reads (get, scans, getMeta) are thread-safe and run concurrently on a
// pool of up to `max_readers` connections (opened on demand); more concurrent reads
// wait for a free one. Readers see committed batches only (each statement its own
// snapshot). maxSeq() and count() read the server (lcc_store 'max_seq', 'rows'): no
// process holds the truth, so several processes (hosts) may share one store.
// SEQ: apply() locks the 'max_seq' row (SELECT ... FOR UPDATE) in its transaction and
// stores every new record at max(the caller's seq, max_seq + 1): the caller's seq when
// it is the only writer, the next free one when another process wrote meanwhile.
// Writers are serialised by that lock, so seq order is commit order and a reader
// that saw seq N has seen every record below N that will ever exist.
// A READER (read_only, e.g. on a standby) never reports a max_seq below one it saw;
// a scan on a server behind that is Busy (try later), never a silent gap.
// DURABILITY: as the queue store (pg_queue_store.h). A lost connection is Busy and
// leaves the store usable (the server rolled the transaction back).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "lcc/content_store.h"
#include "lcc/host.h"
#include "pg_store.h"

namespace lcc::plugins::postgres {

class PgContentStore final : public ContentStore {
 public:
  static Result<ContentStore*> open(const HostContext& host, const StoreOptions& opts);
  ~PgContentStore() override = default;

  const StoreOpenInfo& openInfo() const override { return info_; }
  Status apply(const ContentBatch& batch) override;
  Status sync() override;
  Status close() override;

  Result<std::optional<ContentRecord>> get(std::string_view encoded_key) override;
  Result<std::vector<std::optional<ContentRecord>>> getMany(const std::vector<std::string>& keys) override;
  Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) override;
  Status scanSince(ChangeSeq after, const ContentFilter& filter,
                   const std::function<bool(const ContentRecord&)>& fn) override;
  Result<ChangeSeq> maxSeq() override;
  Result<std::uint64_t> count() override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

 private:
  PgContentStore(const HostContext& host, const StoreOptions& opts, std::unique_ptr<PgConn> conn, StoreOpenInfo info,
                 std::int64_t max_seq)
      : host_(host), opts_(opts), conn_(std::move(conn)), info_(std::move(info)), seen_max_(max_seq),
        caller_max_(max_seq) {}

  struct Plan;  // what one apply() writes (pg_content_store.cc)

  // A read connection from the pool, given back on destruction.
  class Reader;
  Result<Reader> acquire();
  void release(std::unique_ptr<PgConn> conn);
  // Reads one chunk with `read` on a pooled connection, then calls fn on its records
  // with no connection held (a callback may call the store). Returns false when fn
  // stopped or the chunk was the last.
  Result<bool> scanChunk(const std::function<Result<PgResult>(PgConn&)>& read, const ContentFilter* filter,
                         const std::function<bool(const ContentRecord&)>& fn, std::string* after_key,
                         std::int64_t* after_seq);

  Status planBatch(const ContentBatch& batch, Plan* plan);
  Status planPut(const ContentRecord& put, Plan* plan);
  // The statements writing `plan`, appended to `steps` (run in one pipeline).
  void writePlan(const Plan& plan, std::vector<PgStep>* steps);
  void writePuts(const Plan& plan, std::vector<PgStep>* steps);
  // lcc_store `name` of the content store, read on a pooled connection.
  Result<std::int64_t> readShared(const char* name);
  std::int64_t noteSeen(std::int64_t max_seq);  // raises seen_max_; returns it
  Status writable() const;
  void corruptRow(const std::string& what);

  HostContext host_;
  StoreOptions opts_;
  std::unique_ptr<PgConn> conn_;  // the writer connection
  StoreOpenInfo info_;
  std::atomic<std::int64_t> seen_max_;  // the highest max_seq read or written here
  std::int64_t caller_max_;             // writer thread: the highest seq a caller put
  UnsyncedCommits unsynced_{StoreKind::kContent};  // writer thread only
  Status failed_;          // sticky; writer thread only
  std::atomic<bool> closed_{false};
  std::atomic<std::uint64_t> corrupt_rows_{0};

  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<PgConn>> idle_;
  std::int64_t open_readers_ = 0;  // idle + lent out
};

}  // namespace lcc::plugins::postgres
