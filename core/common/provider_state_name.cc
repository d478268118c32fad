// provider_state_name.cc — see provider_state_name.h.
#include "common/provider_state_name.h"

namespace lcc {

std::string_view providerStateName(ProviderState s) {
  switch (s) {
    case ProviderState::kPending: return "pending";
    case ProviderState::kActive: return "active";
    case ProviderState::kSuspended: return "suspended";
    case ProviderState::kRemoving: return "removing";
    case ProviderState::kPurging: return "purging";
  }
  return "unknown";
}

}  // namespace lcc
