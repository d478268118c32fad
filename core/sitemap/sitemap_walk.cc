#include "sitemap/sitemap_walk.h"

#include <vector>

#include "lcc/support/url_norm.h"

namespace lcc::sitemap {
namespace {

constexpr std::size_t kSamples = 20;

}  // namespace

SitemapWalk::SitemapWalk(Fetch fetch, SitemapWalkOptions options)
    : fetch_(std::move(fetch)), options_(options) {}

bool SitemapWalk::read(const std::string& source) { return readOne(source, 0); }

bool SitemapWalk::readOne(const std::string& source, int depth) {
  if (depth > options_.max_depth) {
    return fail(source, "sitemap indexes nested deeper than " + std::to_string(options_.max_depth));
  }
  if (!seen_.insert(source).second) return true;  // listed twice, or a loop
  if (seen_.size() > options_.max_sitemaps) {
    return fail(source, "more than " + std::to_string(options_.max_sitemaps) + " sitemaps in all");
  }
  std::vector<std::string> children;
  std::string bad_child;
  SitemapReader reader(
      [&](const SitemapEntry& e) {
        if (reader.kind() == SitemapKind::kIndex) {
          auto normal = url::normalizeUrl(e.loc);
          if (!normal.isOk()) {
            if (bad_child.empty()) bad_child = e.loc + ": " + normal.status().message();
          } else if (allowed(e.loc, normal.value())) {
            children.push_back(normal.value());
          }
        } else {
          addPage(e);
        }
        if (progress_) progress_();
      },
      options_.limits);
  const std::string why = fetch_(source, depth == 0, reader);
  if (!why.empty()) return fail(source, why);
  if (!bad_child.empty()) return fail(source, "lists a sitemap that is not an http(s) URL: " + bad_child);
  if (pages_.size() > options_.max_pages) {
    return fail(source, "more than " + std::to_string(options_.max_pages) + " pages in all");
  }
  bad_lastmods_ += reader.badLastmods();
  ++files_;
  for (const auto& child : children) {
    if (!readOne(child, depth + 1)) return false;
  }
  return true;
}

void SitemapWalk::addPage(const SitemapEntry& e) {
  std::string normal = admitted(e.loc);
  if (normal.empty() || pages_.size() > options_.max_pages) return;
  auto [it, fresh] = pages_.emplace(std::move(normal), e.lastmod);
  if (!fresh && e.lastmod && (!it->second || *it->second < *e.lastmod)) it->second = e.lastmod;
}

std::string SitemapWalk::admitted(const std::string& loc) {
  auto normal = url::normalizeUrl(loc);
  if (!normal.isOk()) {
    ++invalid_;
    if (samples_.size() < kSamples) samples_.push_back(loc + ": " + normal.status().message());
    return {};
  }
  if (!allowed(loc, normal.value())) return {};
  return std::move(normal).value();
}

bool SitemapWalk::allowed(const std::string& loc, const std::string& normal) {
  if (!admit_ || admit_(normal)) return true;
  ++refused_;
  if (samples_.size() < kSamples) samples_.push_back(loc + ": outside the allowed prefixes");
  return false;
}

bool SitemapWalk::fail(const std::string& source, const std::string& why) {
  error_ = source + ": " + why;
  return false;
}

}  // namespace lcc::sitemap
