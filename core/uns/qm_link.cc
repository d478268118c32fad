#include "uns/qm_link.h"

#include <algorithm>
#include <limits>
#include <boost/asio/post.hpp>
#include <random>
#include <spdlog/spdlog.h>

#include "net/connector.h"
#include "net/local_listeners.h"

namespace lcc::uns {

namespace asio = boost::asio;

namespace {
// URLs of a replayed or submitted XML set are handed over in parts of about this many
// bytes (as a session's parts: uns_options.cc kStreamPartBytes).
constexpr std::size_t kLocalPartBytes = 256 * 1024;
}  // namespace

// ---- over TCP ----------------------------------------------------------------------
struct QmLink::Tcp final : proto::QmStreamHandler {
  QmLink* link = nullptr;
  std::shared_ptr<net::Connector> connector;
  std::shared_ptr<net::Connection> conn;
  std::shared_ptr<proto::QmStreamDecoder> decoder;
  std::uint64_t gen = 0;

  void onQmOpen() override { link->h_.on_open(); }
  void onAck(const proto::UnsQmAck& ack) override { link->h_.on_ack(ack); }
  void onPing() override { link->h_.on_ping(); }  // not conn->send: a set may be half written
  void onClose() override {}  // the feed returns false: the link goes down

  void connected(const std::shared_ptr<QmLink>& self, std::shared_ptr<net::Connection> c) {
    if (self->stopped_) return c->close(net::CloseReason::kShutdown);
    conn = std::move(c);
    proto::UnsQmLimits limits;
    limits.max_attribute_length = self->opt_.max_attribute_length;
    decoder = std::make_shared<proto::QmStreamDecoder>(*this, limits);
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
    conn->send(proto::encodeUnsOpen(self->opt_.uns_name));
    if (self->h_.on_made) self->h_.on_made();
  }
  void drop(net::CloseReason reason, const std::string& why) {
    ++gen;
    if (conn) conn->close(reason, why);
    conn.reset();
    decoder.reset();
  }
};

// ---- in process ----------------------------------------------------------------------
// XML text given to sendText() (a spooled set replayed, a set an IndexNow or sitemap
// submitter encoded) is read here into records, so the QM takes one form only.
struct QmLink::Local final : proto::UnsStreamHandler {
  QmLink* link = nullptr;
  std::shared_ptr<proto::LocalUnsEnd> end;
  std::uint64_t gen = 0;
  std::uint64_t queued = 0;  // bytes of parts sent and not taken yet
  bool opened = false;
  std::unique_ptr<proto::UnsStreamDecoder> text;  // made at the first text of a link
  std::vector<UrlNotice> part;
  std::uint64_t part_bytes = 0, set_urls = 0;

  void send(proto::UnsLocalRecord r) {
    if (auto* u = std::get_if<proto::UnsLocalUrls>(&r)) queued += u->bytes;
    if (end) end->send(std::move(r));
  }
  void flushPart() {
    if (part.empty()) return;
    send(proto::UnsLocalUrls{std::move(part), std::exchange(part_bytes, 0)});
    part = {};
  }
  void onUnsOpen(std::string_view) override {}
  void onSetBegin(const proto::UnsQmSetHeader& h) override {
    set_urls = 0;
    send(h);
  }
  void onSetUrl(UrlNotice&& u) override {
    part_bytes += proto::urlSizeHint(u);
    part.push_back(std::move(u));
    ++set_urls;
    if (part_bytes >= kLocalPartBytes) flushPart();
  }
  void onSetEnd() override {
    flushPart();
    send(proto::UnsLocalEnd{set_urls});
  }
  void onSetAbort() override {
    part.clear();
    part_bytes = 0;
    send(proto::UnsLocalAbort{});
  }
  void feedText(const std::string& bytes) {
    if (!text) {
      // Our own text, whose sets the UNS capped already: no set cap here (as the QM's).
      text = std::make_unique<proto::UnsStreamDecoder>(
          *this, proto::UnsQmLimits{link->opt_.max_attribute_length, std::numeric_limits<std::uint64_t>::max()});
      text->feed(proto::encodeUnsOpen(link->opt_.uns_name));
    }
    if (!text->feed(bytes)) {
      // Our own text: a bug, not the outside world. The link is dropped, sets are spooled.
      link->down("unreadable set text for the in-process link: " + text->errorMessage());
    }
  }
  void reset() {
    ++gen;
    if (end) end->close(net::CloseReason::kLocal);
    end.reset();
    queued = 0;
    opened = false;
    text.reset();
    part.clear();
    part_bytes = 0;
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
      polite ? tcp_->conn->closeAfterFlush(proto::encodeUnsClose(), net::CloseReason::kShutdown)
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

void QmLink::sendText(std::string bytes) {
  if (tcp_ && tcp_->conn) return tcp_->conn->send(std::move(bytes));
  if (local_ && local_->end) local_->feedText(bytes);
}

void QmLink::sendRecord(proto::UnsLocalRecord record) {
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
    off_ += n;
    if (off_ >= size) {
      bytes_ -= size;
      items_.pop_front();
      off_ = 0;
    }
  }
}

void QmOutQueue::clear() {
  items_.clear();
  off_ = 0;
  bytes_ = 0;
}

}  // namespace lcc::uns
