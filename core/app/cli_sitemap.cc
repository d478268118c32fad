// cli_sitemap.cc — `lcc cp sitemap URL|FILE` (docs/commands.md): the pages a site's
// sitemaps list, as <url/> lines for `lcc cp send`, optionally only what changed.
//
// Sitemap indexes are followed (each listed sitemap is fetched, up to 4 deep, each at
// most once); every file is read as a stream through sitemap::SitemapReader with the
// sitemaps.org limits. The walk and the --state diff are sitemap::SitemapWalk and
// sitemap::diffSitemaps, which the LCC's own sitemap polls use too (core/sitemap/sitemap_poll.h). All files are read before anything is printed: a sitemap that
// cannot be read ends the command with exit 2, no output and the state file left
// alone, so that a failed fetch never reads as "every page was deleted".
#include <curl/curl.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/cli.h"
#include "app/cli_cp_sources.h"
#include "common/mime_map.h"
#include "app/progress.h"
#include "common/posix_env.h"
#include "lcc/support/time_util.h"
#include "lcc/support/url_norm.h"
#include "proto/cp_uns.h"
#include "sitemap/sitemap.h"
#include "sitemap/sitemap_state.h"
#include "sitemap/sitemap_walk.h"

namespace lcc::cli {
namespace {

constexpr int kMaxDepth = 4;            // index → index → ...: deeper is refused
constexpr std::size_t kMaxSitemaps = 50'000;
constexpr long kFetchTimeoutSeconds = 120;

struct SitemapArgs {
  std::string source, since, state_file, mime_map;
};

bool isUrl(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }

// Streams a URL's body into the reader. Empty string on success, else why not.
std::string fetchInto(const std::string& url, sitemap::SitemapReader& reader) {
  struct Sink {
    CURL* h;
    sitemap::SitemapReader* reader;
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

std::string readFileInto(const std::string& path, sitemap::SitemapReader& reader) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read the file";
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (!reader.feed(std::string_view(buf, static_cast<std::size_t>(in.gcount())))) return reader.error();
  }
  if (in.bad()) return "read error";
  return reader.finish() ? "" : reader.error();
}

std::string urlPathOf(const std::string& normal) {
  auto parts = url::splitNormalUrl(normal);
  return parts.isOk() ? parts.value().path : std::string("/");
}

sitemap::SitemapWalkOptions walkOptions() {
  sitemap::SitemapWalkOptions o;
  o.max_depth = kMaxDepth;
  o.max_sitemaps = kMaxSitemaps;
  return o;
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
  sitemap::SitemapPages old_state;
  bool have_state = false;
  if (!a.state_file.empty() && !loadSitemapState(a.state_file, old_state, &have_state, &err)) {
    std::cerr << "lcc cp sitemap: --state: " << err << "\n";
    return 2;
  }
  sitemap::SitemapPages pages;
  if (!readSitemaps("lcc cp sitemap", a.source, pages, &err)) {
    std::cerr << "lcc cp sitemap: " << err << "\n";
    return 2;
  }
  std::string out;
  for (const auto& change : sitemap::diffSitemaps(old_state, have_state, pages, since)) {
    out += proto::encodeUrlElement(sitemapAttrs(mime, change));
  }
  std::cout << out << std::flush;
  if (!a.state_file.empty()) {
    if (Status st = saveSitemapState(a.state_file, pages); !st.isOk()) {
      std::cerr << "lcc cp sitemap: cannot write the state file: " << st.toString() << "\n";
      return 2;
    }
  }
  return 0;
}

}  // namespace

bool readSitemaps(const std::string& tool, const std::string& source, sitemap::SitemapPages& pages, std::string* err) {
  TtyProgress progress;
  sitemap::SitemapWalk walk(
      [](const std::string& from, bool top, sitemap::SitemapReader& reader) {
        // What an index lists is always fetched as a URL, never opened as a local file.
        return top && !isUrl(from) ? readFileInto(from, reader) : fetchInto(from, reader);
      },
      walkOptions());
  auto line = [&walk] {
    return "read " + std::to_string(walk.files()) + " sitemaps, " + std::to_string(walk.pages().size()) + " pages";
  };
  walk.setProgress([&] { progress.update(line); });
  if (!walk.read(source)) {
    *err = walk.error();
    return false;
  }
  progress.done(line());
  for (const auto& sample : walk.skippedSamples()) std::cerr << tool << ": skipped " << sample << "\n";
  if (walk.invalid() > 0) std::cerr << tool << ": " << walk.invalid() << " URLs skipped (not valid http(s) URLs)\n";
  if (walk.badLastmods() > 0) {
    std::cerr << tool << ": " << walk.badLastmods() << " <lastmod> values are not W3C Datetimes (read as unknown)\n";
  }
  pages = walk.pages();
  return true;
}

// Reads the state file; *found: whether there was one (none: the first run, everything is new).
bool loadSitemapState(const std::string& path, sitemap::SitemapPages& state, bool* found, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  *found = static_cast<bool>(in);
  if (!in) return true;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *err = path + ": read error";
    return false;
  }
  if (!sitemap::parseSitemapState(text.str(), state, err)) {
    *err = path + ": " + *err;
    return false;
  }
  return true;
}

Status saveSitemapState(const std::string& path, const sitemap::SitemapPages& pages) {
  std::error_code ec;
  return posixEnv()->writeFileAtomic(std::filesystem::absolute(path, ec).string(),
                                     sitemap::formatSitemapState(pages, "lcc cp sitemap state: url lastmod"));
}

proto::UrlAttrs sitemapAttrs(const MimeMap& mime, const sitemap::SitemapChange& change) {
  proto::UrlAttrs attrs = {{"c", change.url}, {"m", mime.forUrlPath(urlPathOf(change.url))}};
  if (change.deleted) attrs.emplace_back("op", "delete");
  else if (change.lastmod) attrs.emplace_back("mt", formatRfc3339(*change.lastmod));
  return attrs;
}

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
