// member_path.h — the tar member path of one URL identity (docs/protocol.md §3):
// `<pid>/<host>/<path>`, readable, never absolute, never `.` or `..`, and unique per
// (pid, c, m) by construction, with no state kept between records.
//
// The rules (README.md has examples):
//  - Each component is percent-encoded: bytes outside [A-Za-z0-9-._~,=@+!] (host:
//    outside [A-Za-z0-9-._~]) become %XX, `%` included, so encoding is injective and
//    the result is plain ASCII. `.` and `..` become `%2E`, `%2E%2E`.
//  - <host> is the authority's host, then `+PORT` when there is a port, then
//    `+SCHEME` when the scheme is not `http`.
//  - The URL path's segments are folders; the last segment, with the query and
//    fragment, is the file name.
//  - Raw `(` `)` appear only in file names and raw `[` `]` only in folder names, so a
//    file never has the name of a folder: a file name is bare (`page.html`) only when
//    its extension names the record's MIME type (html -> text/html); otherwise the
//    MIME type follows in parentheses: `docs(text%2Fhtml)`, `(index)(text%2Fhtml)` for
//    a path ending in `/`. A folder whose name would look like a bare file gets `[d]`;
//    an empty folder segment is `[empty]`.
//  - Components longer than 200 bytes keep their first 96 bytes and end with an MD5
//    of the whole component: `...(#md5)` for files, `...[#md5]` for folders. A path
//    longer than 1024 bytes keeps its first folders and ends with `(#md5 of c and m)`.
#pragma once

#include <string>
#include <string_view>

#include "lcc/types.h"

namespace lcc::plugins::cu_tar {

std::string memberPath(ProviderId pid, std::string_view url, std::string_view mime);

}  // namespace lcc::plugins::cu_tar
