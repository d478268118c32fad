// cu_options.cc — the CU's options structs from the config: the one place that maps
// the cu.* keys (and listen.cu, listen.cu_tls, botm.content_dir, tls.handshake_timeout)
// to members.
#include "common/config/config.h"
#include "cu/cu_server.h"
#include "cu/query_engine.h"
#include "cu/peer_source.h"
#include "cu/remote_content.h"

namespace lcc::cu {

RemoteOptions RemoteOptions::fromConfig(const Config& cfg) {
  RemoteOptions o;
  o.remote_connect_timeout = Millis(cfg.getInt("cu.remote_connect_timeout"));
  o.remote_read_timeout = Millis(cfg.getInt("cu.remote_read_timeout"));
  o.remote_pipeline = static_cast<std::size_t>(cfg.getInt("cu.remote_pipeline"));
  return o;
}

EngineOptions EngineOptions::fromConfig(const Config& cfg, const std::string& data_dir, const std::string& machine_id) {
  EngineOptions o;
  o.machine_id = machine_id;
  const std::string content_dir = cfg.getString("botm.content_dir");
  o.content_dir = content_dir.empty() ? data_dir + "/content" : Config::absolutePath(content_dir);
  const std::string temp_dir = cfg.getString("cu.temp_dir");
  o.temp_dir = temp_dir.empty() ? data_dir + "/tmp" : Config::absolutePath(temp_dir);
  o.default_limit = static_cast<std::uint64_t>(cfg.getInt("cu.default_limit"));
  o.url_order_formats = cfg.getList("cu.url_order_formats");
  o.url_order_scan_factor = static_cast<std::uint64_t>(cfg.getInt("cu.url_order_scan_factor"));
  o.remote = RemoteOptions::fromConfig(cfg);
  return o;
}

PeerOptions PeerOptions::fromConfig(const Config& cfg) {
  PeerOptions o;
  std::vector<std::string> problems;  // reported by lccd --check (daemon.cc planNode)
  o.peers = parsePeerUrls(cfg.getList("cu.peers"), &problems);
  o.timeout_ms = static_cast<int>(cfg.getInt("cu.peer_timeout"));
  o.max_answer_bytes = static_cast<std::uint64_t>(cfg.getInt("cu.peer_max_answer_bytes"));
  o.max_records = static_cast<std::uint64_t>(cfg.getInt("cu.peer_max_records"));
  return o;
}

CuServerOptions CuServerOptions::fromConfig(const Config& cfg) {
  CuServerOptions o;
  o.listen = cfg.getString("listen.cu");
  o.listen_tls = cfg.getString("listen.cu_tls");
  o.handshake_timeout = Millis(cfg.getInt("tls.handshake_timeout"));
  o.max_connections = static_cast<std::size_t>(cfg.getInt("cu.max_connections"));
  o.max_connections_per_ip = static_cast<std::size_t>(cfg.getInt("cu.max_connections_per_ip"));
  o.max_exports_per_ip = static_cast<std::size_t>(cfg.getInt("cu.max_exports_per_ip"));
  o.idle_timeout = Millis(cfg.getInt("cu.idle_timeout"));
  o.max_query_bytes = static_cast<std::size_t>(cfg.getInt("cu.max_query_bytes"));
  o.write_timeout = Millis(cfg.getInt("cu.write_timeout"));
  o.pipe_buffer = static_cast<std::size_t>(cfg.getInt("cu.pipe_buffer"));
  o.export_threads = static_cast<std::size_t>(cfg.getInt("cu.export_threads"));
  return o;
}

}  // namespace lcc::cu
