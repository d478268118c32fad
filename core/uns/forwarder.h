// forwarder.h — the UNS's side of the UNS → QM link (docs/internal-protocols.md §1)
// and the spool (the "unsdb", design document §5, §10, §11).
//
// One permanent, pipelined link to the QM (qm_link.h): in process when the QM runs in
// this lccd (the parsed notices handed over, no XML), else a connection (net::Connector,
// net::Connection). A set is given a set id
// (strictly increasing, persisted in blocks in <spool_dir>/set_id) and then either
//  - passes through: written to the QM, done(accepted) once the QM acks it ok; or
//  - is spooled (uns/spool.h): appended to the journal (lcc::Journal in
//    <spool_dir>/journal), committed (synced), then done(accepted) — when the QM is
//    absent, refuses a set, does not ack within ack_timeout, or older sets still wait
//    in the spool. Past spool_limit bytes waiting, done(rejected 130).
// A streamed set (beginSet) the QM cannot take as it comes is spooled in parts as it
// is read, and replayed in parts read back from the journal: memory per set is
// bounded by twice buffer_bytes (read ahead, and queued on the link), whatever its size.
// When the QM is back, the spool is replayed in order (pipelined, `replay_window`
// sets in flight) while new sets are appended behind; pass-through resumes once the
// spool is empty, and the journal is trimmed as acks arrive. Sets are sent to the QM
// in id order, always, so the QM's per-UNS dedup (highest id seen) is exact.
// THREADS: everything runs on one strand; submit() and the accessors are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "lcc/support/journal.h"
#include "common/metrics.h"
#include "lcc/clock.h"
#include "net/tls.h"
#include "lcc/env.h"
#include "uns/session_policy.h"

namespace lcc {
class Config;
}
namespace lcc::net {
class LocalListeners;
}

namespace lcc::uns {

// Members with a config key carry no default: fromConfig() (uns_options.cc) reads the
// schema's.
struct ForwarderOptions {
  std::string qm_address;          // uns.qm (empty: listen.qm): host:port, or tls://host:port (then `tls` is set)
  Millis qm_retry{};               // uns.qm_retry
  Millis qm_ack_timeout{};         // uns.qm_ack_timeout
  // uns.spool: false, nothing new is spooled: a set the QM does not take (absent,
  // refusing, silent, the link dropped before its ack) is answered 130, and so is an
  // init while the link is down. What an earlier run spooled is still replayed.
  bool spool = false;
  std::uint64_t spool_limit = 0;   // uns.spool_limit (bytes waiting in the spool)
  std::size_t max_attribute_length = 0;  // uns.max_attribute_length
  bool frames = false;             // node.link_frames: offer the QM compact frames over TCP
  // No config key:
  net::TlsLink tls;                // for tls:// (common/tls_config.h)
  std::string uns_name;            // <machine_id>/uns
  std::string spool_dir;           // <data_dir>/uns: holds journal/ and set_id
  std::size_t replay_window = 8;   // spooled sets in flight during replay
  std::uint64_t id_block = 1024;   // set ids reserved per write of set_id
  // Bytes of a set held at once: the output window to the QM, the spool's unwritten
  // parts (written out and synced past it), a replayed set in parts read ahead.
  std::size_t buffer_bytes = 4u << 20;
  // Called (on the forwarder's thread) when the spool is found corrupt: spooled sets
  // that were accepted are lost. The UNS raises cache-crash (common/cache_crash.h).
  std::function<void(const std::string& why)> on_spool_corrupt;
  // Where the QM of this lccd takes in-process links (issue 28; null: node.in_process_links
  // off, or none): when it listens on qm_address, the link is in process (qm_link.h).
  net::LocalListeners* local_listeners = nullptr;

  static ForwarderOptions fromConfig(const Config& config, const std::string& data_dir, const std::string& machine_id);
};

class Forwarder {
 public:
  using Done = std::function<void(const SetOutcome&)>;

  // `clock` times the reconnects (net::Connector).
  Forwarder(boost::asio::io_context& io, Clock* clock, Env* env, ForwarderOptions options, Metrics* metrics);
  ~Forwarder();

  // Opens the spool (learning what waits in it from an earlier run) and the set-id
  // state. Call before start().
  Status open();
  // Starts connecting to the QM (and replaying the spool once connected); a bad
  // qm_address is returned here.
  Status start();
  // Stops: sets in flight to the QM are spooled and answered, the link is closed.
  // Blocks until done (call from a thread that is not running the strand).
  void stop();

  // Hands a set over. `done` runs on the forwarder's strand, exactly once.
  void submit(SetSubmission set, Done done);

  // A set handed over as it is read (issue 13). When the link is up, the spool empty
  // and no other set streams, it passes through to the QM part by part (a set header
  // without count, the parts, <end count/>); otherwise it is spooled in parts as they
  // come and accepted once its end record is synced (130 when the spool fills up
  // meanwhile). A set passing through whose link drops before its ack, or that the QM
  // refuses, is answered 130 (its text is gone; the CP sends it again). Destroyed
  // before end(): aborted (<abort/>: the QM drops it; spooled: an abort record, never
  // replayed).
  class SetStream {
   public:
    struct Handle;
    ~SetStream();
    SetStream(const SetStream&) = delete;
    SetStream& operator=(const SetStream&) = delete;
    // `part.count` URLs (notices, or encoded <url/> elements); `taken` runs on the
    // forwarder's strand once the part no longer holds the forwarder's output window,
    // or was appended to the spool (read the next part then).
    void add(SetPart part, std::function<void()> taken);
    // `done` runs on the forwarder's strand, exactly once: accepted after the QM's ack
    // or, spooled, once its end record is synced.
    void end(Done done);

   private:
    friend class Forwarder;
    explicit SetStream(std::shared_ptr<Handle> h);
    std::shared_ptr<Handle> h_;
  };
  std::unique_ptr<SetStream> beginSet(ProviderId pid, SetKind kind, bool fullset_wanted);

  // True when new sets would be refused (spool over its limit).
  bool spoolFull() const;
  // True when a new session's set would be refused: the spool is full, or it is off
  // (ForwarderOptions::spool) and the QM link is down.
  bool refusesSets() const;
  bool connected() const;  // the QM's opening was received and the link is up
  std::uint64_t spooledSets() const;  // sets waiting in the spool
  std::uint64_t spoolBytes() const;
  std::uint64_t lastSetId() const;    // the last id handed out (0: none yet)
  // The most bytes of sets this forwarder held in memory at once (Impl::heldBytes).
  std::uint64_t heldBytesMax() const;
  void status(nlohmann::json& out) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lcc::uns
