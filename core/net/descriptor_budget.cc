#include "net/descriptor_budget.h"

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>

namespace lcc::net {

namespace {

std::size_t openFilesLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 1u << 20;
  return static_cast<std::size_t>(rl.rlim_cur);
}

std::size_t bounded(std::size_t reserve, std::size_t limit) {
  return std::clamp<std::size_t>(reserve, DescriptorBudget::kMinReserve,
                                 std::max<std::size_t>(DescriptorBudget::kMinReserve, limit / 4));
}

// The peer's address bytes (an IPv4-mapped IPv6 address as its IPv4 bytes), or "".
std::string peerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {};
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss).sin_addr;
    return std::string(reinterpret_cast<const char*>(&a), sizeof a);
  }
  if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr;
    const char* b = reinterpret_cast<const char*>(&a);
    if (IN6_IS_ADDR_V4MAPPED(&a)) return std::string(b + 12, 4);
    return std::string(b, sizeof a);
  }
  return {};
}

}  // namespace

DescriptorBudget::DescriptorBudget(std::size_t limit, std::size_t reserve)
    : limit_(limit == 0 ? openFilesLimit() : limit),
      reserve_(bounded(reserve, limit_)),
      open_(std::make_shared<std::atomic<std::size_t>>(0)),
      per_address_(std::make_shared<PerAddress>()) {}

DescriptorBudget& DescriptorBudget::process() {
  static DescriptorBudget budget;  // reads RLIMIT_NOFILE on first use
  return budget;
}

std::size_t DescriptorBudget::setReserve(std::size_t reserve) {
  reserve_ = bounded(reserve, limit_);
  return reserve_.load();
}

std::size_t DescriptorBudget::addressShare() const {
  const std::size_t usable = limit_ > reserve_.load() ? limit_ - reserve_.load() : 0;
  return std::max<std::size_t>(1, usable / kAddressShare);
}

std::shared_ptr<void> DescriptorBudget::admit(int fd) { return admit(fd, peerAddress(fd)); }

std::shared_ptr<void> DescriptorBudget::admit(int fd, const std::string& address) {
  const std::size_t usable = limit_ > reserve_.load() ? limit_ - reserve_.load() : 0;
  const std::size_t held = open_->fetch_add(1) + 1;
  bool ok = fd >= 0 && static_cast<std::size_t>(fd) < usable && held <= usable;
  if (ok && !address.empty()) {
    std::lock_guard<std::mutex> lock(per_address_->mu);
    std::size_t& mine = per_address_->held[address];
    ok = mine < addressShare();
    if (ok) {
      ++mine;
    } else if (mine == 0) {
      per_address_->held.erase(address);
    }
  }
  if (!ok) {
    open_->fetch_sub(1);
    ++refused_;
    return nullptr;
  }
  auto open = open_;
  auto per = address.empty() ? nullptr : per_address_;
  // Not null (callers test it): it points at the counter it gives back to.
  return std::shared_ptr<void>(static_cast<void*>(open.get()), [open, per, address](void*) {
    open->fetch_sub(1);
    if (per == nullptr) return;
    std::lock_guard<std::mutex> lock(per->mu);
    auto it = per->held.find(address);
    if (it != per->held.end() && --it->second == 0) per->held.erase(it);
  });
}

}  // namespace lcc::net
