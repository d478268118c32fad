// uns_service.h — the uns role as lccd runs it (see README.md in this folder).
//
// UnsServer is the role without lccd around it (tests build one directly): the
// listener on listen.uns, CP sessions (session_policy.h), UnsCore (uns_core.h) and
// the Forwarder to the QM with its spool (forwarder.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "common/config/config.h"
#include "common/metrics.h"
#include "common/service.h"
#include "lcc/clock.h"
#include "lcc/env.h"
#include "lcc/provider_store.h"
#include "net/address_ranges.h"
#include "uns/forwarder.h"
#include "uns/session_policy.h"
#include "uns/uns_core.h"

namespace lcc::uns {

// Members with a config key carry no default: fromConfig() (uns_options.cc) reads the
// schema's; so do the structs it holds. Tests start from
// UnsOptions::fromConfig(Config::defaults(), data_dir, machine_id).
struct UnsOptions {
  std::string listen;                   // listen.uns (empty: no plain port)
  std::string listen_tls;               // listen.uns_tls (empty: none): the same sessions run on both ports
  Millis handshake_timeout{};           // tls.handshake_timeout
  Millis idle_timeout{};                // uns.idle_timeout
  Millis session_timeout{};             // uns.session_timeout
  SessionConfig session;                // uns.max_attribute_length, uns.max_depth, uns.max_set_urls, ...
  CoreConfig core;                      // uns.max_connections..., uns.auth_*
  ForwarderOptions forwarder;           // uns.qm, uns.qm_retry, uns.qm_ack_timeout, uns.spool, uns.spool_limit
  // uns.trusted_proxies (null: none): the peers whose PROXY v2 header is read.
  std::shared_ptr<const net::AddressRanges> trusted_proxies;
  // No config key: the TLS port's context (NodeTls::server()).
  std::shared_ptr<net::TlsContextSlot> tls;

  // Every uns.* key (and listen.uns, accept_mime, qm.slots); `data_dir` holds uns/.
  static UnsOptions fromConfig(const Config& config, const std::string& data_dir, const std::string& machine_id);
};

class UnsServer {
 public:
  UnsServer(boost::asio::io_context& io, UnsOptions options, ProviderStore* providers, Clock* clock, Env* env,
            Metrics* metrics, std::function<std::uint64_t(ProviderId)> queued_urls = nullptr);
  ~UnsServer();
  UnsServer(const UnsServer&) = delete;
  UnsServer& operator=(const UnsServer&) = delete;

  // Opens the spool, binds the listener, starts the QM link.
  Status start();
  // Stops accepting; sets in flight are spooled and answered; sessions are closed.
  // Call while the io_context still runs on other threads.
  void stop();
  std::uint16_t port() const;     // the bound port (listen port 0 picks one); 0: no plain port
  std::uint16_t tlsPort() const;  // the bound TLS port; 0: none

  UnsCore& core();
  Forwarder& forwarder();
  void status(nlohmann::json& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeUnsService(NodeContext& node);

}  // namespace lcc::uns
