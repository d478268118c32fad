#include "net/descriptor_budget.h"

#include <sys/resource.h>

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

}  // namespace

DescriptorBudget::DescriptorBudget(std::size_t limit, std::size_t reserve)
    : limit_(limit == 0 ? openFilesLimit() : limit),
      reserve_(bounded(reserve, limit_)),
      open_(std::make_shared<std::atomic<std::size_t>>(0)) {}

DescriptorBudget& DescriptorBudget::process() {
  static DescriptorBudget budget;  // reads RLIMIT_NOFILE on first use
  return budget;
}

std::size_t DescriptorBudget::setReserve(std::size_t reserve) {
  reserve_ = bounded(reserve, limit_);
  return reserve_.load();
}

std::shared_ptr<void> DescriptorBudget::admit(int fd) {
  const std::size_t usable = limit_ > reserve_.load() ? limit_ - reserve_.load() : 0;
  const std::size_t held = open_->fetch_add(1) + 1;
  if (fd < 0 || static_cast<std::size_t>(fd) >= usable || held > usable) {
    open_->fetch_sub(1);
    ++refused_;
    return nullptr;
  }
  auto open = open_;
  // Not null (callers test it): it points at the counter it gives back to.
  return std::shared_ptr<void>(static_cast<void*>(open.get()), [open](void*) { open->fetch_sub(1); });
}

}  // namespace lcc::net
