// local_link.h — a link between two roles of one process that carries records, not
// bytes (issue 28): what the two ends would otherwise encode, write to a loopback
// socket, read and decode is handed over as the decoded message itself.
//
// A link has two ends; each end has a strand, where its handlers run. What one end
// sends waits in the other end's inbox, a bounded queue, and is handed over in order,
// in batches: one post to the receiver's strand per batch, not per message. The
// network form's guarantees hold (core/net/README.md, "In-process links"):
//   - order: each direction delivers in the order sent;
//   - close after flush: what was sent before a close is delivered, then each end's
//     on_close runs once, last (as a TCP peer reads our last bytes, then EOF);
//   - a bound: past LocalLinkOptions::max_queued messages waiting in one inbox (a
//     receiver that does not keep up) the link closes with kTooMuchQueued, as a
//     Connection closes past its max_queued bytes; send() then says false and the
//     owner's protocol does what it does when a TCP link drops (the QM hands the
//     link's fetches out again, the BOT-M connects again).
// Acknowledgements are the protocol's own messages (a result answers a fetch, a
// <deleted> a delete): the carrier adds none and drops none.
// THREADS: send(), close() and start() from any thread; handlers on the end's strand.
#pragma once

#include <boost/asio/post.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "net/byte_stream.h"
#include "net/connection.h"

namespace lcc::net {

struct LocalLinkOptions {
  // Messages waiting in one end's inbox; one more closes the link (kTooMuchQueued).
  std::size_t max_queued = 524288;
};

namespace detail {
// What both ends share: the one lock, and whether (and why) the link is closed.
struct LocalLinkCore {
  std::mutex mu;
  bool closed = false;
  CloseReason reason = CloseReason::kLocal;
  std::string detail;
  std::size_t max_queued = 0;
};
}  // namespace detail

// One end: sends Out, receives In. Made in pairs by makeLocalLink().
template <typename Out, typename In>
class LocalEnd : public std::enable_shared_from_this<LocalEnd<Out, In>> {
 public:
  using Peer = LocalEnd<In, Out>;
  struct Handlers {
    // A batch of messages, in the order they were sent. May be moved from.
    std::function<void(std::vector<In>& batch)> on_messages;
    // Once, last, after every message sent before the close was handed over.
    std::function<void(CloseReason reason, const std::string& detail)> on_close;
  };

  LocalEnd(std::shared_ptr<detail::LocalLinkCore> core, Strand strand) : core_(std::move(core)), strand_(std::move(strand)) {}
  LocalEnd(const LocalEnd&) = delete;
  LocalEnd& operator=(const LocalEnd&) = delete;
  ~LocalEnd() {
    // An end dropped without a close closes the link: the peer hears of it.
    std::shared_ptr<Peer> peer = peer_.lock();
    std::lock_guard<std::mutex> lk(core_->mu);
    if (!core_->closed) markClosed(CloseReason::kPeerClosed, "the other end went away");
    if (peer) peer->wakeLocked();
  }

  // Starts handing over what arrives (also what arrived before start()). Once.
  void start(Handlers handlers) {
    std::lock_guard<std::mutex> lk(core_->mu);
    handlers_ = std::move(handlers);
    started_ = true;
    if (!inbox_.empty() || core_->closed) wakeLocked();
  }

  // Queues `m` for the peer. False when the link is closed, or closes now because the
  // peer's inbox holds max_queued messages (then `m` is not sent).
  bool send(Out m) {
    std::shared_ptr<Peer> peer = peer_.lock();
    std::lock_guard<std::mutex> lk(core_->mu);
    if (core_->closed || !peer) return false;
    if (peer->inbox_.size() >= core_->max_queued) {
      markClosed(CloseReason::kTooMuchQueued,
                 std::to_string(core_->max_queued) + " messages waited for a receiver that did not take them");
      wakeLocked();
      peer->wakeLocked();
      return false;
    }
    peer->inbox_.push_back(std::move(m));
    peer->wakeLocked();
    return true;
  }
  // Sends each of `ms` in order; false as soon as one could not be sent.
  bool send(std::vector<Out> ms) {
    for (auto& m : ms) {
      if (!send(std::move(m))) return false;
    }
    return true;
  }

  // Closes the link; what is queued either way is still handed over first.
  void close(CloseReason reason = CloseReason::kLocal, std::string detail = {}) {
    std::shared_ptr<Peer> peer = peer_.lock();
    std::lock_guard<std::mutex> lk(core_->mu);
    if (core_->closed) return;
    markClosed(reason, std::move(detail));
    wakeLocked();
    if (peer) peer->wakeLocked();
  }

  bool closed() const {
    std::lock_guard<std::mutex> lk(core_->mu);
    return core_->closed;
  }
  // Messages waiting in this end's inbox.
  std::size_t queued() const {
    std::lock_guard<std::mutex> lk(core_->mu);
    return inbox_.size();
  }
  Strand& strand() { return strand_; }

 private:
  template <typename A, typename B>
  friend class LocalEnd;
  template <typename A, typename B>
  friend std::pair<std::shared_ptr<LocalEnd<A, B>>, std::shared_ptr<LocalEnd<B, A>>> makeLocalLink(
      Strand, Strand, LocalLinkOptions);

  void markClosed(CloseReason reason, std::string detail) {  // core_->mu held
    core_->closed = true;
    core_->reason = reason;
    core_->detail = std::move(detail);
  }
  // Posts one drain unless one is pending (core_->mu held).
  void wakeLocked() {
    if (!started_ || drain_posted_ || close_reported_) return;
    drain_posted_ = true;
    boost::asio::post(strand_, [self = this->shared_from_this()] { self->drain(); });
  }
  // On the strand: the whole inbox in one batch, then the close if the link is closed.
  void drain() {
    std::vector<In> batch;
    bool report_close = false;
    CloseReason reason;
    std::string detail;
    {
      std::lock_guard<std::mutex> lk(core_->mu);
      drain_posted_ = false;
      batch.swap(inbox_);
      if (core_->closed && !close_reported_) {
        close_reported_ = true;  // nothing arrives after a close: this batch is the last
        report_close = true;
        reason = core_->reason;
        detail = core_->detail;
      }
    }
    if (!batch.empty() && handlers_.on_messages) handlers_.on_messages(batch);
    if (report_close) {
      Handlers h = std::move(handlers_);  // the handlers may hold this end: let it go
      handlers_ = {};
      if (h.on_close) h.on_close(reason, detail);
    }
  }

  std::shared_ptr<detail::LocalLinkCore> core_;
  Strand strand_;
  std::weak_ptr<Peer> peer_;
  Handlers handlers_;         // set in start(), used on the strand
  std::vector<In> inbox_;     // core_->mu
  bool started_ = false;      // core_->mu
  bool drain_posted_ = false; // core_->mu
  bool close_reported_ = false;
};

// A link between an end on strand `a` (sends A, receives B) and one on strand `b`.
template <typename A, typename B>
std::pair<std::shared_ptr<LocalEnd<A, B>>, std::shared_ptr<LocalEnd<B, A>>> makeLocalLink(
    Strand a, Strand b, LocalLinkOptions options = {}) {
  auto core = std::make_shared<detail::LocalLinkCore>();
  core->max_queued = options.max_queued == 0 ? 1 : options.max_queued;
  auto ea = std::make_shared<LocalEnd<A, B>>(core, std::move(a));
  auto eb = std::make_shared<LocalEnd<B, A>>(core, std::move(b));
  ea->peer_ = eb;
  eb->peer_ = ea;
  return {ea, eb};
}

}  // namespace lcc::net
