#include "store_options.h"

namespace lcc::plugins::sqlite {

const OptionSpec kOptionSpecs[] = {
    {"path", OptionType::kString, "", 0, 4096,
     "store file; empty: <data_dir>/<queue|content|providers>.sqlite; relative: under data_dir"},
    {"synchronous", OptionType::kString, "normal", 4, 6,
     "normal: commits unsynced, sync() makes them durable (one WAL fsync); full: every commit synced"},
    {"cache_size", OptionType::kSize, "16MiB", 256 * 1024, std::int64_t{64} << 30,
     "page cache of the writer connection (content-store readers: a quarter each, at least 1 MiB)"},
    {"busy_timeout", OptionType::kDuration, "5s", 0, 600000,
     "how long to wait for a lock held by another process (sqlite3 shell, lccctl check)"},
    {"journal_size_limit", OptionType::kSize, "64MiB", 0, std::int64_t{64} << 30,
     "the WAL is truncated to this size after a checkpoint"},
    {"wal_autocheckpoint", OptionType::kInt, "1000", 0, 1000000,
     "WAL pages before an automatic checkpoint (0: only at sync() / close())"},
    {"max_readers", OptionType::kInt, "4", 1, 64, "read connections of the content store (concurrent readers)"},
    {"check_after_crash", OptionType::kBool, "true", 0, 0,
     "run PRAGMA quick_check when the previous process did not close the store"},
};
const std::size_t kOptionCount = sizeof(kOptionSpecs) / sizeof(kOptionSpecs[0]);

Result<StoreOptions> parseOptions(const OptionsView& v) {
  StoreOptions o;
  o.path = v.getString("path", "");
  const std::string sync = v.getString("synchronous", "normal");
  if (sync == "normal") {
    o.full_sync = false;
  } else if (sync == "full") {
    o.full_sync = true;
  } else {
    return Status::invalidArgument("storage-sqlite: options.synchronous: must be normal or full (got " + sync + ")");
  }
  o.cache_bytes = v.getInt("cache_size", o.cache_bytes);
  o.busy_timeout_ms = v.getInt("busy_timeout", o.busy_timeout_ms);
  o.journal_size_limit = v.getInt("journal_size_limit", o.journal_size_limit);
  o.autocheckpoint_pages = v.getInt("wal_autocheckpoint", o.autocheckpoint_pages);
  o.max_readers = v.getInt("max_readers", o.max_readers);
  o.check_after_crash = v.getBool("check_after_crash", o.check_after_crash);
  if (o.max_readers < 1) o.max_readers = 1;
  return o;
}

}  // namespace lcc::plugins::sqlite
