// provider_state_name.h — the word for a provider's state (lcc::ProviderState) as the
// admin API, the status page and the QM's logs write it: pending, active, suspended,
// removing, purging. The one copy (core/http and core/qm use it).
#pragma once

#include <string_view>

#include "lcc/types.h"

namespace lcc {

std::string_view providerStateName(ProviderState s);

}  // namespace lcc
