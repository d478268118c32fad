#include "kyoto_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <kchashdb.h>
#include <kcplantdb.h>

#include <algorithm>
#include <cstdlib>
#include <map>

namespace lcc::plugins::kyoto {

namespace kc = kyotocabinet;

const OptionSpec kOptionSpecs[] = {
    {"buckets", OptionType::kInt, "2000000", 16, 4000000000ll,
     "hash buckets of the big hash files (queue rows) when a file is created; rehash_load grows them with the rows"},
    {"mmap_size", OptionType::kSize, "32MiB", 0, 1ll << 40, "Kyoto Cabinet memory-mapped region per file (RSS)"},
    {"bucket_map", OptionType::kSize, "64MiB", 0, 1ll << 40,
     "a hash file (queue rows) is mapped far enough to hold its bucket array, up to this, when that is more than "
     "mmap_size (RSS)"},
    {"key_filter", OptionType::kInt, "16", 0, 64,
     "bits per bucket of the in-memory filter that answers 'certainly absent' for a hash file's keys without a "
     "file read (2 bytes a bucket at 16); 0: none"},
    {"page_cache", OptionType::kSize, "64MiB", 1ll << 20, 1ll << 40, "page cache of each ordered (B+ tree) file"},
    {"checkpoint_size", OptionType::kSize, "64MiB", 64ll << 10, 1ll << 40,
     "redo journal bytes after which the Kyoto files are synced and the journal trimmed"},
    {"max_unsynced", OptionType::kSize, "64MiB", 64ll << 10, 1ll << 40,
     "bytes of applied but unsynced batches held in memory before a sync is forced"},
    {"compact_growth", OptionType::kSize, "8MiB", 0, 1ll << 40,
     "a B+ tree file grown by more than this and more than its size after the last compaction is compacted "
     "(Kyoto defrag) at the next sync; 0: never"},
    {"rehash_load", OptionType::kInt, "2", 0, 1000,
     "rows per bucket of a hash file (queue rows) past which a checkpoint rebuilds it with twice as many buckets "
     "as rows; 0: never"},
    {"dir", OptionType::kString, "", 0, 4096, "folder of the store files; empty: node.data_dir; relative: under it"},
};
const std::size_t kOptionCount = sizeof(kOptionSpecs) / sizeof(kOptionSpecs[0]);

EngineOptions engineOptions(const OptionsView& o) {
  EngineOptions e;
  e.buckets = o.getInt("buckets", e.buckets);
  e.mmap_size = o.getInt("mmap_size", e.mmap_size);
  e.bucket_map = o.getInt("bucket_map", e.bucket_map);
  e.key_filter = o.getInt("key_filter", e.key_filter);
  e.page_cache = o.getInt("page_cache", e.page_cache);
  e.checkpoint_size = static_cast<std::uint64_t>(o.getInt("checkpoint_size", static_cast<std::int64_t>(e.checkpoint_size)));
  e.max_unsynced = static_cast<std::uint64_t>(o.getInt("max_unsynced", static_cast<std::int64_t>(e.max_unsynced)));
  e.compact_growth =
      static_cast<std::uint64_t>(o.getInt("compact_growth", static_cast<std::int64_t>(e.compact_growth)));
  e.rehash_load = o.getInt("rehash_load", e.rehash_load);
  e.dir = o.getString("dir", "");
  return e;
}

std::string kcError(kc::BasicDB& db, const std::string& path, const char* what) {
  const kc::BasicDB::Error e = db.error();
  return path + ": Kyoto Cabinet " + what + " failed: " + e.name() + " (" + e.message() + ")";
}

Status fsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::ioError(path + ": open for fsync failed");
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::ioError(path + ": fsync failed");
  return Status::ok();
}

std::int64_t hashHeadBytes(std::int64_t buckets) {
  // Header, free block pool (Kyoto's defaults: 2^10 slots of 6 bytes), 6-byte buckets;
  // rounded up to whole MiB, so a bucket count Kyoto rounds to a prime maps the same.
  constexpr std::int64_t kMiB = 1 << 20;
  const std::int64_t bytes = 64 + 6 * 1024 + 14 + 6 * std::max<std::int64_t>(buckets, 0);
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

std::int64_t hashMapBytes(const EngineOptions& options, std::int64_t buckets) {
  return std::max(options.mmap_size, std::min(options.bucket_map, hashHeadBytes(buckets)));
}

Result<std::unique_ptr<kc::BasicDB>> openKyoto(bool ordered, const std::string& path, std::uint32_t mode,
                                               const EngineOptions& options, std::int64_t buckets) {
  if (ordered) {
    auto db = std::make_unique<kc::TreeDB>();
    db->tune_map(options.mmap_size);
    db->tune_page_cache(options.page_cache);
    db->tune_buckets(std::max<std::int64_t>(1024, buckets / 64));
    if (!db->open(path, mode)) return Status::ioError(kcError(*db, path, "open"));
    return std::unique_ptr<kc::BasicDB>(std::move(db));
  }
  const std::int64_t map = hashMapBytes(options, buckets);
  auto db = std::make_unique<kc::HashDB>();
  db->tune_map(map);
  db->tune_buckets(buckets);
  if (!db->open(path, mode)) return Status::ioError(kcError(*db, path, "open"));
  const std::int64_t made_with = bucketsOf(*db);
  if (hashMapBytes(options, made_with) <= map) return std::unique_ptr<kc::BasicDB>(std::move(db));
  // The file was made with more buckets than asked (a rebuilt file): map it for those.
  if (!db->close()) return Status::ioError(kcError(*db, path, "close"));
  db = std::make_unique<kc::HashDB>();
  db->tune_map(hashMapBytes(options, made_with));
  if (!db->open(path, mode & ~static_cast<std::uint32_t>(kc::BasicDB::OTRUNCATE))) {
    return Status::ioError(kcError(*db, path, "open"));
  }
  return std::unique_ptr<kc::BasicDB>(std::move(db));
}

std::int64_t bucketsOf(kc::BasicDB& db) {
  std::map<std::string, std::string> status;
  if (!db.status(&status)) return 0;
  return std::max<std::int64_t>(0, std::atoll(status["bnum"].c_str()));
}

// What a B+ tree file takes compacted, at most, estimated when it is opened: its header
// and bucket array (8 KiB + 6 bytes a bucket) and every page at most Kyoto's page size.
// A file much larger than that is mostly holes (made before compaction existed): it
// counts as grown since its last compaction, so the first sync compacts it.
std::int64_t compactedSizeAtOpen(kc::BasicDB& db) {
  std::map<std::string, std::string> status;
  const std::int64_t size = db.size();
  if (!db.status(&status)) return size;
  const std::int64_t pages = std::atoll(status["pnum"].c_str());
  const std::int64_t page_size = std::atoll(status["psiz"].c_str());
  const std::int64_t buckets = std::atoll(status["bnum"].c_str());
  if (pages < 0 || page_size <= 0 || buckets <= 0) return size;
  return std::min(size, (8 << 10) + 6 * buckets + pages * page_size);
}

}  // namespace lcc::plugins::kyoto
