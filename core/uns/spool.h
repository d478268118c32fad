// spool.h — the UNS spool (the "unsdb", design document §5, §10, §11): the sets that
// wait for the QM, in an lcc::Journal (<spool_dir>/journal), read back for replay.
//
// Records (one journal payload each; core/uns/README.md "Spool records"):
//  - a whole set: its `<set …>…</set>` element, exactly as it is sent to the QM;
//  - a set in parts (issue 13: a streamed set the QM could not take as it came):
//      `B <pid> <p|f>\n`                  when it starts,
//      `P <B's position>\n<url/>…`        one per part, as the parts arrive,
//      `E <B's position> <id> <count>\n`  at its end (the id is given then, so sets
//                                         wait in id order whatever their length),
//      `A <B's position>\n`               when it was cut off (its CP went away).
// A set waits in the spool once its last record (the whole set, or its E) is synced;
// a B without an E (cut off, or the UNS died) is skipped at open and never sent.
// Parts are written out (and synced, which costs nothing extra) once `write_bytes`
// wait unwritten, so the journal's buffer stays small; a set in parts is read back
// for replay part by part (readParts), never whole.
// Bytes: `bytes()` counts what waits (sets and open sets in parts); the bytes of sets
// cut off count against the limit too (`full()`) until the journal is trimmed past them,
// so the disk use stays bounded by `limit` plus one segment.
// THREADS: one thread (the forwarder's strand); bytes(), sets(), full(), corruptions()
// may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "lcc/env.h"
#include "lcc/status.h"
#include "lcc/support/journal.h"
#include "lcc/types.h"

namespace lcc::uns {

struct SpooledSet {
  JournalPos first = 0;  // its first record (the B of a set in parts)
  JournalPos pos = 0;    // its last record (the whole set, or the E)
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;  // payload bytes of its records
  bool in_parts = false;
  ProviderId pid = 0;  // in parts: from the B and the E
  SetKind kind = SetKind::kPartial;
  std::uint64_t count = 0;
  std::string xml;  // a whole set's text while cached (empty: only in the journal)
};

struct SpoolOptions {
  std::string dir;                          // the journal's folder
  std::uint64_t limit = 1ull << 30;         // uns.spool_limit
  std::uint64_t write_bytes = 4ull << 20;   // parts written out past this many unwritten bytes
  std::uint64_t cache_budget = 64ull << 20; // whole sets kept in memory too, for replay
  std::function<void(const std::string&)> on_corrupt;  // accepted sets may be lost
};

// Set ids: strictly increasing per UNS name, reserved in blocks of `block` in a file
// (<spool_dir>/set_id, replaced atomically), never reused across restarts.
class SetIds {
 public:
  SetIds(Env* env, std::string path, std::uint64_t block) : env_(env), path_(std::move(path)), block_(block) {}
  // Reads the file; ids go on above it and above `highest` (the spool's highest id).
  Status open(std::uint64_t highest);
  Result<std::uint64_t> next();
  std::uint64_t last() const { return last_.load(); }  // the last id handed out (0: none)

 private:
  Status reserve();
  Env* env_;
  std::string path_;
  std::uint64_t block_, next_ = 1, limit_ = 0;
  std::atomic<std::uint64_t> last_{0};
};

class Spool {
 public:
  Spool(Env* env, SpoolOptions options);
  ~Spool();

  // Opens the journal and learns what an earlier run left (sets in parts without their
  // E are dropped and logged: they were never acknowledged).
  Status open();
  // After a failed write (usable() false): opens the journal again and re-reads it.
  // The caller makes sure nothing of the spool is being sent.
  Status reopen();
  bool usable() const { return journal_ != nullptr && !failed_; }
  std::uint64_t highestId() const { return highest_id_; }

  // ---- the sets that wait, in id order ----
  std::size_t size() const { return sets_.size(); }
  bool empty() const { return sets_.empty(); }
  SpooledSet& operator[](std::size_t i) { return sets_[i]; }
  // A set whose last record was synced; placed behind every set with a lower id.
  void insert(SpooledSet s);
  // The QM acked the first set: it goes, and the journal is trimmed below what waits.
  void popFront();
  // A set that cannot be read back (lost): it goes.
  void erase(std::size_t i);

  // ---- writing (nothing is durable before commit()) ----
  // True when `more` bytes would not be taken: what waits, plus the bytes of sets cut
  // off and not yet trimmed, reached the limit.
  bool full(std::uint64_t more) const;
  Result<SpooledSet> appendWhole(std::uint64_t id, std::string_view xml);
  Result<JournalPos> appendBegin(ProviderId pid, SetKind kind);  // its position names the set
  // One part of an open set. Busy when the spool is full (the caller aborts the set);
  // NotFound when the set is not open (a failed write dropped it).
  Status appendPart(JournalPos begin, std::string urls_xml);
  // The set's end; it waits once the commit that follows returned OK (insert() it then).
  Result<SpooledSet> appendEnd(JournalPos begin, std::uint64_t id, std::uint64_t count);
  // A set cut off: an A record; its bytes count as cut off until trimmed.
  void abort(JournalPos begin);
  Status commit();  // writes and syncs; a failure makes the spool unusable

  // ---- reading back ----
  // Makes sure sets [from, from + n) that are whole have their text.
  Status loadTexts(std::size_t from, std::size_t n);
  // Reads the parts of set `s` (in parts) recorded after *after (start with s.first),
  // calling fn(urls) for each, until about `budget` bytes were read or its E was
  // reached (then *after == s.pos). Corruption when the journal ends before its E.
  Status readParts(const SpooledSet& s, JournalPos* after, std::uint64_t budget,
                   const std::function<void(std::string_view)>& fn);

  std::uint64_t bytes() const { return bytes_.load(); }
  std::uint64_t sets() const { return sets_count_.load(); }
  std::uint64_t corruptions() const { return corruptions_.load(); }
  // Bytes of the spool held in memory: cached whole sets and unwritten records.
  std::uint64_t heldBytes() const { return cache_bytes_ + unwritten_; }
  // Accepted sets may be lost: logged, counted, and `on_corrupt` told.
  void reportCorruption(const std::string& detail);

 private:
  struct OpenSet {
    ProviderId pid = 0;
    SetKind kind = SetKind::kPartial;
    std::uint64_t bytes = 0;
    JournalPos last = 0;
  };
  static SpooledSet partsSet(JournalPos first, JournalPos last, std::uint64_t id, std::uint64_t bytes,
                             const OpenSet& o, std::uint64_t count);
  Status load(std::map<JournalPos, std::string> cached);
  Status fail(const Status& s);
  Status append(std::string_view payload, JournalPos* pos);
  void dropOpen(JournalPos begin, JournalPos last);
  void trim();

  Env* env_;
  SpoolOptions opt_;
  std::unique_ptr<Journal> journal_;
  bool failed_ = false;
  std::deque<SpooledSet> sets_;
  std::map<JournalPos, OpenSet> open_;  // sets in parts being written, by B position
  std::multiset<JournalPos> firsts_;    // first records of what waits or is being written
  std::deque<std::pair<JournalPos, std::uint64_t>> cut_;  // sets cut off: last record, bytes
  std::uint64_t cache_bytes_ = 0, unwritten_ = 0, highest_id_ = 0;
  std::atomic<std::uint64_t> bytes_{0}, cut_bytes_{0}, sets_count_{0}, corruptions_{0};
};

}  // namespace lcc::uns
