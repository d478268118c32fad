// cli_sitemap.cc — `lcc cp sitemap URL|FILE` (docs/commands.md): the pages a site's
// sitemaps list, as <url/> lines for `lcc cp send`, optionally only what changed.
//
// Sitemap indexes are followed (each listed sitemap is fetched, however deep, each
// at most once); every file is read as a stream through proto::SitemapReader with the
// sitemaps.org limits. All files are read before anything is printed: a sitemap that
// cannot be read ends the command with exit 2, no output and the state file left
// alone, so that a failed fetch never reads as "every page was deleted".
#include <curl/curl.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "app/cli.h"
#include "common/mime_map.h"
#include "app/progress.h"
#include "common/posix_env.h"
#include "lcc/support/time_util.h"
#include "lcc/support/url_norm.h"
#include "proto/cp_uns.h"
#include "proto/sitemap.h"

namespace lcc::cli {
namespace {

constexpr int kMaxDepth = 4;            // index → index → ...: deeper is refused
constexpr std::size_t kMaxSitemaps = 50'000;
constexpr long kFetchTimeoutSeconds = 120;

struct SitemapArgs {
  std::string source, since, state_file, mime_map;
};

// loc → lastmod (seconds since the epoch; nullopt when the sitemap gives none).
using Pages = std::map<std::string, std::optional<std::int64_t>>;

bool isUrl(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }

// Streams a URL's body into the reader. Empty string on success, else why not.
std::string fetchInto(const std::string& url, proto::SitemapReader& reader) {
  struct Sink {
    CURL* h;
    proto::SitemapReader* reader;
    long status = 0;
  };
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) return "libcurl could not start";
  Sink sink{h.get(), &reader};
  auto write = +[](char* data, size_t size, size_t n, void* p) -> size_t {
    auto* s = static_cast<Sink*>(p);
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status != 200) return 0;  // an error page is not a sitemap
    return s->reader->feed(std::string_view(data, size * n)) ? size * n : 0;
  };
  char curl_error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, write);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h.get(), CURLOPT_ERRORBUFFER, curl_error);
  curl_easy_setopt(h.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h.get(), CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT, kFetchTimeoutSeconds);
  curl_easy_setopt(h.get(), CURLOPT_USERAGENT, "lcc-cp-sitemap/1");
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(h.get());
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &sink.status);
  if (!reader.error().empty()) return reader.error();
  if (sink.status != 200 && sink.status != 0) return "HTTP status " + std::to_string(sink.status);
  if (rc != CURLE_OK) return curl_error[0] != '\0' ? curl_error : curl_easy_strerror(rc);
  return reader.finish() ? "" : reader.error();
}

std::string readFileInto(const std::string& path, proto::SitemapReader& reader) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read the file";
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (!reader.feed(std::string_view(buf, static_cast<std::size_t>(in.gcount())))) return reader.error();
  }
  if (in.bad()) return "read error";
  return reader.finish() ? "" : reader.error();
}

class Collector {
 public:
  explicit Collector(TtyProgress& progress) : progress_(progress) {}

  // Reads one sitemap (a file or a URL) and, for an index, the sitemaps it lists.
  // What an index lists is always fetched as a URL, never opened as a local file.
  bool read(const std::string& source, int depth) {
    if (depth > kMaxDepth) return fail(source, "sitemap indexes nested deeper than " + std::to_string(kMaxDepth));
    if (!seen_.insert(source).second) return true;  // listed twice, or a loop
    if (seen_.size() > kMaxSitemaps) return fail(source, "more than 50,000 sitemaps in all");
    std::vector<std::string> children;
    std::string bad_child;
    proto::SitemapReader reader([&](const proto::SitemapEntry& e) {
      if (reader.kind() == proto::SitemapKind::kIndex) {
        auto normal = url::normalizeUrl(e.loc);
        if (normal.isOk()) children.push_back(normal.value());
        else if (bad_child.empty()) bad_child = e.loc + ": " + normal.status().message();
      } else {
        addPage(e);
      }
      progress_.update([&] { return line(); });
    });
    const std::string why = depth == 0 && !isUrl(source) ? readFileInto(source, reader) : fetchInto(source, reader);
    if (!why.empty()) return fail(source, why);
    if (!bad_child.empty()) return fail(source, "lists a sitemap that is not an http(s) URL: " + bad_child);
    bad_lastmods_ += reader.badLastmods();
    ++files_;
    for (const auto& child : children) {
      if (!read(child, depth + 1)) return false;
    }
    return true;
  }

  const Pages& pages() const { return pages_; }
  std::uint64_t skipped() const { return skipped_; }
  std::uint64_t badLastmods() const { return bad_lastmods_; }
  std::string line() const {
    return "read " + std::to_string(files_) + " sitemaps, " + std::to_string(pages_.size()) + " pages";
  }

 private:
  void addPage(const proto::SitemapEntry& e) {
    auto normal = url::normalizeUrl(e.loc);
    if (!normal.isOk()) {
      if (++skipped_ <= 20) std::cerr << "lcc cp sitemap: skipped " << e.loc << ": " << normal.status().message() << "\n";
      return;
    }
    auto [it, fresh] = pages_.emplace(normal.value(), e.lastmod);
    if (!fresh && e.lastmod && (!it->second || *it->second < *e.lastmod)) it->second = e.lastmod;
  }
  bool fail(const std::string& source, const std::string& why) {
    std::cerr << "lcc cp sitemap: " << source << ": " << why << "\n";
    return false;
  }

  TtyProgress& progress_;
  std::set<std::string> seen_;
  Pages pages_;
  std::uint64_t files_ = 0, skipped_ = 0, bad_lastmods_ = 0;
};

// State file: "# lcc cp sitemap state", then one line per page, "URL<TAB>lastmod" with
// lastmod in seconds since the epoch or "-". URLs in normal form hold no tab or newline.
// *found: whether there was a state file (none: the first run, everything is new).
bool loadState(const std::string& path, Pages& state, bool* found, std::string* err) {
  std::ifstream in(path);
  *found = static_cast<bool>(in);
  if (!in) return true;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    std::optional<std::int64_t> lastmod;
    if (tab != std::string::npos && line.compare(tab + 1, std::string::npos, "-") != 0) {
      lastmod = parseTime(std::string_view(line).substr(tab + 1));
    }
    if (tab == std::string::npos || (line.compare(tab + 1, std::string::npos, "-") != 0 && !lastmod)) {
      *err = path + ":" + std::to_string(n) + ": not a sitemap state line";
      return false;
    }
    state[line.substr(0, tab)] = lastmod;
  }
  return true;
}

std::string stateText(const Pages& pages) {
  std::string text = "# lcc cp sitemap state: url lastmod\n";
  for (const auto& [loc, lastmod] : pages) {
    text += loc + "\t" + (lastmod ? std::to_string(*lastmod) : std::string("-")) + "\n";
  }
  return text;
}

// Whether a page goes out: new since the last run, or a different lastmod (a page
// without lastmod is printed when it is new only: nothing else can tell a change).
bool changed(const Pages& old_state, bool have_state, const std::string& loc, const std::optional<std::int64_t>& lastmod) {
  if (!have_state) return true;
  auto it = old_state.find(loc);
  return it == old_state.end() || (lastmod && it->second != lastmod);
}

std::string urlPathOf(const std::string& normal) {
  auto parts = url::splitNormalUrl(normal);
  return parts.isOk() ? parts.value().path : std::string("/");
}

int runSitemap(const SitemapArgs& a) {
  lcc::MimeMap mime;
  std::string err;
  if (!a.mime_map.empty() && !mime.load(a.mime_map, &err)) {
    std::cerr << "lcc cp sitemap: --mime-map: " << err << "\n";
    return 2;
  }
  std::optional<std::int64_t> since;
  if (!a.since.empty()) {
    since = parseTime(a.since);
    if (!since) since = parseW3cDatetime(a.since);
    if (!since) {
      std::cerr << "lcc cp sitemap: --since: \"" << a.since << "\" is not a time (2024-05-01 or 2024-05-01T12:00:00Z)\n";
      return 2;
    }
  }
  Pages old_state;
  bool have_state = false;
  if (!a.state_file.empty() && !loadState(a.state_file, old_state, &have_state, &err)) {
    std::cerr << "lcc cp sitemap: --state: " << err << "\n";
    return 2;
  }
  TtyProgress progress;
  Collector collector(progress);
  if (!collector.read(a.source, 0)) return 2;
  progress.done(collector.line());
  if (collector.skipped() > 0) std::cerr << "lcc cp sitemap: " << collector.skipped() << " URLs skipped (not valid http(s) URLs)\n";
  if (collector.badLastmods() > 0) {
    std::cerr << "lcc cp sitemap: " << collector.badLastmods() << " <lastmod> values are not W3C Datetimes (read as unknown)\n";
  }
  std::string out;
  for (const auto& [loc, lastmod] : collector.pages()) {
    if (since && lastmod && *lastmod < *since) continue;
    if (!changed(old_state, have_state, loc, lastmod)) continue;
    std::vector<std::pair<std::string, std::string>> attrs = {{"c", loc}, {"m", mime.forUrlPath(urlPathOf(loc))}};
    if (lastmod) attrs.emplace_back("mt", formatRfc3339(*lastmod));
    out += proto::encodeUrlElement(attrs);
  }
  for (const auto& [loc, lastmod] : old_state) {
    if (!collector.pages().count(loc)) {
      out += proto::encodeUrlElement({{"c", loc}, {"m", mime.forUrlPath(urlPathOf(loc))}, {"op", "delete"}});
    }
  }
  std::cout << out << std::flush;
  if (!a.state_file.empty()) {
    std::error_code ec;
    const std::string path = std::filesystem::absolute(a.state_file, ec).string();
    if (Status st = posixEnv()->writeFileAtomic(path, stateText(collector.pages())); !st.isOk()) {
      std::cerr << "lcc cp sitemap: cannot write the state file: " << st.toString() << "\n";
      return 2;
    }
  }
  return 0;
}

}  // namespace

void addCpSitemapCommand(CLI::App& cp, Globals& g) {
  auto args = std::make_shared<SitemapArgs>();
  auto* cmd = cp.add_subcommand("sitemap", "print <url/> lines for the pages a site's sitemaps list");
  cmd->add_option("source", args->source, "a sitemap or sitemap index: an http(s) URL or a file (.xml or .xml.gz)")
      ->required();
  cmd->add_option("--since", args->since, "only pages whose lastmod is at or after TIME (RFC 3339, W3C date, epoch s)");
  cmd->add_option("--state", args->state_file, "remember this run; print only what changed since the last one, deletions included");
  cmd->add_option("--mime-map", args->mime_map, "mime.types-style file: 'type/subtype ext ...'");
  cmd->callback([&g, args] { g.exit_code = runSitemap(*args); });
}

}  // namespace lcc::cli
