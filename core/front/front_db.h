// front_db.h — the front end's PostgreSQL tables (one schema, front.schema):
//   fedb: the sub-LCCs {name, uns, admin, cu, token_file, state, providers,
//         refreshed_at, last_error};
//   pmdb: provider id (the front end's, from an identity column) → {lcc, local_id,
//         state 'pending'|'placed', created_at}; (lcc, local_id) unique.
// Over lcc/support/pg_conn.h (the libpq connection storage-postgres uses).
// THREADS: thread-safe (one connection under a mutex; every call is one statement).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "front/front_options.h"
#include "lcc/status.h"
#include "lcc/support/pg_conn.h"

namespace lcc::front {

struct Mapping {
  std::uint64_t id = 0;        // the provider id CPs and `lcc provider` use on the front end
  std::string lcc;             // the sub-LCC holding it
  std::uint64_t local_id = 0;  // its id there (0 while pending)
  bool placed = false;
  std::int64_t age_ms = 0;     // since the row was made (server time)
};

struct LccRow {
  LccSpec spec;
  bool open = true;
  std::uint64_t providers = 0;  // at the last refresh
  std::string last_error;
};

class FrontDb {
 public:
  // Connects, makes the schema and tables (IF NOT EXISTS), and writes the sub-LCCs of
  // the config into fedb (their addresses; the state is left as it is).
  static Result<std::unique_ptr<FrontDb>> open(const FrontOptions& options);

  Result<std::vector<LccRow>> lccs();
  Status recordLoad(const std::string& lcc, std::uint64_t providers);
  Status recordLoadError(const std::string& lcc, const std::string& why);

  // A new pending row for `lcc`; its id.
  Result<std::uint64_t> reserve(const std::string& lcc);
  // pending → placed with `local_id`; NotFound when the row is not pending any more.
  Status markPlaced(std::uint64_t id, std::uint64_t local_id);
  Status drop(std::uint64_t id);
  Result<std::optional<Mapping>> lookup(std::uint64_t id);
  // The oldest pending rows, at most `limit`.
  Result<std::vector<Mapping>> pending(int limit);
  // Every row in id order, at most `limit`.
  Result<std::vector<Mapping>> list(int limit);

 private:
  explicit FrontDb(std::unique_ptr<pg::PgConn> c) : conn_(std::move(c)) {}
  Result<std::vector<Mapping>> mappings(const char* sql, const pg::PgParams& params);
  std::mutex mu_;
  std::unique_ptr<pg::PgConn> conn_;
};

}  // namespace lcc::front
