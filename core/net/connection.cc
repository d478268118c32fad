#include "net/connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <optional>

namespace lcc::net {

namespace asio = boost::asio;

std::string_view closeReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::kLocal: return "closed";
    case CloseReason::kPeerClosed: return "peer closed the connection";
    case CloseReason::kIoError: return "connection error";
    case CloseReason::kIdleTimeout: return "idle timeout";
    case CloseReason::kReadTimeout: return "read timeout";
    case CloseReason::kWriteTimeout: return "write timeout";
    case CloseReason::kSessionTimeout: return "session timeout";
    case CloseReason::kTooMuchQueued: return "peer does not read";
    case CloseReason::kProtocolError: return "protocol error";
    case CloseReason::kShutdown: return "shutting down";
    case CloseReason::kRefused: return "refused";
  }
  return "?";
}

namespace {

CloseReason reasonFor(Deadline d) {
  switch (d) {
    case Deadline::kIdle: return CloseReason::kIdleTimeout;
    case Deadline::kRead: return CloseReason::kReadTimeout;
    case Deadline::kWrite: return CloseReason::kWriteTimeout;
    case Deadline::kSession: return CloseReason::kSessionTimeout;
  }
  return CloseReason::kLocal;
}

constexpr int idx(Deadline d) { return static_cast<int>(d); }

}  // namespace

Connection::Connection(Strand strand, std::unique_ptr<ByteStream> stream, ConnectionOptions options)
    : strand_(std::move(strand)),
      stream_(std::move(stream)),
      options_(options),
      peer_(stream_->peer()),
      address_(stream_->peerAddress()),
      rbuf_(options.read_buffer == 0 ? 16 * 1024 : options.read_buffer) {}

Connection::~Connection() = default;

std::shared_ptr<Connection> Connection::overTcp(asio::io_context& io, asio::ip::tcp::socket socket,
                                                ConnectionOptions options) {
  Strand strand = asio::make_strand(io);
  auto stream = std::make_unique<TcpStream>(strand, std::move(socket));
  return std::make_shared<Connection>(strand, std::move(stream), options);
}

void Connection::start(Handlers handlers) {
  asio::post(strand_, [self = shared_from_this(), h = std::move(handlers)]() mutable {
    self->handlers_ = std::move(h);
    self->started_ = true;
    if (self->closed_) {  // closed before it started: report it now
      if (auto cb = std::move(self->handlers_.on_close)) cb(self->close_reason_, self->close_detail_);
      self->handlers_ = Handlers{};
      return;
    }
    if (self->options_.session.count() > 0) self->arm(idx(Deadline::kSession), self->options_.session);
    if (self->options_.idle.count() > 0) self->arm(idx(Deadline::kIdle), self->options_.idle);
    if (self->options_.handshake.count() > 0) self->arm(kHandshakeTimer, self->options_.handshake);
    if (self->options_.lifetime.count() > 0) self->arm(kLifetimeTimer, self->options_.lifetime);
    self->stream_->handshake([self](const boost::system::error_code& ec) {
      if (self->closed_) return;
      self->disarm(kHandshakeTimer);
      if (ec) return self->shutdownNow(CloseReason::kIoError, "handshake: " + self->stream_->describeError(ec));
      self->open_ = true;
      self->maybeRead();
      self->doWrite();
    });
  });
}

// ---- reading ---------------------------------------------------------------------

void Connection::setReading(bool on) {
  asio::dispatch(strand_, [self = shared_from_this(), on] {
    self->reading_on_ = on;
    self->maybeRead();
  });
}

void Connection::maybeRead() {
  if (closed_ || read_pending_ || eof_ || !open_) return;
  if (!lingering_) {
    if (!reading_on_) return;
    if (options_.pause_reading_above > 0 && queued_bytes_.load() > options_.pause_reading_above) return;
  }
  read_pending_ = true;
  stream_->readSome(asio::buffer(rbuf_), [self = shared_from_this()](const boost::system::error_code& ec,
                                                                    std::size_t n) { self->onRead(ec, n); });
}

void Connection::onRead(const boost::system::error_code& ec, std::size_t n) {
  read_pending_ = false;
  if (closed_) return;
  if (ec) {
    eof_ = true;
    if (lingering_) return shutdownNow(close_reason_, "closed");
    if (ec != asio::error::eof) return shutdownNow(CloseReason::kIoError, "read: " + stream_->describeError(ec));
    if (handlers_.on_eof && handlers_.on_eof()) return;
    return shutdownNow(CloseReason::kPeerClosed, "peer closed the connection");
  }
  read_ += n;
  if (timers_[idx(Deadline::kIdle)].armed) arm(idx(Deadline::kIdle), timers_[idx(Deadline::kIdle)].length);
  if (timers_[idx(Deadline::kRead)].armed) arm(idx(Deadline::kRead), timers_[idx(Deadline::kRead)].length);
  if (!lingering_ && handlers_.on_bytes) handlers_.on_bytes(std::string_view(rbuf_.data(), n));
  maybeRead();
}

// ---- writing ---------------------------------------------------------------------

void Connection::send(std::string bytes) {
  asio::dispatch(strand_, [self = shared_from_this(), b = std::move(bytes)]() mutable { self->queue(std::move(b)); });
}

void Connection::queue(std::string bytes) {
  if (closed_ || closing_ || bytes.empty()) return;
  const std::size_t queued = queued_bytes_.fetch_add(bytes.size()) + bytes.size();
  wq_.push_back(std::move(bytes));
  if (queued > options_.max_queued) {
    return shutdownNow(CloseReason::kTooMuchQueued,
                       "peer does not read (" + std::to_string(queued) + " bytes queued)");
  }
  scheduleFlush();
}

void Connection::scheduleFlush() {
  // The write starts from a handler posted behind what the strand already holds, so the
  // messages of a burst leave in one write.
  if (write_active_ || flush_posted_ || !open_) return;
  flush_posted_ = true;
  asio::post(strand_, [self = shared_from_this()] {
    self->flush_posted_ = false;
    self->doWrite();
  });
}

void Connection::doWrite() {
  if (write_active_ || closed_ || !open_) return;
  if (wq_.empty()) {
    if (closing_ && !lingering_) finishFlush();
    return;
  }
  if (wq_.size() == 1) {
    writing_ = std::move(wq_.front());
    wq_.pop_front();
  } else {
    writing_.clear();
    while (!wq_.empty()) {
      writing_ += wq_.front();
      wq_.pop_front();
    }
  }
  write_active_ = true;
  if (options_.write.count() > 0) arm(idx(Deadline::kWrite), options_.write);
  stream_->writeAll(asio::buffer(writing_), [self = shared_from_this()](const boost::system::error_code& ec,
                                                                       std::size_t n) { self->onWritten(ec, n); });
}

void Connection::onWritten(const boost::system::error_code& ec, std::size_t n) {
  write_active_ = false;
  disarm(idx(Deadline::kWrite));
  if (closed_) return;
  if (ec) return shutdownNow(CloseReason::kIoError, "write: " + stream_->describeError(ec));
  written_ += n;
  queued_bytes_ -= std::min(queued_bytes_.load(), n);
  writing_.clear();
  if (timers_[idx(Deadline::kIdle)].armed) arm(idx(Deadline::kIdle), timers_[idx(Deadline::kIdle)].length);
  if (handlers_.on_written) handlers_.on_written(written_.load());
  if (closed_) return;
  maybeRead();  // back-pressure may be over
  doWrite();
}

void Connection::closeAfterFlush(std::string last, CloseReason reason) {
  asio::post(strand_, [self = shared_from_this(), l = std::move(last), reason]() mutable {
    if (self->closed_ || self->closing_) return;
    self->queue(std::move(l));
    if (self->closed_) return;
    self->closing_ = true;
    self->close_reason_ = reason;
    self->doWrite();
  });
}

void Connection::finishFlush() {
  if (options_.linger.count() > 0 && options_.clock != nullptr && !eof_) {
    stream_->shutdownSend();
    lingering_ = true;
    arm(kLingerTimer, options_.linger);
    maybeRead();
    return;
  }
  shutdownNow(close_reason_, "closed");
}

// ---- deadlines -------------------------------------------------------------------

void Connection::armDeadline(Deadline d, Millis after) {
  if (after.count() <= 0) return disarm(idx(d));
  arm(idx(d), after);
}

void Connection::disarmDeadline(Deadline d) { disarm(idx(d)); }

bool Connection::deadlineArmed(Deadline d) const { return timers_[idx(d)].armed; }

void Connection::arm(int t, Millis after) {
  if (options_.clock == nullptr || closed_) return;
  Timer& tm = timers_[t];
  tm.length = after;
  tm.due = options_.clock->monoNow() + after;
  tm.armed = true;
  scheduleClock();
}

// No clock call: the clock timer finds nothing due when it fires (or is cancelled at
// the close).
void Connection::disarm(int t) { timers_[t].armed = false; }

// A clock timer already due no later than the earliest deadline is left to fire and
// re-check (re-arming on every byte, or a deadline per write, costs no clock call).
void Connection::scheduleClock() {
  std::optional<MonoTime> earliest;
  for (const Timer& tm : timers_) {
    if (tm.armed && (!earliest || tm.due < *earliest)) earliest = tm.due;
  }
  if (!earliest || (clock_id_ != 0 && clock_fires_ <= *earliest)) return;
  if (clock_id_ != 0) options_.clock->cancel(clock_id_);
  const MonoTime now = options_.clock->monoNow();
  const Millis wait = *earliest > now ? std::chrono::ceil<Millis>(*earliest - now) : Millis(0);
  clock_fires_ = *earliest;
  std::weak_ptr<Connection> weak = weak_from_this();
  auto holder = std::make_shared<TimerId>(0);
  clock_id_ = options_.clock->schedule(wait, [weak, holder] {
    if (auto self = weak.lock()) {
      asio::post(self->strand_, [self, id = *holder] { self->clockFired(id); });
    }
  });
  *holder = clock_id_;  // callbacks never run inside schedule()
}

// The deadlines that are due fire, earliest first; the clock timer follows the rest.
void Connection::clockFired(TimerId id) {
  if (id != clock_id_ || closed_) return;  // a clock timer replaced meanwhile
  clock_id_ = 0;
  const MonoTime now = options_.clock->monoNow();
  for (int round = 0; round < kTimers; ++round) {
    int first = -1;
    for (int t = 0; t < kTimers; ++t) {
      if (timers_[t].armed && timers_[t].due <= now && (first < 0 || timers_[t].due < timers_[first].due)) first = t;
    }
    if (first < 0) break;
    timerDue(first);
    if (closed_) return;
  }
  scheduleClock();
}

void Connection::timerDue(int t) {
  Timer& tm = timers_[t];
  tm.armed = false;
  if (t == kLingerTimer) return shutdownNow(close_reason_, "closed");
  if (t == kLifetimeTimer) {
    return shutdownNow(CloseReason::kRefused, "refused: open for " + std::to_string(tm.length.count()) + " ms");
  }
  if (t == kHandshakeTimer) {
    return shutdownNow(CloseReason::kIoError, "handshake: not done within " + std::to_string(tm.length.count()) + " ms");
  }
  const auto d = static_cast<Deadline>(t);
  if (handlers_.on_deadline && handlers_.on_deadline(d)) return;
  shutdownNow(reasonFor(d), "no progress for " + std::to_string(tm.length.count()) + " ms");
}

// ---- closing ---------------------------------------------------------------------

void Connection::close(CloseReason reason, std::string detail) {
  asio::post(strand_, [self = shared_from_this(), reason, d = std::move(detail)] { self->shutdownNow(reason, d); });
}

void Connection::shutdownNow(CloseReason reason, const std::string& detail) {
  if (closed_) return;
  closed_ = true;
  closed_flag_ = true;
  close_reason_ = reason;
  close_detail_ = detail.empty() ? std::string(closeReasonName(reason)) : detail;
  for (int t = 0; t < kTimers; ++t) disarm(t);
  if (clock_id_ != 0 && options_.clock != nullptr) options_.clock->cancel(clock_id_);
  clock_id_ = 0;
  stream_->close();
  wq_.clear();
  queued_bytes_ = 0;
  held_.reset();
  if (!started_) return;  // start() reports it
  if (auto cb = std::move(handlers_.on_close)) cb(reason, close_detail_);
  // The other handlers may be running right now (a send from on_bytes that overflowed
  // the queue): drop them, and what they hold, from a fresh turn of the strand.
  asio::post(strand_, [self = shared_from_this()] { self->handlers_ = Handlers{}; });
}

}  // namespace lcc::net
