#include "common/provider_defaults.h"

#include "common/config/config.h"

namespace lcc {

ProviderDefaults ProviderDefaults::fromConfig(const Config& cfg) {
  ProviderDefaults d;
  d.default_priority = static_cast<std::int32_t>(cfg.getInt("rs.default_priority"));
  d.default_bandwidth = static_cast<std::uint64_t>(cfg.getInt("rs.default_bandwidth"));
  d.default_quota_files = static_cast<std::uint64_t>(cfg.getInt("rs.default_quota_files"));
  d.default_quota_bytes = static_cast<std::uint64_t>(cfg.getInt("rs.default_quota_bytes"));
  return d;
}

void ProviderDefaults::applyTo(ProviderRecord& rec) const {
  rec.priority = default_priority;
  rec.bandwidth = default_bandwidth;
  rec.quota_files = default_quota_files;
  rec.quota_bytes = default_quota_bytes;
}

}  // namespace lcc
