// store_options.h — the options of storage-postgres (one table for the three stores;
// each store entry in the YAML has its own `options:`).
#pragma once

#include <cstdint>
#include <string>

#include "lcc/options.h"
#include "lcc/status.h"

namespace lcc::plugins::postgres {

struct StoreOptions {
  std::string conninfo;                    // libpq connection string or URI (required)
  std::string schema = "lcc";              // PostgreSQL schema of the tables
  bool full_sync = false;                  // synchronous: "normal" (false) or "full"
  std::int64_t max_readers = 4;            // ContentStore read connections
  std::int64_t connect_timeout_ms = 10000;
  bool read_only = false;                  // content store only: a reader (e.g. on a standby)
  std::int64_t qm_lease_ms = 0;            // queue store only: the QM lease (pg_lease.h); 0: off
  // Not an option: set for `lccd --check` (HostContext::check_only). The store connects
  // and reads its identity, and changes nothing: no schema made, no flag set at close.
  bool probe = false;
};

extern const OptionSpec kOptionSpecs[];
extern const std::size_t kOptionCount;

// Reads a validated OptionsView (the core checked types and bounds); checks what the
// core cannot: conninfo present and parseable by libpq, the schema a plain lower-case
// identifier, the synchronous word. Errors read "options.<key>: why".
Result<StoreOptions> parseOptions(const OptionsView& view);

}  // namespace lcc::plugins::postgres
