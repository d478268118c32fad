// cu_http.h — GET /cu/query on the HTTP port (docs/protocol.md §3.3, §3.4).
//
// The handler parses the parameters and runs the counting pass on the HTTP worker
// thread, so a bad query is a 400 with the query_rejected XML and a store failure a
// 500; then it answers 200 with the exporter's Content-Type and streams the answer
// through Response::stream (chunked; the sink blocks while the client is slow).
// Headers: X-LCC-Count, X-LCC-Last-Seq (the answer's count and last_seq), X-LCC-Source
// (this store's id, when the QM has written it) and X-LCC-Since (the since seq used).
// With cu.peers (and no `peers=no`), the answer is merged from this node and its peers
// (merged_query.h): the list is built whole on the worker thread (a refusal is a 400
// before the body), then streamed in the asked format by the same exporter
// (merged_export.h), content read from the LCC holding each record: X-LCC-Last-Seq is
// the cursor token, X-LCC-Sources names who answered, X-LCC-Peers-Unreachable counts
// who did not.
//
// GET /cu/content/<store id>/<seq>[/<key>] (handleRecordContent; <key>: the record's
// encodeUrlKey(), percent-encoded, for a point read): the content of the record this
// store holds under that seq, what a merging node reads a peer's content by: 200
// with X-LCC-Source, X-LCC-Size (= Content-Length, the record's size), X-LCC-MD5 (the
// record's), X-LCC-Response-Head when kept; 404 when the store is another, no record
// has that seq now (replaced or removed since), it is a removal, or its content cannot
// be read (the same cases as missing= in an answer).
#pragma once

#include "cu/peer_source.h"
#include "cu/query_engine.h"
#include "http/http_server.h"

namespace lcc::cu {

http::Response handleCuQuery(QueryEngine& engine, const PeerOptions& peers, const http::Request& request);
http::Response handleRecordContent(QueryEngine& engine, const http::Request& request);
// `peers` must outlive the router (the role owns both).
void addCuRoutes(http::Router& router, QueryEngine& engine, const PeerOptions& peers);

}  // namespace lcc::cu
