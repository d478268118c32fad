// botm_server.h — the QM's listen.botm port: BOT-Ms connect to their url source
// (docs/internal-protocols.md §2). Bytes only: link events and results go to a
// BotmLinkHandler (the service posts them to the QM's strand); the QM's fetches and
// deletes come back through the BotmPort this server implements.
// A BOT-M that breaks the framing is logged and disconnected; its fetches are lost
// (linkDown) and handed out again. Content URLs a BOT-M announces go straight to
// options.content_locator (the QM engine does not need them).
// In-process form (issue 28): with options.local_listeners set, start() also listens
// there on options.listen, so a BOT-M of the same lccd whose botm.source names that
// address links in process (net/local_link.h): the same messages as records, handled
// by the same code, under link ids of the same series.
// THREADS: thread-safe; one strand per connection.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/tls.h"
#include "qm/queue_manager.h"

namespace lcc {
class Config;
class ContentLocator;
namespace net {
class LocalListeners;
}
}

namespace lcc::qm {

class BotmLinkHandler {
 public:
  virtual ~BotmLinkHandler() = default;
  virtual void linkUp(LinkId link, const std::string& machine, std::uint64_t capacity) = 0;
  virtual void linkCapacity(LinkId link, std::uint64_t capacity) = 0;
  virtual void linkMachines(LinkId link, const std::vector<std::string>& machines) = 0;
  virtual void linkDown(LinkId link) = 0;
  virtual void result(LinkId link, const FetchResult& outcome) = 0;
  virtual void deleted(LinkId link, std::uint64_t id, bool ok, const std::string& reason) = 0;
  // The orphan sweep's answers (<file>, <swept>); a handler that never sweeps ignores them.
  virtual void sweepFile(LinkId link, std::uint64_t sweep, const std::string& machine, const std::string& file,
                         std::uint64_t size) {
    (void)link, (void)sweep, (void)machine, (void)file, (void)size;
  }
  virtual void swept(LinkId link, std::uint64_t sweep, const std::string& machine, std::uint64_t files) {
    (void)link, (void)sweep, (void)machine, (void)files;
  }
};

// Members with a config key carry no default: fromConfig() (server_options.cc) reads
// the schema's. Tests start from BotmServerOptions::fromConfig(Config::defaults()).
struct BotmServerOptions {
  std::string listen;                      // listen.botm: host:port, or tls://host:port
  std::size_t max_attribute_length = 0;    // uns.max_attribute_length: the link's longest attribute value
  bool frames = false;                     // node.link_frames: take a BOT-M's offer of compact frames
  // No config key:
  net::TlsLink tls;                        // for tls:// (common/tls_config.h)
  std::string source_name = "qm";
  // When set, the content URLs BOT-Ms announce (opening content=, <machines content=>)
  // are recorded here for the CU (common/content_locator.h).
  ContentLocator* content_locator = nullptr;
  // When set, BOT-Ms of this process link here in process (null: TCP only).
  net::LocalListeners* local_listeners = nullptr;

  static BotmServerOptions fromConfig(const Config& config);
};

class BotmServer final : public BotmPort {
 public:
  BotmServer(boost::asio::io_context& io, BotmServerOptions options, BotmLinkHandler& handler);
  ~BotmServer() override;

  Status start();
  void stop();
  std::uint16_t port() const;
  std::size_t connections() const;
  // Of connections(), the in-process links.
  std::size_t localLinks() const;

  // BotmPort: thread-safe; a fetch for a link that is gone is dropped (its linkDown
  // has been or will be reported).
  void sendFetch(LinkId link, const FetchRequest& order) override;
  void sendDelete(LinkId link, std::uint64_t id, const std::string& machine, const std::string& file) override;
  void sendSweep(LinkId link, std::uint64_t sweep) override;
  void sendLease(LinkId link, Millis lease) override;  // <ping lease> (issue 27 §3)

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lcc::qm
