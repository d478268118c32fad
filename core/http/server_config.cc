// server_config.cc — ServerOptions and AdminOptions from the config: the one place
// that maps their keys to members.
#include <algorithm>

#include "common/config/config.h"
#include "http/admin_api.h"
#include "http/http_server.h"

namespace lcc::http {

ServerOptions ServerOptions::fromConfig(const Config& cfg, Metrics* metrics) {
  ServerOptions o;
  o.listen = cfg.getString("listen.http");
  o.max_body = static_cast<std::size_t>(cfg.getInt("http.max_body"));
  o.idle_timeout = Millis(cfg.getInt("http.idle_timeout"));
  o.max_connections = static_cast<std::size_t>(cfg.getInt("http.max_connections"));
  o.workers = static_cast<std::size_t>(cfg.getInt("http.workers"));
  o.stream_workers = static_cast<std::size_t>(cfg.getInt("http.stream_workers"));
  o.stream_buffer = static_cast<std::size_t>(cfg.getInt("http.stream_buffer"));
  o.max_header = static_cast<std::size_t>(cfg.getInt("http.max_header"));
  o.header_timeout = Millis(cfg.getInt("http.header_timeout"));
  o.max_connections_per_ip = static_cast<std::size_t>(cfg.getInt("http.max_connections_per_ip"));
  o.max_handlers_per_ip = static_cast<std::size_t>(cfg.getInt("http.max_handlers_per_ip"));
  o.max_streams_per_ip = static_cast<std::size_t>(cfg.getInt("http.max_streams_per_ip"));
  o.write_timeout = Millis(cfg.getInt("http.write_timeout"));
  o.metrics = metrics;
  return o;
}

AdminOptions AdminOptions::fromConfig(const Config& cfg) {
  AdminOptions o;
  o.admin_remote = cfg.getBool("http.admin_remote");
  o.provider_defaults = ProviderDefaults::fromConfig(cfg);
  o.sitemap_min_interval = Millis(cfg.getInt("sitemap.min_interval"));
  const auto roles = cfg.getList("roles");
  o.qm_reads_providers = std::find(roles.begin(), roles.end(), "qm") != roles.end();
  return o;
}

}  // namespace lcc::http
