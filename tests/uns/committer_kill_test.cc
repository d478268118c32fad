// kill -9 while inits are counted with group commit: every connection seq a CP was
// told is in the PIDB after the crash, so no seq is ever given twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "common/config/config.h"
#include "common/password.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "uns/uns_core.h"

namespace lcc::uns {
namespace {

constexpr int kProviders = 4;
constexpr int kClients = 16;  // inits in flight at once

struct Pidb {
  explicit Pidb(const std::string& dir) {
    HostContext host{&clock, posixEnv(), nullptr, dir, "m1"};
    registry = std::make_unique<PluginRegistry>(LCC_PLUGIN_DIR, host);
    auto opts = registry->defaultOptions("storage-kyoto");
    if (!opts.isOk()) throw std::runtime_error(opts.status().toString());
    auto s = registry->makeProviderStore("storage-kyoto", opts.value());
    if (!s.isOk()) throw std::runtime_error(s.status().toString());
    store = std::move(s).value();
  }
  lcc::testing::SimClock clock;
  std::unique_ptr<PluginRegistry> registry;
  PluginPtr<ProviderStore> store;
};

// The child: kClients inits in flight at once, for ever; writes "pid seq\n" to `out`
// for each init_accepted it would send (its seq is synced).
[[noreturn]] void initForEver(const std::string& dir, const std::string& token,
                              std::shared_ptr<const PasswordHasher> hasher, int out) {
  Pidb pidb(dir);
  CoreConfig config = CoreConfig::fromConfig(Config::defaults());
  config.passwords = std::move(hasher);
  config.max_connections_per_provider = kClients;
  lcc::testing::SimClock clock;
  UnsCore core(config, pidb.store.get(), &clock, nullptr);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const ProviderId pid = static_cast<ProviderId>(1 + c % kProviders);
      for (;;) {
        AuthResult r = core.authenticate({std::to_string(pid), token}, "192.0.2.1");
        if (r.code != ErrorCode::kNone) ::_exit(3);
        char line[64];
        const int n = std::snprintf(line, sizeof line, "%u %llu\n", pid, static_cast<unsigned long long>(r.info.seq));
        if (::write(out, line, static_cast<std::size_t>(n)) != n) ::_exit(4);
        core.releaseProvider(pid);
      }
    });
  }
  for (auto& t : clients) t.join();
  ::_exit(0);
}

TEST(CommitterKill, EverySeqToldBeforeSigkillIsDurableAndNeverRepeats) {
  lcc::testing::TempDir dir;
  auto hasher = PasswordHasher::ephemeral();
  const std::string token = PasswordHasher::generateToken();
  {
    Pidb pidb(dir.path());
    for (int p = 0; p < kProviders; ++p) {
      ProviderRecord r;
      r.state = ProviderState::kActive;
      r.password_hash = hasher->hashToken(token);
      ASSERT_TRUE(pidb.store->create(r).isOk());
    }
    ASSERT_TRUE(pidb.store->close().isOk());
  }
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(fds[0]);
      initForEver(dir.path(), token, hasher, fds[1]);
    }
    ::close(fds[1]);
    // Read the seqs told until enough went by (more each round), then kill -9.
    std::vector<std::uint64_t> told(kProviders + 1, 0);
    FILE* in = ::fdopen(fds[0], "r");
    unsigned pid = 0;
    unsigned long long seq = 0;
    for (int n = 0; n < 300 * (round + 1) && std::fscanf(in, "%u %llu", &pid, &seq) == 2; ++n) {
      ASSERT_GE(pid, 1u);
      ASSERT_LE(pid, static_cast<unsigned>(kProviders));
      told[pid] = std::max<std::uint64_t>(told[pid], seq);
    }
    ::kill(child, SIGKILL);
    // What the child wrote before it died was told too.
    while (std::fscanf(in, "%u %llu", &pid, &seq) == 2) {
      if (pid >= 1 && pid <= static_cast<unsigned>(kProviders)) told[pid] = std::max<std::uint64_t>(told[pid], seq);
    }
    ::fclose(in);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child failed on its own: " << status;

    Pidb pidb(dir.path());
    std::uint64_t total = 0;
    for (ProviderId p = 1; p <= kProviders; ++p) {
      auto rec = pidb.store->get(p);
      ASSERT_TRUE(rec.isOk() && rec.value());
      EXPECT_GE(rec.value()->conn_seq, told[p]) << "provider " << p << ": a seq told to a CP was lost (round " << round << ")";
      total += told[p];
    }
    EXPECT_GT(total, 0u);
    ASSERT_TRUE(pidb.store->close().isOk());
  }
}

}  // namespace
}  // namespace lcc::uns
