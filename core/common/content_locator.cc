#include "common/content_locator.h"

#include <cctype>

#include "net/host_port.h"

namespace lcc {

void ContentLocator::setStatic(std::map<std::string, std::string> entries) {
  std::lock_guard<std::mutex> lk(mu_);
  static_.clear();
  for (auto& [k, v] : entries) static_.emplace(k, std::move(v));
}

ContentLocator::Update ContentLocator::discovered(const std::string& machine, const std::string& url) {
  if (!validMachineId(machine)) return Update::kInvalid;
  std::lock_guard<std::mutex> lk(mu_);
  if (url.empty()) return discovered_.erase(machine) ? Update::kChanged : Update::kUnchanged;
  std::string why;
  auto norm = normalizeContentUrl(url, &why);
  if (!norm) return Update::kInvalid;
  auto [it, inserted] = discovered_.try_emplace(machine, *norm);
  if (!inserted) {
    if (it->second == *norm) return Update::kUnchanged;
    it->second = *norm;
  }
  return Update::kChanged;
}

std::optional<std::string> ContentLocator::urlOf(std::string_view machine) const {
  std::lock_guard<std::mutex> lk(mu_);
  if (auto it = static_.find(machine); it != static_.end()) return it->second;
  if (auto it = discovered_.find(machine); it != discovered_.end()) return it->second;
  return std::nullopt;
}

std::map<std::string, std::string> ContentLocator::all() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::map<std::string, std::string> out(discovered_.begin(), discovered_.end());
  for (const auto& [k, v] : static_) out[k] = v;
  return out;
}

bool validMachineId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (unsigned char c : id) {
    if (c <= 0x20 || c == 0x7f || c == '=' || c == '"' || c == '<' || c == '>' || c == '&') return false;
  }
  return true;
}

std::optional<std::string> normalizeContentUrl(std::string_view url, std::string* why) {
  auto fail = [&](std::string_view w) -> std::optional<std::string> {
    if (why) *why = std::string(w);
    return std::nullopt;
  };
  constexpr std::string_view kHttp = "http://", kHttps = "https://";
  if (url.size() > 2048) return fail("longer than 2048 characters");
  const bool tls = url.compare(0, kHttps.size(), kHttps) == 0;
  if (!tls && url.compare(0, kHttp.size(), kHttp) != 0) return fail("must start with http:// or https://");
  for (unsigned char c : url) {
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '?' || c == '#') {
      return fail("must be http(s)://host:port[/path] without spaces, query or fragment");
    }
  }
  std::string_view rest = url.substr(tls ? kHttps.size() : kHttp.size());
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) return fail("must not carry user information");
  auto hp = net::HostPort::parseAuthority(authority, tls ? 443 : 80);
  if (!hp.isOk()) return fail(hp.status().message());
  if (hp->port == 0) return fail("port must be 1-65535");
  std::string out(url);
  while (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);
    out.pop_back();
  }
  return out;
}

std::map<std::string, std::string> parseContentUrls(const std::vector<std::string>& entries,
                                                    std::vector<std::string>* problems) {
  std::map<std::string, std::string> out;
  for (const auto& e : entries) {
    auto eq = e.find('=');
    if (eq == std::string::npos) {
      problems->push_back("must be machine=http(s)://host:port (got " + e + ")");
      continue;
    }
    std::string machine = e.substr(0, eq);
    if (!validMachineId(machine)) {
      problems->push_back("bad machine id: 1-64 characters without spaces or '=' (got " + e + ")");
      continue;
    }
    std::string why;
    auto url = normalizeContentUrl(std::string_view(e).substr(eq + 1), &why);
    if (!url) {
      problems->push_back("url " + why + " (got " + e + ")");
      continue;
    }
    if (!out.emplace(machine, *url).second) {
      problems->push_back("machine " + machine + " is listed twice (got " + e + ")");
    }
  }
  return out;
}

}  // namespace lcc
