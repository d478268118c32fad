// store_options.h — the options of storage-sqlite (one table for the three stores;
// each store entry in the YAML has its own `options:`).
#pragma once

#include <cstdint>
#include <string>

#include "lcc/options.h"
#include "lcc/status.h"

namespace lcc::plugins::sqlite {

struct StoreOptions {
  std::string path;                     // "" → <data_dir>/<store>.sqlite; relative → under data_dir
  bool full_sync = false;               // synchronous: "normal" (false) or "full" (true)
  std::int64_t cache_bytes = 16 << 20;  // page cache per connection
  std::int64_t busy_timeout_ms = 5000;
  std::int64_t journal_size_limit = 64 << 20;
  std::int64_t autocheckpoint_pages = 1000;
  std::int64_t max_readers = 4;         // ContentStore read connections
  bool check_after_crash = true;        // PRAGMA quick_check after an unclean shutdown
};

extern const OptionSpec kOptionSpecs[];
extern const std::size_t kOptionCount;

// Reads a validated OptionsView (the core checked types and bounds); checks what the
// core cannot (the synchronous word).
Result<StoreOptions> parseOptions(const OptionsView& view);

}  // namespace lcc::plugins::sqlite
