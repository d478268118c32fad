// connection.h — one connection of any role: a strand, a read loop that hands bytes
// to the owner's codec, a write queue with a byte bound, deadlines, and one close
// reason reported once. The owner decides what bytes mean (README.md, "How a role
// uses the connection layer").
//
// THREADS: every handler runs on the connection's strand. send(), close(),
// closeAfterFlush(), setReading() and the deadline calls may come from any thread
// (they run on the strand); peer(), closed() and the counters are thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/clock.h"
#include "net/byte_stream.h"

namespace lcc::net {

// Why a connection ended.
enum class CloseReason : std::uint8_t {
  kLocal,           // the owner closed it (its work is done)
  kPeerClosed,      // the peer ended the stream (EOF)
  kIoError,         // reset, broken pipe or another socket error
  kIdleTimeout,     // no byte moved either way for `idle`
  kReadTimeout,     // the peer owed bytes for `read` (Deadline::kRead)
  kWriteTimeout,    // a write made no progress for `write`
  kSessionTimeout,  // the whole-session deadline passed
  kTooMuchQueued,   // more than max_queued bytes waited for a peer that does not read
  kProtocolError,   // the owner's codec refused the bytes
  kShutdown,        // the server or client stops
  kRefused,         // over a connection limit (the owner answered and closed)
};
std::string_view closeReasonName(CloseReason reason);

enum class Deadline : std::uint8_t { kIdle, kRead, kWrite, kSession };

struct ConnectionOptions {
  // Bytes queued and not yet written; past this the connection closes (kTooMuchQueued).
  std::size_t max_queued = 64u << 20;
  // Back-pressure: no new read while more than this waits to be written (0: off).
  std::size_t pause_reading_above = 0;
  // Deadlines (0: none). idle: re-armed by every byte either way. write: armed while a
  // write is under way. session: from start(). read: armed by the owner
  // (armDeadline(kRead, ...)) and re-armed by every byte received while armed.
  Millis idle{0}, read{0}, write{0}, session{0};
  // The TLS handshake must be done within this (0: no limit of its own); past it the
  // connection closes with kIoError. A plain TCP stream has no handshake.
  Millis handshake{0};
  // After closeAfterFlush(): FIN, then read and drop for at most this long, so closing
  // does not reset the connection before the peer has read our last bytes (0: none).
  Millis linger{0};
  // A hard cap on the connection's life, whatever its handlers say (0: none); past it
  // the connection closes with kRefused. The acceptor sets it on refused connections.
  Millis lifetime{0};
  std::size_t read_buffer = 64 * 1024;
  // Timers of the deadlines and of `linger`; without a clock there are neither.
  Clock* clock = nullptr;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Handlers {
    // The bytes received: the owner's codec (XML stream reader, a framing...).
    std::function<void(std::string_view bytes)> on_bytes;
    // Runs once, last, whatever ended the connection.
    std::function<void(CloseReason reason, const std::string& detail)> on_close;
    // Optional. The peer half-closed; reading stops. Return true to stay open (the
    // owner will answer and close); without a handler, or on false: kPeerClosed.
    std::function<bool()> on_eof;
    // Optional. A deadline passed. Return true when handled (the connection stays);
    // without a handler, or on false, it closes with the deadline's reason.
    std::function<bool(Deadline)> on_deadline;
    // Optional. A write finished; `written` counts every byte written so far.
    std::function<void(std::uint64_t written)> on_written;
  };

  Connection(Strand strand, std::unique_ptr<ByteStream> stream, ConnectionOptions options);
  ~Connection();
  // A plain TCP connection on a new strand of `io` (`socket` accepted or connected).
  static std::shared_ptr<Connection> overTcp(boost::asio::io_context& io, boost::asio::ip::tcp::socket socket,
                                             ConnectionOptions options = {});

  // Arms the automatic deadlines, then starts the handshake and the read loop.
  void start(Handlers handlers);
  // Queues bytes (dispatched: inline when called on the strand). Bytes queued in one
  // turn of the strand leave in one write.
  void send(std::string bytes);
  // Ends now; queued bytes are dropped.
  void close(CloseReason reason, std::string detail = {});
  // Queues `last`, writes everything, then ends with `reason` (linger: see the options).
  void closeAfterFlush(std::string last = {}, CloseReason reason = CloseReason::kLocal);
  // Reading on (the default) or off. Off: no new read starts (one under way completes).
  void setReading(bool on);
  // Arms `d` to pass `after` from now (strand only), or disarms it.
  void armDeadline(Deadline d, Millis after);
  void disarmDeadline(Deadline d);
  bool deadlineArmed(Deadline d) const;  // strand only

  Strand& strand() { return strand_; }
  const std::string& peer() const { return peer_; }
  const std::string& peerAddress() const { return address_; }
  bool closed() const { return closed_flag_.load(); }
  std::size_t queuedBytes() const { return queued_bytes_.load(); }
  std::uint64_t bytesWritten() const { return written_.load(); }
  std::uint64_t bytesRead() const { return read_.load(); }

  // Something the connection keeps until it closes (an acceptor's connection slot).
  void holdUntilClosed(std::shared_ptr<void> thing) { held_ = std::move(thing); }

 private:
  static constexpr int kTimers = 7;  // the four deadlines, the linger, handshake and lifetime timers
  static constexpr int kLingerTimer = 4;
  static constexpr int kHandshakeTimer = 5;
  static constexpr int kLifetimeTimer = 6;
  struct Timer {
    Millis length{0};
    MonoTime due{};
    bool armed = false;
  };

  void maybeRead();
  void onRead(const boost::system::error_code& ec, std::size_t n);
  void queue(std::string bytes);
  void scheduleFlush();
  void doWrite();
  void onWritten(const boost::system::error_code& ec, std::size_t n);
  void finishFlush();
  void arm(int timer, Millis after);
  void disarm(int timer);
  void scheduleClock();              // the one clock timer, due no later than the earliest deadline
  void clockFired(TimerId id);
  void timerDue(int timer);
  void shutdownNow(CloseReason reason, const std::string& detail);

  Strand strand_;
  std::unique_ptr<ByteStream> stream_;
  const ConnectionOptions options_;
  std::string peer_, address_;
  Handlers handlers_;
  std::vector<char> rbuf_;
  std::deque<std::string> wq_;
  std::string writing_;
  std::atomic<std::size_t> queued_bytes_{0};
  std::atomic<std::uint64_t> written_{0}, read_{0};
  std::atomic<bool> closed_flag_{false};
  std::array<Timer, kTimers> timers_{};
  // One clock timer per connection serves every timer above: moved only when a deadline
  // comes before it; a disarmed deadline leaves it to fire and find nothing due.
  TimerId clock_id_ = 0;
  MonoTime clock_fires_{};
  std::shared_ptr<void> held_;
  CloseReason close_reason_ = CloseReason::kLocal;
  std::string close_detail_;
  bool started_ = false, open_ = false, closed_ = false;
  bool reading_on_ = true, read_pending_ = false, eof_ = false;
  bool write_active_ = false, flush_posted_ = false;
  bool closing_ = false, lingering_ = false;
};

}  // namespace lcc::net
