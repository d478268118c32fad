// stub_fetcher.h — the fetch-stub Fetcher.
//
// start() decides nothing: it records the fetch and either queues it for the worker
// thread (no delay) or schedules it on the host clock (stub_delay, option delay);
// the clock callback only moves it to the worker queue. The worker works out the
// outcome (stub_script.h), writes the body through the host Env and calls `done`.
// THREADS: start/cancel/inFlight/stop are thread-safe; `done` runs on the worker
// thread, never inside start(), never under a lock. Clock callbacks hold only a
// weak reference, so a timer firing after stop() finds nothing to do.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "lcc/fetcher.h"
#include "lcc/host.h"
#include "stub_script.h"

namespace lcc::plugins::stub {

struct StubOptions {
  std::uint64_t default_size = 1024;
  std::string default_mime = "text/html";
  std::uint64_t max_size = 50ull * 1024 * 1024;
  Millis delay{0};
  bool verify_md5 = false;
  std::string script;  // file name; empty: no script
};

class StubFetcher final : public Fetcher {
 public:
  StubFetcher(const HostContext& host, StubOptions options, Script script);
  ~StubFetcher() override;

  Status start(const FetchRequest& request, FetchDone done) override;
  void cancel(std::uint64_t id) override;
  std::size_t inFlight() const override;
  void stop() override;

  // The body fetch-stub serves for `url`: "fetch-stub <url>\n" repeated, cut at `size`.
  static std::string bodyFor(const std::string& url, std::uint64_t size);

 private:
  struct Fetch {
    FetchRequest request;
    FetchDone done;
    Directives directives;
    TimerId timer = 0;
    bool cancelled = false;
    bool hanging = false;
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::uint64_t, Fetch> fetches;  // accepted, done not yet called
    std::deque<std::uint64_t> ready;          // ids for the worker
    bool stopping = false;
  };

  void run();
  FetchResult perform(const Fetch& f);

  HostContext host_;
  StubOptions options_;
  Script script_;
  std::shared_ptr<State> state_;
  std::thread worker_;
  std::mutex stop_mu_;
  bool stopped_ = false;
};

}  // namespace lcc::plugins::stub
