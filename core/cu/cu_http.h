// cu_http.h — GET /cu/query on the HTTP port (docs/protocol.md §3.3).
//
// The handler parses the parameters and runs the counting pass on the HTTP worker
// thread, so a bad query is a 400 with the query_rejected XML and a store failure a
// 500; then it answers 200 with the exporter's Content-Type and streams the answer
// through Response::stream (chunked; the sink blocks while the client is slow).
// Headers: X-LCC-Count, X-LCC-Last-Seq (the answer's count and last_seq).
#pragma once

#include "cu/query_engine.h"
#include "http/http_server.h"

namespace lcc::cu {

http::Response handleCuQuery(QueryEngine& engine, const http::Request& request);
void addCuRoutes(http::Router& router, QueryEngine& engine);

}  // namespace lcc::cu
