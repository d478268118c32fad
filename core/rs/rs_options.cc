// rs_options.cc — RsOptions from the config: the one place that maps the rs.* keys to
// its members.
#include "common/config/config.h"
#include "rs/rs_service.h"

namespace lcc::rs {

RsOptions RsOptions::fromConfig(const Config& cfg) {
  RsOptions o;
  o.secret_ttl = Millis(cfg.getInt("rs.secret_ttl"));
  o.secret_file = cfg.getString("rs.secret_file");
  o.provider_defaults = ProviderDefaults::fromConfig(cfg);
  o.verify_timeout = Millis(cfg.getInt("rs.verify_timeout"));
  o.secret_max_size = static_cast<std::uint64_t>(cfg.getInt("rs.secret_max_size"));
  o.sweep_interval = Millis(cfg.getInt("rs.sweep_interval"));
  o.max_pending = static_cast<std::uint64_t>(cfg.getInt("rs.max_pending"));
  o.max_pending_per_ip = static_cast<std::uint64_t>(cfg.getInt("rs.max_pending_per_ip"));
  o.max_pending_per_host = static_cast<std::uint64_t>(cfg.getInt("rs.max_pending_per_host"));
  o.register_per_minute = static_cast<std::uint64_t>(cfg.getInt("rs.register_per_minute"));
  o.register_tracked_addresses = static_cast<std::uint64_t>(cfg.getInt("rs.register_tracked_addresses"));
  o.reverify_interval = Millis(cfg.getInt("rs.reverify_interval"));
  o.reverify_failures = static_cast<std::uint64_t>(cfg.getInt("rs.reverify_failures"));
  o.reverify_grace = Millis(cfg.getInt("rs.reverify_grace"));
  return o;
}

}  // namespace lcc::rs
