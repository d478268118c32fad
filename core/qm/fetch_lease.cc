// fetch_lease.cc — the QM's side of the fetch leases (fetch_lease.h).
#include "qm/fetch_lease.h"

#include <algorithm>

namespace lcc::qm {

void FetchLease::opened(MonoTime now, std::optional<Millis> previous) {
  held_until_.reset();
  if (shared_ && previous && previous->count() > 0) held_until_ = now + *previous + kMargin;
}

void FetchLease::proven(MonoTime began) {
  if (!proof_ || began > *proof_) proof_ = began;
}

std::optional<MonoTime> FetchLease::heldUntil(MonoTime now) const {
  if (held_until_ && now < *held_until_) return held_until_;
  return std::nullopt;
}

std::optional<Millis> FetchLease::grant(MonoTime now) const {
  if (heldUntil(now)) return std::nullopt;
  if (!shared_) return lease_;
  if (!proof_) return std::nullopt;
  const Millis left = std::chrono::duration_cast<Millis>(*proof_ + lease_ - now);
  if (left < lease_ / 2 || left.count() <= 0) return std::nullopt;
  return std::min(left, lease_);
}

}  // namespace lcc::qm
