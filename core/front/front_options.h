// front_options.h — the front role's keys (front.*, and listen.uns / listen.uns_tls for
// its CP port), read by FrontOptions::fromConfig() (front_options.cc); the defaults are
// the schema's (core/common/config/schema.cc).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "lcc/status.h"
#include "lcc/types.h"
#include "net/tls.h"

namespace lcc::front {

// One front.lccs entry: "NAME uns=[tls://]HOST:PORT admin=[https://]HOST:PORT
// token_file=PATH [cu=HOST:PORT] [ca=PATH] [tls_name=NAME] [proxy=v2]".
struct LccSpec {
  std::string name;        // [a-z0-9_-], 1-64
  std::string uns;         // its listen.uns (or listen.uns_tls): the front end relays CP sessions there
  std::string admin;       // its listen.http (or listen.https): the admin API the front end calls
  std::string token_file;  // its <data_dir>/admin.token, readable by the front end
  std::string cu;          // its listen.cu (kept in the FEDB for the CU side; may be empty)
  bool uns_tls = false;    // uns=tls://…: the relay does a TLS handshake and checks the certificate
  bool admin_tls = false;  // admin=https://…
  std::string ca_file;     // ca=: the CAs its certificates are checked against (empty: the node's client context)
  std::string tls_name;    // tls_name=: the name its certificates must carry (empty: the host of uns / admin)
  bool proxy_v2 = false;   // proxy=v2: a relayed session starts with a PROXY v2 header naming the CP
  // The client context of uns_tls / admin_tls (fromConfig() makes it for ca=;
  // makeFrontService() gives the others NodeTls::contentClient()). Not in the FEDB.
  std::shared_ptr<net::TlsContextSlot> tls;
  bool wantsTls() const { return uns_tls || admin_tls; }
  // The address written to the FEDB and in messages: "tls://h:p" / "h:p".
  std::string unsAddress() const { return (uns_tls ? "tls://" : "") + uns; }
  std::string adminAddress() const { return (admin_tls ? "https://" : "") + admin; }
};
Result<LccSpec> parseLccSpec(const std::string& entry);

struct FrontOptions {
  std::string conninfo;            // front.conninfo: the PMDB/FEDB (libpq)
  std::string schema;              // front.schema
  std::vector<LccSpec> lccs;       // front.lccs
  Millis refresh_interval{};       // front.refresh_interval: load figures read this often
  Millis stale_after{};            // front.stale_after: no placement on a sub-LCC not read for this long
  Millis request_timeout{};        // front.request_timeout: each call to a sub-LCC's admin API
  Millis pending_grace{};          // front.pending_grace: a pending row older than this is cleaned
  std::size_t cache_entries = 0;   // front.cache_entries: provider → sub-LCC lookups kept
  Millis cache_ttl{};              // front.cache_ttl
  std::size_t init_max_bytes = 0;  // front.init_max_bytes: the CP's bytes read to find its provider
  Millis init_timeout{};           // front.init_timeout: ... within this time
  Millis connect_timeout{};        // front.connect_timeout: connecting to a sub-LCC's UNS
  std::size_t relay_buffer = 0;    // front.relay_buffer: bytes waiting one way before the other side is not read
  Millis idle_timeout{};           // front.idle_timeout: a relayed session with no byte either way
  std::uint32_t slots = 0;         // front.slots: hash slots (slot = provider id mod slots)
  Millis move_wait{};              // front.move_wait: a move waits this long for a provider's fetches to end
  std::size_t move_page = 0;       // front.move_page: URLs of one export page of a move
  std::string listen;              // listen.uns
  std::string listen_tls;          // listen.uns_tls
  Millis handshake_timeout{};      // tls.handshake_timeout
  std::size_t max_connections = 0;         // uns.max_connections
  std::size_t max_connections_per_ip = 0;  // uns.max_connections_per_ip
  std::uint64_t auth_failures_per_minute = 0;  // uns.auth_failures_per_minute: counted per CP address here
  Millis auth_cooldown{};                  // uns.auth_cooldown
  // No config key: the TLS port's context (NodeTls::server()).
  std::shared_ptr<net::TlsContextSlot> tls;

  // Problems (a bad front.lccs entry, an unreadable ca= file, no conninfo) are
  // returned, one per line.
  static Result<FrontOptions> fromConfig(const Config& config);
};

}  // namespace lcc::front
