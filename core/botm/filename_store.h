// filename_store.h — the BOT-M's only persistent state: which content file names
// may be handed out next (design document §7 "filename management").
//
// A name is a number n, spelled as a path of a two-level fan-out:
//   "<d1>/<d2>/<n in hex>"  with d2 = (n / F) % F, d1 = (n / F²) % F, F = botm.fanout,
// the folder parts in fixed-width lower-case hex (F = 256: "00/00/7b" is name 123).
//
// DURABILITY (never hand out a name that may still be referenced):
//  - New names come from a counter. Before the counter passes the durably reserved
//    mark, the store appends "R <mark + batch>" to its log and syncs: one sync per
//    `reserve_batch` new names. After a restart counting resumes at the mark, so a
//    name handed out before a crash is never handed out again (the unused rest of the
//    last range is skipped).
//  - Freed names (failed or unchanged fetches, deletes) are appended "F <n>" without a
//    sync: losing one in a crash only leaks a number. Before names are taken from the
//    free list, "T <n>..." is appended and synced (one sync per `take_batch` names), so
//    a reused name can never reappear as free after a crash.
//  - At open the log is replayed onto the snapshot, a new snapshot is written
//    atomically (write, sync, rename, sync folder) and the log starts empty; the same
//    compaction runs at the first allocate() after the log passes `compact_bytes`
//    (names taken and not handed out yet are left out of the snapshot: after a crash
//    they are lost, never free).
// A failed write or sync (sync() included) makes the store failed (sticky):
// allocate() then fails. Swept under injected faults in
// tests/botm/botm_filename_fault_sweep_test.cc (docs/reliability.md).
// THREADS: one thread at a time (the BOT-M's dispatch strand).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "lcc/env.h"
#include "lcc/status.h"

namespace lcc::botm {

struct FilenameStoreOptions {
  std::uint32_t fanout = 256;
  std::uint64_t reserve_batch = 4096;
  std::size_t take_batch = 256;
  std::uint64_t compact_bytes = 1u << 20;
};

class FilenameStore {
 public:
  // Opens (creating) the state in `state_dir` (files filenames.snapshot, filenames.log).
  static Result<std::unique_ptr<FilenameStore>> open(Env* env, const std::string& state_dir,
                                                     FilenameStoreOptions options = {});
  ~FilenameStore();

  // A name that is not referenced; durable as "taken" before it is returned.
  Result<std::uint64_t> allocate();
  // The name is no longer referenced (its file is gone or was never made).
  void release(std::uint64_t n);

  std::string format(std::uint64_t n) const;  // "00/00/7b"
  // Inverse of format(); nullopt for anything this store would not have made
  // (so a hostile name can never reach outside the content folder).
  std::optional<std::uint64_t> parse(std::string_view name) const;
  // The same check without a store (the HTTP content route runs on other threads):
  // `fanout` as in FilenameStoreOptions.
  static std::optional<std::uint64_t> parseName(std::string_view name, std::uint32_t fanout);
  static std::string formatName(std::uint64_t n, std::uint32_t fanout);

  std::uint64_t nextNew() const { return next_; }
  std::uint64_t reserved() const { return reserved_; }
  std::size_t freeCount() const { return free_.size() + taken_.size(); }
  bool isFree(std::uint64_t n) const;
  bool failed() const { return !failed_.isOk(); }
  // Syncs the log (shutdown).
  Status sync();

 private:
  FilenameStore(Env* env, std::string dir, FilenameStoreOptions o);
  Status load();
  Status compact();
  Status appendLine(const std::string& line, bool sync);

  Env* env_;
  std::string dir_;
  FilenameStoreOptions opts_;
  std::uint64_t next_ = 0;
  std::uint64_t reserved_ = 0;
  std::deque<std::uint64_t> free_order_;       // FIFO: the oldest freed name is reused first
  std::unordered_set<std::uint64_t> free_;     // members of free_order_
  std::deque<std::uint64_t> taken_;            // durably taken from the free list, not handed out yet
  std::unique_ptr<WritableFile> log_;
  std::uint64_t log_bytes_ = 0;
  Status failed_;
};

}  // namespace lcc::botm
