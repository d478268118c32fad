// store_plugin_fixture.h — opens the stores of one storage plugin through the real
// loader, in a private data folder, with the plugin's default options plus overrides.
// Plugin-specific test fixtures derive from it.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::testing {

class StorePluginFixture : public ::testing::Test {
 protected:
  // `base_options` are applied before each call's overrides; `env` defaults to POSIX.
  StorePluginFixture(std::string plugin, std::map<std::string, std::string> base_options = {}, Env* env = nullptr)
      : plugin_(std::move(plugin)),
        base_options_(std::move(base_options)),
        registry_(LCC_PLUGIN_DIR, HostContext{&clock_, env ? env : posixEnv(), nullptr, dir_.path(), "m1"}) {}

  OptionsView options(const std::map<std::string, std::string>& overrides = {}) {
    auto o = base_options_;
    for (const auto& [k, v] : overrides) o[k] = v;
    auto v = registry_.defaultOptions(plugin_, o);
    EXPECT_TRUE(v.isOk()) << v.status().toString();
    return v.isOk() ? *v : OptionsView();
  }
  PluginPtr<QueueStore> openQueue(const std::map<std::string, std::string>& overrides = {}) {
    return orNull(registry_.makeQueueStore(plugin_, options(overrides)));
  }
  PluginPtr<ContentStore> openContent(const std::map<std::string, std::string>& overrides = {}) {
    return orNull(registry_.makeContentStore(plugin_, options(overrides)));
  }
  PluginPtr<ProviderStore> openProviders(const std::map<std::string, std::string>& overrides = {}) {
    return orNull(registry_.makeProviderStore(plugin_, options(overrides)));
  }

  TempDir dir_;
  SimClock clock_;

 private:
  template <typename T>
  static PluginPtr<T> orNull(Result<PluginPtr<T>> s) {
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }

  std::string plugin_;
  std::map<std::string, std::string> base_options_;

 protected:
  PluginRegistry registry_;
};

}  // namespace lcc::testing
