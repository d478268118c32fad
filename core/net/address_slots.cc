#include "net/address_slots.h"

namespace lcc::net {

std::string_view admissionName(Admission admission) {
  switch (admission) {
    case Admission::kAdmitted: return "admitted";
    case Admission::kTooManyConnections: return "too many connections";
    case Admission::kTooManyFromAddress: return "too many connections from the address";
    case Admission::kTooFewDescriptors: return "too few descriptors left";
  }
  return "?";
}

Admission AddressSlots::admit(const std::string& address, std::size_t max_total, std::size_t max_per_address,
                              std::shared_ptr<void>* token) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (max_total > 0 && total_ >= max_total) return Admission::kTooManyConnections;
    std::size_t& n = per_address_[address];
    if (max_per_address > 0 && n >= max_per_address) {
      if (n == 0) per_address_.erase(address);
      return Admission::kTooManyFromAddress;
    }
    ++n;
    ++total_;
  }
  auto self = shared_from_this();
  *token = std::shared_ptr<void>(nullptr, [self, address](void*) {
    std::lock_guard<std::mutex> lock(self->mu_);
    --self->total_;
    auto it = self->per_address_.find(address);
    if (it != self->per_address_.end() && --it->second == 0) self->per_address_.erase(it);
  });
  return Admission::kAdmitted;
}

std::size_t AddressSlots::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

}  // namespace lcc::net
