// The fetcher contract suite (lcc/fetcher.h) over every plugin in LCC_FETCHER_PLUGINS.
#include <gtest/gtest.h>

#include <sstream>

#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

std::vector<std::string> fetcherPlugins() {
  std::vector<std::string> out;
  std::stringstream ss(LCC_FETCHER_PLUGINS);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

class FetcherContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  testing::TempDir dir_;
  testing::SimClock clock_;
  PluginRegistry registry_{LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger("test"), dir_.path(), "m1"}};
};

TEST_P(FetcherContractTest, LoadsAndStopsIdempotently) {
  auto opts = registry_.defaultOptions(GetParam());
  ASSERT_TRUE(opts.isOk()) << opts.status().toString();
  auto f = registry_.makeFetcher(GetParam(), opts.value());
  ASSERT_TRUE(f.isOk()) << f.status().toString();
  EXPECT_EQ(f.value()->inFlight(), 0u);
  f.value()->stop();
  f.value()->stop();
}

INSTANTIATE_TEST_SUITE_P(Fetchers, FetcherContractTest, ::testing::ValuesIn(fetcherPlugins()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace lcc
