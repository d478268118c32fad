// crash_test.cc — kill -9 a writer at random moments; every batch it reported synced
// must be there, whole, and no batch may be there in part.
//
// Runs on every persistent plugin of LCC_STORE_PLUGINS (tests/crash/CMakeLists.txt)
// and on each store kind. The writer is store_crash_child (a separate program, so
// the kill is a real SIGKILL of a process in the middle of whatever it was doing:
// writing, syncing, Kyoto repair, checkpoint, journal trim). The store folder is
// kept across iterations, so each child starts on the store the previous one was
// killed in. Half of the iterations the test itself reopens the store and checks it
// (dropping it without close(), so the next child still finds it unclean).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "crash_common.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "support/plugin_list.h"

namespace lcc::testing {
namespace {

constexpr int kIterations = 16;
constexpr auto kBudget = std::chrono::seconds(6);  // per plugin and store kind

struct ChildRun {
  std::vector<std::string> lines;  // everything the child wrote
  bool killed = false;             // it died of our SIGKILL (not of an error)
  int status = 0;
};

// Starts the child, waits for `reports` batch reports (or "ready" when 0), lets it
// run `delay_us` more, kills it, and collects everything it wrote.
ChildRun runAndKill(const std::string& plugin, const std::string& kind, const std::string& dir, int reports,
               int delay_us, bool kill_before_ready) {
  ChildRun run;
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return run;
  }
  const std::string child = std::string(LCC_BIN_DIR) + "/store_crash_child";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl(child.c_str(), child.c_str(), LCC_PLUGIN_DIR, plugin.c_str(), kind.c_str(), dir.c_str(), nullptr);
    std::_Exit(127);
  }
  ::close(fds[1]);
  std::string buf;
  int seen = 0;
  bool ready = false;
  auto readSome = [&](int timeout_ms) {
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char tmp[4096];
    ssize_t n = ::read(fds[0], tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.rfind("ready", 0) == 0) ready = true;
      else ++seen;
      run.lines.push_back(line);
    }
    return true;
  };
  if (kill_before_ready) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));  // a random kill moment, not a wait
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((!ready || seen < reports) && std::chrono::steady_clock::now() < deadline) {
      if (!readSome(20000)) break;
    }
    EXPECT_TRUE(ready && seen >= reports) << plugin << " " << kind << ": the child stopped early";
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));  // a random kill moment
  }
  ::kill(pid, SIGKILL);
  while (readSome(20000)) {
  }
  ::close(fds[0]);
  ::waitpid(pid, &run.status, 0);
  run.killed = WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL;
  return run;
}

class StoreCrashTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  StoreCrashTest() : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}) {}

  OptionsView options(const std::string& plugin) {
    auto o = registry_.defaultOptions(plugin, crash::smallOptions(plugin));
    EXPECT_TRUE(o.isOk()) << o.status().toString();
    return o.isOk() ? *o : OptionsView();
  }

  // Opens the store in this process and checks it. Returns the last batch it holds.
  std::uint64_t verify(const std::string& plugin, const std::string& kind, std::uint64_t max_reported,
                       const std::set<std::uint64_t>& reported) {
    std::uint64_t last = 0;
    if (kind == "queue") {
      auto q = registry_.makeQueueStore(plugin, options(plugin));
      EXPECT_TRUE(q.isOk()) << q.status().toString();
      if (!q.isOk()) return 0;
      auto meta = (*q)->getMeta("last");
      EXPECT_TRUE(meta.isOk());
      if (meta.isOk() && *meta) last = std::stoull(**meta);
      std::map<PSetId, int> rows;
      std::uint64_t total = 0;
      EXPECT_TRUE((*q)->scanEntries([&](const QueueEntry& e) {
        ++rows[e.pset];
        ++total;
        return true;
      }).isOk());
      EXPECT_EQ((*q)->entryCount().valueOr(0), total);
      std::map<PSetId, int> expect;
      for (std::uint64_t m = last > 2 ? last - 2 : 1; m <= last && last > 0; ++m) expect[m] = crash::kRows;
      EXPECT_EQ(rows, expect) << "queue rows per batch after a kill (last=" << last << ")";
      std::set<PSetId> psets;
      EXPECT_TRUE((*q)->scanPSets(std::nullopt, [&](const PSetRecord& p) {
        psets.insert(p.pset);
        EXPECT_EQ(p.count, static_cast<std::uint64_t>(crash::kRows));
        return true;
      }).isOk());
      std::set<PSetId> expect_psets;
      for (auto& [m, n] : expect) expect_psets.insert(m);
      EXPECT_EQ(psets, expect_psets);
    } else if (kind == "content") {
      auto c = registry_.makeContentStore(plugin, options(plugin));
      EXPECT_TRUE(c.isOk()) << c.status().toString();
      if (!c.isOk()) return 0;
      auto meta = (*c)->getMeta("last");
      EXPECT_TRUE(meta.isOk());
      if (meta.isOk() && *meta) last = std::stoull(**meta);
      std::map<std::uint64_t, int> rows;
      std::uint64_t total = 0;
      ChangeSeq prev = 0;
      EXPECT_TRUE((*c)->scanSince(0, ContentFilter{}, [&](const ContentRecord& r) {
        EXPECT_GT(r.seq, prev);
        prev = r.seq;
        ++rows[r.size];
        ++total;
        return true;
      }).isOk());
      EXPECT_EQ((*c)->count().valueOr(0), total);
      EXPECT_GE((*c)->maxSeq().valueOr(0), prev);
      std::map<std::uint64_t, int> expect;
      for (std::uint64_t m = last > 2 ? last - 2 : 1; m <= last && last > 0; ++m) expect[m] = crash::kRows;
      EXPECT_EQ(rows, expect) << "content rows per batch after a kill (last=" << last << ")";
    } else {
      auto p = registry_.makeProviderStore(plugin, options(plugin));
      EXPECT_TRUE(p.isOk()) << p.status().toString();
      if (!p.isOk()) return 0;
      std::set<std::string> contacts;
      EXPECT_TRUE((*p)->scan([&](const ProviderRecord& r) {
        contacts.insert(r.contact);
        return true;
      }).isOk());
      for (std::uint64_t n : reported) {
        EXPECT_TRUE(contacts.count("b" + std::to_string(n))) << "provider of synced batch " << n << " is missing";
      }
      auto one = (*p)->get(1);
      EXPECT_TRUE(one.isOk());
      if (one.isOk() && *one) last = one.value()->conn_seq;
    }
    EXPECT_GE(last, max_reported) << "a batch reported synced was lost";
    return last;  // the store is dropped without close(): it stays unclean for the next child
  }

  TempDir dir_;
  SimClock clock_;
  PluginRegistry registry_;
};

TEST_P(StoreCrashTest, EveryReportedBatchSurvivesSigkillWholeAndNothingIsPartial) {
  const auto& [plugin, kind] = GetParam();
  std::seed_seq seed(plugin.begin(), plugin.end());
  std::mt19937 rng(seed);
  rng.discard(kind.size() * 7);
  std::uint64_t max_reported = 0;
  std::set<std::uint64_t> reported;
  const auto start = std::chrono::steady_clock::now();
  int iterations = 0, verified = 0;
  for (int it = 0; it < kIterations && std::chrono::steady_clock::now() - start < kBudget; ++it, ++iterations) {
    const bool early = rng() % 6 == 0;
    const int reports = static_cast<int>(rng() % 4);
    const int delay_us = static_cast<int>(rng() % 3000);
    ChildRun run = runAndKill(plugin, kind, dir_.path(), reports, delay_us, early);
    ASSERT_TRUE(run.killed) << plugin << " " << kind << ": the child did not die of SIGKILL (status " << run.status
                            << "); it failed on its own — see its stderr above";
    for (const auto& line : run.lines) {
      if (line.rfind("ready", 0) == 0) {
        // Every open after the first one follows a kill: it must say so.
        if (line.find("created=0") != std::string::npos) {
          EXPECT_NE(line.find("clean=0"), std::string::npos) << plugin << " " << kind << ": " << line;
        }
        continue;
      }
      std::uint64_t n = std::stoull(line);
      reported.insert(n);
      max_reported = std::max(max_reported, n);
    }
    if (it % 2 == 1) {
      verify(plugin, kind, max_reported, reported);
      ++verified;
      if (HasFailure()) return;
    }
  }
  verify(plugin, kind, max_reported, reported);
  RecordProperty("iterations", iterations);
  EXPECT_GT(max_reported, 0u) << "no batch was ever reported; the test tested nothing";
}

std::vector<std::tuple<std::string, std::string>> cases() {
  std::vector<std::tuple<std::string, std::string>> out;
  for (const auto& p : lcc::testing::splitList(LCC_CRASH_PLUGINS)) {
    for (const char* kind : {"queue", "content", "providers"}) out.emplace_back(p, kind);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Plugins, StoreCrashTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
                           std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (auto& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace lcc::testing
