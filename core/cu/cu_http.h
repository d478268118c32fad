// cu_http.h — GET /cu/query on the HTTP port (docs/protocol.md §3.3, §3.4).
//
// The handler parses the parameters and runs the counting pass on the HTTP worker
// thread, so a bad query is a 400 with the query_rejected XML and a store failure a
// 500; then it answers 200 with the exporter's Content-Type and streams the answer
// through Response::stream (chunked; the sink blocks while the client is slow).
// Headers: X-LCC-Count, X-LCC-Last-Seq (the answer's count and last_seq), X-LCC-Source
// (this store's id, when the QM has written it) and X-LCC-Since (the since seq used).
// With cu.peers (and no `peers=no`), the answer is merged from this node and its peers
// (merged_query.h), built whole on the worker thread: X-LCC-Last-Seq is the cursor token,
// X-LCC-Sources names who answered, X-LCC-Peers-Unreachable counts who did not.
#pragma once

#include "cu/peer_source.h"
#include "cu/query_engine.h"
#include "http/http_server.h"

namespace lcc::cu {

http::Response handleCuQuery(QueryEngine& engine, const PeerOptions& peers, const http::Request& request);
// `peers` must outlive the router (the role owns both).
void addCuRoutes(http::Router& router, QueryEngine& engine, const PeerOptions& peers);

}  // namespace lcc::cu
