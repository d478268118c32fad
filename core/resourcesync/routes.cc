// routes.cc — the ResourceSync documents on the HTTP port (resourcesync.h): parse the
// path, read the stores, answer with the XML of documents.cc.
#include <spdlog/spdlog.h>

#include <charconv>
#include <optional>

#include "common/content_meta.h"
#include "resourcesync/resource_dump.h"
#include "resourcesync/resourcesync.h"

namespace lcc::resourcesync {
namespace {

http::Response xml(std::string body) {
  http::Response r = http::Response::text(200, std::move(body));
  r.content_type = "application/xml; charset=utf-8";
  return r;
}

http::Response storeError(const Status& s) {
  spdlog::warn("resourcesync: reading the store: {}", s.toString());
  return http::Response::text(500, "the LCC DB could not be read\n");
}

std::optional<std::uint64_t> number(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty() || s.size() > 19) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// The number in "<prefix><n><suffix>", or nullopt.
std::optional<std::uint64_t> numbered(std::string_view doc, std::string_view prefix, std::string_view suffix) {
  if (doc.size() <= prefix.size() + suffix.size() || doc.substr(0, prefix.size()) != prefix ||
      doc.substr(doc.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  return number(doc.substr(prefix.size(), doc.size() - prefix.size() - suffix.size()));
}

class Source : public std::enable_shared_from_this<Source> {
 public:
  Source(ContentStore& content, ProviderStore* providers, Clock& clock, Options o, DumpContentFactory dump_content)
      : content_(content), providers_(providers), clock_(clock), o_(std::move(o)), dump_content_(std::move(dump_content)) {}

  http::Response description() {
    std::vector<ProviderId> pids;
    if (providers_ != nullptr) {
      Status s = providers_->scan([&](const ProviderRecord& p) {
        if (p.state != ProviderState::kPending) pids.push_back(p.id);
        return true;
      });
      if (!s.isOk()) return storeError(s);
    }
    return xml(sourceDescription(o_, pids));
  }

  // /resourcesync/<pid>/<document>
  http::Response provider(const http::Request& req) {
    const std::string_view rest = std::string_view(req.path).substr(std::string_view("/resourcesync/").size());
    const auto slash = rest.find('/');
    const auto pid = number(rest.substr(0, slash));
    if (slash == std::string_view::npos || !pid || *pid == 0 || *pid > 0xffffffffu) return notFound();
    if (!known(static_cast<ProviderId>(*pid))) return notFound();
    const auto id = static_cast<ProviderId>(*pid);
    const std::string_view doc = rest.substr(slash + 1);
    if (doc == "capabilitylist.xml") return xml(capabilityList(o_, id));
    if (doc == "resourcelist.xml") return resources(id, 0);
    if (doc == "changelist.xml") return changes(id, req.param("since", "0"));
    if (doc == "resourcedump.xml") return dump(id);
    if (auto n = numbered(doc, "resourcelist-", ".xml"); n && *n > 0) return resources(id, *n);
    if (auto n = numbered(doc, "resourcedump-", ".zip"); n && *n > 0) return dumpPackage(id, *n);
    return notFound();
  }

 private:
  static http::Response notFound() { return http::Response::text(404, "no such ResourceSync document\n"); }

  bool known(ProviderId pid) {
    if (providers_ == nullptr) return true;
    auto got = providers_->get(pid);
    return got.isOk() && got.value() && got.value()->state != ProviderState::kPending;
  }

  // page 0: the list, or its index when it is longer than a page; n: page n.
  http::Response resources(ProviderId pid, std::uint64_t page) {
    const WallTime at = clock_.now();
    const std::uint64_t first = page == 0 ? 0 : (page - 1) * o_.page_size;
    std::uint64_t stored = 0;
    std::vector<ContentRecord> records;
    Status s = content_.scanProvider(pid, [&](const ContentRecord& r) {
      if (r.deleted) return true;
      if (stored >= first && records.size() < o_.page_size) records.push_back(r);
      ++stored;
      return true;
    });
    if (!s.isOk()) return storeError(s);
    const std::uint64_t pages = stored == 0 ? 1 : (stored + o_.page_size - 1) / o_.page_size;
    if (page == 0 && pages > 1) return xml(resourceListIndex(o_, pid, pages, at));
    if (page > pages) return notFound();
    return xml(resourceList(o_, pid, records, at, page));
  }

  http::Response dump(ProviderId pid) {
    const WallTime at = clock_.now();
    auto stored = storedCount(content_, pid);
    if (!stored.isOk()) return storeError(stored.status());
    return xml(resourceDump(o_, pid, packagesFor(o_, stored.value()), at));
  }

  // A package streams on the HTTP server's stream thread; an error cuts the body.
  http::Response dumpPackage(ProviderId pid, std::uint64_t n) {
    auto stored = storedCount(content_, pid);
    if (!stored.isOk()) return storeError(stored.status());
    if (n > packagesFor(o_, stored.value())) return notFound();
    http::Response r;
    r.content_type = "application/zip";
    r.stream = [self = shared_from_this(), pid, n, at = clock_.now()](ByteSink& sink) {
      auto content = self->dump_content_();
      Status s = writeDumpPackage(sink, self->content_, *content, self->o_, pid, n, at);
      if (!s.isOk()) spdlog::warn("resourcesync: Resource Dump package {} of provider {} abandoned: {}", n, pid, s.toString());
      return s;
    };
    return r;
  }

  // 410 when removals after `since` may have been purged (the CU's 150): the list
  // would silently lack them.
  std::optional<http::Response> purged(ChangeSeq since) {
    if (since == 0) return std::nullopt;  // from the start: every stored URL, no removal needed
    auto horizon = readPurgedSeq(content_);
    if (!horizon.isOk()) return storeError(horizon.status());
    if (!horizon.value() || since >= *horizon.value()) return std::nullopt;
    return http::Response::text(410, "changes before seq " + std::to_string(*horizon.value() + 1) +
                                         " were purged: a Change List since " + std::to_string(since) +
                                         " would lack removals. Take the Resource List (or Resource Dump) afresh, "
                                         "then follow the Change List from its X-LCC-Last-Seq.\n");
  }

  http::Response changes(ProviderId pid, const std::string& since_text) {
    const auto since = number(since_text);
    if (!since) return http::Response::text(400, "since: a change seq (a whole number) was expected\n");
    if (auto refused = purged(*since)) return *refused;
    const WallTime at = clock_.now();
    auto max = content_.maxSeq();
    if (!max.isOk()) return storeError(max.status());
    ContentFilter filter;
    filter.providers = {pid};
    filter.include_deleted = true;
    std::vector<ContentRecord> list;
    Status s = content_.scanSince(*since, filter, [&](const ContentRecord& r) {
      if (r.seq > max.value()) return false;  // changed after this list began
      list.push_back(r);
      return list.size() < o_.page_size;
    });
    if (!s.isOk()) return storeError(s);
    // Again after the scan: ageing may have purged tombstones of this range meanwhile.
    if (auto refused = purged(*since)) return *refused;
    const bool full = list.size() >= o_.page_size;
    const ChangeSeq next = full ? list.back().seq : std::max<ChangeSeq>(*since, max.value());
    http::Response r = xml(changeList(o_, pid, list, *since, next, at));
    r.headers.emplace_back("X-LCC-Last-Seq", std::to_string(next));
    return r;
  }

  ContentStore& content_;
  ProviderStore* providers_;
  Clock& clock_;
  Options o_;
  DumpContentFactory dump_content_;
};

}  // namespace

void addRoutes(http::Router& router, ContentStore& content, ProviderStore* providers, Clock& clock, Options options,
               DumpContentFactory dump_content) {
  auto source = std::make_shared<Source>(content, providers, clock, std::move(options), std::move(dump_content));
  router.addExact("GET", "/.well-known/resourcesync", [source](const http::Request&) { return source->description(); });
  router.add("GET", "/resourcesync/", [source](const http::Request& req) { return source->provider(req); });
}

}  // namespace lcc::resourcesync
