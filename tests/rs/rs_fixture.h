// rs_fixture.h — what the RS tests share: a Fetcher scripted per URL, and a fixture
// with storage-memory through the real plugin loader, a SimClock and RsOptions.
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <thread>

#include "common/config/config.h"
#include "common/logging.h"
#include "common/password.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "rs/rs_service.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::rs::testing_rs {

// A Fetcher whose answers a test scripts per URL; `done` runs on its own thread.
class ScriptedFetcher final : public Fetcher {
 public:
  struct Answer {
    std::string body;
    ErrorCode code = ErrorCode::kNone;
    int http = 200;
    bool hang = false;
  };
  ~ScriptedFetcher() override { stop(); }

  void set(const std::string& url, Answer a) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_[url] = std::move(a);
  }
  int cancels() const { return cancels_.load(); }
  std::vector<std::string> urls() {
    std::lock_guard<std::mutex> lock(mu_);
    return urls_;
  }

  Status start(const FetchRequest& req, FetchDone done) override {
    Answer a;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return Status::aborted("stopped");
      urls_.push_back(req.url);
      auto it = answers_.find(req.url);
      if (it == answers_.end()) {
        a.code = ErrorCode::kConnectFailure;
        a.http = 0;
      } else {
        a = it->second;
      }
      if (a.hang) {
        hanging_[req.id] = std::move(done);
        return Status::ok();
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back([req, a, done = std::move(done)] {
      FetchResult r;
      r.id = req.id;
      r.code = a.code;
      r.http_status = a.http;
      if (a.code == ErrorCode::kNone) {
        if (a.body.size() > req.max_size) {
          r.code = ErrorCode::kTooLarge;
        } else {
          std::ofstream(req.path, std::ios::binary) << a.body;
          r.size = a.body.size();
        }
      }
      done(r);
    });
    return Status::ok();
  }
  void cancel(std::uint64_t id) override {
    FetchDone done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = hanging_.find(id);
      if (it == hanging_.end()) return;
      done = std::move(it->second);
      hanging_.erase(it);
    }
    cancels_++;
    FetchResult r;
    r.id = id;
    r.code = ErrorCode::kInternal;
    r.message = "cancelled";
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back([done, r] { done(r); });
  }
  std::size_t inFlight() const override { return 0; }
  void stop() override {
    std::vector<std::uint64_t> ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      for (auto& [id, d] : hanging_) ids.push_back(id);
    }
    for (auto id : ids) cancel(id);
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  std::mutex mu_;
  std::map<std::string, Answer> answers_;
  std::map<std::uint64_t, FetchDone> hanging_;
  std::vector<std::string> urls_;
  std::vector<std::thread> threads_;  // joined in stop()
  std::atomic<int> cancels_{0};
  bool stopped_ = false;
};

class RsTest : public ::testing::Test {
 protected:
  RsTest()
      : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger("test"), dir_.path(), "m1"}) {
    auto store = registry_.makeProviderStore("storage-memory", OptionsView());
    EXPECT_TRUE(store.isOk()) << store.status().toString();
    if (store.isOk()) store_ = std::move(store).value();
    options_.secret_ttl = Millis(3600 * 1000);
    options_.sweep_interval = Millis(600 * 1000);
    options_.verify_timeout = Millis(5000);
    options_.provider_defaults.default_quota_files = 500;
    options_.passwords = PasswordHasher::ephemeral();
    options_.work_dir = dir_.file("rs");
    EXPECT_TRUE(posixEnv()->createDirs(options_.work_dir, DirOptions{.private_dir = true}).isOk());
  }

  // fetch-curl as the RS uses it against a test site on 127.0.0.1.
  PluginPtr<Fetcher> makeCurl() {
    auto opts = registry_.defaultOptions("fetch-curl", {{"allow_private", "true"}, {"timeout", "10s"}});
    EXPECT_TRUE(opts.isOk()) << opts.status().toString();
    auto fetcher = registry_.makeFetcher("fetch-curl", opts.value());
    EXPECT_TRUE(fetcher.isOk()) << fetcher.status().toString();
    options_.verify_timeout = Millis(15000);
    return std::move(fetcher).value();
  }

  std::shared_ptr<Registrar> makeRegistrar(Fetcher& f) {
    return std::make_shared<Registrar>(*store_, f, clock_, *posixEnv(), options_);
  }

  ProviderRecord stored(ProviderId id) {
    auto r = store_->get(id);
    EXPECT_TRUE(r.isOk());
    return r.isOk() && r.value() ? *r.value() : ProviderRecord{};
  }
  bool exists(ProviderId id) {
    auto r = store_->get(id);
    return r.isOk() && r.value().has_value();
  }

  testing::TempDir dir_;
  testing::SimClock clock_;
  PluginRegistry registry_;
  PluginPtr<ProviderStore> store_;
  RsOptions options_ = RsOptions::fromConfig(Config::defaults());
};

}  // namespace lcc::rs::testing_rs
