// provider_defaults.h — the settings a provider gets when it is made without them (the
// rs.default_* keys): by the RS's registration, the admin API's `POST /admin/providers`
// and IndexNow's auto-registration. One struct, so that the four keys are read in one
// place (fromConfig) and applied in one (applyTo).
#pragma once

#include <cstdint>

#include "lcc/types.h"

namespace lcc {

class Config;

// No member carries a default: fromConfig() reads the schema's.
struct ProviderDefaults {
  std::int32_t default_priority = 0;      // rs.default_priority
  std::uint64_t default_bandwidth = 0;    // rs.default_bandwidth (0: unlimited)
  std::uint64_t default_quota_files = 0;  // rs.default_quota_files (0: unlimited)
  std::uint64_t default_quota_bytes = 0;  // rs.default_quota_bytes (0: unlimited)

  static ProviderDefaults fromConfig(const Config& config);
  // Sets `rec`'s priority, bandwidth and quotas to these.
  void applyTo(ProviderRecord& rec) const;
};

}  // namespace lcc
