// sitemap_state.h — what a site's sitemaps listed, remembered between two reads, and
// what changed: shared by `lcc cp sitemap --state` (core/app/cli_sitemap.cc) and the
// LCC's own sitemap polls (core/uns/sitemap_poll.h), so both send the same changes.
//
// State text: a first line starting with '#', then one line per page,
// "URL<TAB>lastmod", lastmod in seconds since the epoch or "-". URLs are in the URL
// normal form, which holds no tab or newline. Other lines starting with '#' are
// comments (a caller may keep its own facts there).
// THREADS: plain functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lcc::sitemap {

// Normal-form page URL → lastmod (seconds since the epoch; nullopt: the sitemap gives none).
using SitemapPages = std::map<std::string, std::optional<std::int64_t>>;

// `header` is the first line's text after "# ".
std::string formatSitemapState(const SitemapPages& pages, std::string_view header);
// Reads state text into `pages`; false with *err ("line N: why") when a line is not a
// state line.
bool parseSitemapState(std::string_view text, SitemapPages& pages, std::string* err);

struct SitemapChange {
  std::string url;
  std::optional<std::int64_t> lastmod;
  bool deleted = false;  // listed last time, not now
};

// What changed from `before` to `now`, pages first (in URL order), then deletions.
// A page is a change when it is new, or when its lastmod is given and differs (a page
// without lastmod cannot show a change, so it is sent when new only). Without a
// before (`have_before` false: the first read) every page is new and nothing is
// deleted. `since`: pages whose lastmod is before it are left out.
std::vector<SitemapChange> diffSitemaps(const SitemapPages& before, bool have_before, const SitemapPages& now,
                                        std::optional<std::int64_t> since = std::nullopt);

}  // namespace lcc::sitemap
