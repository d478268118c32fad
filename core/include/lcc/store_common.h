// lcc/store_common.h — what the three store interfaces share.
#pragma once

#include <cstdint>
#include <string>

namespace lcc {

// What a store found when it was opened; the QM uses it for rule 3 (cache-crash).
struct StoreOpenInfo {
  std::string engine;          // "kyoto", "sqlite", "memory"
  bool persistent = true;      // false: contents vanish when the process ends
  bool created = false;        // a new, empty store was made
  bool clean_shutdown = true;  // the previous process closed it with close()
  // True when the store cannot promise that everything it reported synced is still
  // there (an engine repair dropped records, a file was replaced). Raises cache-crash.
  bool may_have_lost_synced = false;
  // True when every call is a round trip to a server (storage-postgres): the caller
  // then reads ahead in batches (getEntries, getMany) what it is likely to need; a
  // local store answers a get as cheaply, and reading ahead would only add work.
  bool remote = false;
};

}  // namespace lcc
