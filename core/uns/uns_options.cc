// uns_options.cc — the UNS's options structs from the config: the one place that maps
// the uns.* keys (and listen.uns, listen.uns_tls, accept_mime, qm.slots,
// tls.handshake_timeout) to members.
#include <limits>

#include "common/config/config.h"
#include "uns/forwarder.h"
#include "uns/session_policy.h"
#include "uns/uns_core.h"
#include "uns/uns_service.h"

namespace lcc::uns {
namespace {

// A streamed set (issue 13) goes to the forwarder in parts of this many bytes.
constexpr std::size_t kStreamPartBytes = 256u << 10;

}  // namespace

SessionConfig SessionConfig::fromConfig(const Config& cfg) {
  SessionConfig s;
  s.xml.max_value_length = static_cast<std::size_t>(cfg.getInt("uns.max_attribute_length"));
  s.xml.max_depth = static_cast<int>(cfg.getInt("uns.max_depth"));
  // The <url> elements are counted by the session (maxSetUrls: the cap may be a
  // provider's files quota); other elements are skipped as they come, so the reader
  // counts nothing. A session is bounded in time (uns.session_timeout).
  s.xml.max_elements = std::numeric_limits<std::uint64_t>::max();
  s.max_set_urls = static_cast<std::uint64_t>(cfg.getInt("uns.max_set_urls"));
  s.max_url_length = static_cast<std::size_t>(cfg.getInt("uns.max_url_length"));
  s.slots = static_cast<int>(cfg.getInt("qm.slots"));
  s.accept_mime = cfg.getList("accept_mime");
  return s;
}

CoreConfig CoreConfig::fromConfig(const Config& cfg) {
  CoreConfig c;
  c.accept_mime = cfg.getList("accept_mime");
  c.max_connections = static_cast<std::uint64_t>(cfg.getInt("uns.max_connections"));
  c.max_connections_per_ip = static_cast<std::uint64_t>(cfg.getInt("uns.max_connections_per_ip"));
  c.max_connections_per_provider = static_cast<std::uint64_t>(cfg.getInt("uns.max_connections_per_provider"));
  c.report_errors = static_cast<std::uint64_t>(cfg.getInt("uns.report_errors"));
  c.fullsets_per_period = static_cast<std::uint64_t>(cfg.getInt("uns.fullsets_per_period"));
  c.fullset_period = Millis(cfg.getInt("uns.fullset_period"));
  c.auth_cache_entries = static_cast<std::uint64_t>(cfg.getInt("uns.auth_cache_entries"));
  c.auth_failures_per_minute = static_cast<std::uint64_t>(cfg.getInt("uns.auth_failures_per_minute"));
  c.auth_cooldown = Millis(cfg.getInt("uns.auth_cooldown"));
  c.auth_tracked_addresses = static_cast<std::uint64_t>(cfg.getInt("uns.auth_tracked_addresses"));
  return c;
}

ForwarderOptions ForwarderOptions::fromConfig(const Config& cfg, const std::string& data_dir,
                                              const std::string& machine_id) {
  ForwarderOptions f;
  f.qm_address = cfg.getString("uns.qm").empty() ? cfg.getString("listen.qm") : cfg.getString("uns.qm");
  f.qm_retry = Millis(cfg.getInt("uns.qm_retry"));
  f.qm_ack_timeout = Millis(cfg.getInt("uns.qm_ack_timeout"));
  f.spool = cfg.getBool("uns.spool");
  f.spool_limit = static_cast<std::uint64_t>(cfg.getInt("uns.spool_limit"));
  f.max_attribute_length = static_cast<std::size_t>(cfg.getInt("uns.max_attribute_length"));
  f.frames = cfg.getBool("node.link_frames");
  f.uns_name = machine_id + "/uns";
  f.spool_dir = data_dir + "/uns";
  return f;
}

UnsOptions UnsOptions::fromConfig(const Config& cfg, const std::string& data_dir, const std::string& machine_id) {
  UnsOptions o;
  o.listen = cfg.getString("listen.uns");
  o.listen_tls = cfg.getString("listen.uns_tls");
  o.handshake_timeout = Millis(cfg.getInt("tls.handshake_timeout"));
  o.idle_timeout = Millis(cfg.getInt("uns.idle_timeout"));
  o.session_timeout = Millis(cfg.getInt("uns.session_timeout"));
  o.session = SessionConfig::fromConfig(cfg);
  o.session.stream_part_bytes = kStreamPartBytes;
  o.core = CoreConfig::fromConfig(cfg);
  o.forwarder = ForwarderOptions::fromConfig(cfg, data_dir, machine_id);
  // A bad entry stops lccd before the role is made (checkTrustedProxies, core/app/daemon.cc).
  if (auto r = net::AddressRanges::parse(cfg.getList("uns.trusted_proxies")); r.isOk() && !r.value().empty()) {
    o.trusted_proxies = std::make_shared<const net::AddressRanges>(std::move(r).value());
  }
  return o;
}

}  // namespace lcc::uns
