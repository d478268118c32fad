// cli_cp_sources.h — where a content provider's <url/> lines come from, shared by
// `lcc cp scan` / `lcc cp sitemap` (which print them) and `lcc cp sync` (which sends
// them): a folder tree with its scan state (cli_cp_scan.cc), or a site's sitemaps with
// their state (cli_sitemap.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/progress.h"
#include "common/mime_map.h"
#include "lcc/status.h"
#include "proto/cp_uns.h"
#include "sitemap/sitemap_state.h"

namespace lcc::cli {

// ---------------------------------------------------------------------------
// A folder tree

struct FileState {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string md5;
  std::string mime;
};
// Key: the file's path under the folder as a URL path (percent-encoded, '/' kept).
using ScanState = std::map<std::string, FileState>;

// State file: one line per file, "path<TAB>size<TAB>mtime_ns<TAB>md5<TAB>mime".
// A missing file is an empty state (*found false).
bool loadScanState(const std::string& path, ScanState& state, bool* found, std::string* err);
Status saveScanState(const std::string& path, const ScanState& state);

struct ScannedFile {
  std::string key;
  FileState state;
  bool changed = false;  // new, or size, mtime or type differ from the old state
};

// Walks `dir` (regular files, symbolic links skipped, sorted by key; `skip` — a state
// file inside the folder — left out). A file whose size, mtime and type equal the old
// state keeps its MD5; the others are read and hashed. False with *err when the folder
// cannot be read. Progress: "scanned N of M files, K new or changed".
bool scanTree(const std::string& dir, const std::vector<std::string>& skip, const MimeMap& mime,
              const ScanState& old_state, std::vector<ScannedFile>& files, TtyProgress& progress, std::string* err);
// The <url/> attributes of a scanned file (c m sz md5 mt) and of a removed one (c m op).
proto::UrlAttrs scanUpdateAttrs(const std::string& base_url, const ScannedFile& f);
proto::UrlAttrs scanDeleteAttrs(const std::string& base_url, const std::string& key, const FileState& s);
// --base-url checked (http or https) and ending in '/'; "" when it is not a URL.
std::string scanBaseUrl(std::string base);

// ---------------------------------------------------------------------------
// Sitemaps

// Reads a sitemap or sitemap index (URL or file) with its indexes followed; prints the
// skipped entries on standard error. False with *err when any sitemap could not be read.
bool readSitemaps(const std::string& tool, const std::string& source, sitemap::SitemapPages& pages, std::string* err);
bool loadSitemapState(const std::string& path, sitemap::SitemapPages& state, bool* found, std::string* err);
Status saveSitemapState(const std::string& path, const sitemap::SitemapPages& pages);
// The <url/> attributes of one page: c, m (from the path), and mt or op="delete".
proto::UrlAttrs sitemapAttrs(const MimeMap& mime, const sitemap::SitemapChange& change);

}  // namespace lcc::cli
