// response_head.h — the HTTP response head a robot keeps with a content file.
//
// WHO: the robot writes it (core/bot), the BOT-M removes a side file with its content
// file (core/botm), the CU reads it for the WARC answer (core/cu, plugins/cu-warc).
// WHERE: the attribute kResponseHeadAttribute of the content file itself (Env
// attributes; "user.lcc.response-head" on Linux), set on the temporary file before the
// rename, so the body and its head appear together and go together. When the file
// system refuses the attribute (none there, or the head is over its bound: ext4 takes
// about 4 KB), the side file `<content file>.http` in the same folder, written after
// the rename, as before (docs/design-decisions.md, "Response heads as attributes").
// Readers take the attribute first, then the side file.
// FORMAT (both places): one line `lcc-head 1 <md5 of the content>\n`, then the status
// line and header lines as fetched, ending with the empty line. The MD5 ties the head
// to one body: a side file left by an earlier fetch of the same name, or cut by a
// crash, is never paired with other bytes (decodeResponseHead answers empty).
// THREADS: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lcc {

// The largest side file or attribute a reader takes (the robot keeps at most
// bot.max_response_head).
constexpr std::size_t kMaxResponseHeadFile = 1 << 20;

// GET /content/<file> (core/botm/content_route.h) sends the head as stored (attribute
// or side file), base64, in this header when it is at most kMaxHeadHeaderFile bytes,
// so another machine's CU can export the head too (core/cu/remote_content.h).
inline constexpr std::string_view kResponseHeadHeader = "X-LCC-Response-Head";
constexpr std::size_t kMaxHeadHeaderFile = 24 * 1024;

// The Env attribute of a content file that holds its head (encodeResponseHead bytes).
inline constexpr char kResponseHeadAttribute[] = "response-head";

// "<content_path>.http", where the head goes when the attribute is refused.
std::string responseHeadPath(std::string_view content_path);
// The stored bytes (attribute value or side file) for `head` of the content whose MD5
// is `md5`.
std::string encodeResponseHead(std::string_view md5, std::string_view head);
// The head in `file` (stored bytes), if it belongs to content with MD5 `md5` and is a whole head
// (a status line "HTTP/...", ends with an empty line); else empty.
std::string decodeResponseHead(std::string_view file, std::string_view md5);

}  // namespace lcc
