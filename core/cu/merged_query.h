// merged_query.h — one CU answer for several LCCs (docs/protocol.md §3.4): GET /cu/query
// on a node with cu.peers, and `lcc cu query --cu URL --cu URL`. One code path for both:
// the sources are asked at once (one thread each, bounded by PeerOptions), their
// answers merged by CursorMerge, and the answer written as XML with the cursor token.
//
// Supported: format=xml without content. Content and the archive formats are refused
// (InvalidArgument, 400): each <url> names its source (`source="<store id>"`) and
// X-LCC-Sources says which URL answered for it, so content is read from that LCC.
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

// InvalidArgument for what a merged answer does not support (the message says what is),
// a bad cursor, or a source's refusal (a peer's 400); NotFound for a purged range (410);
// a store failure of this node. `local` may be null (the CLI: peers only);
// `default_limit` applies when the query has none (0: none).
Result<MergedResult> runMergedQuery(const proto::CuQuery& q, QueryEngine* local, const PeerOptions& peers,
                                    std::uint64_t default_limit);

// The answer: <lococa:result count=N last_seq=TOKEN unreachable="…"> and the records,
// each with source="<store id>".
std::string formatMergedXml(const MergedResult& r);

}  // namespace lcc::cu
