// cursor_merge.h — the merge policy of a CU answer made of several LCCs' answers
// (cu.peers, `lcc cu query --cu URL --cu URL`; docs/protocol.md §3.4).
//
// CursorMerge takes each source's answer to "changes since your part of the cursor"
// and returns the merged answer and its cursor. No I/O: merged_query.h asks the
// sources. The rules, which keep "never repeats, never misses" per source:
//  - An answer is checked first: its records strictly ascending in seq, each within
//    (since, last_seq], a source id not seen in an earlier answer. One that fails is
//    taken as unreachable (a hostile or broken peer moves nothing).
//  - The limit applies to the merged answer, shared fairly: each source gets an equal
//    share, and what a source does not use goes to the others (water-filling), so a
//    busy source never starves a quiet one.
//  - Order: by source id, then seq (each source's records stay in change order).
//  - A source's new part: its last_seq when all its records were taken, else the seq
//    of the last record taken (its since when none), and never below the part it had.
//  - An unreachable source, and any part of the incoming cursor no answer named (a
//    peer that is down), keeps its part unchanged.
// THREADS: a value; merge() is const.
#pragma once

#include <string>
#include <vector>

#include "lcc/types.h"
#include "proto/cu_cursor.h"

namespace lcc::cu {

// One source's answer to the query with `since seq` = its part of the cursor.
struct SourceAnswer {
  std::string where;       // for messages: the peer's URL, or "this node"
  bool reachable = false;  // false: `why` says what failed; nothing else is read
  std::string why;
  std::string source;      // the store's identity (lcc.store_id)
  ChangeSeq since = 0;     // the since seq it was asked for
  ChangeSeq last_seq = 0;  // its answer's last_seq
  std::vector<ContentRecord> records;  // in seq order
};

struct MergedRecord {
  std::string source;
  ContentRecord record;
};

struct MergedAnswer {
  std::vector<MergedRecord> records;  // by source, then seq
  proto::CuCursor cursor;             // pass back as `since seq` (encodeCuCursor)
  std::vector<std::string> unreachable;  // "where: why" of each source left unchanged
  std::vector<std::pair<std::string, std::string>> sources;  // store id → where, of each source merged
};

class CursorMerge {
 public:
  // `limit`: at most this many records in the merged answer (0: no limit).
  CursorMerge(proto::CuCursor since, std::uint64_t limit) : since_(std::move(since)), limit_(limit) {}

  MergedAnswer merge(std::vector<SourceAnswer> answers) const;

  // The fair shares of `limit` over sources holding `available` records each.
  static std::vector<std::size_t> shares(const std::vector<std::size_t>& available, std::uint64_t limit);

 private:
  // Empty when `a` may be merged; else why not.
  std::string refusal(const SourceAnswer& a, const std::vector<std::string>& seen) const;

  const proto::CuCursor since_;
  const std::uint64_t limit_;
};

}  // namespace lcc::cu
