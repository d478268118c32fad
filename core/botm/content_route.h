// content_route.h — GET /content/<file> on the node's HTTP port: a leaf BOT-M serves
// the content files of its machine to CUs on other machines (design document §9; issue 6).
//
// <file> must be exactly a name this BOT-M's FilenameStore could have issued
// ("00/00/7b" with botm.fanout 256); anything else — traversal, absolute paths,
// "..", other spellings, query tricks — is 404 without touching the file system.
// The file is opened component by component below botm.content_dir with O_NOFOLLOW,
// so a symbolic link anywhere below the content folder is refused (404), never
// followed; it must be a regular file. An absent file is 404.
// 200: a file up to 64 KiB goes as one whole body with Content-Length (one write, no
// stream thread: the common web page); a larger one is streamed through
// Response::stream (bounded memory: 64 KiB reads into the server's bounded sink),
// chunked for HTTP/1.1. Headers: X-LCC-Machine (this machine) and X-LCC-Size (the
// file's size at open: what the body holds) always, and X-LCC-Response-Head (base64
// of the robot's side file <file>.http, common/response_head.h) when there is one of
// at most 24 KiB. A streamed file that shrinks
// while it is sent cuts the body (the client sees a truncated answer); a small one
// that changes while it is read is 503.
// No authentication: the same exposure as GET /cu/query, which already serves this
// content (docs/design-decisions.md "Content reads across machines").
// THREADS: the handler runs on an HTTP worker, the body on an HTTP stream worker;
// nothing is shared with the BOT-M's strands.
#pragma once

#include <cstdint>
#include <string>

#include "common/metrics.h"
#include "http/http_server.h"

namespace lcc::botm {

struct ContentRouteOptions {
  std::string content_dir;  // botm.content_dir or <data_dir>/content
  std::string machine;      // node.machine_id
  std::uint32_t fanout = 256;
};

inline constexpr std::string_view kContentRoutePrefix = "/content/";

// Counters lcc_botm_content_{reads,refused,bytes}_total in `metrics`.
void addContentRoute(http::Router& router, const ContentRouteOptions& options, Metrics& metrics);

}  // namespace lcc::botm
