// cu_cursor.h — the opaque CU cursor: one `last_seq` for an answer merged from several
// change-sequence spaces (docs/protocol.md §3.4).
//
// A single LCC answers `last_seq` as a decimal seq. An answer merged from several LCCs
// (cu.peers, `lcc cu query --cu URL --cu URL`) has one seq per source, the source
// being a store's identity (lcc.store_id, common/content_meta.h), never an address.
// The token is "c1." + base64url (no padding) of:
//   varint n, then n × (varint length, source id bytes, varint seq), then the
//   CRC-32C of those bytes, 4 bytes little-endian.
// Sources are sorted and unique, so one cursor has exactly one token (the fuzz target
// checks encode(decode(t)) == t). The same token serves a later source kind (one seq per
// PostgreSQL shard, issue 31 §2): a source is any id of kCuSourceIdChars.
// WHO: the CU (GET /cu/query), the query codec (cu_query.h), `lcc cu query`.
// THREADS: values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::proto {

inline constexpr std::string_view kCuCursorPrefix = "c1.";
inline constexpr std::size_t kCuCursorMaxSources = 64;    // parts in one token
inline constexpr std::size_t kCuSourceIdMaxLength = 64;   // bytes of one source id
inline constexpr std::size_t kCuCursorMaxLength = 8192;   // characters of a token
// A source id: 1-64 of these characters.
inline constexpr std::string_view kCuSourceIdChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:";

bool validCuSourceId(std::string_view id);

// Per-source seqs, sorted by source, unique. A source that is absent has seq 0 (everything).
class CuCursor {
 public:
  struct Part {
    std::string source;
    ChangeSeq seq = 0;
    friend bool operator==(const Part&, const Part&) = default;
  };

  ChangeSeq seqOf(std::string_view source) const;
  // Sets the part of `source` (a valid id; InvalidArgument past kCuCursorMaxSources).
  Status set(std::string_view source, ChangeSeq seq);
  const std::vector<Part>& parts() const { return parts_; }

  friend bool operator==(const CuCursor&, const CuCursor&) = default;

 private:
  std::vector<Part> parts_;
};

// True when `text` is meant as a token (starts with kCuCursorPrefix), not a decimal seq.
bool looksLikeCuCursor(std::string_view text);

std::string encodeCuCursor(const CuCursor& cursor);
// InvalidArgument with a message a client can act on: wrong prefix or version, not
// base64url, too long, a checksum mismatch ("mangled"), bad or unsorted source ids.
Result<CuCursor> decodeCuCursor(std::string_view token);

}  // namespace lcc::proto
