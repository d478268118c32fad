// sitemap_walk.h — every page a sitemap lists, following sitemap indexes: the reading
// rules `lcc cp sitemap` and the LCC's sitemap polls share (docs/commands.md,
// docs/protocol.md §11). How bytes are got is the caller's (`fetch`: curl or a file for
// the command, the node's Fetcher for a poll), and so is which URLs are allowed
// (`admit`: a poll keeps to the provider's prefixes).
//
// Rules: indexes nest at most max_depth deep; each sitemap is read at most once (a
// loop or a repeat is skipped); at most max_sitemaps files and max_pages pages in all;
// a page or listed sitemap without an http(s) normal form is skipped and counted; one
// that `admit` refuses is skipped and counted apart. Any sitemap that cannot be read
// fails the whole walk (a caller must not read a missing sitemap as deleted pages).
// THREADS: one walk per thread; `fetch` is called on the caller's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sitemap/sitemap.h"
#include "sitemap/sitemap_state.h"

namespace lcc::sitemap {

struct SitemapWalkOptions {
  int max_depth = 4;                   // index → index → ...: deeper is refused
  std::uint64_t max_sitemaps = 50'000;
  std::uint64_t max_pages = 50'000ull * 50'000ull;
  SitemapLimits limits;
};

class SitemapWalk {
 public:
  // Feeds the bytes of `source` to `reader` and calls reader.finish(); "" on success,
  // else why not. `top` is true for the walk's first source only.
  using Fetch = std::function<std::string(const std::string& source, bool top, SitemapReader& reader)>;
  // Whether a page or listed sitemap (normal form) may be read. Unset: all.
  using Admit = std::function<bool(const std::string& normal_url)>;
  // Called after each entry (a progress line).
  using Progress = std::function<void()>;

  SitemapWalk(Fetch fetch, SitemapWalkOptions options = {});
  void setAdmit(Admit admit) { admit_ = std::move(admit); }
  void setProgress(Progress progress) { progress_ = std::move(progress); }

  // Reads `source` and what it lists. False with error() set when any sitemap failed.
  bool read(const std::string& source);

  const SitemapPages& pages() const { return pages_; }
  const std::string& error() const { return error_; }  // "SOURCE: why"
  std::uint64_t files() const { return files_; }
  std::uint64_t invalid() const { return invalid_; }    // skipped: no http(s) normal form
  std::uint64_t refused() const { return refused_; }    // skipped: admit said no
  std::uint64_t badLastmods() const { return bad_lastmods_; }
  // The first few skipped URLs with the reason, for a log or stderr.
  const std::vector<std::string>& skippedSamples() const { return samples_; }

 private:
  bool readOne(const std::string& source, int depth);
  void addPage(const SitemapEntry& e);
  // The normal form of a listed URL, or "" when it is skipped (counted).
  std::string admitted(const std::string& loc);
  // Asks admit (counting and noting a refusal).
  bool allowed(const std::string& loc, const std::string& normal);
  bool fail(const std::string& source, const std::string& why);

  Fetch fetch_;
  SitemapWalkOptions options_;
  Admit admit_;
  Progress progress_;
  std::set<std::string> seen_;
  SitemapPages pages_;
  std::string error_;
  std::vector<std::string> samples_;
  std::uint64_t files_ = 0, invalid_ = 0, refused_ = 0, bad_lastmods_ = 0;
};

}  // namespace lcc::sitemap
