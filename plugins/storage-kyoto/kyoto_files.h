// kyoto_files.h — opening Kyoto Cabinet files the way the store wants them, and the
// plugin's options (README.md, "Options").
//
// MEMORY MAP OF A HASH FILE (README.md, "Row count, bucket map and absent-key filter"): Kyoto maps the first
// `mmap_size` bytes of a file and reads everything beyond with one pread per record
// or bucket. A hash file's head is its bucket array (6 bytes a bucket, after a 6 KiB
// free block pool), read on every lookup: a hash file is mapped far enough to hold it,
// up to `bucket_map` bytes, even when that is more than `mmap_size`. Mapped pages count
// in the process's RSS once touched.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lcc/options.h"
#include "lcc/status.h"

namespace kyotocabinet {
class BasicDB;
}

namespace lcc::plugins::kyoto {

struct EngineOptions {
  std::int64_t buckets = 2000000;          // HashDB buckets (fixed when the file is made)
  std::int64_t mmap_size = 32ll << 20;     // Kyoto mmap per file
  std::int64_t bucket_map = 64ll << 20;    // hash files: mmap up to this to hold the bucket array
  std::int64_t key_filter = 16;            // hash files: bits of the absent-key filter per bucket (0: none)
  std::int64_t page_cache = 64ll << 20;    // TreeDB page cache per file
  std::uint64_t checkpoint_size = 64ull << 20;  // journal bytes that trigger a checkpoint
  std::uint64_t max_unsynced = 64ull << 20;     // overlay bytes that force a sync
  std::uint64_t compact_growth = 8ull << 20;    // B+ tree file growth that triggers compaction (0: never)
  std::int64_t rehash_load = 2;            // rows per bucket past which a hash file is rebuilt (0: never)
  std::string dir;                         // "" = host.data_dir
};

// Reads the plugin's options (already validated against the descriptor table).
EngineOptions engineOptions(const OptionsView& options);
extern const OptionSpec kOptionSpecs[];
extern const std::size_t kOptionCount;

// "<path>: Kyoto Cabinet <what> failed: <error>".
std::string kcError(kyotocabinet::BasicDB& db, const std::string& path, const char* what);
Status fsyncPath(const std::string& path);

// The bytes of a hash file's head up to the end of its bucket array (Kyoto's layout).
std::int64_t hashHeadBytes(std::int64_t buckets);
// What a hash file of `buckets` buckets is mapped with (MEMORY MAP above).
std::int64_t hashMapBytes(const EngineOptions& options, std::int64_t buckets);

// Opens (mode) one Kyoto file: a B+ tree (ordered) or a hash file made with `buckets`
// (an existing hash file keeps the count it was made with, and is mapped for that).
Result<std::unique_ptr<kyotocabinet::BasicDB>> openKyoto(bool ordered, const std::string& path, std::uint32_t mode,
                                                         const EngineOptions& options, std::int64_t buckets);

// The bucket count a Kyoto file was made with (0: unknown).
std::int64_t bucketsOf(kyotocabinet::BasicDB& db);
// What a B+ tree file takes compacted, at most (see kyoto_files.cc).
std::int64_t compactedSizeAtOpen(kyotocabinet::BasicDB& db);

}  // namespace lcc::plugins::kyoto
