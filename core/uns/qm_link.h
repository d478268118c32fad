// qm_link.h — the forwarder's link to the QM (docs/internal-protocols.md §1), in the
// form chosen once at start():
//  - in process (issue 28): the QM runs in this lccd and node.in_process_links is on
//    (the QM's intake listens on uns.qm's address in net::LocalListeners): records
//    (proto/uns_qm_local.h) on a net/local_link.h link; the parsed notices go to the QM
//    as they are, with no XML on the way;
//  - over TCP otherwise (net::Connector + net::Connection): the XML stream, or compact
//    frames (proto/uns_qm_frames.h) once the QM took the offer (node.link_frames).
// Either form takes both text (the XML of sets: a spooled set replayed, a submitter's
// set) and records (a session's notices): what the link does not speak is converted
// here, so the forwarder may hand over either at any time.
// Both give the forwarder the same events, on its strand: the QM's opening, the acks
// in order, "taken" (the window moved: bytes written, or parts the QM took), one
// "down" per link that was up, "unreachable" per failed attempt (retried by itself);
// and the same bound: queuedBytes() is what the QM has not taken yet.
// THREADS: every call, and every handler, on the strand given.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <optional>
#include <functional>
#include <memory>
#include <string>

#include "lcc/clock.h"
#include "lcc/status.h"
#include "net/byte_stream.h"
#include "net/tls.h"
#include "proto/uns_qm_local.h"

namespace lcc::net {
class LocalListeners;
}

namespace lcc::uns {

struct QmLinkOptions {
  std::string qm_address;                 // host:port, or tls://host:port
  net::TlsLink tls;
  Millis qm_retry{};                      // between attempts, less up to 20 % jitter
  std::size_t max_attribute_length = 0;   // of the QM's stream (TCP)
  bool frames = false;                    // TCP: offer compact frames (node.link_frames)
  std::string uns_name;
  net::LocalListeners* local_listeners = nullptr;  // null: TCP only
};

class QmLink : public std::enable_shared_from_this<QmLink> {
 public:
  struct Handlers {
    std::function<void()> on_open;                          // the QM's opening: sets may go
    std::function<void(const proto::UnsQmAck&)> on_ack;
    std::function<void()> on_taken;                         // queuedBytes() went down
    std::function<void(const std::string& why)> on_down;    // a link that was made ended
    std::function<void(const std::string& why)> on_unreachable;  // an attempt failed
    std::function<void()> on_ping;  // TCP: answer <pong/> behind what is queued (sendText)
    std::function<void()> on_made;  // TCP: connected, the open sent; the QM's open is owed
  };

  QmLink(boost::asio::io_context& io, net::Strand strand, Clock* clock, QmLinkOptions options, Handlers handlers);
  ~QmLink();

  // Chooses the form and starts connecting; a bad qm_address is returned here.
  Status start();
  // After on_down (or drop()): connects again.
  void retry();
  // Closes for good; `polite`: the stream is ended behind what was sent.
  void stop(bool polite);
  // Closes the link now (no on_down for it).
  void drop(const std::string& why);

  bool local() const { return local_form_; }
  // Records are what this link carries best: in process, or over TCP with frames offered
  // (a QM that declines them gets the records as XML, encoded here).
  bool takesRecords() const { return local_form_ || opt_.frames; }
  bool framed() const;  // TCP, and the QM took the frames (after on_open)
  bool made() const;  // a link exists (maybe before the QM's opening)
  // A piece of the XML stream (sets, ends, a pong). In process, and over TCP with
  // frames, it is read here into records.
  void sendText(std::string bytes);
  // A record of a set whose notices are at hand; over TCP without frames it is encoded
  // as XML here.
  void sendRecord(proto::UnsLocalRecord record);
  std::uint64_t queuedBytes() const;

 private:
  struct Tcp;
  struct Local;
  void connectLocal();
  void down(const std::string& why);

  boost::asio::io_context& io_;
  net::Strand strand_;
  Clock* clock_;
  QmLinkOptions opt_;
  Handlers h_;
  bool local_form_ = false;
  bool stopped_ = false;
  TimerId timer_ = 0;
  std::shared_ptr<Tcp> tcp_;
  std::shared_ptr<Local> local_;
};

// Notices as a record of the in-process form, weighed (proto::urlSizeHint).
proto::UnsLocalUrls localUrls(std::vector<UrlNotice> urls);
// Notices as their <url/> elements (the TCP form, the spool).
void appendUrls(std::string& out, const std::vector<UrlNotice>& urls);

// What waits for the link, in order: text in slices, each handed over once the link
// has less than `window` bytes queued, so a set larger than the connection's write
// bound (net::ConnectionOptions::max_queued) passes and at most a window is copied;
// and (in process) records, each handed over as it is.
class QmOutQueue {
 public:
  explicit QmOutQueue(std::size_t window) : window_(window) {}
  void pushText(std::string text);
  void pushRecord(proto::UnsLocalRecord record, std::uint64_t bytes);
  void pump(QmLink& link);  // hands over what fits
  void clear();
  std::uint64_t bytes() const { return bytes_; }  // waiting here (counting what of the front was handed over)

 private:
  struct Item {
    std::string text;
    std::optional<proto::UnsLocalRecord> record;
    std::uint64_t bytes = 0;
  };
  static constexpr std::size_t kSlice = 1u << 20;
  std::size_t window_;
  std::deque<Item> items_;
  std::size_t off_ = 0;  // of the front text, already handed over
  std::uint64_t bytes_ = 0;
  std::uint64_t clears_ = 0;  // clear() calls: pump() stops when a handler cleared it under it
};

}  // namespace lcc::uns
