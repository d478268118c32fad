// tls_config.h — the TLS policy of a node, from the tls.* keys (docs/security.md §3):
// which contexts the node needs, made from which files, checked at start, and made
// again on SIGHUP. The mechanism (contexts, TlsStream) is core/net/tls.h.
//
// Three contexts, each made only when a key uses it, and the content client:
// - server(): listen.uns_tls, listen.cu_tls, listen.https — tls.cert_file/key_file,
//   tls.min_version; with tls.client_ca_file, clients must show a certificate;
// - peerServer(): link listeners written tls://host:port (listen.qm, listen.botm,
//   listen.robots) — the same certificate, and the connecting machine must show one
//   of tls.peer_ca_file;
// - peerClient(): link targets written tls://host:port (uns.qm, botm.source,
//   bot.connect) — the server is checked against tls.peer_ca_file, and this node
//   shows tls.cert_file;
// - contentClient(): always made — the CU reads other machines' content from https://
//   URLs (cu.content_urls, or learnt from the BOT-Ms at any time): the server is checked
//   against tls.peer_ca_file, or the system's CAs when it is not set, and this node
//   shows tls.cert_file when it is set.
// THREADS: the slots are thread-safe; reload() from one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "lcc/clock.h"
#include "net/tls.h"

namespace lcc {

class NodeTls {
 public:
  // Checks the keys and makes the contexts; every problem is added as
  // "file: key: why". Returns null when there are problems.
  static std::shared_ptr<NodeTls> fromConfig(const Config& cfg, std::vector<ConfigProblem>* problems);

  // Null when no key needs it.
  const std::shared_ptr<net::TlsContextSlot>& server() const { return server_; }
  const std::shared_ptr<net::TlsContextSlot>& peerServer() const { return peer_server_; }
  const std::shared_ptr<net::TlsContextSlot>& peerClient() const { return peer_client_; }
  const std::shared_ptr<net::TlsContextSlot>& contentClient() const { return content_client_; }
  Millis handshakeTimeout() const { return handshake_timeout_; }
  bool any() const { return server_ || peer_server_ || peer_client_ || content_client_; }

  // For a program that only connects (lcc-bot --connect tls://...): only peerClient(),
  // from the tls.* keys of `cfg` (peer_ca_file, and cert_file/key_file shown); reload()
  // reads those files again (lcc-bot's SIGHUP).
  static Result<std::shared_ptr<NodeTls>> linkClientOnly(const Config& cfg);

  // Reads the files again and replaces the contexts (new connections take the new
  // ones; open ones keep theirs). On a problem nothing is replaced: the Status says why.
  Status reload();

 private:
  struct Settings {
    std::string file;  // the configuration file, for messages
    net::TlsServerOptions server, peer_server;
    net::TlsClientOptions peer_client, content_client;
    bool want_server = false, want_peer_server = false, want_peer_client = false, want_content_client = false;
  };
  struct Made {
    net::TlsContextPtr server, peer_server, peer_client, content_client;
  };
  static bool make(const Settings& s, Made* out, std::vector<ConfigProblem>* problems);

  Settings settings_;
  std::shared_ptr<net::TlsContextSlot> server_, peer_server_, peer_client_, content_client_;
  Millis handshake_timeout_{10000};
};

// The TLS of a link end for net::setListenAddress / net::setTargetAddress: the peer
// contexts of `tls` (none when `tls` is null: a tls:// address is then an error).
net::TlsLink linkListening(const std::shared_ptr<NodeTls>& tls, Clock* clock);
net::TlsLink linkConnecting(const std::shared_ptr<NodeTls>& tls, Clock* clock);

}  // namespace lcc
