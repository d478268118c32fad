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
//                                                   where the following ones will be;
//                                                   410 when SEQ is below the purge
//                                                   horizon (removals were forgotten)
//   GET /resourcesync/<pid>/resourcedump.xml        the Resource Dump: one ZIP package
//                                                   per page_size stored URLs
//   GET /resourcesync/<pid>/resourcedump-<n>.zip    package n: manifest.xml first, then
//                                                   the content files (resource_dump.h)
// The documents are built here as pure functions of records (documents.cc); routes.cc
// reads the stores and answers. Every document is a sitemaps.org urlset or
// sitemapindex with rs:md / rs:ln elements, valid against docs/schemas/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "lcc/byte_sink.h"
#include "lcc/clock.h"
#include "lcc/content_store.h"
#include "lcc/provider_store.h"

namespace lcc {
class Config;
}

namespace lcc::resourcesync {

inline constexpr const char* kRsNs = "http://www.openarchives.org/rs/terms/";

// No member carries a default: fromConfig() (documents.cc) reads the schema's.
struct Options {
  std::string base_url;        // resourcesync.base_url: "http://host:port", no trailing '/' (empty key: listen.http's)
  std::uint64_t page_size = 0;  // resourcesync.page_size: entries per document (sitemaps allow 50,000)

  static Options fromConfig(const Config& config);
};

// ---- documents.cc: XML text of each document.
std::string sourceDescription(const Options& o, const std::vector<ProviderId>& pids);
std::string capabilityList(const Options& o, ProviderId pid);
// A page of the Resource List: stored (not deleted) records, `at` when the list was
// taken. `page` 0 is the whole list (no index); n > 0 is page n of an index.
std::string resourceList(const Options& o, ProviderId pid, const std::vector<ContentRecord>& records, WallTime at,
                         std::uint64_t page);
std::string resourceListIndex(const Options& o, ProviderId pid, std::uint64_t pages, WallTime at);
// Changes (in seq order) after `since`; a stored record whose created_seq is above
// `since` is `created`, else `updated`; `next_since` is the seq the next Change List
// starts after; `at` is now (the list's `until`).
std::string changeList(const Options& o, ProviderId pid, const std::vector<ContentRecord>& changes, ChangeSeq since,
                       ChangeSeq next_since, WallTime at);
// The Resource Dump: `packages` ZIP packages (dumpPackageUrl 1..packages).
std::string resourceDump(const Options& o, ProviderId pid, std::uint64_t packages, WallTime at);
std::string dumpPackageUrl(const Options& o, ProviderId pid, std::uint64_t n);
// The Resource Dump Manifest in pieces, so that it streams: head, one entry per
// resource (`path` is its file in the package, "/resources/..."), tail.
std::string manifestHead(const Options& o, ProviderId pid, WallTime at);
std::string manifestEntry(const ContentRecord& r, const std::string& path);
std::string manifestTail();

// How a Resource Dump reads content: the CU's path (this machine's files, other
// machines' over HTTP, core/cu/query_engine.h). One per package, used by one thread.
class DumpContent {
 public:
  virtual ~DumpContent() = default;
  // The record's bytes (exactly r.size of them), or null with `why` set.
  virtual std::unique_ptr<ContentSource> open(const ContentRecord& r, std::string* why) = 0;
};
using DumpContentFactory = std::function<std::unique_ptr<DumpContent>()>;

// ---- routes.cc: the HTTP routes above, reading `content` and `providers`; a Resource
// Dump package reads content through a DumpContent of `dump_content`.
void addRoutes(http::Router& router, ContentStore& content, ProviderStore* providers, Clock& clock, Options options,
               DumpContentFactory dump_content);

}  // namespace lcc::resourcesync
