// robot.h — a robot: fetches what its BOT-M asks over the robot protocol
// (docs/protocol.md §4) through a Fetcher, writes through a temporary name, renames.
//
// RobotSession is one connection (either direction: lcc-bot --listen accepts it,
// RobotClient connects and reconnects). Each session speaks first (<lcc:robot>).
// THREADS: session state lives on the socket's strand; fetch completions arrive
// on the fetcher's thread, do the file work there (fsync if asked, rename or
// remove the temporary file) and post the answer to the strand.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bot/fetch_leases.h"
#include "lcc/clock.h"
#include "lcc/env.h"
#include "lcc/fetcher.h"
#include "lcc/status.h"
#include "net/connection.h"
#include "net/connector.h"
#include "net/local_listeners.h"
#include "net/tls.h"
#include "proto/link_frames.h"
#include "proto/robot.h"
#include "s3/uploader.h"

namespace lcc {
class Config;
}

namespace lcc::bot {

// Members with a config key carry no default: fromConfig() (robot.cc) reads the
// schema's. Tests start from RobotOptions::fromConfig(Config::defaults()).
struct RobotOptions {
  std::uint32_t slots = 0;      // bot.slots: announced parallel fetches (lcc-bot: --slots)
  bool sync_files = false;      // bot.sync_files: fsync the file and its folder before answering ok
  // Keep each fetch's response head with its file (common/response_head.h) up to this
  // many bytes; 0: keep none.
  std::uint64_t max_response_head = 0;  // bot.max_response_head
  bool frames = false;          // node.link_frames: offer compact frames to the BOT-M (lcc-bot: -c, else on)
  // No config key:
  std::string name;             // announced name (default: host-pid)
  std::string content_root;     // when set, every file must lie below it
  std::size_t max_value_length = 8192;
  net::TlsLink tls;             // RobotClient: for a tls://host:port target
  // With s3.endpoint set (issue 31 §1): fetched files go to the object store through
  // this uploader instead of being renamed into place (null: files).
  std::shared_ptr<s3::Uploader> uploader;
  // The monotonic clock fetch leases are kept on (issue 27 §3; FetchRequest::lease):
  // a fetch whose lease ran out is cancelled and answered 130. Null: leases ignored.
  Clock* clock = nullptr;

  static RobotOptions fromConfig(const Config& config);
};

struct RobotCounters {
  std::atomic<std::uint64_t> fetched{0}, failed{0}, unchanged{0}, refused{0}, bytes{0}, heads_failed{0};
  std::atomic<std::uint64_t> head_files{0};  // heads kept in a side file: the attribute was refused
  std::atomic<std::uint64_t> lease_expired{0};  // fetches cancelled: their lease ran out (issue 27 §3)
};

// The default robot name: "<hostname>-<pid>".
std::string defaultRobotName();
// The temporary name a robot writes `file` through (same folder).
std::string tempNameFor(const std::string& file);
// Keeps `head` (of the body whose MD5 is `md5`) as the attribute of the temporary file
// `tmp`, before it is renamed (common/response_head.h). Not OK when the file system
// refused it: then keepResponseHeadFile() after the rename.
Status keepResponseHeadAttribute(Env& env, const std::string& tmp, const std::string& md5, const std::string& head);
// Writes `head` as the side file of `file` (in place, see robot.cc).
Status keepResponseHeadFile(Env& env, const std::string& file, const std::string& md5, const std::string& head);
// An LCC's GET /cu/content/ answer (a slot move's copy, core/qm/move_copy.h) carries the
// head kept with those bytes: when the fetched head has X-LCC-MD5 equal to the body's
// MD5 and an X-LCC-Response-Head naming that MD5, the carried head replaces the
// answer's own in `r`, so the moved URL keeps its site's head. Else `r` is unchanged.
void adoptCarriedHead(FetchResult& r);

// What a robot does with one <fetch>, apart from the stream that carries it
// (RobotSession): check the path, make the folder, fetch into a temporary name, rename
// or remove, and answer exactly once.
// THREADS: fetch() and cancelAll() from one thread at a time (the carrier's); the
// reply runs on the fetcher's thread, or inline in fetch() for an immediate refusal.
class RobotCore : public std::enable_shared_from_this<RobotCore> {
 public:
  using Reply = std::function<void(const FetchResult&)>;
  RobotCore(Fetcher& fetcher, Env& env, RobotOptions options, RobotCounters* counters, Reply reply);

  void fetch(const FetchRequest& f);  // f.path: the final file
  // The machine of the BOT-M that names the files (its hello): the namespace of the
  // object keys when files go to an object store.
  void setMachine(const std::string& machine);
  // Cancels every fetch in flight; from now on results are dropped, not replied.
  void cancelAll();
  // The BOT-M renewed the lease of every fetch it handed us (<ping lease>).
  void renewLeases(Millis lease);
  // Fetches started and not yet finished (cancelled ones count until they finish).
  std::size_t inFlight() const { return in_flight_.load(); }
  const RobotOptions& options() const { return opts_; }

 private:
  Status checkPath(const std::string& file) const;
  // Fetcher thread: puts a fetched temporary file in place (with its head) or removes
  // it, and makes the answer.
  FetchResult store(const FetchResult& r, std::uint64_t botm_id, const std::string& file, const std::string& tmp);
  void keepHead(const FetchResult& r, const std::string& file, const Status& attribute);
  // Fetcher thread, object store: hands the temporary file to the uploader; the answer
  // is made when the PUT has been answered (then the temporary file is removed).
  void upload(std::uint64_t fetcher_id, const FetchResult& r, std::uint64_t botm_id, const std::string& file,
              const std::string& tmp);
  // The answer of a fetched body that was (st OK) or could not be (else) kept.
  FetchResult storedAnswer(const FetchResult& r, std::uint64_t botm_id, const Status& st, const char* what);
  void count(const FetchResult& out);
  void finished(std::uint64_t fetcher_id, const FetchResult& r);
  // Fetch leases (opts_.clock set): cancels the expired fetches, arms the one timer at
  // the next deadline (mu_ not held).
  void checkLeases();
  void armLeaseTimer(MonoTime at);  // mu_ held

  Fetcher& fetcher_;
  Env& env_;
  const RobotOptions opts_;
  RobotCounters* counters_;
  const Reply reply_;
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::uint64_t> running_;  // fetcher id -> BOT-M id (mu_)
  bool cancelled_ = false;                                    // (mu_)
  std::string machine_;                                       // (mu_) from the BOT-M's hello
  FetchLeases leases_;                                        // (mu_) fetcher ids
  std::unordered_set<std::uint64_t> lease_cancelled_;         // (mu_) answered 130, not as the fetcher says
  TimerId lease_timer_ = 0;                                   // (mu_)
  std::optional<MonoTime> lease_timer_at_;                    // (mu_)
  std::atomic<std::size_t> in_flight_{0};
  std::unordered_set<std::string> known_dirs_;  // folders seen to exist (carrier's thread)
};

// Items handed from any thread to one consumer, woken once per batch: push() says
// whether the caller must schedule a drain (the queue was empty).
template <typename T>
class HandOff {
 public:
  bool push(T item) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(std::move(item));
    return items_.size() == 1;
  }
  std::vector<T> drain() {
    std::vector<T> out;
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(items_);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<T> items_;
};

// What every carrier of a RobotCore keeps (RobotSession over TCP, LocalRobotSession in
// process): the fetcher and options, the core, and the end of the stream, told once.
class RobotStream {
 public:
  // Fetches started and not yet answered.
  std::size_t inFlight() const { return core_ ? core_->inFlight() : 0; }

 protected:
  RobotStream(Fetcher& fetcher, Env& env, RobotOptions options, RobotCounters* counters);
  // The carrier's strand: cancels the fetches in flight, runs on_end_ once.
  void ended(const std::string& why);

  Fetcher& fetcher_;
  Env& env_;
  RobotOptions opts_;
  RobotCounters* counters_;
  std::shared_ptr<RobotCore> core_;  // made by start()
  bool ended_ = false;
  std::function<void(const std::string&)> on_end_;
};

class RobotSession : public RobotStream, public std::enable_shared_from_this<RobotSession> {
 public:
  RobotSession(std::shared_ptr<net::Connection> socket, Fetcher& fetcher, Env& env, RobotOptions options,
               RobotCounters* counters = nullptr);
  ~RobotSession();

  // Sends the opening and starts reading; on_end(why) runs once when the session ends.
  void start(std::function<void(const std::string&)> on_end);
  // Ends the stream (</lcc:robot>) and cancels the fetches in flight.
  void stop();

 private:
  void onData(std::string_view bytes);
  void sendAnswers();  // strand

  std::shared_ptr<net::Connection> socket_;
  proto::BotmRobotStreamDecoder decoder_;
  bool hello_seen_ = false;
  proto::LinkForm form_ = proto::LinkForm::kXml;  // what we write: frames once the BOT-M took our offer
  bool closing_ = false;  // we are ending the stream: cancelled fetches are not answered
  HandOff<FetchResult> answers_;  // finished on the fetcher's thread, not yet sent
};

// A RobotCore carried in process (issue 28): a BOT-M of the same lccd listens on the
// robot port's address in net::LocalListeners, and the robot protocol's messages cross
// as records (proto::LocalRobotEnd), shaped as the wire carries them. Same rules as
// RobotSession: it speaks first, a stream that ends cancels the fetches in flight and
// answers none of them. Answers go from the fetcher's thread straight into the link
// (which hands them over in batches).
class LocalRobotSession : public RobotStream, public std::enable_shared_from_this<LocalRobotSession> {
 public:
  LocalRobotSession(std::shared_ptr<proto::LocalRobotEnd> end, Fetcher& fetcher, Env& env, RobotOptions options,
                    RobotCounters* counters = nullptr);
  void start(std::function<void(const std::string&)> on_end);
  void stop();  // ends the stream, cancels the fetches in flight

 private:
  void onMessages(std::vector<proto::ToRobotMessage>& msgs);  // the end's strand
  void close();                                               // the end's strand

  std::shared_ptr<proto::LocalRobotEnd> end_;
  std::atomic<bool> closing_{false};
};

// A robot that connects to a BOT-M's robot port and reconnects with back-off
// (net::Connector: retry_min doubling to retry_max, with jitter). With `local` set and
// a BOT-M of this process listening at `target` there, it links in process instead
// (LocalRobotSession; linked again after retry_min when that link ends).
class RobotClient : public std::enable_shared_from_this<RobotClient> {
 public:
  RobotClient(boost::asio::io_context& io, Clock& clock, Fetcher& fetcher, Env& env, std::string target,
              RobotOptions options, Millis retry_min, Millis retry_max, RobotCounters* counters = nullptr,
              net::LocalListeners* local = nullptr);
  void start();
  // Stops reconnecting, ends the session, cancels its fetches.
  void stop();
  bool connected() const { return connected_.load(); }
  bool inProcess() const { return in_process_.load(); }
  std::size_t inFlight() const;

 private:
  void connected(std::shared_ptr<net::Connection> conn);
  void linkLocal();

  Fetcher& fetcher_;
  Env& env_;
  std::string target_;
  Status address_;  // a target the options cannot use (tls:// without a context)
  RobotOptions opts_;
  RobotCounters* counters_;
  std::shared_ptr<net::Connector> connector_;
  mutable std::mutex mu_;
  std::shared_ptr<RobotSession> session_;
  std::shared_ptr<LocalRobotSession> local_session_;
  bool stopping_ = false;
  std::atomic<bool> connected_{false};
  std::atomic<bool> in_process_{false};
  boost::asio::io_context& io_;
  Clock& clock_;
  Millis retry_min_;
  net::LocalListeners* local_;
  TimerId relink_ = 0;  // (mu_)
};

}  // namespace lcc::bot
