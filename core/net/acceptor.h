// acceptor.h — one listener of any role: binds a HostPort, accepts onto a new strand
// per connection, and counts connections in total and per source address.
//
// Every connection is refused at once, before any handshake, when the process's
// DescriptorBudget says no (closed, no answer). Past a limit of this listener a plain
// TCP connection is handed to the owner, marked refused, so that it can answer with its
// protocol's code (UNS init_rejected 120, CU query_rejected 120) within
// kRefusalLifetime (at most kMaxAnsweredRefusals at once, then closed at once too); on
// a TLS listener (an answer would need the handshake) it is closed at once. A refused connection holds no slot of the listener. Refusals are counted.
// THREADS: start() from one thread; stop(), the counters and the callbacks are
// thread-safe; on_accept runs on the acceptor's strand.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "lcc/status.h"
#include "net/address_ranges.h"
#include "net/address_slots.h"
#include "net/connection.h"
#include "net/descriptor_budget.h"
#include "net/host_port.h"
#include "net/tls.h"

namespace lcc::net {

// How long a listener waits after a failed accept (EMFILE, ENFILE, ENOBUFS) before the next.
inline constexpr Millis kAcceptRetry{100};
// A refused plain connection handed to its owner is closed at the latest after this
// (its answer, FIN and linger included); its deadlines are cut to it.
inline constexpr Millis kRefusalLifetime{1000};
// Refused plain connections being answered at once per listener; past it a refused
// connection is closed at once, so refusals never pile up descriptors.
inline constexpr std::size_t kMaxAnsweredRefusals = 16;

struct AcceptorOptions {
  std::string what = "listen";  // the config key, for messages ("listen.qm")
  std::string listen;           // host:port (HostPort); port 0 picks one
  std::size_t max_connections = 0;  // 0: no limit
  std::size_t max_per_address = 0;  // 0: no limit
  ConnectionOptions connection;     // for every accepted connection
  // TLS: every accepted connection does a server handshake with the slot's current
  // context (null: plain TCP). Set connection.handshake to bound it.
  std::shared_ptr<TlsContextSlot> tls;
  // Plain TCP: hand a connection over a limit to the owner to answer (false: close it
  // at once, as on a TLS listener).
  bool answer_refusals = true;
  // Called (on the acceptor's strand) for each connection the acceptor refused and
  // closed itself, before any handshake (a role's over-limit counter).
  std::function<void(Admission)> on_refused;
  // Peers whose connections max_per_address does not count (a UNS's trusted proxies:
  // it counts the CPs they carry by the address their PROXY header names).
  std::shared_ptr<const AddressRanges> per_address_exempt;
  // The descriptor budget every connection must get a place in (null: the process's).
  DescriptorBudget* budget = nullptr;
};

// A link listener's address, "host:port" or "tls://host:port", into `ao` (listen, and
// for tls:// the context and handshake deadline of `link`). Error: tls:// and no context.
Status setListenAddress(AcceptorOptions& ao, const std::string& address, const TlsLink& link);

// "host:port" to the endpoint to bind (a blocking resolve, for start-up code).
Result<boost::asio::ip::tcp::endpoint> resolveListen(boost::asio::io_context& io, const HostPort& listen);

class Acceptor : public std::enable_shared_from_this<Acceptor> {
 public:
  // `conn` is not started: the owner calls conn->start(...).
  using OnAccept = std::function<void(std::shared_ptr<Connection> conn, Admission admission)>;

  Acceptor(boost::asio::io_context& io, AcceptorOptions options, OnAccept on_accept);
  ~Acceptor();

  // Binds and listens (synchronously, so a port in use is reported here), then
  // accepts. Call once, before anything else touches the acceptor.
  Status start();
  // Closes the listener; open connections are the owner's to close.
  void stop();
  // After stop(): listens again, on the port first bound (errors are logged).
  void resume();

  std::uint16_t port() const { return port_.load(); }
  bool listening() const { return listening_.load(); }
  std::size_t active() const;  // admitted connections not yet closed
  std::uint64_t accepted() const { return accepted_.load(); }
  std::uint64_t refused() const { return refused_.load(); }
  std::uint64_t refusedForDescriptors() const { return refused_budget_.load(); }
  // The TLS context new connections take (null: plain TCP); replace it to reload.
  const std::shared_ptr<TlsContextSlot>& tlsSlot() const { return options_.tls; }

 private:
  Status listen();  // strand (or start())
  void accept();
  void onAccepted(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket, Strand strand);
  // After a failed accept (out of descriptors: the connection stays in the backlog, so
  // accepting at once fails again) the next accept waits kAcceptRetry (options'
  // connection.clock, else an Asio timer), so the process does not spin.
  void acceptLater();
  // Closes a refused socket at once (no handshake, no answer), counted.
  void refuseNow(boost::asio::ip::tcp::socket& socket, Admission why, const std::string& address);
  // Options for a refused connection handed to the owner: every deadline cut to
  // kRefusalLifetime, and that as a hard cap.
  ConnectionOptions refusalOptions() const;

  boost::asio::io_context& io_;
  Strand strand_;
  AcceptorOptions options_;
  OnAccept on_accept_;
  std::shared_ptr<AddressSlots> slots_ = std::make_shared<AddressSlots>();
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;  // on strand_
  boost::asio::ip::tcp::endpoint endpoint_;
  std::atomic<std::uint16_t> port_{0};
  std::atomic<bool> listening_{false};
  std::atomic<std::uint64_t> accepted_{0}, refused_{0}, refused_budget_{0};
  std::uint64_t accept_failures_ = 0;  // in a row, on strand_
  std::uint64_t budget_refusals_run_ = 0;  // in a row, on strand_ (logs the first)
  // Refused connections handed to the owner and not yet closed (kMaxAnsweredRefusals).
  std::shared_ptr<std::atomic<std::size_t>> answering_ = std::make_shared<std::atomic<std::size_t>>(0);
};

// An acceptor that hands each connection to `owner->accepted(conn, admission)` for as
// long as the owner lives.
template <typename Owner>
std::shared_ptr<Acceptor> makeAcceptor(boost::asio::io_context& io, AcceptorOptions options,
                                       const std::shared_ptr<Owner>& owner) {
  std::weak_ptr<Owner> weak = owner;
  return std::make_shared<Acceptor>(io, std::move(options), [weak](std::shared_ptr<Connection> c, Admission a) {
    if (auto self = weak.lock()) self->accepted(std::move(c), a);
  });
}

}  // namespace lcc::net
