#include "front/front_db.h"

namespace lcc::front {
namespace {

// Every statement is IF NOT EXISTS; ids of pmdb stay within the provider id range.
constexpr const char* kTables = R"SQL(
CREATE TABLE IF NOT EXISTS fedb (
  name text PRIMARY KEY,
  uns text NOT NULL,
  admin text NOT NULL,
  cu text NOT NULL DEFAULT '',
  token_file text NOT NULL DEFAULT '',
  state text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),
  providers bigint NOT NULL DEFAULT 0,
  refreshed_at timestamptz,
  last_error text NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS pmdb (
  id bigint GENERATED ALWAYS AS IDENTITY (MAXVALUE 4294967295) PRIMARY KEY,
  lcc text NOT NULL REFERENCES fedb (name),
  local_id bigint,
  state text NOT NULL CONSTRAINT pmdb_state_check CHECK (state IN ('pending', 'placed', 'moving')),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (lcc, local_id),
  CHECK (state = 'pending' OR local_id IS NOT NULL));
ALTER TABLE pmdb DROP CONSTRAINT IF EXISTS pmdb_state_check;
ALTER TABLE pmdb ADD CONSTRAINT pmdb_state_check CHECK (state IN ('pending', 'placed', 'moving'));
CREATE TABLE IF NOT EXISTS front_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS slots (
  slot bigint PRIMARY KEY,
  lcc text NOT NULL REFERENCES fedb (name),
  epoch bigint NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS moves (
  provider bigint PRIMARY KEY REFERENCES pmdb (id),
  slot bigint NOT NULL,
  src text NOT NULL REFERENCES fedb (name),
  dst text NOT NULL REFERENCES fedb (name),
  phase text NOT NULL,
  src_local_id bigint NOT NULL,
  to_local_id bigint NOT NULL DEFAULT 0,
  started_at timestamptz NOT NULL DEFAULT now());
)SQL";

constexpr const char* kUpsertLcc =
    "INSERT INTO fedb (name, uns, admin, cu, token_file) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT (name) DO UPDATE SET uns = EXCLUDED.uns, admin = EXCLUDED.admin, cu = EXCLUDED.cu, "
    "token_file = EXCLUDED.token_file";
constexpr const char* kLccs =
    "SELECT name, uns, admin, cu, token_file, state, providers, last_error FROM fedb ORDER BY name";
constexpr const char* kLoad =
    "UPDATE fedb SET providers = $2, refreshed_at = now(), last_error = '' WHERE name = $1";
constexpr const char* kLoadError = "UPDATE fedb SET last_error = $2 WHERE name = $1";
constexpr const char* kReserve = "INSERT INTO pmdb (lcc, state) VALUES ($1, 'pending') RETURNING id";
constexpr const char* kPlace = "UPDATE pmdb SET local_id = $2, state = 'placed' WHERE id = $1 AND state = 'pending'";
constexpr const char* kDrop = "DELETE FROM pmdb WHERE id = $1";
#define LCC_FRONT_COLUMNS \
  "SELECT id, lcc, coalesce(local_id, 0), state = 'placed', " \
  "(extract(epoch FROM now() - created_at) * 1000)::bigint, state = 'moving' FROM pmdb "
constexpr const char* kLookup = LCC_FRONT_COLUMNS "WHERE id = $1";
constexpr const char* kPending = LCC_FRONT_COLUMNS "WHERE state = 'pending' ORDER BY id LIMIT $1";
constexpr const char* kList = LCC_FRONT_COLUMNS "ORDER BY id LIMIT $1";
#undef LCC_FRONT_COLUMNS

}  // namespace

Result<std::unique_ptr<FrontDb>> FrontDb::open(const FrontOptions& o) {
  const std::string what = "front: PMDB/FEDB (schema " + o.schema + ")";
  auto c = pg::PgConn::connect(o.conninfo, o.schema, o.request_timeout.count(), true, what);
  if (!c.isOk()) return c.status();
  std::unique_ptr<FrontDb> db(new FrontDb(std::move(c).value()));
  LCC_RETURN_IF_ERROR(db->conn_->exec("CREATE SCHEMA IF NOT EXISTS " + pg::quoteIdent(o.schema)));
  LCC_RETURN_IF_ERROR(db->conn_->exec(kTables));
  for (const auto& l : o.lccs) {
    pg::PgParams p;
    p.text(l.name).text(l.unsAddress()).text(l.adminAddress()).text(l.cu).text(l.token_file);
    auto r = db->conn_->run(kUpsertLcc, p);
    if (!r.isOk()) return r.status();
  }
  LCC_RETURN_IF_ERROR(db->checkSlots(o.slots));
  return db;
}

Result<std::vector<LccRow>> FrontDb::lccs() {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = conn_->run(kLccs, pg::PgParams());
  if (!r.isOk()) return r.status();
  std::vector<LccRow> out;
  const pg::PgResult& res = r.value();
  for (int i = 0; i < res.rows(); ++i) {
    LccRow row;
    row.spec = {res.bytes(i, 0), res.bytes(i, 1), res.bytes(i, 2), res.bytes(i, 4), res.bytes(i, 3)};
    row.open = res.bytes(i, 5) == "open";
    row.providers = res.u64(i, 6);
    row.last_error = res.bytes(i, 7);
    out.push_back(std::move(row));
  }
  return out;
}

Status FrontDb::recordLoad(const std::string& lcc, std::uint64_t providers) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.text(lcc).u64(providers);
  return conn_->run(kLoad, p).status();
}

Status FrontDb::recordLoadError(const std::string& lcc, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.text(lcc).text(why);
  return conn_->run(kLoadError, p).status();
}

Result<std::uint64_t> FrontDb::reserve(const std::string& lcc) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.text(lcc);
  auto r = conn_->run(kReserve, p);
  if (!r.isOk()) return r.status();
  if (r.value().rows() != 1) return Status::internal("pmdb: INSERT returned no id");
  return r.value().u64(0, 0);
}

Status FrontDb::markPlaced(std::uint64_t id, std::uint64_t local_id) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.u64(id).u64(local_id);
  auto r = conn_->run(kPlace, p);
  if (!r.isOk()) return r.status();
  if (r.value().affected() != 1) return Status::notFound("pmdb: row " + std::to_string(id) + " is not pending");
  return Status::ok();
}

Status FrontDb::drop(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.u64(id);
  return conn_->run(kDrop, p).status();
}

Result<std::vector<Mapping>> FrontDb::mappings(const char* sql, const pg::PgParams& params) {
  std::lock_guard<std::mutex> lock(mu_);
  auto r = conn_->run(sql, params);
  if (!r.isOk()) return r.status();
  std::vector<Mapping> out;
  const pg::PgResult& res = r.value();
  auto flag = [&res](int i, int col) {
    return res.raw() && PQgetlength(res.raw(), i, col) == 1 && PQgetvalue(res.raw(), i, col)[0] != 0;
  };
  for (int i = 0; i < res.rows(); ++i) {
    out.push_back({res.u64(i, 0), res.bytes(i, 1), res.u64(i, 2), flag(i, 3), flag(i, 5), res.i64(i, 4)});
  }
  return out;
}

Result<std::optional<Mapping>> FrontDb::lookup(std::uint64_t id) {
  pg::PgParams p;
  p.u64(id);
  auto r = mappings(kLookup, p);
  if (!r.isOk()) return r.status();
  if (r.value().empty()) return std::optional<Mapping>();
  return std::optional<Mapping>(r.value().front());
}

Result<std::vector<Mapping>> FrontDb::pending(int limit) {
  pg::PgParams p;
  p.i64(limit);
  return mappings(kPending, p);
}

Result<std::vector<Mapping>> FrontDb::list(int limit) {
  pg::PgParams p;
  p.i64(limit);
  return mappings(kList, p);
}

}  // namespace lcc::front
