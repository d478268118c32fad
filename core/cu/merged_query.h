// merged_query.h — one CU answer for several LCCs (docs/protocol.md §3.4): GET /cu/query
// on a node with cu.peers, and `lcc cu query --cu URL --cu URL`. One code path for both:
// the sources are asked at once (one thread each, bounded by PeerOptions) for the list
// (format=xml without content, whatever the query's format), their answers merged by
// CursorMerge; merged_export.h then writes the answer in the query's format, content
// read from the LCC holding each record.
// THREADS: run() blocks; call it off the io threads.
#pragma once

#include <string>
#include <vector>

#include "cu/cursor_merge.h"
#include "cu/peer_source.h"
#include "proto/cu_query.h"

namespace lcc::cu {

class QueryEngine;

struct MergedResult {
  MergedAnswer answer;
  std::string token;                // encodeCuCursor(answer.cursor)
};

// InvalidArgument for a bad query or cursor, or a source's refusal (a peer's 400); NotFound for a purged range (410);
// a store failure of this node. `local` may be null (the CLI: peers only);
// `default_limit` applies when the query has none (0: none).
Result<MergedResult> runMergedQuery(const proto::CuQuery& q, QueryEngine* local, const PeerOptions& peers,
                                    std::uint64_t default_limit);

}  // namespace lcc::cu
