// server_store_options.h — the contract suites' hook for store plugins whose data
// lives on a server (storage-postgres): each test gets its own PostgreSQL schema on
// the private server that the ctest fixture `lcc_pg_server` starts
// (tests/storage_postgres/pg_server.sh), whose libpq conninfo arrives in
// LCC_TEST_PG_CONNINFO. Without a server the cases are skipped, saying why.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "lcc/options.h"

namespace lcc::testing {

inline bool isServerStorePlugin(const std::string& plugin) { return plugin == "storage-postgres"; }

// Empty when the case can run; otherwise why it is skipped.
inline std::string serverStoreSkipReason(const std::string& plugin) {
  if (!isServerStorePlugin(plugin)) return {};
  if (const char* missing = std::getenv("LCC_TEST_PG_MISSING")) return missing;
  if (std::getenv("LCC_TEST_PG_CONNINFO") == nullptr) {
    return "storage-postgres needs a server: run this test through ctest (the fixture lcc_pg_server starts one "
           "and sets LCC_TEST_PG_CONNINFO), or set LCC_TEST_PG_CONNINFO yourself";
  }
  return {};
}

// A schema name no other test of this run uses ("lcc_t<pid>_<n>").
inline std::string freshSchemaName() {
  static std::atomic<int> next{0};
  return "lcc_t" + std::to_string(::getpid()) + "_" + std::to_string(++next);
}

// The plugin's defaults, plus conninfo and `schema` for a server store plugin.
inline OptionsView serverStoreOptions(const std::string& plugin, const OptionsView& defaults,
                                      const std::string& schema) {
  if (!isServerStorePlugin(plugin)) return defaults;
  auto values = defaults.all();
  const char* conninfo = std::getenv("LCC_TEST_PG_CONNINFO");
  values["conninfo"] = std::string(conninfo == nullptr ? "" : conninfo);
  values["schema"] = schema;
  return OptionsView(std::move(values));
}

}  // namespace lcc::testing
