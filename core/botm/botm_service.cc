#include "botm/botm_service.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <future>
#include <map>
#include <set>

#include "botm/content_route.h"
#include "botm/dispatch.h"
#include "botm/filename_store.h"
#include "common/tls_config.h"
#include "http/http_server.h"
#include "net/acceptor.h"
#include "net/connector.h"
#include "net/local_listeners.h"
#include "proto/link_frames.h"

namespace lcc::botm {
namespace {

namespace asio = boost::asio;
using net::Connection;
using tcp = asio::ip::tcp;

// Read from the config by makeBotmService() only; keyed members carry no default of
// their own (the schema's).
struct Settings {
  std::string machine;       // node.machine_id
  std::string source;        // botm.source (empty: listen.botm): where the url source listens
  std::string listen;        // listen.robots (leaf) or listen.botm (parent: child BOT-Ms)
  net::TlsLink listen_tls, source_tls;  // for tls:// addresses (common/tls_config.h)
  std::string content_dir;   // botm.content_dir (empty: <data_dir>/content)
  std::string state_dir;     // <data_dir>/botm
  bool parent = false;       // botm.parent
  int child_overload_pct = 0;      // botm.child_overload_pct
  std::size_t max_queued = 0;      // botm.max_queued
  Millis reconnect_min{};          // botm.reconnect_min
  Millis reconnect_max{};          // botm.reconnect_max (at least reconnect_min)
  std::uint32_t fanout = 0;        // botm.fanout
  std::size_t max_value_length = 8192;  // no config key: the links' longest attribute value
  std::string content_url;   // botm.content_url: advertised upstream (leaf only); empty: not advertised
  bool frames = false;       // node.link_frames: offer (and take) compact frames on the TCP links
  s3::S3Options s3;          // s3.*: content in an object store when enabled (issue 31 §1)
  std::size_t s3_calls = 0;  // s3.botm_calls: object-store calls out at once
};

class BotmService final : public Service {
 public:
  BotmService(NodeContext& node, Settings s)
      : node_(node), s_(std::move(s)), strand_(asio::make_strand(*node.io)) {
    Metrics& m = *node.metrics;
    g_capacity_ = &m.gauge("lcc_botm_capacity", "fetches the BOT-M can run at once (robots' or children's slots)");
    g_peers_ = &m.gauge("lcc_botm_peers", "robots (or child BOT-Ms) connected");
    g_framed_ = &m.gauge("lcc_botm_framed_peers", "robots (or child BOT-Ms) whose link uses compact frames");
    g_queued_ = &m.gauge("lcc_botm_queued", "fetches waiting for a free slot");
    g_source_ = &m.gauge("lcc_botm_source_connected", "1 when the url source connection is up");
    g_objects_ = &m.gauge("lcc_botm_object_calls", "object-store calls (DELETEs, listing pages) out or waiting");
    c_fetches_ = &m.counter("lcc_botm_fetches_total", "fetches taken from the url source");
    c_ok_ = &m.counter("lcc_botm_results_ok_total", "stored results sent upstream");
    c_failed_ = &m.counter("lcc_botm_results_failed_total", "failed results sent upstream");
    c_rehanded_ = &m.counter("lcc_botm_rehanded_total", "fetches handed to another robot after theirs went away");
    c_deletes_ = &m.counter("lcc_botm_deletes_total", "deletes received");
  }

  std::string_view name() const override { return "botm"; }

  Status start() override {
    if (!s_.parent) {
      LCC_RETURN_IF_ERROR(node_.env->createDirs(s_.content_dir));
      FilenameStoreOptions fo;
      fo.fanout = s_.fanout;
      LCC_ASSIGN_OR_RETURN(names_, FilenameStore::open(node_.env, s_.state_dir, fo));
      disp_ = std::make_unique<Dispatcher>(s_.machine, s_.content_dir, names_.get(), node_.env, s_.max_queued);
      disp_->useClock(node_.clock);  // fetch leases (issue 27 §3)
      if (s_.s3.enabled()) {
        // DELETEs and listing pages run on the thread lcc-botm-s3; answers come back here.
        disp_->useObjectStore(s_.s3, s_.s3_calls);
        objects_ = std::make_unique<s3::CallWorker>(s_.s3, "lcc-botm-s3", [this](s3::CallAnswer a) {
          asio::post(strand_, [this, a = std::move(a)] { objectAnswered(a); });
        });
      }
    } else {
      fwd_ = std::make_unique<Forwarder>(s_.child_overload_pct, s_.max_queued);
    }
    net::AcceptorOptions ao;
    ao.what = s_.parent ? "listen.botm" : "listen.robots";
    LCC_RETURN_IF_ERROR(net::setListenAddress(ao, s_.listen, s_.listen_tls));
    acceptor_ = std::make_shared<net::Acceptor>(*node_.io, ao, [this](std::shared_ptr<Connection> c, net::Admission) {
      if (s_.parent) {
        startChild(std::move(c));
      } else {
        startRobot(std::move(c));
      }
    });
    LCC_RETURN_IF_ERROR(acceptor_->start());
    if (node_.local_listeners != nullptr && !s_.parent) {
      // Robots of this lccd (the bot role) link in process (issue 28).
      node_.local_listeners->listen<proto::ToRobotMessage, proto::FromRobotMessage>(
          s_.listen, [this](std::shared_ptr<proto::LocalBotmRobotEnd> end) { acceptLocalRobot(std::move(end)); });
    }
    if (node_.local_listeners != nullptr && node_.local_listeners->listening(s_.source)) {
      // The url source runs in this lccd: link in process (issue 28).
      asio::post(strand_, [this] { connectLocal(); });
      spdlog::info("botm: machine {}, {} on {}, url source {} in process, content in {}", s_.machine,
                   s_.parent ? "child BOT-Ms" : "robots", s_.listen, s_.source, s_.parent ? "-" : s_.content_dir);
      return Status::ok();
    }
    return startConnector();
  }

  Status startConnector() {
    net::ConnectorOptions co;
    co.what = "botm.source";
    LCC_RETURN_IF_ERROR(net::setTargetAddress(co, s_.source, s_.source_tls));
    co.back_off = {s_.reconnect_min, s_.reconnect_max};
    connector_ = std::make_shared<net::Connector>(*node_.io, *node_.clock, co);
    LCC_RETURN_IF_ERROR(connector_->start(
        [this](std::shared_ptr<Connection> c) { asio::post(strand_, [this, c] { sourceConnected(c); }); },
        [this](const std::string& why, Millis) { asio::post(strand_, [this, why] { sourceFailed(why); }); }));
    spdlog::info("botm: machine {}, {} on {}, url source {}, content in {}", s_.machine,
                 s_.parent ? "child BOT-Ms" : "robots", s_.listen, s_.source, s_.parent ? "-" : s_.content_dir);
    return Status::ok();
  }

  void stop() override {
    if (objects_) objects_->stop();  // a call under way ends (cancelled); no answer is posted after
    std::promise<void> done;
    auto fut = done.get_future();
    asio::post(strand_, [this, &done] {
      stopping_ = true;
      if (node_.local_listeners != nullptr && !s_.parent) node_.local_listeners->unlisten(s_.listen);
      for (auto& [id, e] : local_robots_) {
        e->send(proto::RobotEnd{});
        e->close(net::CloseReason::kShutdown);
      }
      if (timer_) node_.clock->cancel(timer_);
      if (connector_) connector_->stop();
      if (acceptor_) acceptor_->stop();
      closeSource();
      for (auto& [id, p] : peers_) {
        p->closeAfterFlush(s_.parent ? proto::encodeSourceClose() : proto::encodeBotmRobotClose());
      }
      if (names_) {
        Status s = names_->sync();
        if (!s.isOk()) spdlog::error("botm: filename state: {}", s.message());
      }
      done.set_value();
    });
    fut.wait();
  }

  void status(nlohmann::json& out) const override {
    out["machine"] = s_.machine;
    out["mode"] = s_.parent ? "parent" : "robots";
    out["source"] = s_.source;
    out["source_connected"] = g_source_->value() == 1;
    out["source_link"] = source_local_.load() ? "in process" : "tcp";
    out["source_frames"] = source_frames_.load();  // the TCP link to the source writes compact frames
    out["framed_peers"] = g_framed_->value();
    out["capacity"] = g_capacity_->value();
    out[s_.parent ? "children" : "robots"] = g_peers_->value();
    out["queued"] = g_queued_->value();
    out["fetches"] = c_fetches_->value();
    out["results_ok"] = c_ok_->value();
    out["results_failed"] = c_failed_->value();
    out["rehanded"] = c_rehanded_->value();
    out["deletes"] = c_deletes_->value();
    if (s_.s3.enabled()) out["object_calls"] = g_objects_->value();
    if (!s_.content_url.empty()) out["content_url"] = s_.content_url;
  }

 private:
  // ---- on the policy strand ----------------------------------------------------
  void publish() {
    const DispatchCounters& c = disp_ ? disp_->counters() : fwd_->counters();
    g_capacity_->set(static_cast<std::int64_t>(disp_ ? disp_->capacity() : fwd_->capacity()));
    g_peers_->set(static_cast<std::int64_t>(disp_ ? disp_->robots() : fwd_->children()));
    g_queued_->set(static_cast<std::int64_t>(disp_ ? disp_->queued() : fwd_->queued()));
    g_source_->set(source_ || local_source_ ? 1 : 0);
    g_framed_->set(static_cast<std::int64_t>(framed_peers_.size()));
    if (disp_) g_objects_->set(static_cast<std::int64_t>(disp_->objectCallsOut() + disp_->objectCallsWaiting()));
    source_frames_ = source_ && source_form_ == proto::LinkForm::kFrames;
    c_fetches_->setTotal(c.fetches);
    c_ok_->setTotal(c.results_ok);
    c_failed_->setTotal(c.results_failed);
    c_rehanded_->setTotal(c.rehanded);
    c_deletes_->setTotal(c.deletes);
  }

  void sendUp(std::vector<Upstream>& ups) {
    if (ups.empty()) return;
    if (local_source_) {
      for (auto& u : ups) {
        proto::BotmMessage m = std::visit([](auto& v) -> proto::BotmMessage { return std::move(v); }, u);
        proto::asOnWire(m);
        if (!local_source_->send(std::move(m))) break;  // closed: its on_close follows
      }
      return;
    }
    if (!source_) return;
    std::vector<proto::BotmMessage> ms;
    ms.reserve(ups.size());
    for (const auto& u : ups) ms.push_back(std::visit([](const auto& v) -> proto::BotmMessage { return v; }, u));
    source_->send(proto::encodeMessages(ms, source_form_));  // results in batch frames on a framed link
  }
  // A message to the url source that is not a result (pong, the close of the stream).
  void sendSource(proto::BotmMessage m) {
    if (local_source_) {
      local_source_->send(std::move(m));
    } else if (source_) {
      source_->send(proto::encodeMessage(m, source_form_));
    }
  }
  // Ends the url source link after what was sent, with the close of the stream.
  void closeSource() {
    if (local_source_) {
      local_source_->send(proto::LinkEnd{});
      local_source_->close(net::CloseReason::kShutdown);
    }
    if (source_) source_->closeAfterFlush(proto::encodeMessage(proto::BotmMessage{proto::LinkEnd{}}, source_form_));
  }

  void run(Actions& a) {
    publish();  // gauges first: whoever sees a message sees the state behind it
    std::map<RobotId, std::vector<FetchRequest>> per_robot;
    for (auto& [rid, f] : a.to_robots) {
      if (auto it = local_robots_.find(rid); it != local_robots_.end()) {
        proto::ToRobotMessage m = std::move(f);
        proto::asOnWire(m);
        it->second->send(std::move(m));
      } else {
        per_robot[rid].push_back(std::move(f));
      }
    }
    for (auto& [rid, fetches] : per_robot) {
      auto it = peers_.find(rid);
      if (it == peers_.end()) continue;
      std::string bytes;  // a robot's fetches of this turn: one batch frame on a framed link
      proto::appendFetches(bytes, fetches, proto::detail::FetchWire::kRobot, peerForm(rid));
      it->second->send(std::move(bytes));
    }
    for (const auto& [rid, lease] : a.renewals) {
      const proto::LinkPing ping{lease};
      if (auto it = local_robots_.find(rid); it != local_robots_.end()) it->second->send(ping);
      if (auto it = peers_.find(rid); it != peers_.end()) it->second->send(proto::encodeMessage(proto::ToRobotMessage{ping}, peerForm(rid)));
    }
    for (auto& c : a.object_calls) objects_->submit(std::move(c));
    sendUp(a.upstream);
  }

  void objectAnswered(const s3::CallAnswer& answer) {
    Actions a;
    disp_->objectAnswer(answer, &a);
    run(a);
  }
  // The url source went away: its session ends (a stale name's DELETE may go out).
  void sourceGone() {
    Actions a;
    if (disp_) disp_->sourceDown(&a);
    if (fwd_) fwd_->sourceDown();
    run(a);
  }

  void run(ForwardActions& a) {
    publish();
    std::map<ChildId, std::vector<proto::SourceMessage>> per_child;
    for (const auto& [cid, f] : a.fetches) per_child[cid].push_back(f);
    for (const auto& [cid, d] : a.deletes) per_child[cid].push_back(d);
    for (const auto& [cid, sw] : a.sweeps) per_child[cid].push_back(sw);
    for (const auto& [cid, lease] : a.renewals) per_child[cid].push_back(proto::LinkPing{lease});
    for (auto& [cid, ms] : per_child) {
      auto it = peers_.find(cid);
      if (it != peers_.end()) it->second->send(proto::encodeMessages(ms, peerForm(cid)));
    }
    sendUp(a.upstream);
  }

  proto::LinkForm peerForm(std::uint64_t id) const {
    return framed_peers_.count(id) ? proto::LinkForm::kFrames : proto::LinkForm::kXml;
  }
  // The answer to a peer's hello (XML), and the switch to frames when it offered them
  // and node.link_frames is on (link_frames.h).
  std::string answerHello(std::uint64_t id, std::uint64_t offered, const std::string& hello_xml) {
    if (proto::agreedFrames(offered, s_.frames) == 0) return hello_xml;
    framed_peers_.insert(id);
    return hello_xml + proto::encodeFramesSwitch();
  }

  std::uint64_t capacity() const { return disp_ ? disp_->capacity() : fwd_->capacity(); }
  std::vector<std::string> machines() const { return disp_ ? disp_->machines() : fwd_->machines(); }
  std::map<std::string, std::string> contentUrls() const {
    if (fwd_) return fwd_->contentUrls();
    if (s_.content_url.empty()) return {};
    return {{s_.machine, s_.content_url}};
  }

  // ---- the url source ----------------------------------------------------------
  void sourceFailed(const std::string& why) {
    if (stopping_ || source_warned_) return;
    spdlog::warn("botm: url source {} not reachable ({}); retrying", s_.source, why);
    source_warned_ = true;
  }

  void sourceConnected(std::shared_ptr<Connection> sock) {
    if (stopping_) return sock->close(net::CloseReason::kShutdown);
    source_ = sock;
    source_form_ = proto::LinkForm::kXml;  // frames once the source takes our offer
    source_warned_ = false;
    if (disp_) disp_->sourceUp();
    if (fwd_) fwd_->sourceUp();
    spdlog::info("botm: connected to url source {} (capacity {})", s_.source, capacity());
    sock->send(proto::encodeBotmOpen({s_.machine, capacity(), s_.content_url, s_.frames ? proto::kFramesVersion : 0}) +
               proto::encodeMachines({machines(), contentUrls()}));
    auto dec = std::make_shared<proto::SourceStreamDecoder>(proto::linkLimits(s_.max_value_length), s_.frames);
    std::weak_ptr<Connection> weak = sock;
    startConnection(
        sock,
        [this, dec, weak](std::string_view bytes) {
          auto msgs = std::make_shared<std::vector<proto::SourceMessage>>();
          bool ok = dec->feed(bytes, msgs.get());
          std::string err = ok ? std::string() : dec->errorMessage();
          asio::post(strand_, [this, msgs, weak, err] {
            auto s = weak.lock();
            if (!s || s != source_) return;
            onSourceMessages(*msgs);
            if (!err.empty()) {
              spdlog::warn("botm: url source broke the protocol: {}; disconnecting", err);
              s->close(net::CloseReason::kProtocolError);
            }
          });
        },
        [this, weak](const std::string& why) {
          asio::post(strand_, [this, weak, why] {
            auto s = weak.lock();
            if (s && s != source_) return;
            source_.reset();
            sourceGone();
            if (stopping_) return;
            spdlog::info("botm: url source connection ended: {}", why);
            connector_->retry();
          });
        });
    publish();
  }

  // The url source in this lccd (net/local_link.h): the same messages, handed over as
  // records on this strand. A link that closes is made again after botm.reconnect_min.
  void connectLocal() {
    timer_ = 0;
    if (stopping_) return;
    auto end = node_.local_listeners->connect<proto::BotmMessage, proto::SourceMessage>(s_.source, strand_);
    if (!end) {
      spdlog::warn("botm: url source {} no longer takes in-process links; connecting over TCP", s_.source);
      Status st = startConnector();
      if (!st.isOk()) spdlog::error("botm: url source {}: {}", s_.source, st.message());
      return;
    }
    local_source_ = end;
    source_local_ = true;
    if (disp_) disp_->sourceUp();
    if (fwd_) fwd_->sourceUp();
    std::weak_ptr<proto::LocalBotmEnd> weak = end;
    proto::LocalBotmEnd::Handlers h;
    h.on_messages = [this, weak](std::vector<proto::SourceMessage>& batch) {
      if (weak.lock() == local_source_) onSourceMessages(batch);
    };
    h.on_close = [this, weak](net::CloseReason reason, const std::string& why) {
      if (weak.lock() != local_source_) return;
      local_source_.reset();
      source_local_ = false;
      sourceGone();
      if (stopping_) return;
      spdlog::info("botm: in-process url source link ended ({}{}{}); linking again in {} ms",
                   net::closeReasonName(reason), why.empty() ? "" : ": ", why, s_.reconnect_min.count());
      timer_ = node_.clock->schedule(s_.reconnect_min, [this] { asio::post(strand_, [this] { connectLocal(); }); });
    };
    end->start(std::move(h));
    spdlog::info("botm: linked in process to url source {} (capacity {})", s_.source, capacity());
    sendSource(proto::LinkBotmHello{s_.machine, capacity(), s_.content_url});
    sendSource(proto::LinkMachines{machines(), contentUrls()});
    publish();
  }

  void onSourceMessages(const std::vector<proto::SourceMessage>& msgs) {
    Actions a;
    ForwardActions fa;
    for (const auto& m : msgs) {
      if (const auto* f = std::get_if<FetchRequest>(&m)) {
        if (disp_) disp_->fetch(*f, &a);
        if (fwd_) fwd_->fetch(*f, &fa);
      } else if (const auto* d = std::get_if<proto::LinkDelete>(&m)) {
        if (disp_) disp_->remove(*d, &a);
        if (fwd_) fwd_->remove(*d, &fa);
      } else if (const auto* sw = std::get_if<proto::LinkSweep>(&m)) {
        if (disp_) disp_->sweep(*sw, &a);
        if (fwd_) fwd_->sweep(*sw, &fa);
      } else if (const auto* h = std::get_if<proto::LinkSourceHello>(&m)) {
        if (source_ && source_form_ == proto::LinkForm::kXml && proto::agreedFrames(h->frames, s_.frames) != 0) {
          source_->send(proto::encodeFramesSwitch());  // what follows from us is frames
          source_form_ = proto::LinkForm::kFrames;
          spdlog::info("botm: url source {} took compact frames", s_.source);
          publish();
        }
      } else if (const auto* ping = std::get_if<proto::LinkPing>(&m)) {
        if (disp_) disp_->renew(ping->lease, &a);
        if (fwd_) fwd_->renew(ping->lease, &fa);
        sendSource(proto::LinkPong{});
      } else if (std::holds_alternative<proto::LinkEnd>(m)) {
        closeSource();
      }
    }
    if (disp_) run(a);
    if (fwd_) run(fa);
  }

  // ---- robots or child BOT-Ms --------------------------------------------------
  // Starts `c` with the two callbacks the BOT-M uses (both run on the connection's strand).
  static void startConnection(const std::shared_ptr<Connection>& c, std::function<void(std::string_view)> on_bytes,
                              std::function<void(const std::string&)> on_close) {
    Connection::Handlers h;
    h.on_bytes = std::move(on_bytes);
    h.on_close = [on_close = std::move(on_close)](net::CloseReason, const std::string& why) { on_close(why); };
    c->start(std::move(h));
  }

  void startRobot(std::shared_ptr<Connection> sock) {
    const std::uint64_t id = next_peer_.fetch_add(1);
    auto dec = std::make_shared<proto::RobotStreamDecoder>(proto::linkLimits(s_.max_value_length), s_.frames);
    std::weak_ptr<Connection> weak = sock;
    startConnection(
        sock,
        [this, id, dec, weak](std::string_view bytes) {
          auto msgs = std::make_shared<std::vector<proto::FromRobotMessage>>();
          bool ok = dec->feed(bytes, msgs.get());
          std::string err = ok ? std::string() : dec->errorMessage();
          asio::post(strand_, [this, id, msgs, weak, err] {
            auto s = weak.lock();
            if (!s) return;
            Actions a;
            for (const auto& m : *msgs) {
              if (const auto* h = std::get_if<proto::RobotHello>(&m)) {
                if (stopping_ || peers_.count(id)) continue;
                peers_[id] = s;
                s->send(answerHello(id, h->frames, proto::encodeBotmRobotOpen({s_.machine, proto::agreedFrames(h->frames, s_.frames)})));
                spdlog::info("botm: robot {} ({}) connected with {} slots{}", h->name, s->peer(), h->slots,
                             framed_peers_.count(id) ? ", compact frames" : "");
                disp_->robotUp(id, h->slots, &a);
              } else if (const auto* r = std::get_if<FetchResult>(&m)) {
                if (peers_.count(id)) disp_->robotResult(id, *r, &a);
              } else if (std::holds_alternative<proto::LinkPing>(m)) {
                s->send(proto::encodeMessage(proto::ToRobotMessage{proto::LinkPong{}}, peerForm(id)));
              } else if (std::holds_alternative<proto::RobotEnd>(m)) {
                s->closeAfterFlush(proto::encodeMessage(proto::ToRobotMessage{proto::RobotEnd{}}, peerForm(id)));
              }
            }
            run(a);
            if (!err.empty()) {
              spdlog::warn("botm: robot {} broke the protocol: {}; disconnecting", s->peer(), err);
              s->close(net::CloseReason::kProtocolError);
            }
          });
        },
        [this, id](const std::string& why) {
          asio::post(strand_, [this, id, why] {
            framed_peers_.erase(id);
            if (!peers_.erase(id)) return;
            spdlog::info("botm: robot connection {} ended: {}", id, why);
            Actions a;
            disp_->robotDown(id, &a);
            run(a);
          });
        });
  }

  // A robot of this lccd, in process: the robot protocol's messages as records. Called
  // on the robot's thread; everything else happens on the policy strand, in order.
  void acceptLocalRobot(std::shared_ptr<proto::LocalBotmRobotEnd> end) {
    const std::uint64_t id = next_peer_.fetch_add(1);
    proto::LocalBotmRobotEnd::Handlers h;
    // The handler holds its end until the link closes (then the end drops its handlers).
    h.on_messages = [this, id, e = end](std::vector<proto::FromRobotMessage>& batch) {
      asio::post(strand_, [this, id, e, msgs = std::move(batch)]() mutable { onLocalRobot(id, e, msgs); });
    };
    h.on_close = [this, id](net::CloseReason reason, const std::string& why) {
      asio::post(strand_, [this, id, reason, why] {
        if (!local_robots_.erase(id)) return;
        spdlog::info("botm: in-process robot {} ended: {}", id, why.empty() ? net::closeReasonName(reason) : why);
        Actions a;
        disp_->robotDown(id, &a);
        run(a);
      });
    };
    end->start(std::move(h));
  }

  void onLocalRobot(std::uint64_t id, const std::shared_ptr<proto::LocalBotmRobotEnd>& e,
                    std::vector<proto::FromRobotMessage>& msgs) {
    Actions a;
    for (auto& m : msgs) {
      if (const auto* h = std::get_if<proto::RobotHello>(&m)) {
        if (stopping_) {
          e->close(net::CloseReason::kShutdown);
          break;
        }
        if (local_robots_.count(id)) continue;
        local_robots_[id] = e;
        e->send(proto::RobotBotmHello{s_.machine});
        spdlog::info("botm: robot {} connected in process with {} slots", h->name, h->slots);
        disp_->robotUp(id, h->slots, &a);
      } else if (const auto* r = std::get_if<FetchResult>(&m)) {
        if (local_robots_.count(id)) disp_->robotResult(id, *r, &a);
      } else if (std::holds_alternative<proto::LinkPing>(m)) {
        e->send(proto::LinkPong{});
      } else if (std::holds_alternative<proto::RobotEnd>(m)) {
        e->send(proto::RobotEnd{});
        e->close(net::CloseReason::kLocal);
      }
    }
    run(a);
  }

  void startChild(std::shared_ptr<Connection> sock) {
    const std::uint64_t id = next_peer_.fetch_add(1);
    auto dec = std::make_shared<proto::BotmStreamDecoder>(proto::linkLimits(s_.max_value_length), s_.frames);
    std::weak_ptr<Connection> weak = sock;
    startConnection(
        sock,
        [this, id, dec, weak](std::string_view bytes) {
          auto msgs = std::make_shared<std::vector<proto::BotmMessage>>();
          bool ok = dec->feed(bytes, msgs.get());
          std::string err = ok ? std::string() : dec->errorMessage();
          asio::post(strand_, [this, id, msgs, weak, err] {
            auto s = weak.lock();
            if (!s) return;
            ForwardActions a;
            for (const auto& m : *msgs) {
              if (const auto* h = std::get_if<proto::LinkBotmHello>(&m)) {
                if (stopping_ || peers_.count(id)) continue;
                peers_[id] = s;
                s->send(answerHello(id, h->frames,
                                    proto::encodeSourceOpen({"botm:" + s_.machine, proto::agreedFrames(h->frames, s_.frames)})));
                spdlog::info("botm: child BOT-M {} ({}) connected, capacity {}{}{}", h->machine, s->peer(),
                             h->capacity, h->content_url.empty() ? "" : ", content at ", h->content_url);
                fwd_->childUp(id, h->machine, h->capacity, &a, h->content_url);
              } else if (!peers_.count(id)) {
                continue;
              } else if (const auto* r = std::get_if<FetchResult>(&m)) {
                fwd_->childResult(id, *r, &a);
              } else if (const auto* d = std::get_if<proto::LinkDeleted>(&m)) {
                fwd_->childDeleted(id, *d, &a);
              } else if (const auto* c = std::get_if<proto::LinkCapacity>(&m)) {
                fwd_->childCapacity(id, c->slots, &a);
              } else if (const auto* ms = std::get_if<proto::LinkMachines>(&m)) {
                fwd_->childMachines(id, ms->ids, &a, ms->content_urls);
              } else if (const auto* f = std::get_if<proto::LinkFile>(&m)) {
                fwd_->childSwept(*f, &a);
              } else if (const auto* sw = std::get_if<proto::LinkSwept>(&m)) {
                fwd_->childSwept(*sw, &a);
              } else if (std::holds_alternative<proto::LinkPing>(m)) {
                s->send(proto::encodeMessage(proto::SourceMessage{proto::LinkPong{}}, peerForm(id)));
              } else if (std::holds_alternative<proto::LinkEnd>(m)) {
                s->closeAfterFlush(proto::encodeMessage(proto::SourceMessage{proto::LinkEnd{}}, peerForm(id)));
              }
            }
            run(a);
            if (!err.empty()) {
              spdlog::warn("botm: child BOT-M {} broke the protocol: {}; disconnecting", s->peer(), err);
              s->close(net::CloseReason::kProtocolError);
            }
          });
        },
        [this, id](const std::string& why) {
          asio::post(strand_, [this, id, why] {
            framed_peers_.erase(id);
            if (!peers_.erase(id)) return;
            spdlog::info("botm: child BOT-M connection {} ended: {}", id, why);
            ForwardActions a;
            fwd_->childDown(id, &a);
            run(a);
          });
        });
  }

  NodeContext& node_;
  Settings s_;
  asio::strand<asio::io_context::executor_type> strand_;
  std::unique_ptr<FilenameStore> names_;
  std::unique_ptr<s3::CallWorker> objects_;  // the object store's calls (s3.endpoint set)
  std::unique_ptr<Dispatcher> disp_;
  std::unique_ptr<Forwarder> fwd_;
  std::shared_ptr<net::Acceptor> acceptor_;
  std::shared_ptr<net::Connector> connector_;
  std::shared_ptr<Connection> source_;                // the url source over TCP, or
  std::shared_ptr<proto::LocalBotmEnd> local_source_;  // in process
  std::atomic<bool> source_local_{false};              // local_source_ is set (status())
  std::map<std::uint64_t, std::shared_ptr<Connection>> peers_;  // robots or children (policy strand)
  std::set<std::uint64_t> framed_peers_;  // the peers_ we write frames to (policy strand)
  proto::LinkForm source_form_ = proto::LinkForm::kXml;  // what we write to source_
  std::map<std::uint64_t, std::shared_ptr<proto::LocalBotmRobotEnd>> local_robots_;  // in process (policy strand)
  std::atomic<std::uint64_t> next_peer_{1};
  bool stopping_ = false;
  bool source_warned_ = false;
  TimerId timer_ = 0;
  Millis delay_;
  Gauge *g_capacity_, *g_peers_, *g_queued_, *g_source_, *g_framed_, *g_objects_;
  std::atomic<bool> source_frames_{false};  // status(): source_form_ is kFrames
  Counter *c_fetches_, *c_ok_, *c_failed_, *c_rehanded_, *c_deletes_;
};

}  // namespace

Result<ServicePtr> makeBotmService(NodeContext& node) {
  const Config& cfg = *node.config;
  Settings s;
  s.machine = node.machine_id;
  s.parent = cfg.getBool("botm.parent");
  s.source = cfg.getString("botm.source");
  if (s.source.empty()) {
    if (s.parent) {
      return Status::invalidArgument(
          "botm.parent is on: botm.source must name the url source (listen.botm is where the children connect)");
    }
    s.source = cfg.getString("listen.botm");
  }
  s.listen = cfg.getString(s.parent ? "listen.botm" : "listen.robots");
  s.listen_tls = linkListening(node.tls, node.clock);
  s.source_tls = linkConnecting(node.tls, node.clock);
  std::string dir = cfg.getString("botm.content_dir");
  s.content_dir = dir.empty() ? node.data_dir + "/content" : Config::absolutePath(dir);
  s.state_dir = node.data_dir + "/botm";
  s.child_overload_pct = static_cast<int>(cfg.getInt("botm.child_overload_pct"));
  s.max_queued = static_cast<std::size_t>(cfg.getInt("botm.max_queued"));
  s.reconnect_min = Millis(cfg.getInt("botm.reconnect_min"));
  s.frames = cfg.getBool("node.link_frames");
  s.reconnect_max = Millis(std::max(cfg.getInt("botm.reconnect_max"), cfg.getInt("botm.reconnect_min")));
  s.fanout = static_cast<std::uint32_t>(cfg.getInt("botm.fanout"));
  auto s3 = s3::S3Options::fromConfig(cfg, node.data_dir);
  if (!s3.isOk()) return s3.status();
  s.s3 = std::move(s3).value();
  s.s3_calls = static_cast<std::size_t>(cfg.getInt("s3.botm_calls"));
  if (!s.parent) {
    // Filename management happens here: this machine's content is served on the HTTP
    // port and its URL advertised upstream (docs/internal-protocols.md §2).
    auto url = contentUrlFromConfig(cfg, node.http != nullptr);
    if (!url.isOk()) return url.status().withContext("botm.content_url");
    s.content_url = std::move(url).value();
    const auto scheme_end = s.content_url.find("://");
    const std::string host = scheme_end == std::string::npos ? "" : s.content_url.substr(scheme_end + 3);
    if (host.rfind("127.", 0) == 0 || host.rfind("localhost", 0) == 0 || host.rfind("[::1]", 0) == 0) {
      spdlog::info("botm: content of machine {} is advertised at {} (loopback: only this host can read it; "
                   "set listen.http or botm.content_url for CUs on other machines)", s.machine, s.content_url);
    }
    if (node.http) addContentRoute(*node.http, {s.content_dir, s.machine, s.fanout}, *node.metrics);
  }
  return ServicePtr(new BotmService(node, std::move(s)));
}

}  // namespace lcc::botm
