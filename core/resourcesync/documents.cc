// documents.cc — the XML of each ResourceSync document (resourcesync.h), built from
// records the caller read, and Options::fromConfig (the resourcesync.* keys).
// Namespaces: sitemaps.org for the frame, rs: for the
// ResourceSync terms.
#include <algorithm>
#include <string_view>

#include "common/config/config.h"
#include "lcc/support/time_util.h"
#include "net/host_port.h"
#include "proto/xml_reader.h"
#include "resourcesync/resourcesync.h"
#include "sitemap/sitemap.h"

namespace lcc::resourcesync {
namespace {

std::string open(std::string_view root) {
  return std::string("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<") + std::string(root) + " xmlns=\"" +
         std::string(sitemap::kSitemapNs) + "\" xmlns:rs=\"" + kRsNs + "\">\n";
}

// <rs:ln rel="REL" href="HREF"/>
std::string link(std::string_view rel, const std::string& href) {
  return "  <rs:ln rel=\"" + std::string(rel) + "\" href=\"" + proto::xmlEscape(href) + "\"/>\n";
}

std::string providerBase(const Options& o, ProviderId pid) {
  return o.base_url + "/resourcesync/" + std::to_string(pid) + "/";
}

std::string capabilityOf(const Options& o, ProviderId pid) { return providerBase(o, pid) + "capabilitylist.xml"; }

// <url><loc>LOC</loc><rs:md capability="CAP"/></url>
std::string capabilityEntry(const std::string& loc, std::string_view capability) {
  return "  <url><loc>" + proto::xmlEscape(loc) + "</loc><rs:md capability=\"" + std::string(capability) +
         "\"/></url>\n";
}

// hash, length and type of a stored record, as rs:md attributes.
std::string contentAttributes(const ContentRecord& r) {
  std::string out;
  if (!r.md5.empty()) out += " hash=\"md5:" + proto::xmlEscape(r.md5) + "\"";
  out += " length=\"" + std::to_string(r.size) + "\"";
  if (!r.key.mime.empty()) out += " type=\"" + proto::xmlEscape(r.key.mime) + "\"";
  return out;
}

// The resource's own time: Last-Modified or the CP's mt when known, else when stored.
std::string lastmodOf(const ContentRecord& r) {
  return r.mtime ? formatRfc3339(*r.mtime) : formatRfc3339(r.stored);
}

}  // namespace

std::string sourceDescription(const Options& o, const std::vector<ProviderId>& pids) {
  std::string out = open("urlset");
  out += link("describedby", o.base_url + "/");
  out += "  <rs:md capability=\"description\"/>\n";
  for (ProviderId pid : pids) out += capabilityEntry(capabilityOf(o, pid), "capabilitylist");
  return out + "</urlset>\n";
}

std::string capabilityList(const Options& o, ProviderId pid) {
  std::string out = open("urlset");
  out += link("up", o.base_url + "/.well-known/resourcesync");
  out += "  <rs:md capability=\"capabilitylist\"/>\n";
  out += capabilityEntry(providerBase(o, pid) + "resourcelist.xml", "resourcelist");
  out += capabilityEntry(providerBase(o, pid) + "resourcedump.xml", "resourcedump");
  out += capabilityEntry(providerBase(o, pid) + "changelist.xml", "changelist");
  return out + "</urlset>\n";
}

std::string resourceList(const Options& o, ProviderId pid, const std::vector<ContentRecord>& records, WallTime at,
                         std::uint64_t page) {
  std::string out = open("urlset");
  out += link("up", capabilityOf(o, pid));
  if (page > 0) out += link("index", providerBase(o, pid) + "resourcelist.xml");
  out += "  <rs:md capability=\"resourcelist\" at=\"" + formatRfc3339(at) + "\"/>\n";
  for (const auto& r : records) {
    out += "  <url><loc>" + proto::xmlEscape(r.key.url) + "</loc><lastmod>" + lastmodOf(r) + "</lastmod><rs:md" +
           contentAttributes(r) + "/></url>\n";
  }
  return out + "</urlset>\n";
}

std::string resourceListIndex(const Options& o, ProviderId pid, std::uint64_t pages, WallTime at) {
  std::string out = open("sitemapindex");
  out += link("up", capabilityOf(o, pid));
  out += "  <rs:md capability=\"resourcelist\" at=\"" + formatRfc3339(at) + "\"/>\n";
  for (std::uint64_t n = 1; n <= pages; ++n) {
    out += "  <sitemap><loc>" + proto::xmlEscape(providerBase(o, pid) + "resourcelist-" + std::to_string(n) + ".xml") +
           "</loc></sitemap>\n";
  }
  return out + "</sitemapindex>\n";
}

std::string resourceDump(const Options& o, ProviderId pid, std::uint64_t packages, WallTime at) {
  std::string out = open("urlset");
  out += link("up", capabilityOf(o, pid));
  out += "  <rs:md capability=\"resourcedump\" at=\"" + formatRfc3339(at) + "\"/>\n";
  for (std::uint64_t n = 1; n <= packages; ++n) {
    out += "  <url><loc>" + proto::xmlEscape(dumpPackageUrl(o, pid, n)) +
           "</loc><rs:md type=\"application/zip\"/></url>\n";
  }
  return out + "</urlset>\n";
}

std::string dumpPackageUrl(const Options& o, ProviderId pid, std::uint64_t n) {
  return providerBase(o, pid) + "resourcedump-" + std::to_string(n) + ".zip";
}

std::string manifestHead(const Options& o, ProviderId pid, WallTime at) {
  return open("urlset") + link("up", capabilityOf(o, pid)) + "  <rs:md capability=\"resourcedump-manifest\" at=\"" +
         formatRfc3339(at) + "\"/>\n";
}

std::string manifestEntry(const ContentRecord& r, const std::string& path) {
  return "  <url><loc>" + proto::xmlEscape(r.key.url) + "</loc><lastmod>" + lastmodOf(r) + "</lastmod><rs:md" +
         contentAttributes(r) + " path=\"" + proto::xmlEscape(path) + "\"/></url>\n";
}

std::string manifestTail() { return "</urlset>\n"; }

std::string changeList(const Options& o, ProviderId pid, const std::vector<ContentRecord>& changes, ChangeSeq since,
                       ChangeSeq next_since, WallTime at) {
  std::string out = open("urlset");
  out += link("up", capabilityOf(o, pid));
  out += link("next", providerBase(o, pid) + "changelist.xml?since=" + std::to_string(next_since));
  // The period covered: from the oldest change listed (or now, when none) until now.
  WallTime from = at;
  for (const auto& r : changes) from = std::min(from, r.stored);
  out += "  <rs:md capability=\"changelist\" from=\"" + formatRfc3339(from) + "\" until=\"" + formatRfc3339(at) +
         "\"/>\n";
  for (const auto& r : changes) {
    out += "  <url><loc>" + proto::xmlEscape(r.key.url) + "</loc>";
    if (r.deleted) {
      out += "<rs:md change=\"deleted\" datetime=\"" + formatRfc3339(r.stored) + "\"/></url>\n";
    } else {
      // created: the URL became stored after `since` (created_seq 0, unknown, is updated).
      const char* change = r.created_seq > since ? "created" : "updated";
      out += "<lastmod>" + lastmodOf(r) + "</lastmod><rs:md change=\"" + std::string(change) + "\" datetime=\"" +
             formatRfc3339(r.stored) + "\"" + contentAttributes(r) + "/></url>\n";
    }
  }
  return out + "</urlset>\n";
}

Options Options::fromConfig(const Config& cfg) {
  Options o;
  o.base_url = cfg.getString("resourcesync.base_url");
  if (o.base_url.empty()) {
    auto http = net::HostPort::parse(cfg.getString("listen.http"));
    if (http.isOk()) o.base_url = "http://" + http.value().reachable().toString();
  }
  while (!o.base_url.empty() && o.base_url.back() == '/') o.base_url.pop_back();
  o.page_size = static_cast<std::uint64_t>(cfg.getInt("resourcesync.page_size"));
  return o;
}

}  // namespace lcc::resourcesync
