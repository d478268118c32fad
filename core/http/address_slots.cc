// address_slots.cc — see address_slots.h.
#include "http/address_slots.h"

namespace lcc::http {

AddressSlots::Slot& AddressSlots::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::move(other.owner_);
    ip_ = std::move(other.ip_);
    kind_ = other.kind_;
    other.owner_.reset();
  }
  return *this;
}

void AddressSlots::Slot::reset() {
  if (!owner_) return;
  owner_->release(ip_, kind_);
  owner_.reset();
}

AddressSlots::Slot AddressSlots::tryAcquire(const std::string& ip, Kind kind, std::size_t limit) {
  Slot slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& counts = counts_[ip];
    if (counts[kind] >= limit) {
      if (counts[0] == 0 && counts[1] == 0 && counts[2] == 0) counts_.erase(ip);
      return slot;
    }
    ++counts[kind];
  }
  slot.owner_ = shared_from_this();
  slot.ip_ = ip;
  slot.kind_ = kind;
  return slot;
}

std::size_t AddressSlots::held(const std::string& ip, Kind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(ip);
  return it == counts_.end() ? 0 : it->second[kind];
}

std::size_t AddressSlots::addresses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_.size();
}

void AddressSlots::release(const std::string& ip, Kind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(ip);
  if (it == counts_.end()) return;
  auto& counts = it->second;
  if (counts[kind] > 0) --counts[kind];
  if (counts[0] == 0 && counts[1] == 0 && counts[2] == 0) counts_.erase(it);
}

}  // namespace lcc::http
