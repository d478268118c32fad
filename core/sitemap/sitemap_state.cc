#include "sitemap/sitemap_state.h"

#include "lcc/support/time_util.h"

namespace lcc::sitemap {

std::string formatSitemapState(const SitemapPages& pages, std::string_view header) {
  std::string text = "# ";
  text += header;
  text += "\n";
  for (const auto& [loc, lastmod] : pages) {
    text += loc + "\t" + (lastmod ? std::to_string(*lastmod) : std::string("-")) + "\n";
  }
  return text;
}

bool parseSitemapState(std::string_view text, SitemapPages& pages, std::string* err) {
  std::size_t n = 0;
  while (!text.empty()) {
    ++n;
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty() || line[0] == '#') continue;
    const std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos || tab == 0) {
      *err = "line " + std::to_string(n) + ": not a sitemap state line";
      return false;
    }
    const std::string_view value = line.substr(tab + 1);
    std::optional<std::int64_t> lastmod;
    if (value != "-") {
      lastmod = parseTime(value);
      if (!lastmod) {
        *err = "line " + std::to_string(n) + ": not a sitemap state line";
        return false;
      }
    }
    pages[std::string(line.substr(0, tab))] = lastmod;
  }
  return true;
}

std::vector<SitemapChange> diffSitemaps(const SitemapPages& before, bool have_before, const SitemapPages& now,
                                        std::optional<std::int64_t> since) {
  std::vector<SitemapChange> out;
  for (const auto& [loc, lastmod] : now) {
    if (since && lastmod && *lastmod < *since) continue;
    if (have_before) {
      auto it = before.find(loc);
      if (it != before.end() && (!lastmod || it->second == lastmod)) continue;
    }
    out.push_back({loc, lastmod, false});
  }
  if (!have_before) return out;
  for (const auto& [loc, lastmod] : before) {
    if (!now.count(loc)) out.push_back({loc, lastmod, true});
  }
  return out;
}

}  // namespace lcc::sitemap
