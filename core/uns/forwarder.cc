#include "uns/forwarder.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <future>
#include <map>
#include <optional>
#include <spdlog/spdlog.h>

#include "net/connector.h"
#include "proto/uns_qm.h"

namespace lcc::uns {

namespace asio = boost::asio;

namespace {
constexpr std::uint64_t kCacheBudget = 64ull << 20;  // spooled sets kept in memory too

}  // namespace

struct Forwarder::Impl : std::enable_shared_from_this<Impl>, proto::QmStreamHandler {
  Impl(asio::io_context& io_, Clock* clock_, Env* env_, ForwarderOptions o, Metrics* m)
      : io(io_), strand(asio::make_strand(io_)), clock(clock_), env(env_), opt(std::move(o)), metrics(m),
        ack_timer(strand) {
    if (metrics) {
      c_forwarded = &metrics->counter("lcc_uns_sets_forwarded_total", "sets the QM acknowledged directly");
      c_spooled = &metrics->counter("lcc_uns_sets_spooled_total", "sets written to the UNS spool");
      c_replayed = &metrics->counter("lcc_uns_sets_replayed_total", "spooled sets the QM acknowledged");
      c_refused = &metrics->counter("lcc_uns_sets_refused_total", "sets refused with 130 (spool full or failed)");
      c_link_drops = &metrics->counter("lcc_uns_qm_link_drops_total", "QM connections dropped (error, timeout, refusal)");
      c_corrupt = &metrics->counter("lcc_uns_spool_corruptions_total",
                                    "times the UNS spool was found corrupt (cache-crash raised)");
      g_spool_bytes = &metrics->gauge("lcc_uns_spool_bytes", "bytes of sets waiting in the UNS spool");
      g_spool_sets = &metrics->gauge("lcc_uns_spool_sets", "sets waiting in the UNS spool");
    }
  }

  asio::io_context& io;
  net::Strand strand;
  Clock* clock;
  Env* env;
  ForwarderOptions opt;
  Metrics* metrics;
  Counter *c_forwarded = nullptr, *c_spooled = nullptr, *c_replayed = nullptr, *c_refused = nullptr,
          *c_link_drops = nullptr, *c_corrupt = nullptr;
  Gauge *g_spool_bytes = nullptr, *g_spool_sets = nullptr;

  std::atomic<std::uint64_t> spool_bytes{0}, spool_sets{0}, last_id{0};
  std::atomic<bool> link_ready{false};

  std::unique_ptr<Journal> journal;
  std::uint64_t next_id = 1, id_limit = 0;

  struct Spooled {
    JournalPos pos = 0;
    std::uint64_t id = 0;
    std::uint64_t bytes = 0;
    std::string xml;  // empty: only in the journal
  };
  std::deque<Spooled> spool;     // waiting, in order; the first `replay_inflight` are sent
  std::size_t replay_inflight = 0;
  std::uint64_t cache_bytes = 0;

  struct Pending {
    std::uint64_t id = 0;
    std::string xml;
    Done done;
    bool streamed = false;  // sent as it was read: not kept, so not spoolable (130 if lost)
  };
  std::vector<Pending> to_spool;  // group commit
  bool flush_posted = false;
  std::deque<Pending> inflight;   // passed through, waiting for the QM's ack

  std::shared_ptr<net::Connector> connector;
  std::shared_ptr<net::Connection> conn;  // on `strand`, as everything here
  std::uint64_t gen = 0;
  std::shared_ptr<proto::QmStreamDecoder> decoder;
  asio::steady_timer ack_timer;
  bool stopped = false;

  // ---- set ids ----
  std::string idFile() const { return opt.spool_dir + "/set_id"; }

  Status reserveIds() {
    id_limit = next_id + opt.id_block;
    return env->writeFileAtomic(idFile(), std::to_string(id_limit) + "\n");
  }

  Result<std::uint64_t> allocId() {
    if (next_id >= id_limit) LCC_RETURN_IF_ERROR(reserveIds());
    last_id = next_id;
    return next_id++;
  }

  void updateGauges() {
    spool_sets = spool.size();
    if (g_spool_bytes) g_spool_bytes->set(static_cast<std::int64_t>(spool_bytes.load()));
    if (g_spool_sets) g_spool_sets->set(static_cast<std::int64_t>(spool.size()));
  }

  // Accepted sets may be lost: counted, and cache-crash raised (the flag is sticky in
  // the PIDB until each provider sends a full set).
  std::atomic<std::uint64_t> corruptions{0};
  void spoolCorrupt(const std::string& detail) {
    ++corruptions;
    spdlog::error("uns spool: corruption: {}; accepted sets may be lost, raising cache-crash", detail);
    if (c_corrupt) c_corrupt->inc();
    if (opt.on_spool_corrupt) opt.on_spool_corrupt(detail);
  }

  Status open() {
    LCC_RETURN_IF_ERROR(env->createDirs(opt.spool_dir, DirOptions{.private_dir = true}));
    if (env->exists(idFile())) {
      auto text = env->readFile(idFile());
      if (!text.isOk()) return text.status();
      std::uint64_t v = 0;
      std::string_view t = text.value();
      while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.remove_suffix(1);
      if (std::from_chars(t.data(), t.data() + t.size(), v).ec != std::errc()) {
        return Status::corruption(idFile() + ": not a set id");
      }
      next_id = std::max<std::uint64_t>(next_id, v);
    }
    auto j = Journal::open(env, opt.spool_dir + "/journal", JournalOptions{4ull << 20, 1ull << 30});
    if (!j.isOk()) return j.status().withContext("uns spool");
    journal = std::move(j).value();
    auto info = journal->replay(0, [&](JournalPos pos, std::string_view payload) {
      Spooled s;
      s.pos = pos;
      s.id = proto::peekSetId(payload);
      s.bytes = payload.size();
      if (s.id == 0) {
        spdlog::error("uns spool: record {} is not a set; skipped", pos);
        return Status::ok();
      }
      next_id = std::max(next_id, s.id + 1);
      spool_bytes += s.bytes;
      spool.push_back(std::move(s));
      return Status::ok();
    });
    if (!info.isOk()) return info.status().withContext("uns spool replay");
    if (info->torn_tail) spdlog::warn("uns spool: a torn last record was dropped ({})", info->detail);
    if (info->corruption) spoolCorrupt(info->detail);
    if (!spool.empty()) {
      spdlog::info("uns spool: {} sets ({} bytes) wait from an earlier run", spool.size(), spool_bytes.load());
    }
    updateGauges();
    LCC_RETURN_IF_ERROR(reserveIds());
    return Status::ok();
  }

  // ---- submit ----
  void submit(SetSubmission set, Done done) {
    auto id = allocId();
    if (!id.isOk()) {
      spdlog::error("uns: cannot persist set ids: {}", id.status().toString());
      if (c_refused) c_refused->inc();
      done(SetOutcome{false, ErrorCode::kInternal, "internal error"});
      return;
    }
    // The set element is built around the URLs in place (one copy of a large set).
    std::string head;
    proto::appendSetBegin(head, {id.value(), set.pid, set.kind, set.count});
    std::string xml = std::move(set.urls_xml);
    xml.reserve(xml.size() + head.size() + 8);
    xml.insert(0, head);
    proto::appendSetEnd(xml);
    if (!stopped && link_ready && spool.empty() && to_spool.empty() && !open_stream) {
      send(xml);
      inflight.push_back(Pending{id.value(), std::move(xml), std::move(done)});
      armAckTimer(false);
      return;
    }
    std::uint64_t queued = 0;
    for (const auto& p : to_spool) queued += p.xml.size();
    // Past the limit nothing more is spooled (the set that crossed it was taken).
    if (spool_bytes.load() + queued >= opt.spool_limit) {
      if (c_refused) c_refused->inc();
      done(SetOutcome{false, ErrorCode::kOffline, "system temporarily off-line, try again later"});
      return;
    }
    queueSpool(Pending{id.value(), std::move(xml), std::move(done)});
  }

  void queueSpool(Pending p) {
    to_spool.push_back(std::move(p));
    if (!flush_posted) {
      flush_posted = true;
      asio::post(strand, [self = shared_from_this()] { self->flushSpool(); });
    }
  }

  // After a failed write the journal is sticky-failed; once nothing of the spool is
  // in flight, open it again (a full disk may have room now). What is on disk is
  // re-read, so the spool list matches the files exactly.
  bool journal_failed = false;
  Status reopenJournal() {
    if (replay_inflight > 0) return Status::busy("spooled sets in flight");
    journal.reset();
    auto j = Journal::open(env, opt.spool_dir + "/journal", JournalOptions{4ull << 20, 1ull << 30});
    if (!j.isOk()) return j.status();
    std::map<JournalPos, std::string> cached;
    for (auto& sp : spool) {
      if (!sp.xml.empty()) cached[sp.pos] = std::move(sp.xml);
    }
    std::deque<Spooled> rebuilt;
    std::uint64_t bytes = 0;
    auto info = j.value()->replay(0, [&](JournalPos pos, std::string_view payload) {
      Spooled sp{pos, proto::peekSetId(payload), payload.size(), {}};
      if (sp.id == 0) return Status::ok();
      if (auto it = cached.find(pos); it != cached.end() && it->second == payload) sp.xml = std::move(it->second);
      bytes += sp.bytes;
      rebuilt.push_back(std::move(sp));
      return Status::ok();
    });
    if (!info.isOk()) return info.status();
    if (info->corruption) spoolCorrupt(info->detail);
    journal = std::move(j).value();
    spool = std::move(rebuilt);
    spool_bytes = bytes;
    cache_bytes = 0;
    for (const auto& sp : spool) cache_bytes += sp.xml.empty() ? 0 : sp.bytes;
    journal_failed = false;
    updateGauges();
    spdlog::info("uns spool: reopened after a write failure; {} sets wait", spool.size());
    return Status::ok();
  }

  // Appends every queued set and syncs once (group commit), then answers them.
  void flushSpool() {
    flush_posted = false;
    if (to_spool.empty()) return;
    std::vector<Pending> batch = std::move(to_spool);
    to_spool.clear();
    std::vector<Spooled> added;
    Status st;
    if (journal_failed || !journal) {
      st = reopenJournal();
      if (!st.isOk()) st = st.withContext("the spool failed earlier and cannot be reopened");
    }
    for (auto& p : batch) {
      if (!st.isOk()) break;
      auto pos = journal->append(p.xml);
      if (!pos.isOk()) {
        st = pos.status();
        break;
      }
      added.push_back(Spooled{pos.value(), p.id, p.xml.size(), {}});
    }
    if (st.isOk()) {
      auto c = journal->commit();
      if (!c.isOk()) st = c.status();
    }
    if (!st.isOk()) {
      journal_failed = true;
      spdlog::error("uns spool: write failed, refusing sets with 130: {}", st.toString());
      for (auto& p : batch) {
        if (c_refused) c_refused->inc();
        p.done(SetOutcome{false, ErrorCode::kOffline, "system temporarily off-line, try again later"});
      }
      return;
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Spooled s = std::move(added[i]);
      if (cache_bytes + s.bytes <= kCacheBudget) {
        s.xml = std::move(batch[i].xml);
        cache_bytes += s.bytes;
      }
      spool_bytes += s.bytes;
      spool.push_back(std::move(s));
      if (c_spooled) c_spooled->inc();
    }
    updateGauges();
    for (auto& p : batch) p.done(SetOutcome{true, ErrorCode::kNone, {}});
    pump();
  }

  // ---- replay ----
  // Makes sure spool[from, from + n) have their text, reading the journal if needed.
  Status loadTexts(std::size_t from, std::size_t n) {
    std::size_t end = std::min(spool.size(), from + n);
    std::size_t first_missing = end;
    for (std::size_t i = from; i < end; ++i) {
      if (spool[i].xml.empty()) {
        first_missing = i;
        break;
      }
    }
    if (first_missing == end) return Status::ok();
    if (!journal) return Status::ioError("the spool is closed after a write failure");
    std::size_t i = first_missing;
    auto r = journal->replay(spool[i].pos - 1, [&](JournalPos pos, std::string_view payload) {
      while (i < end && spool[i].pos < pos) ++i;
      if (i >= end) return Status::aborted("enough");
      if (spool[i].pos == pos && spool[i].xml.empty()) spool[i].xml.assign(payload);
      return Status::ok();
    });
    if (!r.isOk() && r.status().code() != StatusCode::kAborted) return r.status();
    for (std::size_t k = from; k < end; ++k) {
      if (spool[k].xml.empty()) return Status::corruption("spooled set " + std::to_string(spool[k].id) + " is gone");
    }
    return Status::ok();
  }

  void pump() {
    if (stopped || !link_ready || spool.empty() || open_stream) return;
    while (replay_inflight < opt.replay_window && replay_inflight < spool.size()) {
      Status s = loadTexts(replay_inflight, opt.replay_window);
      if (!s.isOk()) {
        spdlog::error("uns spool: cannot read back spooled sets: {}", s.toString());
        if (s.isCorruption()) spoolCorrupt(s.message());
        return;
      }
      send(spool[replay_inflight].xml);
      ++replay_inflight;
      armAckTimer(false);
    }
  }

  // ---- QM link ----
  // A fixed retry interval (uns.qm_retry, less up to 20 % jitter): the spool absorbs
  // the wait, and the QM is usually back within one interval.
  Status startLink() {
    net::ConnectorOptions co;
    co.what = "uns.qm";
    LCC_RETURN_IF_ERROR(net::setTargetAddress(co, opt.qm_address, opt.tls));
    co.back_off = {Millis(opt.retry_ms), Millis(opt.retry_ms), 0.2};
    co.connection.read_buffer = 16 * 1024;
    co.strand = strand;
    connector = std::make_shared<net::Connector>(io, *clock, co);
    std::weak_ptr<Impl> weak = shared_from_this();
    return connector->start(
        [weak](std::shared_ptr<net::Connection> c) {
          if (auto self = weak.lock()) asio::post(self->strand, [self, c] { self->connected(c); });
        },
        [weak](const std::string& why, Millis) {
          if (auto self = weak.lock()) asio::post(self->strand, [self, why] { self->connectFailed(why); });
        });
  }

  bool logged_absent = false;
  void connectFailed(const std::string& why) {
    if (stopped || logged_absent) return;
    spdlog::warn("uns: QM at {} not reachable ({}); spooling, retrying every {} ms", opt.qm_address, why, opt.retry_ms);
    logged_absent = true;
  }

  void connected(std::shared_ptr<net::Connection> c) {
    if (stopped) return c->close(net::CloseReason::kShutdown);
    conn = std::move(c);
    proto::UnsQmLimits limits;
    limits.max_attribute_length = opt.max_attribute_length;
    decoder = std::make_shared<proto::QmStreamDecoder>(*this, limits);
    const std::uint64_t my_gen = gen;
    net::Connection::Handlers h;
    h.on_bytes = [self = shared_from_this(), my_gen](std::string_view bytes) {
      if (my_gen != self->gen) return;
      auto decoder = self->decoder;  // a handler may drop the link (and the decoder) mid-feed
      if (!decoder->feed(bytes.data(), bytes.size())) {
        if (self->gen != my_gen) return;  // a handler already dropped the link
        self->linkDown(decoder->failed() ? "bad stream from the QM: " + decoder->errorMessage()
                                         : "the QM ended the stream");
      }
    };
    h.on_written = [self = shared_from_this(), my_gen](std::uint64_t) {
      if (my_gen != self->gen) return;
      self->pumpOut();
      self->armAckTimer(true);  // the ack is owed from the set's last byte on, not its first
    };
    h.on_close = [self = shared_from_this(), my_gen](net::CloseReason reason, const std::string& detail) {
      if (my_gen != self->gen) return;
      self->linkDown(reason == net::CloseReason::kPeerClosed ? "the QM closed the connection" : detail);
    };
    conn->start(std::move(h));
    send(proto::encodeUnsOpen(opt.uns_name));
  }

  // Bytes go out through `outq` in slices, each once the connection has less than
  // kOutWindow queued (on_written), so a set larger than the connection's write bound
  // (net::ConnectionOptions::max_queued) passes, and at most a window is copied.
  void send(std::string bytes) {
    if (!conn || bytes.empty()) return;
    outq_bytes += bytes.size();
    outq.push_back(std::move(bytes));
    pumpOut();
  }
  void pumpOut() {
    while (conn && !outq.empty() && conn->queuedBytes() < kOutWindow) {
      std::string& front = outq.front();
      const std::size_t size = front.size();  // (front may be moved out below)
      const std::size_t n = std::min(kOutSlice, size - out_off);
      if (out_off == 0 && n == front.size()) {
        conn->send(std::move(front));
      } else {
        conn->send(front.substr(out_off, n));
      }
      out_off += n;
      if (out_off >= size) {
        outq_bytes -= size;
        outq.pop_front();
        out_off = 0;
      }
    }
    runTakenWaiters(false);
  }
  static constexpr std::size_t kOutWindow = 4u << 20, kOutSlice = 1u << 20;
  std::deque<std::string> outq;  // bytes for the QM not yet handed to the connection
  std::size_t out_off = 0;       // of outq.front(), already handed over
  std::size_t outq_bytes = 0;    // in outq (counting what of the front was handed over)

  void armAckTimer(bool restart) {
    if (inflight.empty() && replay_inflight == 0) {
      ack_timer.cancel();
      ack_armed = false;
      return;
    }
    if (ack_armed && !restart) return;
    ack_armed = true;
    const std::uint64_t my_gen = gen;
    ack_timer.expires_after(std::chrono::milliseconds(opt.ack_timeout_ms));
    ack_timer.async_wait([self = shared_from_this(), my_gen](const boost::system::error_code& ec) {
      if (ec || my_gen != self->gen) return;
      self->ack_armed = false;
      self->linkDown("no ack from the QM within " + std::to_string(self->opt.ack_timeout_ms) + " ms");
    });
  }
  bool ack_armed = false;

  // Drops the link: whatever was passed through and not acked goes to the spool, in
  // order, ahead of anything queued after it; reconnects after retry_ms.
  void linkDown(const std::string& why) {
    const bool was_up = link_ready.load();
    ++gen;
    if (c_link_drops) c_link_drops->inc();
    if (was_up || !inflight.empty()) spdlog::warn("uns: QM link down: {}; spooling", why);
    link_ready = false;
    logged_absent = was_up ? false : logged_absent;
    if (conn) {
      conn->close(net::CloseReason::kLocal, why);
      conn.reset();
    }
    decoder.reset();
    clearOut();
    ack_timer.cancel();
    ack_armed = false;
    replay_inflight = 0;
    if (!inflight.empty()) {
      std::vector<Pending> moved = takeInflight();
      for (auto& p : to_spool) moved.push_back(std::move(p));
      to_spool = std::move(moved);
      if (!flush_posted) {
        flush_posted = true;
        asio::post(strand, [self = shared_from_this()] { self->flushSpool(); });
      }
    }
    if (connector) connector->retry();
  }

  void clearOut() {
    outq.clear();
    out_off = 0;
    outq_bytes = 0;
    if (open_stream) open_stream->mode = StreamMode::kBroken;  // its start is lost
    open_stream.reset();
    runTakenWaiters(true);
  }

  // The sets sent and not acked, to be spooled; a streamed one cannot be (its text is
  // gone), so its CP is answered 130 and sends it again.
  std::vector<Pending> takeInflight() {
    std::vector<Pending> moved;
    for (auto& p : inflight) {
      if (!p.streamed) moved.push_back(std::move(p));
      if (p.streamed && c_refused) c_refused->inc();
      if (p.streamed) p.done(SetOutcome{false, ErrorCode::kOffline, "system temporarily off-line, try again later"});
    }
    inflight.clear();
    return moved;
  }

  // ---- a set streamed as it is read (issue 13) ----
  // It passes through only when a whole set would (link up, spool empty) and no other
  // set streams; otherwise it is collected and submitted whole at its end, as before.
  enum class StreamMode { kCollect, kPass, kBroken };
  struct StreamState {
    ProviderId pid = 0;
    SetKind kind = SetKind::kPartial;
    bool wanted = false, finished = false;
    StreamMode mode = StreamMode::kCollect;
    std::uint64_t id = 0, count = 0;
    std::string xml;  // kCollect: the URLs so far
  };
  std::shared_ptr<StreamState> open_stream;  // the one passing through
  std::deque<std::function<void()>> taken_waiters;

  void runTakenWaiters(bool all) {
    while (!taken_waiters.empty() && (all || outq_bytes < kOutWindow)) {
      auto f = std::move(taken_waiters.front());
      taken_waiters.pop_front();
      f();
    }
  }

  void streamBegin(const std::shared_ptr<StreamState>& st) {
    if (stopped || !link_ready || !spool.empty() || !to_spool.empty() || open_stream || replay_inflight > 0) return;
    auto id = allocId();
    if (!id.isOk()) return;  // collected; submit() reports the failure at the end
    std::string head;
    proto::appendSetBegin(head, proto::UnsQmSetHeader{id.value(), st->pid, st->kind, 0, true});
    st->mode = StreamMode::kPass;
    st->id = id.value();
    open_stream = st;
    send(std::move(head));
  }

  void streamAdd(const std::shared_ptr<StreamState>& st, std::string xml, std::uint64_t n, std::function<void()> taken) {
    st->count += n;
    if (st->mode == StreamMode::kCollect) {
      st->xml += xml;
    } else if (st->mode == StreamMode::kPass) {
      send(std::move(xml));
      if (outq_bytes >= kOutWindow) return taken_waiters.push_back(std::move(taken));
    }
    taken();
  }

  void streamEnd(const std::shared_ptr<StreamState>& st, Done done) {
    st->finished = true;
    if (st->mode == StreamMode::kCollect) {
      return submit(SetSubmission{st->pid, st->kind, st->wanted, st->count, std::move(st->xml)}, std::move(done));
    }
    if (st->mode == StreamMode::kBroken) {
      if (c_refused) c_refused->inc();
      return done(SetOutcome{false, ErrorCode::kOffline, "system temporarily off-line, try again later"});
    }
    closeStream(st->count);
    inflight.push_back(Pending{st->id, {}, std::move(done), true});
    armAckTimer(false);
  }

  void streamAbort(const std::shared_ptr<StreamState>& st) {
    if (st->finished) return;
    st->finished = true;
    st->xml = std::string();
    if (st->mode == StreamMode::kPass) closeStream(std::nullopt);
  }
  // Ends the set passing through: <end count/> (`count`) or <abort/>.
  void closeStream(std::optional<std::uint64_t> count) {
    std::string tail;
    count ? proto::appendStreamedSetEnd(tail, *count) : proto::appendStreamedSetAbort(tail);
    send(std::move(tail));
    open_stream.reset();
    pump();  // spooled sets may go now
  }

  // ---- QmStreamHandler ----
  void onQmOpen() override {
    link_ready = true;
    logged_absent = false;
    spdlog::info("uns: QM link up ({}); {} spooled sets to replay", opt.qm_address, spool.size());
    pump();
  }

  void onAck(const proto::UnsQmAck& ack) override {
    if (replay_inflight > 0) {
      Spooled& front = spool.front();
      if (ack.id != front.id) return linkDown("ack for set " + std::to_string(ack.id) + ", expected " + std::to_string(front.id));
      if (!ack.ok) return linkDown("the QM refused replayed set " + std::to_string(ack.id) + ": " + ack.reason);
      spool_bytes -= front.bytes;
      if (!front.xml.empty()) cache_bytes -= std::min(cache_bytes, front.bytes);
      const JournalPos pos = front.pos;
      spool.pop_front();
      --replay_inflight;
      if (c_replayed) c_replayed->inc();
      if (!journal_failed && journal) {
        if (Status s = journal->trimUpTo(pos); !s.isOk()) spdlog::warn("uns spool: trim failed: {}", s.toString());
      }
      updateGauges();
      if (spool.empty() && to_spool.empty()) spdlog::info("uns: spool replayed; passing sets through again");
      armAckTimer(true);
      pump();
      return;
    }
    if (inflight.empty()) return linkDown("ack for set " + std::to_string(ack.id) + " that was not sent");
    Pending& front = inflight.front();
    if (ack.id != front.id) return linkDown("ack for set " + std::to_string(ack.id) + ", expected " + std::to_string(front.id));
    if (!ack.ok) return linkDown("the QM refused set " + std::to_string(ack.id) + " (" + ack.reason + ")");
    Pending done = std::move(front);
    inflight.pop_front();
    if (c_forwarded) c_forwarded->inc();
    armAckTimer(true);
    done.done(SetOutcome{true, ErrorCode::kNone, {}});
  }

  void onPing() override { send(proto::encodePong()); }
  void onClose() override {}  // read() sees the decoder closed and drops the link

  void stop() {
    stopped = true;
    if (connector) connector->stop();
    ack_timer.cancel();
    ++gen;
    const bool was_ready = link_ready.exchange(false);
    if (conn) {
      // End the stream politely behind whatever is queued.
      if (was_ready) {
        conn->closeAfterFlush(proto::encodeUnsClose(), net::CloseReason::kShutdown);
      } else {
        conn->close(net::CloseReason::kShutdown);
      }
      conn.reset();
    }
    clearOut();
    std::vector<Pending> moved = takeInflight();
    for (auto& p : to_spool) moved.push_back(std::move(p));
    to_spool = std::move(moved);
    flushSpool();
  }
};

Forwarder::Forwarder(asio::io_context& io, Clock* clock, Env* env, ForwarderOptions options, Metrics* metrics)
    : impl_(std::make_shared<Impl>(io, clock, env, std::move(options), metrics)) {}

Forwarder::~Forwarder() = default;

Status Forwarder::open() { return impl_->open(); }

Status Forwarder::start() { return impl_->startLink(); }

void Forwarder::stop() {
  std::promise<void> done;
  auto fut = done.get_future();
  asio::post(impl_->strand, [self = impl_, &done] {
    self->stop();
    done.set_value();
  });
  if (impl_->io.stopped()) {
    // No thread runs the io_context: run the stop here.
    impl_->io.restart();
    impl_->io.poll();
  }
  fut.wait();
}

// The handle of a streamed set: every call goes to the forwarder's strand, in order.
struct Forwarder::SetStream::Handle {
  std::shared_ptr<Impl> impl;
  std::shared_ptr<Impl::StreamState> state;
};

Forwarder::SetStream::SetStream(std::shared_ptr<Handle> h) : h_(std::move(h)) {}

Forwarder::SetStream::~SetStream() {
  if (h_) asio::post(h_->impl->strand, [h = h_] { h->impl->streamAbort(h->state); });
}

void Forwarder::SetStream::add(std::string urls_xml, std::uint64_t count, std::function<void()> taken) {
  asio::post(h_->impl->strand, [h = h_, x = std::move(urls_xml), count, t = std::move(taken)]() mutable {
    h->impl->streamAdd(h->state, std::move(x), count, std::move(t));
  });
}

void Forwarder::SetStream::end(Done done) {
  asio::post(h_->impl->strand, [h = h_, d = std::move(done)]() mutable { h->impl->streamEnd(h->state, std::move(d)); });
}

std::unique_ptr<Forwarder::SetStream> Forwarder::beginSet(ProviderId pid, SetKind kind, bool fullset_wanted) {
  auto h = std::make_shared<SetStream::Handle>(SetStream::Handle{impl_, std::make_shared<Impl::StreamState>()});
  *h->state = Impl::StreamState{pid, kind, fullset_wanted};
  asio::post(impl_->strand, [h] { h->impl->streamBegin(h->state); });
  return std::unique_ptr<SetStream>(new SetStream(std::move(h)));
}

void Forwarder::submit(SetSubmission set, Done done) {
  asio::post(impl_->strand, [self = impl_, set = std::move(set), done = std::move(done)]() mutable {
    self->submit(std::move(set), std::move(done));
  });
}

bool Forwarder::spoolFull() const { return impl_->spool_bytes.load() >= impl_->opt.spool_limit; }
bool Forwarder::connected() const { return impl_->link_ready.load(); }
std::uint64_t Forwarder::spooledSets() const { return impl_->spool_sets.load(); }
std::uint64_t Forwarder::spoolBytes() const { return impl_->spool_bytes.load(); }
std::uint64_t Forwarder::lastSetId() const { return impl_->last_id.load(); }

void Forwarder::status(nlohmann::json& out) const {
  out["qm"] = impl_->opt.qm_address;
  out["qm_connected"] = connected();
  out["spool_sets"] = spooledSets();
  out["spool_bytes"] = spoolBytes();
  out["spool_limit"] = impl_->opt.spool_limit;
  out["spool_full"] = spoolFull();
  out["last_set_id"] = lastSetId();
  out["spool_corruptions"] = impl_->corruptions.load();
}

}  // namespace lcc::uns
