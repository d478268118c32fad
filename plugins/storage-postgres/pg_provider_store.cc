#include "pg_provider_store.h"

#include "pg_lease.h"

#include <limits>

#include "list_codec.h"

namespace lcc::plugins::postgres {
namespace {

constexpr std::int64_t kScanChunk = 256;

#define LCC_PROVIDER_COLS                                                                                   \
  "state, state_reason, password_hash, prefixes, priority, bandwidth, quota_files, quota_bytes, used_files, " \
  "used_bytes, secret, secret_url, contact, reg_expires, conn_seq, last_ip, last_connect, fullsets_used, "    \
  "fullset_period_start, fullset_wanted, fullset_reason, error_total, errors, created, sitemap_url, "        \
  "sitemap_interval"

// The LCC_PROVIDER_COLS values as $1..$26; the caller appends the id as $27 when needed.
PgParams recordParams(const ProviderRecord& p) {
  PgParams q;
  q.i64(static_cast<std::int64_t>(p.state)).bytes(p.state_reason).bytes(p.password_hash);
  q.bytes(encodePrefixes(p.prefixes)).i64(p.priority).u64(p.bandwidth).u64(p.quota_files).u64(p.quota_bytes);
  q.u64(p.used_files).u64(p.used_bytes).bytes(p.secret).bytes(p.secret_url).bytes(p.contact);
  q.i64(toUnixMillis(p.reg_expires)).u64(p.conn_seq).bytes(p.last_ip);
  q.optI64(p.last_connect ? std::optional<std::int64_t>(toUnixMillis(*p.last_connect)) : std::nullopt);
  q.u64(p.fullsets_used).i64(toUnixMillis(p.fullset_period_start)).i64(p.fullset_wanted ? 1 : 0);
  q.i64(static_cast<std::int64_t>(p.fullset_reason)).u64(p.error_total).bytes(encodeErrors(p.errors));
  q.i64(toUnixMillis(p.created)).bytes(p.sitemap_url).i64(p.sitemap_interval.count());
  return q;
}

// A row of "id, " LCC_PROVIDER_COLS; nullopt when it does not hold a valid record.
std::optional<ProviderRecord> recordFromRow(const PgResult& r, int i) {
  const std::int64_t id = r.i64(i, 0), state = r.i64(i, 1), prio = r.i64(i, 5), wanted = r.i64(i, 20),
                     reason = r.i64(i, 21), fullsets = r.i64(i, 18);
  auto prefixes = decodePrefixes(r.bytes(i, 4));
  auto errors = decodeErrors(r.bytes(i, 23));
  if (!prefixes || !errors || id <= 0 || id > std::numeric_limits<ProviderId>::max() || state < 0 || state > 4 ||
      prio < std::numeric_limits<std::int32_t>::min() || prio > std::numeric_limits<std::int32_t>::max() ||
      (wanted != 0 && wanted != 1) || reason < 0 || reason > static_cast<std::int64_t>(FullSetReason::kAdmin) ||
      fullsets < 0 || fullsets > std::numeric_limits<std::uint32_t>::max()) {
    return std::nullopt;
  }
  ProviderRecord p;
  p.id = static_cast<ProviderId>(id);
  p.state = static_cast<ProviderState>(state);
  p.state_reason = r.bytes(i, 2);
  p.password_hash = r.bytes(i, 3);
  p.prefixes = std::move(*prefixes);
  p.priority = static_cast<std::int32_t>(prio);
  p.bandwidth = r.u64(i, 6);
  p.quota_files = r.u64(i, 7);
  p.quota_bytes = r.u64(i, 8);
  p.used_files = r.u64(i, 9);
  p.used_bytes = r.u64(i, 10);
  p.secret = r.bytes(i, 11);
  p.secret_url = r.bytes(i, 12);
  p.contact = r.bytes(i, 13);
  p.reg_expires = fromUnixMillis(r.i64(i, 14));
  p.conn_seq = r.u64(i, 15);
  p.last_ip = r.bytes(i, 16);
  if (!r.isNull(i, 17)) p.last_connect = fromUnixMillis(r.i64(i, 17));
  p.fullsets_used = static_cast<std::uint32_t>(fullsets);
  p.fullset_period_start = fromUnixMillis(r.i64(i, 19));
  p.fullset_wanted = wanted == 1;
  p.fullset_reason = static_cast<FullSetReason>(reason);
  p.error_total = r.u64(i, 22);
  p.errors = std::move(*errors);
  p.created = fromUnixMillis(r.i64(i, 24));
  p.sitemap_url = r.bytes(i, 25);
  p.sitemap_interval = Millis(r.i64(i, 26));
  return p;
}

}  // namespace

Result<ProviderStore*> PgProviderStore::open(const HostContext& host, const StoreOptions& opts) {
  StoreOpenInfo info;
  LCC_ASSIGN_OR_RETURN(auto conn, openStore(opts, StoreKind::kProviders, &info));
  // A QM's writes to the PIDB check the QM lease of this process too (pg_lease.h).
  if (!opts.probe) checkLeaseAtBegin(*conn, opts);
  auto* store = new PgProviderStore(host, std::move(conn), std::move(info));
  store->probe_ = opts.probe;
  return store;
}

Status PgProviderStore::usableLocked() const {
  if (closed_) return Status::aborted(conn_->what() + ": the provider store is closed");
  return failed_;
}

Status PgProviderStore::beginLocked(bool durable) {
  LCC_RETURN_IF_ERROR(usableLocked());
  return conn_->begin(durable);
}

Status PgProviderStore::finishLocked(Status s, bool soft) {
  if (s.isOk()) {
    s = conn_->commit();
    if (s.isOk()) return s;
  } else {
    conn_->rollback();
  }
  // NotFound and the caller's refusal change nothing; so does a lost connection (the
  // server rolled the transaction back; the next call reconnects).
  if (!soft && !s.isBusy() && !conn_->lost()) failed_ = s;
  return s;
}

Result<ProviderId> PgProviderStore::create(const ProviderRecord& record) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(beginLocked(true));
  auto r = conn_->run("INSERT INTO providers (" LCC_PROVIDER_COLS ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,"
                      "$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26) RETURNING id",
                      recordParams(record));
  LCC_RETURN_IF_ERROR(finishLocked(r.status(), false));
  unsynced_ = false;
  return static_cast<ProviderId>(r.value().i64(0, 0));
}

Result<std::optional<ProviderRecord>> PgProviderStore::getLocked(ProviderId id, bool for_update) {
  auto res = for_update ? conn_->run("SELECT id, " LCC_PROVIDER_COLS " FROM providers WHERE id = $1 FOR UPDATE",
                                     PgParams().i64(id))
                        : conn_->run("SELECT id, " LCC_PROVIDER_COLS " FROM providers WHERE id = $1",
                                     PgParams().i64(id));
  LCC_ASSIGN_OR_RETURN(PgResult r, std::move(res));
  if (r.rows() == 0) return std::optional<ProviderRecord>();
  auto p = recordFromRow(r, 0);
  if (!p) return Status::corruption(conn_->what() + ": provider " + std::to_string(id) + " does not decode");
  return p;
}

Result<std::optional<ProviderRecord>> PgProviderStore::get(ProviderId id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (closed_) return Status::aborted(conn_->what() + ": the provider store is closed");
  return getLocked(id, false);
}

Status PgProviderStore::updateLocked(const ProviderRecord& r, bool* found) {
  PgParams p = recordParams(r);
  p.i64(r.id);
  LCC_ASSIGN_OR_RETURN(PgResult res, conn_->run(
      "UPDATE providers SET state=$1, state_reason=$2, password_hash=$3, prefixes=$4, priority=$5, bandwidth=$6, "
      "quota_files=$7, quota_bytes=$8, used_files=$9, used_bytes=$10, secret=$11, secret_url=$12, contact=$13, "
      "reg_expires=$14, conn_seq=$15, last_ip=$16, last_connect=$17, fullsets_used=$18, fullset_period_start=$19, "
      "fullset_wanted=$20, fullset_reason=$21, error_total=$22, errors=$23, created=$24, sitemap_url=$25, "
      "sitemap_interval=$26 WHERE id=$27", p));
  *found = res.affected() == 1;
  return Status::ok();
}

Status PgProviderStore::put(const ProviderRecord& record, const WriteOptions& options) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(beginLocked(options.durable));
  bool found = false;
  Status s = updateLocked(record, &found);
  if (s.isOk() && !found) {
    return finishLocked(Status::notFound("provider " + std::to_string(record.id) + " does not exist"), true);
  }
  LCC_RETURN_IF_ERROR(finishLocked(s, false));
  unsynced_ = !options.durable;  // a durable commit also made every earlier one durable
  return Status::ok();
}

Status PgProviderStore::modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn,
                               const WriteOptions& options) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(beginLocked(options.durable));
  auto got = getLocked(id, true);
  if (!got.isOk()) return finishLocked(got.status(), false);
  if (!got.value()) return finishLocked(Status::notFound("provider " + std::to_string(id) + " does not exist"), true);
  ProviderRecord rec = std::move(*got.value());
  Status fs;
  try {
    fs = fn(rec);
  } catch (const std::exception& e) {
    fs = Status::internal(std::string("provider modify function threw: ") + e.what());
  } catch (...) {
    fs = Status::internal("provider modify function threw");
  }
  if (!fs.isOk()) return finishLocked(fs, true);
  rec.id = id;
  bool found = false;
  LCC_RETURN_IF_ERROR(finishLocked(updateLocked(rec, &found), false));
  unsynced_ = !options.durable;
  return Status::ok();
}

Status PgProviderStore::remove(ProviderId id) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(beginLocked(true));
  auto r = conn_->run("DELETE FROM providers WHERE id = $1", PgParams().i64(id));
  if (r.isOk() && r.value().affected() == 0) {
    return finishLocked(Status::notFound("provider " + std::to_string(id) + " does not exist"), true);
  }
  LCC_RETURN_IF_ERROR(finishLocked(r.status(), false));
  unsynced_ = false;
  return Status::ok();
}

Status PgProviderStore::scan(const std::function<bool(const ProviderRecord&)>& fn) {
  std::int64_t after = 0;
  for (;;) {
    std::vector<ProviderRecord> chunk;
    int got = 0;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (closed_) return Status::aborted(conn_->what() + ": the provider store is closed");
      LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT id, " LCC_PROVIDER_COLS " FROM providers WHERE id > $1 "
                                                  "ORDER BY id LIMIT $2", PgParams().i64(after).i64(kScanChunk)));
      got = r.rows();
      for (int i = 0; i < got; ++i) {
        after = r.i64(i, 0);
        if (auto p = recordFromRow(r, i)) {
          chunk.push_back(std::move(*p));
        } else if (host_.logger != nullptr) {
          host_.logger->warn(conn_->what() + ": skipped provider " + std::to_string(after) + ": does not decode");
        }
      }
    }
    for (const auto& p : chunk) {
      if (!fn(p)) return Status::ok();
    }
    if (got < kScanChunk) return Status::ok();
  }
}

Result<std::uint64_t> PgProviderStore::queuedUrls(ProviderId id) {
  std::lock_guard<std::mutex> lk(mu_);
  if (closed_) return Status::aborted(conn_->what() + ": the provider store is closed");
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT coalesce(sum(count), 0)::bigint FROM qpsdb WHERE pid = $1",
                                              PgParams().i64(id)));
  const std::int64_t n = r.i64(0, 0);
  return static_cast<std::uint64_t>(n < 0 ? 0 : n);
}

Status PgProviderStore::sync() {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(usableLocked());
  if (!unsynced_) return Status::ok();
  LCC_RETURN_IF_ERROR(syncCommitted(*conn_, StoreKind::kProviders));
  unsynced_ = false;
  return Status::ok();
}

Status PgProviderStore::close() {
  std::lock_guard<std::mutex> lk(mu_);
  if (closed_) return Status::ok();
  LCC_RETURN_IF_ERROR(failed_);
  if (probe_) {  // lccd --check changes nothing
    closed_ = true;
    return Status::ok();
  }
  // Waits for the WAL flush: every earlier commit, durable or not, is durable too.
  Status s = markClean(*conn_, StoreKind::kProviders);
  closed_ = true;
  return s;
}

}  // namespace lcc::plugins::postgres
