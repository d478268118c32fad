// mime_map.h — the MIME type of a file or URL from its extension, for what describes
// a site without saying its types (lcc cp scan, lcc cp sitemap, IndexNow, sitemap
// polls): a built-in map, or a mime.types file (`--mime-map`) laid over it.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace lcc {

class MimeMap {
 public:
  MimeMap();  // the built-in map
  // Lays a mime.types-style file ("type/subtype ext ext ...", '#' comments) over the
  // map. False, with *err as "FILE:LINE: why", if it cannot be read or parsed.
  bool load(const std::string& path, std::string* err);
  // The type of an extension (without the dot, any case); application/octet-stream
  // when it is unknown.
  std::string forExtension(std::string ext) const;
  // The type of a URL path: its last segment's extension; a path that ends in '/' or
  // whose last segment has no extension is a page (text/html).
  std::string forUrlPath(std::string_view path) const;
  // The type of a URL in normal form (lcc/support/url_norm.h), from its path as above;
  // text/html when it has no normal form's path.
  std::string forUrl(std::string_view normal_url) const;

 private:
  std::map<std::string, std::string> by_ext_;
};

}  // namespace lcc
