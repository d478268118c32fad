#include "uns/qm_link.h"

#include <algorithm>
#include <limits>
#include <boost/asio/post.hpp>
#include <random>
#include <spdlog/spdlog.h>

#include "net/connector.h"
#include "net/local_listeners.h"
#include "proto/link_frames.h"
#include "proto/uns_qm_frames.h"

namespace lcc::uns {

namespace asio = boost::asio;

namespace {
// URLs of a replayed or submitted XML set are handed over in parts of about this many
// bytes (as a session's parts: uns_options.cc kStreamPartBytes).
constexpr std::size_t kLocalPartBytes = 256 * 1024;

// The XML text of sets (a spooled set replayed, a set an IndexNow or sitemap submitter
// encoded) read into records, for a link that carries records: in process, or frames
// over TCP. A <pong/> in the text calls on_pong.
class TextRecords final : public proto::UnsStreamHandler {
 public:
  using Sink = std::function<void(proto::UnsLocalRecord)>;
  TextRecords(std::string_view uns_name, std::size_t max_attribute_length, Sink sink, std::function<void()> on_pong)
      // Our own text, whose sets the UNS capped already: no set cap here (as the QM's).
      : decoder_(*this, proto::UnsQmLimits{max_attribute_length, std::numeric_limits<std::uint64_t>::max()}),
        sink_(std::move(sink)), on_pong_(std::move(on_pong)) {
    decoder_.feed(proto::encodeUnsOpen(uns_name));
  }
  // False when the text is unreadable (a bug, not the outside world): why().
  bool feed(const std::string& bytes) { return decoder_.feed(bytes); }
  const std::string& why() const { return decoder_.errorMessage(); }

 private:
  void flushPart() {
    if (part_.empty()) return;
    sink_(proto::UnsLocalUrls{std::move(part_), std::exchange(part_bytes_, 0)});
    part_ = {};
  }
  void onUnsOpen(std::string_view, std::uint32_t) override {}
  void onSetBegin(const proto::UnsQmSetHeader& h) override {
    set_urls_ = 0;
    sink_(h);
  }
  void onSetUrl(UrlNotice&& u) override {
    part_bytes_ += proto::urlSizeHint(u);
    part_.push_back(std::move(u));
    ++set_urls_;
    if (part_bytes_ >= kLocalPartBytes) flushPart();
  }
  void onSetEnd() override {
    flushPart();
    sink_(proto::UnsLocalEnd{set_urls_});
  }
  void onSetAbort() override {
    part_.clear();
    part_bytes_ = 0;
    sink_(proto::UnsLocalAbort{});
  }
  void onPong() override {
    if (on_pong_) on_pong_();
  }

  proto::UnsStreamDecoder decoder_;
  Sink sink_;
  std::function<void()> on_pong_;
  std::vector<UrlNotice> part_;
  std::uint64_t part_bytes_ = 0, set_urls_ = 0;
};

// A record of a set on a TCP link: as frames, or as the XML stream. `open_streamed`
// remembers whether the open set is streamed (its end is <end count/> in XML).
void appendRecord(std::string& out, const proto::UnsLocalRecord& r, bool framed, bool& open_streamed) {
  if (const auto* h = std::get_if<proto::UnsQmSetHeader>(&r)) {
    open_streamed = h->streamed;
    framed ? proto::appendSetBeginFrame(out, *h) : proto::appendSetBegin(out, *h);
  } else if (const auto* u = std::get_if<proto::UnsLocalUrls>(&r)) {
    framed ? proto::appendUrlsFrames(out, u->urls) : appendUrls(out, u->urls);
  } else if (const auto* e = std::get_if<proto::UnsLocalEnd>(&r)) {
    if (framed) return proto::appendSetEndFrame(out, e->count);
    open_streamed ? proto::appendStreamedSetEnd(out, e->count) : proto::appendSetEnd(out);
  } else if (std::holds_alternative<proto::UnsLocalAbort>(r)) {
    framed ? proto::appendSetAbortFrame(out) : proto::appendStreamedSetAbort(out);
  }  // the opening and the close are the link's own
}
}  // namespace

// ---- over TCP ----------------------------------------------------------------------
struct QmLink::Tcp final : proto::QmStreamHandler {
  QmLink* link = nullptr;
  std::shared_ptr<net::Connector> connector;
  std::shared_ptr<net::Connection> conn;
  std::shared_ptr<proto::QmStreamDecoder> decoder;
  std::uint64_t gen = 0;
  // Frames: the QM took them; this side writes them from its switch on.
  bool framed = false;
  bool open_streamed = false;         // the open set (records written as XML)
  std::unique_ptr<TextRecords> text;  // framed: text read into records, made at the first

  void onQmOpen(std::uint32_t frames) override {
    if (proto::agreedFrames(frames, link->opt_.frames) != 0) {
      framed = true;
      conn->send(proto::encodeFramesSwitch());  // what follows from us is frames
    }
    link->h_.on_open();
  }
  void send(const proto::UnsLocalRecord& r) {
    std::string out;
    appendRecord(out, r, framed, open_streamed);
    if (!out.empty()) conn->send(std::move(out));
  }
  void sendText(std::string bytes) {
    if (!framed) return conn->send(std::move(bytes));
    if (!text) {
      text = std::make_unique<TextRecords>(
          link->opt_.uns_name, link->opt_.max_attribute_length, [this](proto::UnsLocalRecord r) { send(r); },
          [this] {
            std::string pong;
            proto::appendSignalFrame(pong, proto::FrameType::kPong);
            conn->send(std::move(pong));
          });
    }
    if (!text->feed(bytes)) link->down("unreadable set text for the framed link: " + text->why());
  }
  std::string closing() const {
    if (!framed) return proto::encodeUnsClose();
    std::string end;
    proto::appendSignalFrame(end, proto::FrameType::kEnd);
    return end;
  }
  void onAck(const proto::UnsQmAck& ack) override { link->h_.on_ack(ack); }
  void onPing() override { link->h_.on_ping(); }  // not conn->send: a set may be half written
  void onClose() override {}  // the feed returns false: the link goes down

  void connected(const std::shared_ptr<QmLink>& self, std::shared_ptr<net::Connection> c) {
    if (self->stopped_) return c->close(net::CloseReason::kShutdown);
    conn = std::move(c);
    proto::UnsQmLimits limits;
    limits.max_attribute_length = self->opt_.max_attribute_length;
    decoder = std::make_shared<proto::QmStreamDecoder>(*this, limits, self->opt_.frames);
    framed = open_streamed = false;
    text.reset();
    const std::uint64_t my_gen = ++gen;
    std::weak_ptr<QmLink> weak = self;
    net::Connection::Handlers h;
    h.on_bytes = [weak, my_gen](std::string_view bytes) {
      auto s = weak.lock();
      if (!s || !s->tcp_ || s->tcp_->gen != my_gen) return;
      auto dec = s->tcp_->decoder;  // a handler may drop the link (and the decoder) mid-feed
      if (!dec->feed(bytes.data(), bytes.size())) {
        if (s->tcp_->gen != my_gen) return;
        s->down(dec->failed() ? "bad stream from the QM: " + dec->errorMessage() : "the QM ended the stream");
      }
    };
    h.on_written = [weak, my_gen](std::uint64_t) {
      auto s = weak.lock();
      if (s && s->tcp_ && s->tcp_->gen == my_gen) s->h_.on_taken();
    };
    h.on_close = [weak, my_gen](net::CloseReason reason, const std::string& detail) {
      auto s = weak.lock();
      if (!s || !s->tcp_ || s->tcp_->gen != my_gen) return;
      s->down(reason == net::CloseReason::kPeerClosed ? "the QM closed the connection" : detail);
    };
    conn->start(std::move(h));
    conn->send(proto::encodeUnsOpen(self->opt_.uns_name, self->opt_.frames ? proto::kFramesVersion : 0));
    if (self->h_.on_made) self->h_.on_made();
  }
  void drop(net::CloseReason reason, const std::string& why) {
    ++gen;
    if (conn) conn->close(reason, why);
    conn.reset();
    decoder.reset();
    text.reset();
  }
};

// ---- in process ----------------------------------------------------------------------
// XML text given to sendText() is read here into records (TextRecords), so the QM takes
// one form only.
struct QmLink::Local final {
  QmLink* link = nullptr;
  std::shared_ptr<proto::LocalUnsEnd> end;
  std::uint64_t gen = 0;
  std::uint64_t queued = 0;  // bytes of parts sent and not taken yet
  bool opened = false;
  std::unique_ptr<TextRecords> text;  // made at the first text of a link

  void send(proto::UnsLocalRecord r) {
    if (auto* u = std::get_if<proto::UnsLocalUrls>(&r)) queued += u->bytes;
    if (end) end->send(std::move(r));
  }
  void feedText(const std::string& bytes) {
    if (!text) {
      text = std::make_unique<TextRecords>(link->opt_.uns_name, link->opt_.max_attribute_length,
                                           [this](proto::UnsLocalRecord r) { send(std::move(r)); }, nullptr);
    }
    // Our own text: a bug, not the outside world. The link is dropped, sets are spooled.
    if (!text->feed(bytes)) link->down("unreadable set text for the in-process link: " + text->why());
  }
  void reset() {
    ++gen;
    if (end) end->close(net::CloseReason::kLocal);
    end.reset();
    queued = 0;
    opened = false;
    text.reset();
  }
};

QmLink::QmLink(asio::io_context& io, net::Strand strand, Clock* clock, QmLinkOptions options, Handlers handlers)
    : io_(io), strand_(std::move(strand)), clock_(clock), opt_(std::move(options)), h_(std::move(handlers)) {}

QmLink::~QmLink() {
  if (timer_) clock_->cancel(timer_);
}

Status QmLink::start() {
  std::weak_ptr<QmLink> weak = shared_from_this();
  if (opt_.local_listeners != nullptr && opt_.local_listeners->listening(opt_.qm_address)) {
    local_form_ = true;
    local_ = std::make_shared<Local>();
    local_->link = this;
    asio::post(strand_, [weak] {
      if (auto s = weak.lock()) s->connectLocal();
    });
    return Status::ok();
  }
  tcp_ = std::make_shared<Tcp>();
  tcp_->link = this;
  net::ConnectorOptions co;
  co.what = "uns.qm";
  LCC_RETURN_IF_ERROR(net::setTargetAddress(co, opt_.qm_address, opt_.tls));
  co.back_off = {opt_.qm_retry, opt_.qm_retry, 0.2};
  co.connection.read_buffer = 16 * 1024;
  co.strand = strand_;
  tcp_->connector = std::make_shared<net::Connector>(io_, *clock_, co);
  return tcp_->connector->start(
      [weak](std::shared_ptr<net::Connection> c) {
        if (auto s = weak.lock()) asio::post(s->strand_, [s, c] { s->tcp_->connected(s, c); });
      },
      [weak](const std::string& why, Millis) {
        if (auto s = weak.lock()) asio::post(s->strand_, [s, why] {
            if (!s->stopped_) s->h_.on_unreachable(why);
          });
      });
}

// The QM of this process, through its entry in net::LocalListeners. Refused (the QM
// does not take sets now: overload, or stopping), it is tried again after qm_retry.
void QmLink::connectLocal() {
  timer_ = 0;
  if (stopped_ || local_->end) return;
  auto end = opt_.local_listeners->connect<proto::UnsLocalRecord, proto::QmLocalRecord>(opt_.qm_address, strand_);
  if (!end) {
    h_.on_unreachable("the QM of this lccd no longer takes in-process links");
    return retry();
  }
  local_->end = end;
  const std::uint64_t my_gen = ++local_->gen;
  std::weak_ptr<QmLink> weak = shared_from_this();
  proto::LocalUnsEnd::Handlers h;
  h.on_messages = [weak, my_gen](std::vector<proto::QmLocalRecord>& batch) {
    auto s = weak.lock();
    if (!s) return;
    for (auto& r : batch) {
      if (s->local_->gen != my_gen) return;  // a handler dropped the link
      if (std::holds_alternative<proto::QmLocalOpen>(r)) {
        s->local_->opened = true;
        s->h_.on_open();
      } else if (const auto* a = std::get_if<proto::UnsQmAck>(&r)) {
        s->h_.on_ack(*a);
      } else if (const auto* t = std::get_if<proto::QmLocalTaken>(&r)) {
        s->local_->queued -= std::min(s->local_->queued, t->bytes);
        s->h_.on_taken();
      } else if (std::holds_alternative<proto::QmLocalClose>(r)) {
        return s->down("the QM ended the stream");
      }
    }
  };
  h.on_close = [weak, my_gen](net::CloseReason reason, const std::string& detail) {
    auto s = weak.lock();
    if (!s || s->local_->gen != my_gen) return;
    if (s->local_->opened) return s->down(detail.empty() ? std::string(net::closeReasonName(reason)) : detail);
    s->local_->reset();  // refused before the opening: the QM does not take sets now
    if (s->stopped_) return;
    s->h_.on_unreachable(detail.empty() ? "the QM refused the in-process link" : detail);
    s->retry();
  };
  end->start(std::move(h));
  end->send(proto::UnsLocalOpen{opt_.uns_name});
}

void QmLink::down(const std::string& why) {
  if (local_) local_->reset();
  if (tcp_) tcp_->drop(net::CloseReason::kLocal, why);
  h_.on_down(why);
}

void QmLink::retry() {
  if (stopped_) return;
  if (tcp_) return tcp_->connector->retry();
  if (timer_) return;
  // A fixed interval less up to 20 % jitter, as the connector's.
  thread_local std::minstd_rand rng{std::random_device{}()};
  const auto ms = opt_.qm_retry.count();
  const Millis wait(ms - static_cast<long long>(std::uniform_real_distribution<double>(0, 0.2)(rng) * ms));
  std::weak_ptr<QmLink> weak = shared_from_this();
  timer_ = clock_->schedule(wait, [weak] {
    if (auto s = weak.lock()) asio::post(s->strand_, [s] { s->connectLocal(); });
  });
}

void QmLink::stop(bool polite) {
  stopped_ = true;
  if (timer_) clock_->cancel(timer_);
  timer_ = 0;
  if (tcp_) {
    if (tcp_->connector) tcp_->connector->stop();
    ++tcp_->gen;
    if (tcp_->conn) {
      polite ? tcp_->conn->closeAfterFlush(tcp_->closing(), net::CloseReason::kShutdown)
             : tcp_->conn->close(net::CloseReason::kShutdown);
    }
    tcp_->conn.reset();
    tcp_->decoder.reset();
  }
  if (local_ && local_->end) {
    ++local_->gen;
    if (polite) local_->end->send(proto::UnsLocalClose{});
    local_->end->close(net::CloseReason::kShutdown);  // after what was sent
    local_->end.reset();
  }
}

void QmLink::drop(const std::string& why) {
  if (local_) local_->reset();
  if (tcp_) tcp_->drop(net::CloseReason::kLocal, why);
}

bool QmLink::made() const { return (tcp_ && tcp_->conn) || (local_ && local_->end); }
bool QmLink::framed() const { return tcp_ && tcp_->conn && tcp_->framed; }

void QmLink::sendText(std::string bytes) {
  if (tcp_ && tcp_->conn) return tcp_->sendText(std::move(bytes));
  if (local_ && local_->end) local_->feedText(bytes);
}

void QmLink::sendRecord(proto::UnsLocalRecord record) {
  if (tcp_ && tcp_->conn) return tcp_->send(record);
  if (local_ && local_->end) local_->send(std::move(record));
}

std::uint64_t QmLink::queuedBytes() const {
  if (tcp_) return tcp_->conn ? tcp_->conn->queuedBytes() : 0;
  return local_ ? local_->queued : 0;
}

proto::UnsLocalUrls localUrls(std::vector<UrlNotice> urls) {
  std::uint64_t bytes = 0;
  for (const auto& u : urls) bytes += proto::urlSizeHint(u);
  return proto::UnsLocalUrls{std::move(urls), bytes};
}

void appendUrls(std::string& out, const std::vector<UrlNotice>& urls) {
  for (const auto& u : urls) proto::appendUrl(out, u);
}

void QmOutQueue::pushText(std::string text) {
  bytes_ += text.size();
  const std::uint64_t n = text.size();
  items_.push_back(Item{std::move(text), std::nullopt, n});
}

void QmOutQueue::pushRecord(proto::UnsLocalRecord record, std::uint64_t bytes) {
  bytes_ += bytes;
  items_.push_back(Item{{}, std::move(record), bytes});
}

void QmOutQueue::pump(QmLink& link) {
  const std::size_t slice = std::clamp<std::size_t>(window_ / 4, 4096, kSlice);
  const std::uint64_t clears = clears_;
  while (link.made() && !items_.empty() && link.queuedBytes() < window_) {
    Item& front = items_.front();
    if (front.record) {
      bytes_ -= front.bytes;
      proto::UnsLocalRecord r = std::move(*front.record);
      items_.pop_front();
      link.sendRecord(std::move(r));
      continue;
    }
    const std::size_t size = front.text.size();  // (the text may be moved out below)
    const std::size_t n = std::min(slice, size - off_);
    if (off_ == 0 && n == size) {
      link.sendText(std::move(front.text));
    } else {
      link.sendText(front.text.substr(off_, n));
    }
    // A link that cannot read the text goes down inside sendText(), and the forwarder's
    // on_down clears this queue: `front` is gone, and so is what off_ counted.
    if (clears_ != clears) return;
    off_ += n;
    if (off_ >= size) {
      bytes_ -= size;
      items_.pop_front();
      off_ = 0;
    }
  }
}

void QmOutQueue::clear() {
  ++clears_;
  items_.clear();
  off_ = 0;
  bytes_ = 0;
}

}  // namespace lcc::uns
