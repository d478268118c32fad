// resourcesync.h — the LCC's content as a ResourceSync Source (ANSI/NISO Z39.99-2017):
// a destination learns what the LCC holds and what changed with the sitemap-based
// documents of that standard, read from the LCC DB (docs/protocol.md §9).
//
//   GET /.well-known/resourcesync                   Source Description: one
//                                                   Capability List per provider
//   GET /resourcesync/<pid>/capabilitylist.xml      what this provider offers
//   GET /resourcesync/<pid>/resourcelist.xml        every stored URL (an index of
//                                                   pages past page_size entries)
//   GET /resourcesync/<pid>/resourcelist-<n>.xml    page n (1-based) of that list
//   GET /resourcesync/<pid>/changelist.xml[?since=SEQ]
//                                                   changes after SEQ, in seq order,
//                                                   at most page_size; rel="next" says
//                                                   where the following ones will be
// The documents are built here as pure functions of records (documents.cc); routes.cc
// reads the stores and answers. Every document is a sitemaps.org urlset or
// sitemapindex with rs:md / rs:ln elements, valid against docs/schemas/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "lcc/clock.h"
#include "lcc/content_store.h"
#include "lcc/provider_store.h"

namespace lcc::resourcesync {

inline constexpr const char* kRsNs = "http://www.openarchives.org/rs/terms/";

struct Options {
  std::string base_url;              // "http://host:port", no trailing '/' (resourcesync.base_url)
  std::uint64_t page_size = 50'000;  // entries per document (resourcesync.page_size; sitemaps allow 50,000)
};

// ---- documents.cc: XML text of each document.
std::string sourceDescription(const Options& o, const std::vector<ProviderId>& pids);
std::string capabilityList(const Options& o, ProviderId pid);
// A page of the Resource List: stored (not deleted) records, `at` when the list was
// taken. `page` 0 is the whole list (no index); n > 0 is page n of an index.
std::string resourceList(const Options& o, ProviderId pid, const std::vector<ContentRecord>& records, WallTime at,
                         std::uint64_t page);
std::string resourceListIndex(const Options& o, ProviderId pid, std::uint64_t pages, WallTime at);
// Changes (in seq order); `next_since` is the seq the next Change List starts after;
// `at` is now (the list's `until`).
std::string changeList(const Options& o, ProviderId pid, const std::vector<ContentRecord>& changes,
                       ChangeSeq next_since, WallTime at);

// ---- routes.cc: the HTTP routes above, reading `content` and `providers`.
void addRoutes(http::Router& router, ContentStore& content, ProviderStore* providers, Clock& clock, Options options);

}  // namespace lcc::resourcesync
