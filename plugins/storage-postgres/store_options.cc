#include "store_options.h"

#include <libpq-fe.h>

namespace lcc::plugins::postgres {

const OptionSpec kOptionSpecs[] = {
    {"conninfo", OptionType::kString, "", 0, 4096,
     "libpq connection string or URI (\"host=/run/postgresql dbname=lcc\", \"postgresql://lcc@db/lcc\"); required"},
    {"schema", OptionType::kString, "lcc", 1, 63,
     "PostgreSQL schema holding the tables (created if absent): [a-z_][a-z0-9_]*; one per LCC node"},
    {"synchronous", OptionType::kString, "normal", 4, 6,
     "full: every apply() waits for the WAL flush; normal: apply() commits without waiting, sync() flushes"},
    {"max_readers", OptionType::kInt, "4", 1, 64, "read connections of the content store (concurrent readers)"},
    {"connect_timeout", OptionType::kDuration, "10s", 1000, 600000, "how long a connection attempt may take"},
    {"read_only", OptionType::kBool, "false", 0, 0,
     "content store only: open as a reader (a CU host, possibly on a standby DSN); never writes"},
    {"qm_lease", OptionType::kDuration, "0", 0, 300000,
     "queue store only: QM active/standby on one schema: hold a lease of this length (1s-5m; 0: off), wait as "
     "the standby while another QM holds it, and fence every write with its epoch"},
};
const std::size_t kOptionCount = sizeof(kOptionSpecs) / sizeof(kOptionSpecs[0]);

namespace {

bool plainIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 63 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return s.rfind("pg_", 0) != 0;
}

Status checkConninfo(const std::string& conninfo) {
  if (conninfo.empty()) {
    return Status::invalidArgument(
        "storage-postgres: options.conninfo: required (a libpq connection string, e.g. "
        "\"host=/run/postgresql dbname=lcc\")");
  }
  char* err = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &err);
  if (parsed == nullptr) {
    std::string why = err != nullptr ? err : "libpq could not parse it";
    if (err != nullptr) PQfreemem(err);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Status::invalidArgument("storage-postgres: options.conninfo: not a libpq connection string: " + why);
  }
  PQconninfoFree(parsed);
  return Status::ok();
}

}  // namespace

Result<StoreOptions> parseOptions(const OptionsView& v) {
  StoreOptions o;
  o.conninfo = v.getString("conninfo", "");
  LCC_RETURN_IF_ERROR(checkConninfo(o.conninfo));
  o.schema = v.getString("schema", o.schema);
  if (!plainIdentifier(o.schema)) {
    return Status::invalidArgument("storage-postgres: options.schema: must match [a-z_][a-z0-9_]* (at most 63, not "
                                   "pg_...) (got '" + o.schema + "')");
  }
  const std::string sync = v.getString("synchronous", "normal");
  if (sync != "normal" && sync != "full") {
    return Status::invalidArgument("storage-postgres: options.synchronous: must be normal or full (got " + sync + ")");
  }
  o.full_sync = sync == "full";
  o.max_readers = std::max<std::int64_t>(1, v.getInt("max_readers", o.max_readers));
  o.connect_timeout_ms = v.getInt("connect_timeout", o.connect_timeout_ms);
  o.read_only = v.getBool("read_only", false);
  o.qm_lease_ms = v.getInt("qm_lease", 0);
  if (o.qm_lease_ms != 0 && o.qm_lease_ms < 1000) {
    return Status::invalidArgument("storage-postgres: options.qm_lease: 0 (off) or 1s to 5m (got " +
                                   std::to_string(o.qm_lease_ms) + " ms)");
  }
  return o;
}

}  // namespace lcc::plugins::postgres
