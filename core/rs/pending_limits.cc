// pending_limits.cc — how many registrations may wait for verification (issue 25):
// at most rs.max_pending_per_ip from one address and rs.max_pending_per_host for one
// host of the prefix (429 past them), and rs.max_pending in all, where the oldest
// unverified one gives way to a new one, so a flood from many addresses cannot lock
// real registrants out (docs/security.md §4).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "rs/rs_service.h"

namespace lcc::rs {

std::string prefixHost(std::string_view prefix) {
  const auto scheme = prefix.find("://");
  std::string_view rest = scheme == std::string_view::npos ? prefix : prefix.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    return std::string(rest.substr(0, close == std::string_view::npos ? rest.size() : close + 1));
  }
  return std::string(rest.substr(0, rest.find(':')));
}

namespace {

struct Waiting {
  ProviderId id = 0;
  WallTime created{};
  WallTime expires{};
};

// The earliest expiry among `w`: when one of them leaves.
Millis untilFirstExpiry(const std::vector<Waiting>& w, WallTime now) {
  WallTime first = w.front().expires;
  for (const auto& x : w) first = std::min(first, x.expires);
  return std::max(Millis(1000), std::chrono::duration_cast<Millis>(first - now));
}

}  // namespace

Status Registrar::makeRoom(const std::string& prefix, const std::string& address, Millis* retry_after) {
  const std::string host = prefixHost(prefix);
  std::vector<Waiting> all, same_ip, same_host;
  LCC_RETURN_IF_ERROR(providers_.scan([&](const ProviderRecord& p) {
    if (p.state != ProviderState::kPending) return true;
    const Waiting w{p.id, p.created, p.reg_expires};
    all.push_back(w);
    if (!address.empty() && p.last_ip == address) same_ip.push_back(w);
    if (!p.prefixes.empty() && prefixHost(p.prefixes.front()) == host) same_host.push_back(w);
    return true;
  }));
  const WallTime now = clock_.now();
  auto refuse = [&](const std::vector<Waiting>& w, const std::string& why) {
    if (retry_after) *retry_after = untilFirstExpiry(w, now);
    if (pending_refused_) pending_refused_->inc();
    return Status::busy(why);
  };
  if (options_.max_pending_per_ip > 0 && same_ip.size() >= options_.max_pending_per_ip) {
    return refuse(same_ip, std::to_string(same_ip.size()) +
                               " registrations from your address are waiting for verification; verify them or "
                               "wait until they expire");
  }
  if (options_.max_pending_per_host > 0 && same_host.size() >= options_.max_pending_per_host) {
    return refuse(same_host, std::to_string(same_host.size()) + " registrations for " + host +
                                 " are waiting for verification; verify them or wait until they expire");
  }
  if (all.size() < options_.max_pending) return Status::ok();
  // Full: the oldest unverified registrations give way, so a flood cannot keep new
  // registrants out for rs.secret_ttl.
  std::sort(all.begin(), all.end(), [](const Waiting& a, const Waiting& b) {
    return a.created != b.created ? a.created < b.created : a.id < b.id;
  });
  const std::size_t evict = all.size() - options_.max_pending + 1;
  for (std::size_t i = 0; i < evict; ++i) {
    Status s = providers_.remove(all[i].id);
    if (!s.isOk() && !s.isNotFound()) {
      spdlog::warn("rs: removing pending registration {} to make room: {}", all[i].id, s.toString());
      return Status::busy("too many registrations are waiting for verification; try again later");
    }
    spdlog::info("rs: pending registration {} removed to make room (rs.max_pending {} reached)", all[i].id,
                 options_.max_pending);
    if (evicted_) evicted_->inc();
  }
  return Status::ok();
}

}  // namespace lcc::rs
