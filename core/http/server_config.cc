#include "http/server_config.h"

namespace lcc::http {

ServerOptions serverOptionsFromConfig(const Config& cfg, Metrics* metrics) {
  ServerOptions o;
  o.listen = cfg.getString("listen.http");
  o.max_body = static_cast<std::size_t>(cfg.getInt("http.max_body"));
  o.idle_timeout_ms = cfg.getInt("http.idle_timeout");
  o.max_connections = static_cast<std::size_t>(cfg.getInt("http.max_connections"));
  o.workers = static_cast<std::size_t>(cfg.getInt("http.workers"));
  o.stream_workers = static_cast<std::size_t>(cfg.getInt("http.stream_workers"));
  o.stream_buffer = static_cast<std::size_t>(cfg.getInt("http.stream_buffer"));
  o.max_header = static_cast<std::size_t>(cfg.getInt("http.max_header"));
  o.header_timeout_ms = cfg.getInt("http.header_timeout");
  o.max_connections_per_ip = static_cast<std::size_t>(cfg.getInt("http.max_connections_per_ip"));
  o.max_handlers_per_ip = static_cast<std::size_t>(cfg.getInt("http.max_handlers_per_ip"));
  o.max_streams_per_ip = static_cast<std::size_t>(cfg.getInt("http.max_streams_per_ip"));
  o.write_timeout_ms = cfg.getInt("http.write_timeout");
  o.metrics = metrics;
  return o;
}

}  // namespace lcc::http
