// content_locator.h — where the content files of each machine can be read over HTTP
// (design document §9: "find the ports of these BOT-Ms by communicating with the central
// well-known one connected to the QM").
//
// Two sources, one answer per machine id:
//  - static entries from `cu.content_urls` (split deployments: a CU in a process
//    without the QM). They always win.
//  - discovered entries: the QM's BOT-M port learns them from each BOT-M's opening
//    and <machines> message (docs/internal-protocols.md §2) and records them here.
//    The last announcement of a machine wins; an entry is kept when its BOT-M
//    disconnects (its HTTP port may still serve while it reconnects).
// A URL is "http://host:port" with an optional path prefix and no trailing '/'; the
// content of file F of that machine is GET <url>/content/F.
// THREADS: thread-safe (the QM's connection strands write, CU workers read).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lcc {

class ContentLocator {
 public:
  void setStatic(std::map<std::string, std::string> entries);
  // Records what a BOT-M announced. An empty url forgets the discovered entry; a URL
  // (or machine id) that is not valid is ignored.
  enum class Update { kChanged, kUnchanged, kInvalid };
  Update discovered(const std::string& machine, const std::string& url);
  // The base URL for `machine`, or nullopt when nobody said where it is.
  std::optional<std::string> urlOf(std::string_view machine) const;
  // machine -> url, static entries over discovered ones (/status).
  std::map<std::string, std::string> all() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string, std::less<>> static_;
  std::map<std::string, std::string, std::less<>> discovered_;
};

// Normalises a content URL ("http://host:port[/prefix]", trailing '/' removed).
// Returns nullopt and says why in *why when it is not one.
std::optional<std::string> normalizeContentUrl(std::string_view url, std::string* why);

// Parses `cu.content_urls` entries ("machine=url"). Every problem goes to *problems as
// "why (got ENTRY)"; the map holds the good entries.
std::map<std::string, std::string> parseContentUrls(const std::vector<std::string>& entries,
                                                    std::vector<std::string>* problems);

// A machine id that can travel in the link protocol's space-separated lists and in
// "machine=url" pairs: 1-64 characters, no whitespace, '=' or control characters.
bool validMachineId(std::string_view id);

}  // namespace lcc
