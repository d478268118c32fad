// sitemap.h — sitemaps.org documents read as a stream: a <urlset> (pages) or a
// <sitemapindex> (more sitemaps), plain XML or gzip, within the protocol's limits.
//
// Bytes go in as they arrive (feed), entries come out one at a time (the callback),
// so a 50 MB sitemap never sits in memory whole. Refused with a message that says
// which limit or rule was broken (docs/commands.md, "lcc cp sitemap"):
//  - more than 50,000 entries in one file, more than 50 MB uncompressed;
//  - a root that is not a sitemaps.org urlset or sitemapindex;
//  - an entry without <loc>, a <loc> longer than max_loc_length;
//  - malformed XML, a DOCTYPE or entity (xml_reader.h), a broken or cut-off gzip
//    stream, anything but white space after the root element.
// A <lastmod> that is not a W3C Datetime does not stop the file: the entry has no
// lastmod and badLastmods() counts it.
// THREADS: one reader per file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace lcc::sitemap {

inline constexpr std::string_view kSitemapNs = "http://www.sitemaps.org/schemas/sitemap/0.9";

// The most bytes of a refusal's text kept: it quotes the document (an element's name,
// a URL), and it is stored, logged at every retry and shown on the public status pages.
inline constexpr std::size_t kMaxErrorBytes = 300;

// `text` cut to kMaxErrorBytes at a UTF-8 character boundary, with "…" when cut.
std::string boundedError(std::string text);

enum class SitemapKind : std::uint8_t { kUnknown, kUrlSet, kIndex };

struct SitemapEntry {
  std::string loc;                      // as written, white space around it trimmed
  std::optional<std::int64_t> lastmod;  // seconds since the epoch
};

struct SitemapLimits {
  std::uint64_t max_entries = 50'000;              // sitemaps.org: per file
  std::uint64_t max_bytes = 50ull * 1024 * 1024;  // sitemaps.org: uncompressed, per file
  std::size_t max_loc_length = 2048;
};

class SitemapReader {
 public:
  using OnEntry = std::function<void(const SitemapEntry&)>;
  explicit SitemapReader(OnEntry on_entry, SitemapLimits limits = {});
  ~SitemapReader();
  SitemapReader(const SitemapReader&) = delete;
  SitemapReader& operator=(const SitemapReader&) = delete;

  // The file's bytes, in pieces of any size. False once the file is refused.
  bool feed(std::string_view bytes);
  // The end of the file. False if it was refused or ends before its root element does.
  bool finish();

  SitemapKind kind() const;  // known once the root element has started
  std::uint64_t entries() const;
  std::uint64_t badLastmods() const;
  const std::string& error() const;  // empty unless refused

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lcc::sitemap
