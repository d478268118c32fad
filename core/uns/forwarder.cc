#include "uns/forwarder.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <future>
#include <optional>
#include <spdlog/spdlog.h>

#include "proto/uns_qm.h"
#include "proto/uns_qm_local.h"
#include "uns/forwarder_metrics.h"
#include "uns/qm_link.h"
#include "uns/spool.h"

namespace lcc::uns {

namespace asio = boost::asio;

namespace {
// Notices → their <url/> elements (uns_qm.h), for the TCP form and the spool.
template <typename T>
void encodeUrls(T& set) {
  appendUrls(set.urls_xml, set.urls);
  set.urls = {};
}
}  // namespace

struct Forwarder::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io_, Clock* clock_, Env* env_, ForwarderOptions o, Metrics* m_)
      : io(io_), strand(asio::make_strand(io_)), clock(clock_), env(env_), opt(std::move(o)),
        stats(m_), spool(env_, spoolOptions()), ack_timer(strand) {}

  asio::io_context& io;
  net::Strand strand;
  Clock* clock;
  Env* env;
  ForwarderOptions opt;
  ForwarderMetrics stats;

  std::atomic<std::uint64_t> held_max{0};
  std::atomic<bool> link_ready{false};

  SetIds ids{env, opt.spool_dir + "/set_id", opt.id_block};

  SpoolOptions spoolOptions() {
    SpoolOptions so;
    so.dir = opt.spool_dir + "/journal";
    so.limit = opt.spool_limit;
    so.write_bytes = opt.buffer_bytes;
    so.on_corrupt = [this](const std::string& why) {
      if (stats.corrupt) stats.corrupt->inc();
      if (opt.on_spool_corrupt) opt.on_spool_corrupt(why);
    };
    return so;
  }
  Spool spool;                      // waiting, in id order; the first `replay_inflight` are sent
  std::size_t replay_inflight = 0;
  // The set in parts being replayed (spool[replay_inflight]): read up to `after`.
  bool parts_sending = false;
  JournalPos parts_after = 0;

  struct Pending {
    std::uint64_t id = 0;
    std::string xml;  // the <set> element, or empty while `urls` holds the set
    Done done;
    bool streamed = false;  // sent as it was read: not kept, so not spoolable (130 if lost)
    JournalPos parts_begin = 0;  // a set spooled in parts: its B record (its E is written by the flush)
    std::uint64_t count = 0;     // of a set in parts, or of `urls`
    // A whole set whose notices are at hand (the in-process form): encoded only if it
    // has to be spooled.
    std::vector<UrlNotice> urls;
    ProviderId pid = 0;
    SetKind kind = SetKind::kPartial;
  };
  std::vector<Pending> to_spool;  // group commit
  std::uint64_t to_spool_bytes = 0;
  bool flush_posted = false;
  std::deque<Pending> inflight;   // passed through, waiting for the QM's ack

  std::shared_ptr<QmLink> link;  // on `strand`, as everything here
  // link->takesRecords(), for the callers' threads: sessions hand notices over as they
  // parsed them (in process, or frames offered over TCP), else their XML.
  std::atomic<bool> records_form{false};
  std::atomic<bool> link_local{false}, link_framed{false};  // for status()
  std::uint64_t gen = 0;
  asio::steady_timer ack_timer;
  bool stopped = false;

  void updateGauges() {
    if (stats.spool_bytes) stats.spool_bytes->set(static_cast<std::int64_t>(spool.bytes()));
    if (stats.spool_sets) stats.spool_sets->set(static_cast<std::int64_t>(spool.size()));
  }

  // Bytes of sets held in memory here: the spool's cache and unwritten records, sets
  // waiting for the group commit, and what waits for the link. Its high-water mark is
  // in /status (`memory_bytes_max`).
  std::uint64_t heldBytes() const {
    return spool.heldBytes() + to_spool_bytes + outq.bytes() + (link ? link->queuedBytes() : 0);
  }
  void noteHeld() {
    const std::uint64_t now = heldBytes();
    if (now > held_max.load()) held_max = now;
  }

  Status open() {
    LCC_RETURN_IF_ERROR(env->createDirs(opt.spool_dir, DirOptions{.private_dir = true}));
    LCC_RETURN_IF_ERROR(spool.open());
    LCC_RETURN_IF_ERROR(ids.open(spool.highestId()));
    updateGauges();
    return Status::ok();
  }

  static SetOutcome offline() { return SetOutcome{false, ErrorCode::kOffline, "system temporarily off-line, try again later"}; }
  void refuse(const Done& done) {
    if (stats.refused) stats.refused->inc();
    done(offline());
  }
  void idFailed(const Done& done, const Status& s) {
    spdlog::error("uns: cannot persist set ids: {}", s.toString());
    if (stats.refused) stats.refused->inc();
    done(SetOutcome{false, ErrorCode::kInternal, "internal error"});
  }

  // ---- submit ----
  // A set's notices (a CP session's, in process) go to the QM as records; text (the
  // TCP form, or a set an IndexNow or sitemap submitter encoded) as its <set> element.
  void submit(SetSubmission set, Done done) {
    auto id = ids.next();
    if (!id.isOk()) return idFailed(done, id.status());
    Pending p{id.value(), {}, std::move(done)};
    p.count = set.count;
    p.pid = set.pid;
    p.kind = set.kind;
    const bool records = records_form && set.urls_xml.empty();
    if (records) {
      p.urls = std::move(set.urls);
    } else {
      // The set element is built around the URLs in place (one copy of a large set).
      std::string head;
      proto::appendSetBegin(head, {id.value(), set.pid, set.kind, set.count});
      p.xml = std::move(set.urls_xml);
      p.xml.reserve(p.xml.size() + head.size() + 8);
      p.xml.insert(0, head);
      proto::appendSetEnd(p.xml);
    }
    if (!stopped && link_ready && spool.empty() && to_spool.empty() && !open_stream) {
      records ? sendWholeRecords(p) : send(p.xml);
      inflight.push_back(std::move(p));
      armAckTimer(false);
      return;
    }
    // Past the limit nothing more is spooled (the set that crossed it was taken).
    if (spool.full(to_spool_bytes)) return refuse(p.done);
    queueSpool(std::move(p));
  }

  // A whole set as records; its notices stay in `p` until the ack (spooled if the link
  // drops before it).
  void sendWholeRecords(const Pending& p) {
    sendRecord(proto::UnsQmSetHeader{p.id, p.pid, p.kind, p.urls.size(), false});
    if (!p.urls.empty()) sendUrls(p.urls);
    sendRecord(proto::UnsLocalEnd{p.urls.size()});
  }

  // The spool keeps the XML form: a whole set held as notices is encoded to go there.
  static void encodeWhole(Pending& p) {
    if (!p.xml.empty() || p.streamed || p.parts_begin) return;
    proto::appendSetBegin(p.xml, {p.id, p.pid, p.kind, p.urls.size()});
    appendUrls(p.xml, p.urls);
    proto::appendSetEnd(p.xml);
    p.urls = {};
  }

  void queueSpool(Pending p) {
    if (!opt.spool) return refuse(p.done);  // uns.spool: false: 130, the CP sends it again
    encodeWhole(p);
    to_spool_bytes += p.xml.size();
    to_spool.push_back(std::move(p));
    noteHeld();
    if (!flush_posted) {
      flush_posted = true;
      asio::post(strand, [self = shared_from_this()] { self->flushSpool(); });
    }
  }

  // After a failed write the spool is unusable; once nothing of it is being sent, it
  // is opened again (a full disk may have room now) and what is on disk re-read.
  Status reopenSpool() {
    if (replay_inflight > 0 || parts_sending) return Status::busy("spooled sets in flight");
    Status s = spool.reopen();
    updateGauges();
    return s;
  }

  // Appends every queued set (a whole set, or the E of a set in parts) and syncs once
  // (group commit), then answers them.
  void flushSpool() {
    flush_posted = false;
    if (to_spool.empty()) return;
    std::vector<Pending> batch = std::move(to_spool);
    to_spool.clear();
    to_spool_bytes = 0;
    std::vector<std::optional<SpooledSet>> added(batch.size());
    Status st;
    if (!spool.usable()) {
      st = reopenSpool();
      if (!st.isOk()) st = st.withContext("the spool failed earlier and cannot be reopened");
    }
    for (std::size_t i = 0; i < batch.size() && st.isOk(); ++i) {
      Pending& p = batch[i];
      auto r = p.parts_begin ? spool.appendEnd(p.parts_begin, p.id, p.count) : spool.appendWhole(p.id, p.xml);
      if (r.isOk()) {
        added[i] = std::move(r).value();
      } else if (r.status().code() != StatusCode::kNotFound) {
        st = r.status();
      }  // NotFound: its parts were cut off by a failed write; that set alone gets 130
    }
    if (st.isOk()) st = spool.commit();
    if (!st.isOk()) {
      spdlog::error("uns spool: write failed, refusing sets with 130: {}", st.toString());
      for (auto& p : batch) refuse(p.done);
      updateGauges();
      return;
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!added[i]) continue;
      if (!added[i]->in_parts) added[i]->xml = std::move(batch[i].xml);
      spool.insert(std::move(*added[i]));
      if (stats.spooled) stats.spooled->inc();
    }
    updateGauges();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      added[i] ? batch[i].done(SetOutcome{true, ErrorCode::kNone, {}}) : refuse(batch[i].done);
    }
    pump();
  }

  // ---- replay ----
  void pump() {
    if (stopped || !link_ready || spool.empty() || open_stream) return;
    while (replay_inflight < opt.replay_window && replay_inflight < spool.size()) {
      if (spool[replay_inflight].in_parts) {
        if (!sendPartsSet()) return;  // waits for the link to take what is queued
      } else {
        Status s = spool.loadTexts(replay_inflight, opt.replay_window);
        noteHeld();
        if (!s.isOk()) return spoolUnreadable(s);
        send(spool[replay_inflight].xml);
      }
      ++replay_inflight;
      armAckTimer(false);
    }
  }

  void spoolUnreadable(const Status& s) {
    spdlog::error("uns spool: cannot read back spooled sets: {}", s.toString());
    if (s.isCorruption()) spool.reportCorruption(s.message());
  }

  // Sends spool[replay_inflight], a set in parts, as a streamed set (a header without
  // count, its parts read from the journal while less than buffer_bytes waits for the
  // link, <end count/>). True once its end is queued.
  bool sendPartsSet() {
    const SpooledSet& s = spool[replay_inflight];
    if (!parts_sending) {
      std::string head;
      proto::appendSetBegin(head, proto::UnsQmSetHeader{s.id, s.pid, s.kind, 0, true});
      send(std::move(head));
      parts_sending = true;
      parts_after = s.first;
    }
    while (outq.bytes() < opt.buffer_bytes) {
      Status st = spool.readParts(s, &parts_after, opt.buffer_bytes - outq.bytes(),
                                  [&](std::string_view urls) { send(std::string(urls)); });
      if (!st.isOk()) {
        partsSetUnreadable(st);
        return false;
      }
      if (parts_after == s.pos) {
        std::string tail;
        proto::appendStreamedSetEnd(tail, s.count);
        send(std::move(tail));
        parts_sending = false;
        return true;
      }
    }
    return false;
  }

  // The QM drops what it got of the set (<abort/>). A corrupt one is lost (cache-crash,
  // and it leaves the spool); after an I/O error it is tried again later.
  void partsSetUnreadable(const Status& st) {
    std::string tail;
    proto::appendStreamedSetAbort(tail);
    send(std::move(tail));
    parts_sending = false;
    spoolUnreadable(st);
    if (st.isCorruption()) {
      spool.erase(replay_inflight);
      updateGauges();
      asio::post(strand, [self = shared_from_this()] { self->pump(); });  // the sets behind it go on
    }
  }

  // ---- QM link (qm_link.h: in process, or over TCP) ----
  Status startLink() {
    QmLinkOptions lo{opt.qm_address, opt.tls, opt.qm_retry,
                     opt.max_attribute_length, opt.frames, opt.uns_name, opt.local_listeners};
    std::weak_ptr<Impl> w = shared_from_this();
    QmLink::Handlers h;
    h.on_open = [w] { if (auto s = w.lock()) s->onQmOpen(); };
    h.on_ack = [w](const proto::UnsQmAck& ack) { if (auto s = w.lock()) s->onAck(ack); };
    h.on_taken = [w] { if (auto s = w.lock()) s->onTaken(); };
    h.on_down = [w](const std::string& why) { if (auto s = w.lock()) s->linkDown(why); };
    h.on_unreachable = [w](const std::string& why) { if (auto s = w.lock()) s->connectFailed(why); };
    h.on_ping = [w] { if (auto s = w.lock()) s->send(proto::encodePong()); };  // behind what is queued
    h.on_made = [w] { if (auto s = w.lock()) s->armAckTimer(true); };  // for the QM's open
    link = std::make_shared<QmLink>(io, strand, clock, std::move(lo), std::move(h));
    Status st = link->start();
    records_form = link->takesRecords();
    link_local = link->local();
    return st;
  }
  void onTaken() {
    pumpOut();
    if (parts_sending) pump();  // a replayed set in parts reads its next parts
    armAckTimer(true);          // the ack is owed from the set's last byte on, not its first
  }

  bool logged_absent = false;
  void connectFailed(const std::string& why) {
    if (stopped || logged_absent) return;
    spdlog::warn("uns: QM at {} not reachable ({}); spooling, retrying every {} ms", opt.qm_address, why, opt.qm_retry.count());
    logged_absent = true;
  }

  // What goes to the link waits in `outq` (qm_link.h), handed over as the link takes it.
  void send(std::string bytes) {
    if (!link || !link->made() || bytes.empty()) return;
    outq.pushText(std::move(bytes));
    noteHeld();
    pumpOut();
  }
  void sendRecord(proto::UnsLocalRecord r, std::uint64_t bytes = 0) {
    if (!link || !link->made()) return;
    outq.pushRecord(std::move(r), bytes);
    noteHeld();
    pumpOut();
  }
  void sendUrls(std::vector<UrlNotice> urls) {
    proto::UnsLocalUrls r = localUrls(std::move(urls));
    const std::uint64_t bytes = r.bytes;
    sendRecord(std::move(r), bytes);
  }
  void pumpOut() {
    if (link) outq.pump(*link);
    runTakenWaiters(false);
  }
  QmOutQueue outq{opt.buffer_bytes};

  // Until the QM's open comes (!link_ready) it waits for that: a QM that took the
  // connection and does not answer (paused: the kernel completes the handshake) is given
  // up like a missing ack, and the next address of uns.qm is tried (its standby).
  void armAckTimer(bool restart) {
    if (!link || !link->made()) return;  // no link: nothing is owed
    if (link_ready && inflight.empty() && replay_inflight == 0) {
      ack_timer.cancel();
      ack_armed = false;
      return;
    }
    if (ack_armed && !restart) return;
    ack_armed = true;
    const std::uint64_t my_gen = gen;
    ack_timer.expires_after(opt.qm_ack_timeout);
    ack_timer.async_wait([self = shared_from_this(), my_gen](const boost::system::error_code& ec) {
      if (ec || my_gen != self->gen) return;
      self->ack_armed = false;
      self->linkDown(std::string(self->link_ready ? "no ack" : "no open") + " from the QM within " +
                     std::to_string(self->opt.qm_ack_timeout.count()) + " ms");
    });
  }
  bool ack_armed = false;

  // Drops the link: whatever was passed through and not acked goes to the spool, in
  // order, ahead of anything queued after it; reconnects after qm_retry.
  void linkDown(const std::string& why) {
    const bool was_up = link_ready.load();
    ++gen;
    if (stats.link_drops) stats.link_drops->inc();
    if (was_up || !inflight.empty()) {
      spdlog::warn("uns: QM link down: {}; {}", why, opt.spool ? "spooling" : "answering sets 130 (uns.spool: false)");
    }
    link_ready = false;
    logged_absent = was_up ? false : logged_absent;
    if (link) link->drop(why);
    clearOut();
    ack_timer.cancel();
    ack_armed = false;
    replay_inflight = 0;
    parts_sending = false;  // the QM drops a set cut off by the link
    if (!inflight.empty()) {
      std::vector<Pending> moved = takeInflight();
      for (auto& p : to_spool) moved.push_back(std::move(p));
      to_spool = std::move(moved);
      to_spool_bytes = 0;
      for (const auto& p : to_spool) to_spool_bytes += p.xml.size();
      if (!flush_posted) {
        flush_posted = true;
        asio::post(strand, [self = shared_from_this()] { self->flushSpool(); });
      }
    }
    if (link) link->retry();
  }

  void clearOut() {
    outq.clear();
    if (open_stream) open_stream->mode = StreamMode::kBroken;  // its start is lost
    open_stream.reset();
    runTakenWaiters(true);
  }

  // The sets sent and not acked, to be spooled; a streamed one cannot be (its text is
  // gone), nor any without a spool (uns.spool: false), so its CP is answered 130 and
  // sends it again.
  std::vector<Pending> takeInflight() {
    std::vector<Pending> moved;
    for (auto& p : inflight) {
      if (p.streamed || !opt.spool) {
        refuse(p.done);
        continue;
      }
      encodeWhole(p);
      moved.push_back(std::move(p));
    }
    inflight.clear();
    return moved;
  }

  // ---- a set streamed as it is read (issue 13) ----
  // It passes through only when a whole set would (link up, spool empty) and no other
  // set streams; otherwise it is spooled in parts as it comes (spool.h) and, once its
  // E record is synced, waits in the spool as any set.
  enum class StreamMode { kPass, kSpool, kBroken };
  struct StreamState {
    ProviderId pid = 0;
    SetKind kind = SetKind::kPartial;
    bool wanted = false, finished = false;
    StreamMode mode = StreamMode::kSpool;
    std::uint64_t id = 0, count = 0;
    JournalPos begin = 0;  // kSpool: its B record
  };
  std::shared_ptr<StreamState> open_stream;  // the one passing through
  std::deque<std::function<void()>> taken_waiters;

  void runTakenWaiters(bool all) {
    while (!taken_waiters.empty() && (all || outq.bytes() < opt.buffer_bytes)) {
      auto f = std::move(taken_waiters.front());
      taken_waiters.pop_front();
      f();
    }
  }

  void streamBegin(const std::shared_ptr<StreamState>& st) {
    if (stopped || !link_ready || !spool.empty() || !to_spool.empty() || open_stream || replay_inflight > 0) {
      return spoolBegin(st);
    }
    auto id = ids.next();
    if (!id.isOk()) return spoolBegin(st);  // the id is asked for again at its end, which reports it
    const proto::UnsQmSetHeader header{id.value(), st->pid, st->kind, 0, true};
    st->mode = StreamMode::kPass;
    st->id = id.value();
    open_stream = st;
    sendRecord(header);  // the link writes it in its form (qm_link.h)
  }

  void spoolBegin(const std::shared_ptr<StreamState>& st) {
    st->mode = StreamMode::kBroken;
    if (stopped || !opt.spool) return;  // read and dropped; its end gets 130
    if (!spool.usable()) {
      if (Status s = reopenSpool(); !s.isOk()) {
        spdlog::warn("uns spool: cannot take a set in parts ({}); it will be refused with 130", s.toString());
        return;
      }
    }
    auto begin = spool.appendBegin(st->pid, st->kind);
    if (!begin.isOk()) return spdlog::error("uns spool: write failed: {}", begin.status().toString());
    st->mode = StreamMode::kSpool;
    st->begin = begin.value();
  }

  // A part comes as notices in process (encoded here only if it is spooled), as text
  // over TCP (encoded by SetStream::add on the session's thread).
  void streamAdd(const std::shared_ptr<StreamState>& st, SetPart part, std::function<void()> taken) {
    st->count += part.count;
    if (st->mode == StreamMode::kPass) {
      if (part.urls_xml.empty() && records_form) {
        if (!part.urls.empty()) sendUrls(std::move(part.urls));
      } else {
        send(std::move(part.urls_xml));
      }
      if (outq.bytes() >= opt.buffer_bytes) return taken_waiters.push_back(std::move(taken));
    } else if (st->mode == StreamMode::kSpool) {
      if (part.urls_xml.empty()) encodeUrls(part);
      Status s = spool.appendPart(st->begin, std::move(part.urls_xml));
      noteHeld();
      if (!s.isOk()) spoolPartFailed(st, s);
    }
    taken();  // kBroken: the rest of the set is read and dropped; its end gets 130
  }

  // Full: the set is cut off (A record) and refused at its end. A failed write cut
  // off every set in parts being written (spool.h); this one learns it here.
  void spoolPartFailed(const std::shared_ptr<StreamState>& st, const Status& s) {
    st->mode = StreamMode::kBroken;
    if (s.code() == StatusCode::kBusy) {
      spdlog::warn("uns spool: full ({} bytes waiting, limit {}); a set in parts is cut off and refused with 130",
                   spool.bytes(), opt.spool_limit);
      spool.abort(st->begin);
    } else if (s.code() != StatusCode::kNotFound) {
      spdlog::error("uns spool: write failed, refusing sets with 130: {}", s.toString());
    }
    updateGauges();
  }

  void streamEnd(const std::shared_ptr<StreamState>& st, Done done) {
    st->finished = true;
    if (st->mode == StreamMode::kBroken) return refuse(done);
    if (st->mode == StreamMode::kSpool) {
      auto id = ids.next();
      if (!id.isOk()) {
        spool.abort(st->begin);
        return idFailed(done, id.status());
      }
      return queueSpool(Pending{id.value(), {}, std::move(done), false, st->begin, st->count});
    }
    inflight.push_back(Pending{st->id, {}, std::move(done), true});
    closeStream(st->count);
    armAckTimer(false);
  }

  void streamAbort(const std::shared_ptr<StreamState>& st) {
    if (st->finished) return;
    st->finished = true;
    if (st->mode == StreamMode::kPass) closeStream(std::nullopt);
    if (st->mode == StreamMode::kSpool) {
      spool.abort(st->begin);
      updateGauges();
    }
  }
  // Ends the set passing through: <end count/> (`count`) or <abort/>.
  void closeStream(std::optional<std::uint64_t> count) {
    count ? sendRecord(proto::UnsLocalEnd{*count}) : sendRecord(proto::UnsLocalAbort{});
    open_stream.reset();
    pump();  // spooled sets may go now
  }

  // ---- what the QM sends ----
  void onQmOpen() {
    link_ready = true;
    link_framed = link->framed();
    logged_absent = false;
    armAckTimer(true);  // it waited for the open: now for acks, if any is owed
    spdlog::info("uns: QM link up ({}); {} spooled sets to replay", opt.qm_address, spool.size());
    pump();
  }

  // Acks come in the order the sets were sent, and every set in `inflight` was sent
  // before any replayed one still in flight (nothing passes through while the spool is
  // not empty; a set passing through holds the replay back until its end).
  void onAck(const proto::UnsQmAck& ack) {
    if (inflight.empty() && replay_inflight > 0) {
      const SpooledSet& front = spool[0];
      if (ack.id != front.id) return linkDown("ack for set " + std::to_string(ack.id) + ", expected " + std::to_string(front.id));
      if (!ack.ok) return linkDown("the QM refused replayed set " + std::to_string(ack.id) + ": " + ack.reason);
      spool.popFront();  // and the journal is trimmed below what still waits
      --replay_inflight;
      if (stats.replayed) stats.replayed->inc();
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
    if (stats.forwarded) stats.forwarded->inc();
    armAckTimer(true);
    done.done(SetOutcome{true, ErrorCode::kNone, {}});
  }

  void stop() {
    stopped = true;
    ack_timer.cancel();
    ++gen;
    const bool was_ready = link_ready.exchange(false);
    if (link) link->stop(was_ready);  // ends the stream politely behind whatever is queued
    clearOut();
    parts_sending = false;
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

void Forwarder::SetStream::add(SetPart part, std::function<void()> taken) {
  if (!h_->impl->records_form) encodeUrls(part);  // XML only: encoded on the caller's thread
  asio::post(h_->impl->strand, [h = h_, p = std::move(part), t = std::move(taken)]() mutable {
    h->impl->streamAdd(h->state, std::move(p), std::move(t));
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
  if (!impl_->records_form) encodeUrls(set);  // XML only: encoded on the caller's thread
  asio::post(impl_->strand, [self = impl_, set = std::move(set), done = std::move(done)]() mutable {
    self->submit(std::move(set), std::move(done));
  });
}

bool Forwarder::spoolFull() const { return impl_->spool.full(0); }
bool Forwarder::refusesSets() const { return spoolFull() || (!impl_->opt.spool && !impl_->link_ready.load()); }
bool Forwarder::connected() const { return impl_->link_ready.load(); }
std::uint64_t Forwarder::spooledSets() const { return impl_->spool.sets(); }
std::uint64_t Forwarder::spoolBytes() const { return impl_->spool.bytes(); }
std::uint64_t Forwarder::heldBytesMax() const { return impl_->held_max.load(); }
std::uint64_t Forwarder::lastSetId() const { return impl_->ids.last(); }

void Forwarder::status(nlohmann::json& out) const {
  out["qm"] = impl_->opt.qm_address;
  out["qm_connected"] = connected();
  out["qm_link"] = impl_->link_local ? "in process" : "tcp";
  out["qm_link_frames"] = impl_->link_framed.load();  // TCP, and the QM took the compact frames
  out["spool_sets"] = spooledSets();
  out["spool_bytes"] = spoolBytes();
  out["spool"] = impl_->opt.spool;
  out["spool_limit"] = impl_->opt.spool_limit;
  out["spool_full"] = spoolFull();
  out["last_set_id"] = lastSetId();
  out["spool_corruptions"] = impl_->spool.corruptions();
  out["memory_bytes_max"] = heldBytesMax();
}

}  // namespace lcc::uns
