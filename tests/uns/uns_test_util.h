// uns_test_util.h — what the UNS tests share: a provider store (storage-memory through
// the real loader) filled with known providers, a fake QM speaking
// docs/internal-protocols.md §1, and a blocking CP client.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/plugin/plugin_registry.h"
#include "lcc/provider_store.h"
#include "proto/cp_uns.h"
#include "proto/uns_qm.h"
#include "support/sim_clock.h"
#include "common/system_clock.h"
#include "uns/uns_service.h"
#include <boost/asio/executor_work_guard.hpp>
#include <functional>

namespace lcc::uns::testing {

// Providers used by the golden transcripts (password "s3cret" for all):
//  1  active, prefixes http://www.server.com/, quota 100 files / 1 MB, 1 error listed of 2
//  2  pending (111)
//  3  active, full set wanted (cache-crash), allowance used up
//  4  active, allowance used up, not wanted (131)
std::vector<ProviderRecord> goldenProviders(WallTime now);

// A PluginRegistry + storage-memory ProviderStore holding `records` (ids kept).
class ProviderFixture {
 public:
  explicit ProviderFixture(const std::vector<ProviderRecord>& records);
  ProviderStore* store() { return store_.get(); }

 private:
  lcc::testing::SimClock clock_;
  std::unique_ptr<PluginRegistry> registry_;
  PluginPtr<ProviderStore> store_;
};

// A QM for tests: acks sets (deduplicating by the highest id seen per UNS name, as
// the real QM does), or refuses them, or stays silent.
class FakeQm {
 public:
  enum class Mode { kAck, kReject, kSilent };
  // frames: as setFrames(true) from the first connection on.
  explicit FakeQm(std::uint16_t port = 0, Mode mode = Mode::kAck, bool frames = false);
  ~FakeQm();
  std::uint16_t port() const { return port_; }
  void setMode(Mode m) { mode_ = m; }
  // Sends <ping/> after each read from a UNS (pongs are read and dropped).
  void setPinging(bool on) { pinging_ = on; }
  // Takes a UNS's offer of compact frames (as a QM with node.link_frames): answers its
  // opening with frames="1" and writes frames after it. Off: the QM answers at connect,
  // in XML, as a QM that predates the frames.
  void setFrames(bool on) { frames_ = on; }
  std::size_t framedConnections();  // connections on which both sides switched to frames
  // Sets in the order the QM applied them (duplicates not applied twice).
  std::vector<proto::UnsQmSet> applied();
  std::size_t received();  // every set element read, duplicates included
  std::size_t begun();     // every set element started, aborted ones included
  std::size_t connections();
  std::vector<std::string> unsNames();
  // Polls (without sleeping on a guess) until `n` sets were applied or ~20 s passed.
  bool waitApplied(std::size_t n);
  bool waitReceived(std::size_t n);

 private:
  struct Conn;
  void accept();
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<Mode> mode_;
  std::atomic<bool> pinging_{false};
  std::atomic<bool> frames_{false};
  std::size_t framed_ = 0;
  std::mutex mu_;
  std::vector<proto::UnsQmSet> applied_;
  std::map<std::string, std::uint64_t> highest_;
  std::size_t received_ = 0, begun_ = 0;
  std::size_t connections_ = 0;
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<Conn>> conns_;
  std::thread thread_;
};

// Connects to 127.0.0.1:port, writes `request` in pieces of `chunk` bytes, and reads
// until the server closes (or 30 s pass). Returns what the server wrote.
std::string cpExchange(std::uint16_t port, const std::string& request, std::size_t chunk = 0);

// Parses every reply in `bytes` with the namespace-aware reply decoder; fails the
// test when one is not well-formed or not in the lococa namespace.
std::vector<proto::CpReply> parseReplies(const std::string& bytes);

std::string initXml(ProviderId id, const std::string& password = "s3cret");
std::string setXml(const std::vector<std::string>& urls, bool full = false, const std::string& urlprefix = "");

// Polls `cond` every few ms until it holds or ~20 s passed.
bool eventually(const std::function<bool()>& cond);


// A port on 127.0.0.1 where nothing listens (bound and released).
std::uint16_t unusedPort();
// n URLs under http://www.server.com/<tag>/ (inside the golden providers' prefix).
std::vector<std::string> urls(const std::string& tag, int n);

// UNS options for tests: listen on port 0, forward to 127.0.0.1:qm_port, short retry.
UnsOptions testOptions(const std::string& data_dir, std::uint16_t qm_port);

// A UNS with its own io_context threads.
class Harness {
 public:
  Harness(UnsOptions opt, ProviderStore* store, Env* env = nullptr);  // env: posixEnv()
  ~Harness();
  Status start();
  void stop();
  std::uint16_t port() const { return server_.port(); }
  UnsServer& server() { return server_; }
  Metrics& metrics() { return metrics_; }

 private:
  SystemClock clock_;
  Metrics metrics_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  UnsServer server_;
  std::vector<std::thread> threads_;
  bool stopped_ = false;
};

}  // namespace lcc::uns::testing
