// journal.h — the durable intake journal (docs/architecture.md rule 1), shared by the
// QM intake and the UNS spool.
//
// A journal is a folder of segment files `<dir>/<first-position>.jnl`. A record is
// appended with a header {magic, length, crc32c of the payload, position}; append()
// buffers, commit() writes and fdatasyncs everything appended so far (group commit:
// one sync for all records appended by then). Positions are monotonic record
// numbers starting at 1 and never reused, even across trims and restarts.
// Replay reads records in order and stops at the first record that is truncated or
// fails its checksum at the tail (a torn last write): nothing partial is replayed.
// A bad record followed by good ones is corruption: replay reports it (the QM then
// raises cache-crash) and stops there.
// trimUpTo(p) drops whole segments whose records are all <= p.
//
// THREADS: one writer thread; replay/open before the writer starts.
// DURABILITY: a record is durable when commit() that followed its append() returned
// OK. After a failed commit the journal is failed (sticky), except a Busy one (no
// descriptor to open a segment file or its folder, EMFILE/ENFILE): nothing was written,
// the records stay appended and the next commit() tries again (issue 25).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lcc/env.h"
#include "lcc/status.h"

namespace lcc {

// CRC-32C (Castagnoli) of `n` bytes at `data`, continuing `crc` (0 to start). The
// journal's record checksum; the CU cursor token (core/proto/cu_cursor.h) uses it too.
std::uint32_t crc32cExtend(std::uint32_t crc, const void* data, std::size_t n);

using JournalPos = std::uint64_t;  // 0: "nothing"

struct JournalOptions {
  std::uint64_t segment_bytes = 64ull << 20;  // start a new segment past this size
  std::uint64_t max_record_bytes = 1ull << 30;
};

struct JournalReplayInfo {
  JournalPos first = 0;        // first record replayed (0 if none)
  JournalPos last = 0;         // last good record
  std::uint64_t records = 0;
  bool torn_tail = false;      // a partial record at the end was dropped (normal after a crash)
  bool corruption = false;     // a bad record was followed by more data
  std::string detail;
};

class Journal {
 public:
  virtual ~Journal() = default;

  // Opens (creating) the journal in `dir`, truncating a torn tail. Call replay()
  // before the first append to learn what is there.
  static Result<std::unique_ptr<Journal>> open(Env* env, const std::string& dir, const JournalOptions& options = {});

  // Calls fn(pos, payload) for every good record with pos > after, in order.
  // fn returning a non-OK status stops the replay with that status.
  virtual Result<JournalReplayInfo> replay(JournalPos after,
                                           const std::function<Status(JournalPos, std::string_view)>& fn) = 0;

  // Buffers one record; returns its position. Durable only after commit().
  virtual Result<JournalPos> append(std::string_view payload) = 0;
  // Writes and syncs everything appended. Returns the last durable position.
  virtual Result<JournalPos> commit() = 0;

  // Drops segments holding only records <= pos. Safe at any time.
  virtual Status trimUpTo(JournalPos pos) = 0;
  // Drops every record (nothing may be appended and not committed) and goes on from
  // position max(next, lastPosition() + 1), durably: the next append() gets it, also
  // after a restart. For a QM whose positions (pset ids) must stay above those another
  // QM wrote to a shared store (core/qm, qm.ack_after_store).
  virtual Status skipTo(JournalPos next) = 0;

  virtual JournalPos lastPosition() const = 0;   // last appended (maybe not durable)
  virtual JournalPos durablePosition() const = 0;
  virtual std::uint64_t sizeBytes() const = 0;   // bytes in all segments
};

}  // namespace lcc
